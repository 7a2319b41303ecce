"""Speculative decoding for the local chat model, measured on Garage's own requests.

Two steps, so that the comparison is of the very same requests:

1. ``record``: a loopback proxy in front of a chat server writes every chat request that
   passes through it to a JSON-lines file. Point ``bench/answers.py --chat MODEL=URL`` or
   ``bench/facts.py --model-url URL`` at the proxy and they record real rag_ask prompts and
   real fact-extraction requests (instructions, examples, a document's chunk).

       python bench/speculative.py record --upstream http://127.0.0.1:18083 \\
           --port 18095 --out /tmp/requests.jsonl

2. ``replay``: the recorded requests are sent to a baseline server and to servers started with
   speculative decoding, one request at a time and in alternating order (A B, then B A), so
   that other load on the machine falls on both alike. Greedy speculative decoding must write
   the very same tokens; every reply is compared with the baseline's and a difference counted.

       python bench/speculative.py replay --requests /tmp/requests.jsonl \\
           --variant base= --variant ngram='--spec-type ngram-simple' \\
           --variant draft='--model-draft ~/.cache/garage/models/qwen2.5-coder-0.5b-...gguf'

   Each variant is a llama-server started by this script on its own loopback port with the
   flags ``scripts/llama`` gives the chat_large server plus the variant's own; all stop when
   the replay ends. The table gives per variant: whole-request p50, generation tokens/s from
   the server's own timings (its ``predicted_per_second``), the draft tokens accepted, and
   the ratio to the first variant.

Traffic goes to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.servers import server_binary  # noqa: E402
from garage.inference.model_key import auth_headers, load_key  # noqa: E402

MODEL = Path.home() / ".cache/garage/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
# What scripts/llama starts chat_large with (its --threads is $(nproc)).
SCRIPT_FLAGS = "--threads 2 --jinja -c 16384 -np 2"
CHAT_PATH = "/v1/chat/completions"


def record(upstream: str, port: int, out: Path) -> None:
    """Forward everything to ``upstream`` and append each chat request's body to ``out``."""
    host = urlsplit(upstream).hostname or ""
    if not (host.startswith("127.") or host in ("::1", "localhost")):
        raise SystemExit(f"--upstream {upstream}: a benchmark talks to loopback servers only")
    lock = threading.Lock()
    client = httpx.Client(base_url=upstream, timeout=600)

    class Handler(BaseHTTPRequestHandler):
        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            if self.path.startswith(CHAT_PATH) and body:
                with lock, out.open("a") as sink:
                    sink.write(json.dumps(json.loads(body)) + "\n")
            forwarded = ("authorization", "content-type")
            headers = {k: v for k, v in self.headers.items() if k.lower() in forwarded}
            # The reply is read whole before it is passed on: a recording needs the request,
            # not the stream's timing.
            reply = client.request(self.command, self.path, content=body, headers=headers)
            self.send_response(reply.status_code)
            for k, v in reply.headers.items():
                if k.lower() in ("content-type",):
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(reply.content)))
            self.end_headers()
            self.wfile.write(reply.content)

        do_GET = do_POST = _forward

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"recording chat requests to {out}; proxy on http://127.0.0.1:{port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


