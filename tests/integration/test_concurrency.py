"""Concurrency faults: two writers of one source, through every door, over a tree being edited.

The guide's rule, "one process handles a source; parallelism comes from separate sources", is
held in PostgreSQL (``garage.locks``): whichever door starts a second writer of a source (a
terminal, a Dagster run, embed, enrich-facts), it waits for the first. After each scenario,
and one more ordinary run to take in the last edits, the index must equal a single clean run
over the final tree on a second database: documents, chunks, BM25 statistics and vectors, as
sets; nothing lost, nothing twice.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from garage.config import GarageConfig
from garage.ingest import ingest_source, stages
from garage.ingest.store import DocumentRecord, NewChunk, sha256_text, store_document
from garage.locks import CORPUS, holder_of, writing
from tests.conftest import LlamaServers
from tests.integration.fault_helpers import (
    ROOT,
    cli_env,
    config_env,
    garage,
    run_to_end,
    scalar,
    snapshot,
    vectors,
)
from tests.integration.ingest_helpers import write_markdown
from tests.integration.test_ingest_faults import fault_on_call, real_data_error
from tests.material import material

EXIT_BUSY = 75


def notes(root: Path, count: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        write_markdown(root / f"note-{i:04d}.md", f"Note {i}", paragraphs=1)
    return root


def edit_every_note(root: Path, word: str) -> None:
    for path in sorted(root.glob("note-*.md")):
        path.write_text(path.read_text() + f"\nEdited: {word} {path.stem}.\n")


def max_chunk_id(url: str) -> int:
    return scalar(url, "SELECT max(id) FROM chunks")


def wait_until(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def start(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def start_holding(
    args: list[str], env: dict[str, str], url: str, scope: str = "home"
) -> subprocess.Popen[str]:
    """Start ``args`` and return once it holds ``scope``'s writer lock."""
    process = start(args, env)
    with psycopg.connect(url, autocommit=True) as conn:

        def holding() -> bool:
            assert process.poll() is None, process.communicate()[1][-2000:]
            held = holder_of(conn, scope)
            return held is not None and held.pid == process.pid

        wait_until(holding, 120, f"{args} to take the lock")
    return process


def finish(process: subprocess.Popen[str], timeout: float = 900) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


def assert_same_index(url: str, reference_url: str) -> None:
    found, reference = snapshot(url), snapshot(reference_url)
    for key, rows in reference.items():
        assert found[key] == rows, f"{key}: {len(found[key] ^ rows)} rows differ"
    assert reference["orphans"] == set()


