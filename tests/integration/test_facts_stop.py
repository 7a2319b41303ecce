"""SIGTERM stops `garage enrich-facts` within seconds, in the middle of a model's reply.

A document's extraction is several requests of up to ``facts.max_tokens`` each; on the 1.5B
model a long mail thread took over 70 s, and a stop looked at only between documents waited for
all of it. The stop now cancels the reply in flight (the stream is closed, so llama-server
stops generating too), nothing of the document is stored, and its prompts stay stale for the
next run. Real llama-server with Qwen2.5-Coder-1.5B (slow enough that a reply is surely in
flight), real prose.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import httpx
import psycopg

from garage.inference.model_key import auth_headers, load_key
from tests.integration.fault_helpers import ROOT, garage, run_to_end
from tests.material import material

QWEN = "qwen2.5-coder-1.5b-instruct"
DOCS = "usr/share/doc/python3.11-doc/html/_sources"


def _slots(url: str) -> list[dict[str, object]]:
    headers = auth_headers("llama_server", url, load_key())
    slots: list[dict[str, object]] = httpx.get(f"{url}/slots", headers=headers, timeout=5).json()
    return slots


def _busy_slots(url: str) -> int:
    return sum(bool(slot.get("is_processing")) for slot in _slots(url))


def _writing(url: str) -> bool:
    """A slot has read its prompt and is writing the reply (tokens decoded)."""
    for slot in _slots(url):
        progress = slot.get("next_token")
        decoded = progress[0].get("n_decoded", 0) if isinstance(progress, list) else 0
        if slot.get("is_processing") and decoded:
            return True
    return False


def test_sigterm_stops_enrich_facts_mid_reply_within_seconds(
    migrated_db: str, tmp_path: Path
) -> None:
    url = os.environ.get("GARAGE_TEST_LLAMA_CHAT_LARGE_URL")
    assert url, "scripts/test starts the Qwen server (scripts/llama start --large)"
    folder = tmp_path / "docs"
    folder.mkdir()
    for page in ("tutorial/controlflow.rst.txt", "tutorial/datastructures.rst.txt"):
        source = material("python3.11-doc") / DOCS / page
        (folder / Path(page).name).write_text(source.read_text(encoding="utf-8")[:12_000])
    config = {
        "sources": [{"name": "docs", "roots": [str(folder)]}],
        "inference": {"provider": "llama_server", "llama_host": url},
        "facts": {"provider": "llama_server", "model": QWEN},
    }
    path = tmp_path / "garage.json"
    path.write_text(json.dumps(config))
    env = dict(
        os.environ,
        GARAGE_CONFIG=str(path),
        GARAGE_DATABASE_URL=migrated_db,
        GARAGE_DATA_DIR=str(tmp_path / "data"),
    )
    run_to_end(garage("ingest"), env)
    # The shared server may still be finishing an earlier test's request: start from idle.
    idle_by = time.monotonic() + 300
    while _busy_slots(url) and time.monotonic() < idle_by:
        time.sleep(0.5)
    assert _busy_slots(url) == 0

    process = subprocess.Popen(
        garage("enrich-facts", "--json"),
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    # Mid-reply: the prompt read, tokens being written. (A stop while llama-server still
    # reads a prompt ends the process as quickly, but the server finishes that prompt batch
    # before it notices the client is gone.)
    while not _writing(url):
        assert process.poll() is None, process.communicate()[1][-2000:]
        assert time.monotonic() < deadline, "no reply was being written"
        time.sleep(0.05)
    signalled = time.monotonic()
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)
    took = time.monotonic() - signalled
    assert process.returncode == 143, err[-2000:]
    assert took <= 10, f"enrich-facts took {took:.1f} s to stop"
    report = json.loads(out)
    # Recorded as stopped, with nothing counted as failed for the document cut short.
    assert report["stopped"] == "terminated (SIGTERM)"
    assert report["failed"] == 0 and report["errors"] == []
    # The server stopped generating too: the next request does not wait behind this one.
    idle_by = time.monotonic() + 5
    while _busy_slots(url) and time.monotonic() < idle_by:
        time.sleep(0.1)
    assert _busy_slots(url) == 0
    with psycopg.connect(migrated_db) as conn:
        runs = conn.execute("SELECT count(*) FROM fact_runs WHERE prompt_name <> 'metadata'")
        row = runs.fetchone()
    # The document in hand stored nothing, so no prompt run of it is current.
    assert row is not None and row[0] == 0
    print(f"enrich-facts stopped {took:.2f} s after SIGTERM, mid-reply")