@dataclass
class Variant:
    name: str
    flags: str
    port: int
    process: subprocess.Popen[bytes] | None = None
    seconds: list[float] = field(default_factory=list)
    rates: list[float] = field(default_factory=list)
    drafted: int = 0
    accepted: int = 0
    tokens: int = 0
    differ: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def start(variant: Variant, logs: Path) -> None:
    command = [
        server_binary(), "--host", "127.0.0.1", "--port", str(variant.port), "-m", str(MODEL),
        "--alias", "qwen2.5-coder-1.5b-instruct", "--no-webui", "--offline",
        *shlex.split(SCRIPT_FLAGS),
        *(str(Path(flag).expanduser()) for flag in shlex.split(variant.flags)),
    ]  # fmt: skip
    log = (logs / f"speculative-{variant.name}.log").open("wb")
    variant.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(variant.url + "/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if variant.process.poll() is not None:
            raise SystemExit(f"{variant.name}: llama-server ended; see {log.name}")
        time.sleep(1)
    raise SystemExit(f"{variant.name}: llama-server did not come up in 120 s")


def send(variant: Variant, request: dict[str, Any]) -> str:
    body = dict(request, stream=False)
    body.pop("stream_options", None)
    headers = auth_headers("llama-server", variant.url, load_key())
    started = time.monotonic()
    reply = httpx.post(variant.url + CHAT_PATH, json=body, headers=headers, timeout=900)
    reply.raise_for_status()
    variant.seconds.append(time.monotonic() - started)
    data = reply.json()
    timings = data.get("timings") or {}
    if timings.get("predicted_per_second"):
        variant.rates.append(float(timings["predicted_per_second"]))
    variant.tokens += int(timings.get("predicted_n") or 0)
    variant.drafted += int(timings.get("draft_n") or 0)
    variant.accepted += int(timings.get("draft_n_accepted") or 0)
    return str(data["choices"][0]["message"].get("content") or "")


def replay(requests: list[dict[str, Any]], variants: list[Variant], logs: Path) -> None:
    for variant in variants:
        start(variant, logs)
    try:
        for n, request in enumerate(requests):
            order = variants if n % 2 == 0 else variants[::-1]
            replies = {v.name: send(v, request) for v in order}
            base = replies[variants[0].name]
            for v in variants[1:]:
                v.differ += replies[v.name] != base
            print(f"  {n + 1}/{len(requests)}", end="\r", flush=True, file=sys.stderr)
    finally:
        for variant in variants:
            if variant.process:
                variant.process.terminate()
                variant.process.wait(timeout=30)
    report(variants, len(requests))


def report(variants: list[Variant], count: int) -> None:
    first = variants[0]
    base_p50 = statistics.median(first.seconds)
    base_rate = statistics.median(first.rates) if first.rates else 0.0
    print(f"{count} recorded requests, each sent to every variant, order alternating")
    print(
        f"{'variant':10} {'whole p50 s':>11} {'×':>5} {'gen tok/s p50':>13} {'×':>5} "
        f"{'tokens':>7} {'accepted/drafted':>17} {'replies differ':>14}  flags"
    )
    for v in variants:
        p50 = statistics.median(v.seconds)
        rate = statistics.median(v.rates) if v.rates else 0.0
        accepted = f"{v.accepted}/{v.drafted}" if v.drafted else "-"
        print(
            f"{v.name:10} {p50:11.2f} {base_p50 / p50:5.2f} {rate:13.1f} "
            f"{(rate / base_rate) if base_rate else 0:5.2f} {v.tokens:7d} {accepted:>17} "
            f"{v.differ if v is not first else '-':>14}  {v.flags or '(as scripts/llama)'}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    steps = parser.add_subparsers(dest="step", required=True)
    rec = steps.add_parser("record", help="a recording proxy in front of a chat server")
    rec.add_argument("--upstream", default="http://127.0.0.1:18083")
    rec.add_argument("--port", type=int, default=18095)
    rec.add_argument("--out", type=Path, required=True)
    rep = steps.add_parser("replay", help="the recorded requests against server variants")
    rep.add_argument("--requests", type=Path, required=True)
    rep.add_argument("--variant", action="append", metavar="NAME=FLAGS", required=True,
                     help="the first is the baseline (repeatable)")  # fmt: skip
    rep.add_argument("--limit", type=int, help="the first N requests only")
    rep.add_argument("--first-port", type=int, default=18096)
    rep.add_argument("--logs", type=Path, default=Path("/tmp"))
    args = parser.parse_args()
    if args.step == "record":
        record(args.upstream, args.port, args.out)
        return
    requests = [json.loads(line) for line in args.requests.read_text().splitlines() if line]
    if args.limit:
        requests = requests[: args.limit]
    variants = [
        Variant(name, flags, args.first_port + i)
        for i, (name, flags) in enumerate(v.split("=", 1) for v in args.variant)
    ]
    replay(requests, variants, args.logs)


if __name__ == "__main__":
    main()
