"""Faults during ingest: nothing is deleted by a run that did not finish, and one document's
failure costs that document alone. Real PostgreSQL, real files; the faults are injected by
wrappers around the real stages (named ``fault_*``), or are real database refusals."""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from dagster import DagsterExecutionInterruptedError

import garage.ingest.attribution as attribution
import garage.ingest.conversations as conversations
import garage.ingest.pipeline as pipeline
import garage.ingest.stages as stages
from garage.stopping import StopSignal
from tests.chatdb import ChatDb
from tests.integration.ingest_helpers import PROSE, make_config, rows, run_ingest


def notes_folder(root: Path, count: int, edition: str = "first") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        (root / f"note{i:02d}.md").write_text(
            f"# Note {i}\n\n{PROSE}\n\nThis is the {edition} edition of note {i}.\n"
        )
    return root


def documents(url: str) -> dict[str, str]:
    """uri -> content of every document."""
    return dict(rows(url, "SELECT uri, content FROM documents"))  # type: ignore[arg-type]


def last_run(url: str) -> tuple[bool, str | None, int, Any]:
    [row] = rows(
        url,
        "SELECT completed, stop_reason, deleted_count, finished_at FROM ingest_runs"
        " ORDER BY id DESC LIMIT 1",
    )
    return row  # type: ignore[return-value]


def fault_on_call(target: Callable[..., Any], at: int, raise_: Callable[..., Any]) -> Any:
    """A fault-injecting wrapper: the ``at``-th call (1-based) runs ``raise_(*args)`` instead."""
    calls = {"n": 0}

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == at:
            raise_(*args, **kwargs)
        return target(*args, **kwargs)

    wrapper.calls = calls  # type: ignore[attr-defined]
    return wrapper


def real_data_error(conn: psycopg.Connection[Any], *args: Any, **kwargs: Any) -> None:
    # A real refusal by PostgreSQL, inside the document's transaction: text with a NUL.
    conn.execute("SELECT %s::text", ("bad\x00text",))


@pytest.fixture
def ten_notes(migrated_db: str, tmp_path: Path) -> tuple[Any, Path]:
    folder = notes_folder(tmp_path / "notes", 10)
    config = make_config(tmp_path, [{"name": "notes", "roots": [str(folder)]}])
    first = run_ingest(migrated_db, config, "notes")
    assert first.completed and first.indexed == 10
    notes_folder(folder, 10, edition="second")  # every note changed: each is stored again
    return config, folder


