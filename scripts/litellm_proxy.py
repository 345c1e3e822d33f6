#!/usr/bin/env python3
"""Starts LiteLLM's proxy (an OpenAI-compatible gateway: FastAPI on uvicorn, its
own HTTP client to the server behind it, its own re-framed SSE stream) on
127.0.0.1 in front of an OpenAI-compatible server, for servebench's
integration tests and for trying servebench through a gateway by hand:

    scripts/install-real-server.sh
    .venv-real/bin/python scripts/real_server.py --port 8080 &
    LITELLM_MASTER_KEY=sk-$(openssl rand -hex 16) \\
        .venv-litellm/bin/python scripts/litellm_proxy.py --upstream http://127.0.0.1:8080

Binds its socket itself (port 0, the default, lets the OS pick a free one, with
no window for another process to take it), then prints exactly one line,
"listening http://127.0.0.1:PORT", to stdout once the proxy answers
GET /health/liveliness; runs until SIGTERM or SIGINT (Ctrl-C). Clients send
the master key (environment variable LITELLM_MASTER_KEY, required: LiteLLM
refuses to start without one) as a bearer token. LiteLLM's own log goes to
stderr. Nothing is fetched from outside 127.0.0.1: the model cost map, the
Anthropic beta headers and the blog posts LiteLLM would download are read
from the package, and no database is configured.
"""

import argparse
import json
import os
import socket
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

HOST = "127.0.0.1"


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--upstream", required=True,
                    help="base URL of the server behind the proxy, e.g. http://127.0.0.1:8080 "
                         "(its OpenAI API under /v1)")
    ap.add_argument("--port", type=int, default=0,
                    help="TCP port; 0 (default) lets the OS pick a free one")
    ap.add_argument("--alias", default="SmolLM2-135M-Instruct",
                    help="model name the proxy answers to and sends upstream, "
                         "default SmolLM2-135M-Instruct")
    ap.add_argument("--timeout", type=float, default=120.0,
                    help="seconds LiteLLM waits for the upstream server, default 120")
    ap.add_argument("--exit-with-parent", action="store_true",
                    help="stop when the process that started this one exits (used by the tests)")
    ap.add_argument("--ready-timeout", type=float, default=180.0,
                    help="seconds to wait for GET /health/liveliness to answer 200, default 180 "
                         "(importing LiteLLM takes seconds, more on a busy machine)")
    return ap.parse_args()


def write_config(args, path):
    # JSON is YAML: LiteLLM reads the file with a YAML loader.
    config = {
        "model_list": [{
            "model_name": args.alias,
            "litellm_params": {
                # `openai/`: any OpenAI-compatible server; the name after it is sent upstream.
                "model": "openai/" + args.alias,
                "api_base": args.upstream.rstrip("/") + "/v1",
                "api_key": "none",
                "timeout": args.timeout,
                "stream_timeout": args.timeout,
            },
        }],
        # A benchmark must see the server's failures: no retries, no fallbacks.
        "router_settings": {"num_retries": 0},
        "litellm_settings": {"num_retries": 0, "request_timeout": args.timeout},
        "general_settings": {"master_key": "os.environ/LITELLM_MASTER_KEY"},
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(config, f)


def wait_ready(base_url, timeout_s, server_thread):
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        if not server_thread.is_alive():
            return f"the proxy stopped while starting ({last})"
        try:
            with urllib.request.urlopen(base_url + "/health/liveliness", timeout=5) as r:
                if r.status == 200:
                    return None
                last = f"HTTP {r.status}"
        except (urllib.error.URLError, OSError) as e:
            last = str(e)
        time.sleep(0.1)
    return f"{base_url}/health/liveliness did not answer 200 within {timeout_s} s ({last})"


def main():
    args = parse_args()
    if not os.environ.get("LITELLM_MASTER_KEY", "").strip():
        sys.exit("litellm_proxy.py: set LITELLM_MASTER_KEY (clients send it as a bearer token)")
    # Read from the installed package what LiteLLM would otherwise download.
    for var in ("LITELLM_LOCAL_MODEL_COST_MAP", "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS",
                "LITELLM_LOCAL_BLOG_POSTS"):
        os.environ.setdefault(var, "True")
    # llama.cpp's server closes a connection soon after each streamed answer, without saying
    # so (no `Connection: close`). LiteLLM puts the connection back in its pool and, when the
    # next request comes at once (a conversation's next turn), sends it on that closing
    # connection: HTTP 500 "Connection error", the request never reaching the server, and no
    # retry. That is the hop behind the proxy failing, not the server or the client measuring
    # it, so the proxy opens a fresh upstream connection for every request: an idle connection
    # older than 0 s is never reused. (Read when LiteLLM is imported.)
    os.environ.setdefault("AIOHTTP_KEEPALIVE_TIMEOUT", "0")

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, args.port))
    except OSError as e:
        sys.exit(f"litellm_proxy.py: cannot bind {HOST}:{args.port} ({e})")
    port = sock.getsockname()[1]
    base_url = f"http://{HOST}:{port}"

    workdir = tempfile.mkdtemp(prefix="servebench-litellm-")
    config_path = os.path.join(workdir, "config.yaml")
    write_config(args, config_path)
    os.environ["CONFIG_FILE_PATH"] = config_path

    try:
        import uvicorn
        from litellm.proxy.proxy_cli import ProxyInitializationHelpers
    except ImportError as e:
        sys.exit(f"litellm_proxy.py: LiteLLM's proxy is not installed ({e}): run "
                 "scripts/install-litellm.sh and start this script with .venv-litellm/bin/python")

    # The uvicorn settings the `litellm` command uses (its app, keep-alive, graceful
    # shutdown, no Server header); uvicorn serves on the socket bound above.
    uvicorn_args = ProxyInitializationHelpers.get_default_unvicorn_init_args(host=HOST, port=port)
    uvicorn_args.update(log_level="warning", access_log=False)
    server = uvicorn.Server(uvicorn.Config(**uvicorn_args))
    if args.exit_with_parent:
        parent = os.getppid()

        def watch_parent():
            # Re-parenting (to init or a subreaper) means the parent has gone.
            while not server.should_exit:
                if os.getppid() != parent:
                    server.should_exit = True
                time.sleep(0.5)

        threading.Thread(target=watch_parent, daemon=True).start()

    not_ready = []

    def announce():
        error = wait_ready(base_url, args.ready_timeout, main_thread)
        if error is not None:
            not_ready.append(error)
            print(f"litellm_proxy.py: {error}", file=sys.stderr, flush=True)
            server.should_exit = True
            return
        print(f"listening {base_url}", flush=True)

    main_thread = threading.current_thread()
    threading.Thread(target=announce, daemon=True).start()
    # uvicorn handles SIGTERM and SIGINT itself: it stops accepting, ends open
    # streams within timeout_graceful_shutdown, then ends the process by that
    # same signal (exit status 128 + its number).
    server.run(sockets=[sock])
    print("litellm_proxy.py: stopped", file=sys.stderr, flush=True)
    if not server.started or not_ready:
        sys.exit(1)


if __name__ == "__main__":
    main()
