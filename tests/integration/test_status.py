"""`garage status` and search's partial note, end to end: real tutorial pages ingested, embedded
in part and then whole by the real MiniLM server, against the real test server. The chunks
waiting are the kept count (embed/backlog.py); each step checks it against the exact count."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner, Result

from garage.cli import cli
from garage.config import GarageConfig
from garage.embed.backfill import pending_count
from garage.embed.registry import find_model
from tests.conftest import LlamaServers, llama_config
from tests.integration.search_helpers import tutorial

MODEL = "all-minilm-l6-v2"


@dataclass(frozen=True)
class Index:
    url: str
    root: Path
    config: GarageConfig
    runner: CliRunner

    def run(self, *args: str, code: int = 0) -> Result:
        result = self.runner.invoke(cli, list(args))
        assert result.exit_code == code, (args, result.output, result.exception)
        return result

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "--json").stdout)

    def status(self) -> dict[str, dict[str, Any]]:
        return {s["name"]: s for s in self.json("status")["sources"]}

    def exact(self, source: str) -> int:
        """The chunks without a vector, counted the slow way."""
        with psycopg.connect(self.url, autocommit=True) as conn:
            return pending_count(conn, find_model(conn, MODEL), source)


@pytest.fixture
def index(
    isolated_env: Path, migrated_db: str, llama: LlamaServers, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Index]:
    docs = tutorial(isolated_env / "docs", ["appetite", "interpreter", "introduction"])
    notes = tutorial(isolated_env / "notes", ["errors"])
    sources = [{"name": "docs", "roots": [str(docs)]}, {"name": "notes", "roots": [str(notes)]}]
    # A query's embedding may queue behind other work here: a search must not degrade for it.
    config = llama_config(llama, sources=sources, search={"embed_timeout_seconds": 300})
    (isolated_env / "garage.json").write_text(json.dumps(config.model_dump(mode="json")))
    monkeypatch.setenv("GARAGE_DATABASE_URL", migrated_db)
    yield Index(migrated_db, isolated_env, config, CliRunner())


def _model(status: dict[str, Any]) -> dict[str, Any]:
    [model] = status["models"]
    assert model["model"] == MODEL
    return model


def test_status_counts_what_waits_and_estimates_once_a_rate_is_measured(index: Index) -> None:
    index.run("ingest")
    before = index.status()
    assert before["docs"]["documents"] == 3 and before["notes"]["documents"] == 1
    assert before["docs"]["last_ingest"]["completed"] is True
    assert before["docs"]["last_ingest"]["failed"] == 0
    assert before["docs"]["models"] == []  # no model registered yet
    text = index.run("status").stdout
    assert "docs (files): 3 documents indexed" in text and "no embedding model registered" in text

    index.run("models", "list")  # registers the model: every chunk waits for it
    chunks = {name: s["chunks"] for name, s in index.status().items()}
    registered = index.status()
    for name in ("docs", "notes"):
        model = _model(registered[name])
        assert model["pending"] == chunks[name] == index.exact(name) > 5
        assert model["embedded"] == 0
        assert model["rate"] is None and model["seconds_left"] is None
        assert "rate unknown" in model["estimate"]
    assert "rate unknown" in index.run("status", "docs").stdout

    index.run("embed", "docs", "--limit", "6")
    partly = index.status()
    docs, notes = _model(partly["docs"]), _model(partly["notes"])
    assert docs["embedded"] == 6 and docs["pending"] == chunks["docs"] - 6 == index.exact("docs")
    assert notes["pending"] == chunks["notes"] == index.exact("notes")
    rate = docs["rate"]
    assert rate["runs"] == 1 and rate["chunks"] == 6 and rate["chunks_per_second"] > 0
    assert docs["seconds_left"] == pytest.approx(docs["pending"] / rate["chunks_per_second"])
    assert "left at" in docs["estimate"] and "(measured over the last 1 run)" in docs["estimate"]
    shown = index.run("status", "docs").stdout
    assert f"{MODEL} (default): 6 chunks embedded, {docs['pending']} waiting; " in shown
    assert docs["estimate"] in shown
    assert "notes" not in shown
    overall = index.json("status")["all_sources"]
    assert overall[0]["pending"] == docs["pending"] + notes["pending"]

    index.run("embed")
    whole = index.status()
    for name in ("docs", "notes"):
        model = _model(whole[name])
        assert model["pending"] == 0 == index.exact(name)
        assert model["embedded"] == chunks[name] and model["estimate"] == "nothing waiting"
    assert _model(whole["docs"])["rate"]["runs"] == 2  # the whole run counts, and the first


def test_status_of_a_source_never_ingested_and_of_none(index: Index) -> None:
    assert "notes: never ingested (`garage ingest notes`)" in index.run("status", "notes").stdout
    result = index.run("status", "nowhere", code=1)
    assert "no source named 'nowhere'" in result.output


def test_search_says_how_many_chunks_its_vector_leg_could_not_see(index: Index) -> None:
    from garage.ask.tools import CorpusTools
    from garage.db.runtime import Runtime

    index.run("ingest")
    index.run("embed", "docs", "--limit", "6")
    waiting = {name: index.exact(name) for name in ("docs", "notes")}
    assert all(waiting.values())

    everywhere = index.json("search", "the Python interpreter")
    assert everywhere["mode"] == "hybrid" and everywhere["vector_model"] == MODEL
    assert everywhere["pending_chunks"] == waiting["docs"] + waiting["notes"]
    assert everywhere["partial"] == (
        f"partial: {everywhere['pending_chunks']:,} chunks not yet embedded under {MODEL}"
    )
    assert everywhere["hits"], "the keyword leg sees every chunk"
    in_docs = index.json("search", "the Python interpreter", "--source", "docs")
    assert in_docs["pending_chunks"] == waiting["docs"]
    vector = index.json("search", "the Python interpreter", "--mode", "vector")
    assert vector["pending_chunks"] == everywhere["pending_chunks"]
    keyword = index.json("search", "the Python interpreter", "--mode", "keyword")
    assert keyword["pending_chunks"] is None and keyword["partial"] is None
    said = index.run("search", "the Python interpreter", "--source", "notes")
    assert f"partial: {waiting['notes']} chunks not yet embedded under {MODEL}" in said.stderr

    tools = CorpusTools(Runtime(index.config, index.url))
    response = tools.rag_search("the Python interpreter", sources=["docs"])
    assert response.pending_chunks == waiting["docs"] and response.partial is not None

    index.run("embed")
    whole = index.json("search", "the Python interpreter")
    assert whole["pending_chunks"] == 0 and whole["partial"] is None
    assert "partial:" not in index.run("search", "the Python interpreter").output
    assert tools.rag_search("the Python interpreter").partial is None


def test_the_kept_count_follows_ingest_and_embed(index: Index) -> None:
    """New chunks add to it as they are written; an edit of embedded text keeps it exact; a
    file removed before it was embedded stays counted (its vectors cannot say) until the next
    backfill of its source counts again."""
    docs = index.root / "docs"

    def waiting() -> int:
        return int(_model(index.status()["docs"])["pending"])

    index.run("ingest", "docs")
    index.run("embed", "docs")
    assert waiting() == 0 == index.exact("docs")
    tutorial(docs, ["controlflow"])
    index.run("ingest", "docs")
    assert waiting() == index.exact("docs") > 0
    index.run("embed", "docs")
    appetite = docs / "appetite.txt"
    appetite.write_text(appetite.read_text() + "\n\nA new closing paragraph about spam.\n")
    index.run("ingest", "docs")
    assert waiting() == index.exact("docs") > 0  # the edited chunks, the rest kept their vectors
    index.run("embed", "docs")
    assert waiting() == 0
    shutil.copy(docs / "interpreter.txt", docs / "copy.txt")
    index.run("ingest", "docs")
    added = waiting()
    assert added == index.exact("docs") > 0
    (docs / "copy.txt").unlink()
    index.run("ingest", "docs")
    assert index.exact("docs") == 0 and waiting() == added  # counted until the next backfill
    index.run("embed", "docs")
    assert waiting() == 0


def test_a_database_migrated_with_models_registered_gets_their_count(
    blank_db: str, tmp_path: Path
) -> None:
    """Migration 012 counts what waits under every model registered before it."""
    from garage.db.migrate import discover, migrate
    from garage.embed.model import RegisteredModel
    from garage.embed.tables import ensure_tables

    before = tmp_path / "schema"
    before.mkdir()
    for migration in discover():
        if migration.version < 12:
            shutil.copy(migration.path, before / migration.path.name)
    model = RegisteredModel("m", "m", "llama_server", "http://127.0.0.1:1", "m", 3, "text",
                            "cosine", False, True)  # fmt: skip
    with psycopg.connect(blank_db, autocommit=True) as conn:
        migrate(conn, before)  # type: ignore[arg-type]
        conn.execute(
            "INSERT INTO embedding_models (name, slug, provider, host, model_id, dimensions,"
            " is_default) VALUES ('m', 'm', 'llama_server', 'http://127.0.0.1:1', 'm', 3, true)"
        )
        ensure_tables(conn, model)
        for name in ("a", "b"):
            source = conn.execute(
                "INSERT INTO sources (name, kind, corpus_class) VALUES (%s, 'files', 'document')"
                " RETURNING id",
                (name,),
            ).fetchone()[0]  # type: ignore[index]
            document = conn.execute(
                "INSERT INTO documents (source_id, uri, corpus_class, content, source_sha256,"
                " content_sha256, size_bytes, mtime_ns, extractor, extractor_version)"
                " VALUES (%s, 'file:///x', 'document', 'one two three', 'x', 'y', 13, 1,"
                " 'text', 1) RETURNING id",
                (source,),
            ).fetchone()[0]  # type: ignore[index]
            for ord_, word in enumerate(("one", "two", "three")):
                conn.execute(
                    "INSERT INTO chunks (document_id, ord, text, text_sha256, start_offset,"
                    " end_offset, chunker) VALUES (%s, %s, %s, %s, 0, 3, 'recursive:1000/100')",
                    (document, ord_, word, word),
                )
        # Source a: one of its three chunks has a vector.
        conn.execute(
            "INSERT INTO emb_m (chunk_id, embedding) SELECT min(c.id), '[1,0,0]' FROM chunks c"
            " JOIN documents d ON d.id = c.document_id JOIN sources s ON s.id = d.source_id"
            " WHERE s.name = 'a'"
        )
        migrate(conn)  # type: ignore[arg-type]
        rows = conn.execute(
            "SELECT s.name, b.pending FROM embedding_backlog b JOIN sources s"
            " ON s.id = b.source_id ORDER BY s.name"
        ).fetchall()
        assert rows == [("a", 2), ("b", 3)]
        # From here on, new chunks add to it.
        document = conn.execute("SELECT min(id) FROM documents").fetchone()[0]  # type: ignore[index]
        conn.execute(
            "INSERT INTO chunks (document_id, ord, text, text_sha256, start_offset,"
            " end_offset, chunker) VALUES (%s, 9, 'four', 'four', 0, 4, 'recursive:1000/100')",
            (document,),
        )
        assert conn.execute(
            "SELECT pending FROM embedding_backlog b JOIN sources s ON s.id = b.source_id"
            " WHERE s.name = 'a'"
        ).fetchone() == (3,)


MAIL = """\
From: Alice Martin <alice@example.net>
To: Jane Doe <jane@example.org>
Subject: The harbour lamps
Date: Mon, 04 Mar 2024 10:00:00 +0000
Message-ID: <lamps1@example.net>
Content-Type: text/plain; charset=utf-8