def uris(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        return {row[0] for row in conn.execute("SELECT uri FROM documents")}


# -- the reproduction ------------------------------------------------------------------------


def test_a_note_saved_while_a_run_walks_is_not_deleted_by_that_run(
    migrated_db: str, second_db: str, tmp_path: Path
) -> None:
    """1,500 notes indexed and all edited; run A starts; a new note is saved where A's walk
    has already been; run B starts. B waits for A (naming it), then indexes the note; A, which
    never saw it, deletes nothing. Without the lock B ran beside A, and A deleted B's note."""
    folder = notes(tmp_path / "notes", 1500)
    env = cli_env(tmp_path, migrated_db, folder, None)
    run_to_end(garage("ingest", "--json"), env)
    edit_every_note(folder, "again")
    before = max_chunk_id(migrated_db)

    first = start(garage("ingest", "--json"), env)
    # A is storing edited notes, so its walk is past the folder's first name.
    wait_until(lambda: max_chunk_id(migrated_db) - before >= 30, 300, "run A to store notes")
    new_note = write_markdown(folder / "0000a.md", "Saved during the run", paragraphs=1)
    second = start(garage("ingest", "--json"), env)

    code_a, out_a, _ = finish(first)
    code_b, out_b, err_b = finish(second)
    assert (code_a, code_b) == (0, 0), err_b[-2000:]
    [report_a], [report_b] = json.loads(out_a), json.loads(out_b)
    assert report_a["completed"] and report_a["deleted"] == 0
    assert report_b["completed"] and report_b["deleted"] == 0
    assert report_b["indexed"] >= 1  # the new note
    # B said whom it waited for: A's command and process.
    assert re.search(
        rf"waiting for source 'home': it is being written by `garage ingest` "
        rf"\(pid {first.pid}, since \d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)",
        err_b,
    ), err_b[-2000:]
    assert new_note.as_uri() in uris(migrated_db)

    run_to_end(garage("ingest", "--json"), cli_env(tmp_path, second_db, folder, None))
    assert_same_index(migrated_db, second_db)


# -- two writers over a tree being edited ----------------------------------------------------


def edit_during(folder: Path, stop: threading.Event, log: list[str]) -> None:
    """Add, change and remove files while runs walk, until told to stop."""
    i = 0
    while not stop.is_set():
        added = write_markdown(folder / f"added-{i:03d}.md", f"Added {i}", paragraphs=1)
        changed = folder / f"note-{(i * 37) % 400:04d}.md"
        if changed.exists():
            changed.write_text(changed.read_text() + f"\nChanged during the runs ({i}).\n")
        removed = folder / f"note-{(i * 53 + 7) % 400:04d}.md"
        if removed.exists():
            removed.unlink()
            log.append(f"removed {removed.name}")
        log.append(f"added {added.name}, changed {changed.name}")
        i += 1
        time.sleep(0.15)


def test_two_ingests_started_together_over_a_tree_being_edited(
    migrated_db: str, second_db: str, tmp_path: Path
) -> None:
    folder = notes(tmp_path / "notes", 400)
    env = cli_env(tmp_path, migrated_db, folder, None)
    run_to_end(garage("ingest"), env)
    edit_every_note(folder, "before the race")
    untouched = {p.as_uri() for p in folder.glob("note-*.md")}

    stop, log = threading.Event(), []
    editor = threading.Thread(target=edit_during, args=(folder, stop, log))
    editor.start()
    try:
        runs = [start(garage("ingest", "--json"), env) for _ in range(2)]
        results = [finish(p) for p in runs]
    finally:
        stop.set()
        editor.join()
    # 4: a file removed between the walk's stat and its read failed, alone, as it should.
    assert all(code in (0, 4) for code, _, _ in results), [e[-1500:] for _, _, e in results]
    reports = [json.loads(out)[0] for _, out, _ in results]
    assert all(r["completed"] for r in reports)
    # One waited for the other, and said so.
    assert sum("waiting for source 'home'" in err for _, _, err in results) == 1
    # Nothing that stayed on disk throughout was deleted by either run.
    still_there = {p.as_uri() for p in folder.glob("note-*.md")} & untouched
    assert still_there <= uris(migrated_db)
    assert len(log) >= 3, log

    # One more run takes in the last edits; then the index is the final tree's.
    run_to_end(garage("ingest"), env)
    run_to_end(garage("ingest"), cli_env(tmp_path, second_db, folder, None))
    assert_same_index(migrated_db, second_db)


# -- the lock itself: waiting, --no-wait, other sources, kill -9 -------------------------------


def two_sources_env(tmp_path: Path, url: str, notes_dir: Path, other_dir: Path) -> dict[str, str]:
    config = {
        "sources": [
            {"name": "notes", "roots": [str(notes_dir)]},
            {"name": "journal", "roots": [str(other_dir)]},
        ]
    }
    return config_env(tmp_path, url, config, "two-sources.json")


def test_no_wait_exits_75_naming_the_holder_while_other_sources_go_on(
    migrated_db: str, tmp_path: Path
) -> None:
    env = two_sources_env(tmp_path, migrated_db, notes(tmp_path / "n", 3), notes(tmp_path / "j", 2))
    run_to_end(garage("ingest", "notes"), env)
    with psycopg.connect(migrated_db, autocommit=True) as conn:
        with writing(conn, "notes", "ingest"):
            busy = subprocess.run(
                garage("ingest", "notes", "--no-wait"),
                cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            assert busy.returncode == EXIT_BUSY, busy.stderr
            assert (
                f"source 'notes' is being written by `garage ingest` (pid {os.getpid()}, since"
                in busy.stderr
            )
            assert "without --no-wait" in busy.stderr
            # Another source is another writer's: it runs now.
            other = subprocess.run(
                garage("ingest", "journal", "--no-wait", "--json"),
                cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            assert other.returncode == 0, other.stderr
            assert json.loads(other.stdout)[0]["indexed"] == 2
            # A writer of every source the index holds needs this one too.
            embed = subprocess.run(
                garage("enrich-facts", "--prompt", "metadata", "--no-wait"),
                cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            assert embed.returncode == EXIT_BUSY, embed.stderr
        # The refused runs never began: only the first run of notes is recorded.
        assert scalar(migrated_db, "SELECT count(*) FROM ingest_runs r JOIN sources s"
                      " ON s.id = r.source_id WHERE s.name = 'notes'") == 1  # fmt: skip
        # Released with the block: the same command now runs.
        done = subprocess.run(
            garage("ingest", "notes", "--no-wait", "--json"),
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert holder_of(conn, "notes") is None


def test_cluster_facts_and_graph_rebuild_hold_one_corpus_wide_lock(
    migrated_db: str, tmp_path: Path
) -> None:
    env = two_sources_env(tmp_path, migrated_db, notes(tmp_path / "n", 1), notes(tmp_path / "j", 1))
    with psycopg.connect(migrated_db, autocommit=True) as conn:
        with writing(conn, CORPUS, "cluster-facts"):
            for command in (["graph", "rebuild"], ["cluster-facts", "--no-model"]):
                busy = subprocess.run(
                    garage(*command, "--no-wait"),
                    cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
                )  # fmt: skip
                assert busy.returncode == EXIT_BUSY, (command, busy.stderr)
                assert "the corpus-wide lock is being written by `garage cluster-facts`" in (
                    busy.stderr
                )
            # Sources are not the corpus lock's: ingest goes on.
            ingest = subprocess.run(
                garage("ingest", "--no-wait"),
                cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            assert ingest.returncode == 0, ingest.stderr
        rebuilt = subprocess.run(
            garage("graph", "rebuild", "--no-wait", "--json"),
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert rebuilt.returncode == 0, rebuilt.stderr


def test_kill_9_of_a_lock_holder_frees_the_source(
    migrated_db: str, second_db: str, tmp_path: Path
) -> None:
    folder = notes(tmp_path / "notes", 600)
    env = cli_env(tmp_path, migrated_db, folder, None)
    holder = start(garage("ingest"), env)
    with psycopg.connect(migrated_db, autocommit=True) as conn:
        wait_until(lambda: holder_of(conn, "home") is not None, 120, "the lock to be taken")
        held = holder_of(conn, "home")
        assert held is not None and held.pid == holder.pid and held.command == "ingest"
        wait_until(lambda: scalar(migrated_db, "SELECT count(*) FROM documents") >= 20, 300,
                   "some notes to be stored")  # fmt: skip
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=60)
        # The server ends the dead client's sessions, and their locks with them.
        wait_until(lambda: holder_of(conn, "home") is None, 30, "the lock to be freed")
    after = subprocess.run(
        garage("ingest", "--no-wait", "--json"),
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert after.returncode == 0, after.stderr[-2000:]
    assert json.loads(after.stdout)[0]["completed"]
    run_to_end(garage("ingest"), cli_env(tmp_path, second_db, folder, None))
    assert_same_index(migrated_db, second_db)


# -- decided on evidence, even past the lock --------------------------------------------------


def test_a_document_stored_after_the_run_began_is_never_its_to_delete(
    migrated_db: str, tmp_path: Path
) -> None:
    """A writer that bypassed the lock (an older Garage, a hand-made row) stores a document
    mid-run: the run's walk never saw it, and still it is not the run's to delete."""
    folder = notes(tmp_path / "notes", 12)
    config = GarageConfig.model_validate({"sources": [{"name": "notes", "roots": [str(folder)]}]})
    [source] = config.sources
    with psycopg.connect(migrated_db, autocommit=True) as conn:
        ingest_source(conn, config, source)
        edit_every_note(folder, "once more")
        late = folder / "0000-late.md"
        stored: list[int] = []

        def store_behind_the_runs_back(event: str, path: str) -> None:
            if stored:
                return
            with psycopg.connect(migrated_db, autocommit=True) as other:
                source_id = scalar(migrated_db, "SELECT id FROM sources WHERE name = 'notes'")
                text = "Saved by another writer while the walk was elsewhere."
                record = DocumentRecord(
                    source_id=source_id, uri=late.as_uri(), corpus_class="document",
                    title="late", content=text, source_sha256=sha256_text(text),
                    content_sha256=sha256_text(text), size_bytes=len(text), mtime_ns=1,
                    extractor="text", extractor_version=1, metadata={}, author_id=None,
                    attribution="unknown", attribution_signal="none", attribution_evidence={},
                )  # fmt: skip
                with other.transaction():
                    store_document(other, record, [NewChunk(0, text, 0, len(text), None, "t")])
            stored.append(1)

        report = ingest_source(conn, config, source, progress=store_behind_the_runs_back)
    assert stored and report.completed and report.deleted == 0
    assert late.as_uri() in uris(migrated_db)


def mail(path: Path, sender: str, subject: str) -> Path:
    path.write_text(
        f"From: {sender}\nTo: Jane Doe <jane@example.org>\nSubject: {subject}\n"
        "Date: Tue, 3 Sep 2024 10:00:00 +0000\nMessage-ID: <"
        f"{path.stem}@example.net>\nContent-Type: text/plain\n\n"
        "Thank you for the harbour photographs. The boats look lovely at dawn, and the gulls "
        "are exactly as loud as I remember them from last summer on the quay.\n"
    )
    return path


def test_a_new_senders_first_mail_failing_does_not_fail_the_next(
    migrated_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The author row inserted inside the failed mail's transaction rolled back with it: the
    run must not hand its id to the sender's next mail."""
    folder = tmp_path / "mail"
    folder.mkdir()
    sender = "Olu Adebayo <olu@example.net>"
    first = mail(folder / "a-first.eml", sender, "Photographs")
    second = mail(folder / "b-second.eml", sender, "More photographs")
    config = GarageConfig.model_validate({"sources": [{"name": "mail", "roots": [str(folder)]}]})
    [source] = config.sources
    store = fault_on_call(stages.store_document, 1, real_data_error)
    monkeypatch.setattr(stages, "store_document", store)
    with psycopg.connect(migrated_db, autocommit=True) as conn:
        report = ingest_source(conn, config, source)
        rows = conn.execute(
            "SELECT d.uri, a.name, a.email FROM documents d JOIN authors a ON a.id = d.author_id"
        ).fetchall()
    assert (report.failed, report.indexed) == (1, 1), report.errors
    assert rows == [(second.as_uri(), "Olu Adebayo", "olu@example.net")]
    assert first.as_uri() not in {uri for uri, _, _ in rows}


# -- the other doors: Dagster, embed, enrich-facts ---------------------------------------------


def test_a_dagster_run_beside_a_cli_run_of_the_same_source(
    migrated_db: str, second_db: str, tmp_path: Path
) -> None:
    folder = notes(tmp_path / "notes", 500)
    env = cli_env(tmp_path, migrated_db, folder, None)
    env["DAGSTER_HOME"] = str(tmp_path / "dagster")
    run_to_end(garage("ingest"), env)
    edit_every_note(folder, "for both doors")
    subprocess.run(
        garage("sources", "list"), cwd=ROOT, env=env, capture_output=True, timeout=120, check=True
    )
    from garage_assets.partitions import instance_at, register_source

    with instance_at(tmp_path / "dagster") as instance:
        register_source(instance, "home")
    dagster = start_holding(
        [sys.executable, "-m", "dagster", "asset", "materialize", "-m",
         "garage_assets.definitions", "--select", "documents,chunks", "--partition", "home"],
        env,
        migrated_db,
    )  # fmt: skip
    write_markdown(folder / "0000-new.md", "Written while both ran", paragraphs=1)
    cli = start(garage("ingest", "--json"), env)
    code_dagster, out_dagster, err_dagster = finish(dagster)
    code_cli, out_cli, err_cli = finish(cli)
    assert code_dagster == 0, (out_dagster + err_dagster)[-3000:]
    assert code_cli == 0, err_cli[-2000:]
    assert json.loads(out_cli)[0]["deleted"] == 0
    # The terminal waited for the Dagster run, and said which run it was.
    assert re.search(
        rf"waiting for source 'home': it is being written by `ingest` in Dagster run "
        rf"[0-9a-f]{{8}} \(pid {dagster.pid}, since ",
        err_cli,
    ), err_cli[-2000:]
    assert (folder / "0000-new.md").as_uri() in uris(migrated_db)
    run_to_end(garage("ingest"), cli_env(tmp_path, second_db, folder, None))
    assert_same_index(migrated_db, second_db)


def test_embed_during_ingest_leaves_every_chunk_one_vector(
    migrated_db: str, second_db: str, tmp_path: Path, llama: LlamaServers
) -> None:
    folder = notes(tmp_path / "notes", 300)
    env = cli_env(tmp_path, migrated_db, folder, llama)
    run_to_end(garage("ingest"), env)
    run_to_end(garage("embed"), env)
    edit_every_note(folder, "while embedding")
    table = "emb_" + llama.embed_model.replace("-", "_")

    ingest = start_holding(garage("ingest", "--json"), env, migrated_db)
    embed = start(garage("embed", "--json"), env)
    results = [finish(ingest), finish(embed)]
    assert [code for code, _, _ in results] == [0, 0], [e[-1500:] for _, _, e in results]
    assert "waiting for source 'home': it is being written by `garage ingest`" in results[1][2]
    assert json.loads(results[1][1])[0]["vectors_written"] > 0  # the edited notes' chunks

    reference_env = cli_env(tmp_path, second_db, folder, llama)
    run_to_end(garage("ingest"), reference_env)
    run_to_end(garage("embed"), reference_env)
    assert_same_index(migrated_db, second_db)
    found, reference = vectors(migrated_db, table), vectors(second_db, table)
    assert found.keys() == reference.keys()
    assert scalar(migrated_db, f"SELECT count(*) FROM {table}") == len(found)  # noqa: S608


def facts_rows(url: str) -> set[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return set(
            conn.execute(
                "SELECT d.uri, f.fact_class, f.text, f.start_offset, f.end_offset, f.prompt_name"
                " FROM facts f JOIN documents d ON d.id = f.document_id"
            ).fetchall()
        )


def test_enrich_facts_during_an_edit(migrated_db: str, second_db: str, tmp_path: Path) -> None:
    """Mail header facts (no model: the same facts every time) while the mail is re-indexed."""
    folder = tmp_path / "mail"
    folder.mkdir()
    data = material("libpython3.11-testsuite") / "usr/lib/python3.11/test/test_email/data"
    messages = sorted(data.glob("msg_*.txt"))[:40]
    for message in messages:
        (folder / f"{message.stem}.eml").write_bytes(message.read_bytes())
    notes(folder / "notes", 300)  # enough work that the ingest is still running
    env = cli_env(tmp_path, migrated_db, folder, None)
    run_to_end(garage("ingest"), env)
    run_to_end(garage("enrich-facts", "--prompt", "metadata"), env)
    edit_every_note(folder / "notes", "in the mail folder")
    edited = set()
    for path in sorted(folder.glob("*.eml"))[::3]:
        data = path.read_bytes()
        if b"Subject: " in data:
            path.write_bytes(data.replace(b"Subject: ", b"Subject: [edited] ", 1))
            edited.add(path)
    removed = sorted(folder.glob("*.eml"))[1]
    removed.unlink()
    assert len(edited - {removed}) >= 8

    ingest = start_holding(garage("ingest", "--json"), env, migrated_db)
    enrich = start(garage("enrich-facts", "--prompt", "metadata", "--stale-only", "--json"), env)
    results = [finish(ingest), finish(enrich)]
    assert [code for code, _, _ in results] == [0, 0], [e[-1500:] for _, _, e in results]
    assert "waiting for source 'home': it is being written by `garage ingest`" in results[1][2]
    # It ran on the re-indexed mail, whose facts went with its old content (the comparison
    # below says whether it ran on all of it).
    assert json.loads(results[1][1])["documents_read"] > len(edited - {removed}) // 2

    reference_env = cli_env(tmp_path, second_db, folder, None)
    run_to_end(garage("ingest"), reference_env)
    run_to_end(garage("enrich-facts", "--prompt", "metadata"), reference_env)
    assert_same_index(migrated_db, second_db)
    assert facts_rows(migrated_db) == facts_rows(second_db)
    assert facts_rows(second_db), "the mail stated no header facts"


def test_removing_a_model_waits_for_every_writer_of_its_vectors(
    migrated_db: str, tmp_path: Path
) -> None:
    """`garage models remove` drops every source's vectors of a model: while a source is being
    written it is refused with --no-wait, and otherwise waits, the table still there until the
    writer is done. (It took no lock, and dropped the table from under whatever wrote it.)"""
    probe = {"name": "probe", "provider": "llama_server", "host": "http://127.0.0.1:9",
             "model": "probe", "dimensions": 8}  # fmt: skip
    config = {
        "sources": [{"name": "notes", "roots": [str(notes(tmp_path / "notes", 2))]}],
        "embedding": {"default": "probe", "models": [probe]},
    }
    env = config_env(tmp_path, migrated_db, config, "probe.json")
    run_to_end(garage("ingest"), env)
    from garage.embed.registry import register_models

    def table() -> bool:
        return scalar(migrated_db, "SELECT count(*) FROM pg_class WHERE relname = 'emb_probe'") == 1

    with psycopg.connect(migrated_db, autocommit=True) as conn:
        register_models(conn, GarageConfig.model_validate(config))
        assert table()
        with writing(conn, "notes", "embed"):
            busy = subprocess.run(
                garage("models", "remove", "probe", "--yes", "--no-wait"),
                cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            assert busy.returncode == EXIT_BUSY, busy.stderr
            assert f"source 'notes' is being written by `garage embed` (pid {os.getpid()}," in (
                busy.stderr
            )
            remove = start(garage("models", "remove", "probe", "--yes"), env)
            assert remove.stderr is not None
            said = ""
            for line in remove.stderr:  # until it says it waits (or ends, failing below)
                said += line
                if "waiting for source" in line:
                    break
            assert "waiting for source 'notes': it is being written by `garage embed`" in said
            time.sleep(1)
            assert remove.poll() is None and table()
        code, out, err = finish(remove, timeout=120)
    assert code == 0, err
    assert "removed probe and emb_probe" in out
    assert not table()
