"""enrich-facts keeps ``facts.parallel_documents`` documents with the model at once, stores
each as it finishes, and a stop cuts every reply in flight. Real PostgreSQL and LangExtract;
the model is the FAKE LM Studio (tests/fakes/model_servers.py), whose replies are slowed so
requests overlap."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from garage.config import GarageConfig
from garage.facts import enrich_facts
from garage.facts.language_model import GarageLanguageModel
from garage.ingest import ingest_source
from garage.stopping import StopSignal
from tests.fakes.model_servers import FakeState, fake_server

MODEL = "google/gemma-3-4b"
SENTENCE = "Maria leads twelve engineers."
REPLY = json.dumps({"extractions": [{"fact": SENTENCE}, {"fact": "Nothing like this here."}]})


class _InFlight:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0

    def __enter__(self) -> None:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)

    def __exit__(self, *exc: object) -> None:
        with self.lock:
            self.now -= 1


@pytest.fixture
def in_flight(monkeypatch: pytest.MonkeyPatch) -> Iterator[_InFlight]:
    """How many requests enrich-facts has with the model at once."""
    counter = _InFlight()
    original = GarageLanguageModel._ask

    def counted(self: GarageLanguageModel, prompt: str) -> str:
        with counter:
            return original(self, prompt)

    monkeypatch.setattr(GarageLanguageModel, "_ask", counted)
    yield counter


def _setup(url: str, tmp_path: Path, host: str, documents: int) -> GarageConfig:
    folder = tmp_path / "notes"
    folder.mkdir()
    for n in range(documents):
        (folder / f"note{n}.md").write_text(
            f"# Note {n}\n\nThe office opened in 20{n:02d}. {SENTENCE}\n"
        )
    config = GarageConfig.model_validate(
        {
            "sources": [{"name": "notes", "roots": [str(folder)]}],
            "embedding": {"models": []},
            "database": {"url": url},
            "inference": {"provider": "lmstudio", "model": MODEL, "lmstudio_host": host},
            "facts": {"parallel_documents": 2},
        }
    )
    with psycopg.connect(url, autocommit=True) as conn:
        ingest_source(conn, config, config.source("notes"))
    return config


def test_documents_are_extracted_two_at_a_time_and_each_is_stored(
    migrated_db: str, tmp_path: Path, in_flight: _InFlight
) -> None:
    state = FakeState(models={MODEL}, reply=REPLY, stream_delay=0.05)
    with fake_server("lmstudio", state) as host:
        config = _setup(migrated_db, tmp_path, host, documents=5)
        with psycopg.connect(migrated_db, autocommit=True) as conn:
            report = enrich_facts(conn, config, prompt_names=["default"])
    assert in_flight.most == 2
    assert (report.documents_read, report.prompts_run, report.requests) == (5, 5, 5)
    assert report.failed == 0 and report.stopped is None
    # Each note's sentence stored once, at its span; the invented one dropped in each.
    assert (report.facts_stored, report.dropped_ungrounded) == (5, 5)
    with psycopg.connect(migrated_db) as conn:
        rows = conn.execute(
            "SELECT d.content, f.start_offset, f.end_offset FROM facts f"
            " JOIN documents d ON d.id = f.document_id"
        ).fetchall()
        runs = conn.execute("SELECT count(DISTINCT document_id) FROM fact_runs").fetchone()
    assert [content[start:end] for content, start, end in rows] == [SENTENCE] * 5
    assert runs == (5,)


def test_a_stop_cuts_every_reply_in_flight_and_stores_none_of_them(
    migrated_db: str, tmp_path: Path, in_flight: _InFlight
) -> None:
    # Slow replies: each takes seconds, so both documents are surely mid-reply at the stop.
    state = FakeState(models={MODEL}, reply=REPLY, stream_delay=1.0)
    stop = StopSignal()
    with fake_server("lmstudio", state) as host:
        config = _setup(migrated_db, tmp_path, host, documents=4)

        def stop_when_both_are_in_flight() -> None:
            deadline = time.monotonic() + 30
            while in_flight.now < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            stop.request("test")

        threading.Thread(target=stop_when_both_are_in_flight, daemon=True).start()
        started = time.monotonic()
        with psycopg.connect(migrated_db, autocommit=True) as conn:
            report = enrich_facts(conn, config, prompt_names=["default"], stop=stop)
        took = time.monotonic() - started
    assert in_flight.most == 2
    assert report.stopped == "test" and report.failed == 0 and report.errors == []
    assert took < 5  # each reply would have taken about 8 s
    assert state.disconnected.wait(5)  # the fake notices at its next write
    with psycopg.connect(migrated_db) as conn:
        assert conn.execute("SELECT count(*) FROM facts").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM fact_runs").fetchone() == (0,)