The lamps on the breakwater are lit again; the harbour office fixed them on Friday.
"""


def test_long_runs_tell_their_bars_how_much_is_coming(index: Index) -> None:
    """What a bar's time left comes from: embed says the chunks it will embed, enrich-facts the
    documents it will work on (fewer as it finds them current); by the end what was done and
    what was expected agree."""
    from garage.embed import embed
    from garage.facts import enrich_facts
    from garage.inference import EgressGuard, InferenceClient

    (index.root / "notes" / "lamps.eml").write_text(MAIL)
    index.run("ingest")
    calls: list[tuple[int, int]] = []

    def progress(done: int, expected: int = 0) -> None:
        calls.append((done, expected))

    with (
        psycopg.connect(index.url, autocommit=True) as conn,
        InferenceClient(EgressGuard.from_config(index.config)) as client,
    ):
        [limited] = embed(conn, client, index.config, source="docs", limit=5, progress=progress)
        assert calls[0] == (0, 5) and sum(d for d, _ in calls) == 5 == limited.vectors_written
        calls.clear()
        [whole] = embed(conn, client, index.config, source="docs", progress=progress)
        assert calls[0] == (0, whole.pending) and whole.pending > 0
        assert sum(d for d, _ in calls) == whole.pending == whole.vectors_written

        calls.clear()
        report = enrich_facts(conn, index.config, prompt_names=["metadata"], progress=progress)
        documents = int(conn.execute("SELECT count(*) FROM documents").fetchone()[0])  # type: ignore[index]
        # Every document was a candidate; only the mail has headers to read facts from.
        assert calls[0] == (0, documents) and report.documents_read == 1
        assert sum(e for _, e in calls) == sum(d for d, _ in calls) == 1