def test_a_database_error_on_one_note_costs_that_note_only(
    migrated_db: str, ten_notes: tuple[Any, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    config, folder = ten_notes
    before = documents(migrated_db)
    store = fault_on_call(stages.store_document, 3, real_data_error)
    monkeypatch.setattr(stages, "store_document", store)
    report = run_ingest(migrated_db, config, "notes")
    assert store.calls["n"] == 10
    assert (report.completed, report.indexed, report.failed, report.deleted) == (True, 9, 1, 0)
    after = documents(migrated_db)
    assert after.keys() == before.keys()
    # The failing note keeps its older row; every other note has its new text.
    stale = [uri for uri in after if after[uri] == before[uri]]
    assert len(stale) == 1 and "first edition" in after[stale[0]]
    assert all("second edition" in after[u] for u in after if u not in stale)
    outcome = rows(migrated_db, "SELECT uri, outcome, reason FROM ingest_outcomes")
    assert [(u, o) for u, o, _ in outcome] == [(stale[0], "failed")]
    assert "CharacterNotInRepertoire" in outcome[0][2] or "0x00" in outcome[0][2]
    # Its chunks are the older ones, whole.
    [(chunks,)] = rows(
        migrated_db,
        "SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.document_id"
        " WHERE d.uri = %s AND c.text LIKE '%%first edition%%'",
        stale[0],
    )
    assert chunks == 1
    # Tried again on the next run (a database refusal may be gone by then), and stored.
    monkeypatch.setattr(stages, "store_document", _real_store)
    again = run_ingest(migrated_db, config, "notes")
    assert (again.indexed, again.failed, again.completed) == (1, 0, True)
    assert rows(migrated_db, "SELECT count(*) FROM ingest_outcomes") == [(0,)]


_real_store = stages.store_document


@pytest.mark.parametrize(
    "interruption",
    [
        DagsterExecutionInterruptedError("run terminated"),
        KeyboardInterrupt(),
        SystemExit(1),
    ],
    ids=["dagster-terminate", "ctrl-c", "system-exit"],
)
def test_an_interrupted_walk_deletes_nothing(
    migrated_db: str,
    ten_notes: tuple[Any, Path],
    monkeypatch: pytest.MonkeyPatch,
    interruption: BaseException,
) -> None:
    config, _ = ten_notes
    # No deletion guard to hide behind: only the walk's completeness protects the notes.
    config = config.model_copy(
        update={"limits": config.limits.model_copy(update={"deletion_guard_ratio": 1.0})}
    )

    def interrupt(*args: Any, **kwargs: Any) -> None:
        raise interruption

    monkeypatch.setattr(
        stages, "store_document", fault_on_call(stages.store_document, 3, interrupt)
    )
    with pytest.raises(type(interruption)):
        run_ingest(migrated_db, config, "notes")
    assert len(documents(migrated_db)) == 10
    completed, reason, deleted, finished = last_run(migrated_db)
    assert (completed, deleted) == (False, 0) and finished is not None
    assert reason is not None and type(interruption).__name__ in reason


def test_an_error_outside_any_document_stops_the_run_without_deleting(
    migrated_db: str, ten_notes: tuple[Any, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    config, _ = ten_notes
    real_walk = pipeline.walk

    def fault_walk(*args: Any, **kwargs: Any) -> Any:
        for n, item in enumerate(real_walk(*args, **kwargs)):
            if n == 4:
                raise OSError(5, "Input/output error", "/the/volume")
            yield item

    monkeypatch.setattr(pipeline, "walk", fault_walk)
    with pytest.raises(OSError):
        run_ingest(migrated_db, config, "notes")
    assert len(documents(migrated_db)) == 10
    completed, reason, deleted, _ = last_run(migrated_db)
    assert (completed, deleted) == (False, 0)
    assert reason is not None and "Input/output error" in reason


def test_a_stop_request_ends_the_walk_between_documents(
    migrated_db: str, ten_notes: tuple[Any, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    config, _ = ten_notes
    stop = StopSignal()
    real = stages.store_document

    def store_then_ask_to_stop(conn: Any, record: Any, chunks: Any) -> Any:
        stop.request("terminated (SIGTERM)")  # as the SIGTERM handler does
        return real(conn, record, chunks)

    monkeypatch.setattr(stages, "store_document", store_then_ask_to_stop)
    report = run_ingest(migrated_db, config, "notes", stop=stop)
    # The document in hand was finished, then the walk stopped: incomplete, nothing deleted.
    assert (report.indexed, report.completed, report.deleted) == (1, False, 0)
    assert report.stop_reason == "terminated (SIGTERM)"
    assert len(documents(migrated_db)) == 10
    assert last_run(migrated_db)[:2] == (False, "terminated (SIGTERM)")


# -- faults at random points of every stage ---------------------------------------------------

STAGES = {
    "extract": (pipeline, "extract"),
    "attribute": (attribution, "attribute"),
    "store": (stages, "store_document"),
}


def _chunk_fault(monkeypatch: pytest.MonkeyPatch, at: int) -> None:
    real_chunker_for = pipeline.chunker_for
    calls = {"n": 0}

    class FaultChunker:
        def __init__(self, inner: Any):
            self.inner = inner
            self.signature = inner.signature

        def split(self, text: str) -> Any:
            calls["n"] += 1
            if calls["n"] == at:
                raise RuntimeError("injected fault in the chunker")
            return self.inner.split(text)

    monkeypatch.setattr(
        pipeline, "chunker_for", lambda *a, **k: FaultChunker(real_chunker_for(*a, **k))
    )


@pytest.mark.parametrize("seed", range(6))
def test_a_fault_at_a_random_point_costs_one_document(
    migrated_db: str, ten_notes: tuple[Any, Path], monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    config, _ = ten_notes
    rng = random.Random(seed)
    stage = rng.choice([*STAGES, "chunk"])
    at = rng.randint(1, 10)
    before = documents(migrated_db)
    if stage == "chunk":
        _chunk_fault(monkeypatch, at)
    else:
        module, name = STAGES[stage]

        def fault(*args: Any, **kwargs: Any) -> None:
            raise RuntimeError(f"injected fault in {stage}")

        monkeypatch.setattr(module, name, fault_on_call(getattr(module, name), at, fault))
    report = run_ingest(migrated_db, config, "notes")
    assert (report.completed, report.failed, report.deleted) == (True, 1, 0), (stage, at)
    assert report.indexed == 9
    after = documents(migrated_db)
    assert after.keys() == before.keys()
    stale = [uri for uri in after if after[uri] == before[uri]]
    assert len(stale) == 1, (stage, at)
    [(uri, outcome)] = rows(migrated_db, "SELECT uri, outcome FROM ingest_outcomes")
    assert (uri, outcome) == (stale[0], "failed")
    assert any("injected fault" in line for line in report.errors)


@pytest.mark.parametrize("seed", range(4))
def test_an_interruption_at_a_random_point_deletes_nothing(
    migrated_db: str, ten_notes: tuple[Any, Path], monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    config, _ = ten_notes
    config = config.model_copy(
        update={"limits": config.limits.model_copy(update={"deletion_guard_ratio": 1.0})}
    )
    rng = random.Random(100 + seed)
    module, name = STAGES[rng.choice(list(STAGES))]
    at = rng.randint(1, 10)
    before = documents(migrated_db)

    def interrupt(*args: Any, **kwargs: Any) -> None:
        raise DagsterExecutionInterruptedError("terminated")

    monkeypatch.setattr(module, name, fault_on_call(getattr(module, name), at, interrupt))
    with pytest.raises(DagsterExecutionInterruptedError):
        run_ingest(migrated_db, config, "notes")
    after = documents(migrated_db)
    assert after.keys() == before.keys()
    new = [u for u in after if "second edition" in after[u]]
    assert len(new) == at - 1  # every document before the interruption is stored
    assert last_run(migrated_db)[:3] == (
        False,
        "DagsterExecutionInterruptedError: terminated",
        0,
    )


# -- the poison file ---------------------------------------------------------------------------


def poison(path: Path) -> Path:
    """UTF-16 with a BOM holding U+0000: text by its BOM, refused by PostgreSQL as text."""
    path.write_bytes(("\ufeffA note\x00 with a NUL in it, " * 20).encode("utf-16-le"))
    return path


def test_the_poison_file_mid_tree_fails_alone_and_does_not_stop_the_next_run(
    migrated_db: str, tmp_path: Path
) -> None:
    folder = notes_folder(tmp_path / "notes", 6)
    (folder / "sub").mkdir()
    notes_folder(folder / "sub", 3)
    poison(folder / "sub" / "m-poison.txt")
    config = make_config(tmp_path, [{"name": "notes", "roots": [str(folder)]}])
    report = run_ingest(migrated_db, config, "notes")
    assert (report.completed, report.indexed, report.failed) == (True, 9, 1)
    [(uri, outcome, reason)] = rows(migrated_db, "SELECT uri, outcome, reason FROM ingest_outcomes")
    assert uri.endswith("m-poison.txt") and outcome == "failed" and "NUL" in reason
    again = run_ingest(migrated_db, config, "notes")
    assert (again.completed, again.stat_skipped, again.deleted) == (True, 10, 0)


def test_a_nul_that_reaches_the_store_is_a_failed_outcome(
    migrated_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next unknown failure: text an extractor lets through, that PostgreSQL refuses."""
    folder = notes_folder(tmp_path / "notes", 4)
    config = make_config(tmp_path, [{"name": "notes", "roots": [str(folder)]}])
    real_extract = pipeline.extract

    def fault_extract_with_nul(path: Path, data: bytes) -> Any:
        extraction = real_extract(path, data)
        if path.name == "note02.md":
            from dataclasses import replace

            return replace(extraction, text=extraction.text + "\x00")
        return extraction

    monkeypatch.setattr(pipeline, "extract", fault_extract_with_nul)
    report = run_ingest(migrated_db, config, "notes")
    assert (report.completed, report.indexed, report.failed) == (True, 3, 1)
    assert any("note02.md" in line for line in report.errors)


# -- Messages ----------------------------------------------------------------------------------


def five_chats(path: Path) -> tuple[ChatDb, list[tuple[int, int]]]:
    """A chat.db of five one-to-one threads; returns it and each thread's (chat, handle)."""
    db = ChatDb(path)
    threads = []
    for i in range(5):
        handle = db.handle(f"+1555010{i}")
        chat, _ = db.chat([handle])
        db.message(f"Message {i} about the ferry timetable", chat=chat, handle=handle)
        db.message(f"Reply {i}: thanks, see you there", chat=chat, handle=handle, from_me=True)
        threads.append((chat, handle))
    return db, threads


def test_a_chat_that_fails_to_store_costs_that_chat_only(
    migrated_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "Messages"
    folder.mkdir()
    db, threads = five_chats(folder / "chat.db")
    config = make_config(
        tmp_path,
        [
            {
                "name": "chats",
                "kind": "messages",
                "roots": [str(folder)],
                "corpus_class": "communication",
            }
        ],
        limits={"deletion_guard_ratio": 1.0},
    )
    assert run_ingest(migrated_db, config, "chats").indexed == 5
    for i, (chat, handle) in enumerate(threads):  # every thread gains a message
        db.message(f"Later message {i}", chat=chat, handle=handle)

    monkeypatch.setattr(
        conversations,
        "store_document",
        fault_on_call(conversations.store_document, 4, real_data_error),
    )
    report = run_ingest(migrated_db, config, "chats")
    assert (report.completed, report.indexed, report.failed, report.deleted) == (True, 4, 1, 0)
    assert len(documents(migrated_db)) == 5

    def interrupt(*args: Any, **kwargs: Any) -> None:
        raise DagsterExecutionInterruptedError("terminated")

    db.message("One more", chat=threads[4][0], handle=threads[4][1])
    monkeypatch.setattr(
        conversations, "store_document", fault_on_call(_real_chat_store, 1, interrupt)
    )
    with pytest.raises(DagsterExecutionInterruptedError):
        run_ingest(migrated_db, config, "chats")
    assert len(documents(migrated_db)) == 5
    assert last_run(migrated_db)[:3] == (False, "DagsterExecutionInterruptedError: terminated", 0)


_real_chat_store = conversations.store_document


def test_a_thread_over_the_chunk_cap_is_rejected_with_the_limit_named(
    migrated_db: str, tmp_path: Path
) -> None:
    folder = tmp_path / "Messages"
    folder.mkdir()
    db, threads = five_chats(folder / "chat.db")
    chat, handle = threads[0]
    for n in range(6):
        db.message(f"Long thread message {n}", chat=chat, handle=handle)
    config = make_config(
        tmp_path,
        [
            {
                "name": "chats",
                "kind": "messages",
                "roots": [str(folder)],
                "corpus_class": "communication",
            }
        ],
        limits={"max_chunks_per_document": 5},
    )
    report = run_ingest(migrated_db, config, "chats")
    assert (report.indexed, report.rejected, report.completed) == (4, 1, True)
    [(reason,)] = rows(migrated_db, "SELECT reason FROM ingest_outcomes")
    assert "8 messages" in reason and "limits.max_chunks_per_document (5)" in reason


def test_cli_prints_the_failed_file_and_exits_4(migrated_db: str, tmp_path: Path) -> None:
    import json
    import os
    import subprocess
    import sys

    folder = notes_folder(tmp_path / "notes", 3)
    poison(folder / "poison.txt")
    config = tmp_path / "cli.json"
    config.write_text(json.dumps({"sources": [{"name": "notes", "roots": [str(folder)]}]}))
    env = dict(
        os.environ,
        GARAGE_CONFIG=str(config),
        GARAGE_DATABASE_URL=migrated_db,
        GARAGE_DATA_DIR=str(tmp_path / "data"),
    )
    result = subprocess.run(
        [sys.executable, "-m", "garage.cli", "ingest"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 4, result.stderr
    assert "3 indexed" in result.stdout and "1 failed" in result.stdout
    assert f"{folder / 'poison.txt'}: " in result.stderr and "NUL characters" in result.stderr


def test_a_rejected_file_touched_but_unchanged_is_not_extracted_again(
    migrated_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = notes_folder(tmp_path / "notes", 2)
    blank = folder / "blank.md"
    blank.write_text("   \n\n  \n")
    config = make_config(tmp_path, [{"name": "notes", "roots": [str(folder)]}])
    assert run_ingest(migrated_db, config, "notes").rejected == 1
    stat = blank.stat()
    os.utime(blank, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    extracted: list[Path] = []
    real = pipeline.extract

    def spy(path: Path, data: bytes) -> Any:
        extracted.append(path)
        return real(path, data)

    monkeypatch.setattr(pipeline, "extract", spy)
    again = run_ingest(migrated_db, config, "notes")
    # Read and hashed (the stat changed), found to be the bytes already judged: not extracted.
    assert (again.unchanged, again.rejected, extracted) == (1, 0, [])
    [(mtime,)] = rows(migrated_db, "SELECT mtime_ns FROM ingest_outcomes")
    assert mtime == blank.stat().st_mtime_ns
    # Next time the new stat alone decides it.
    assert run_ingest(migrated_db, config, "notes").stat_skipped == 3
