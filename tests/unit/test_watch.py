"""The stat-only source fingerprint the file-change sensor compares, and its pure decisions."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from garage.config import SourceConfig
from garage.watch import fingerprint
from sensors.logic import (
    changed_sources,
    dump_change_cursor,
    parse_change_cursor,
    scheduled_sources,
)


def _source(root: Path, **extra: object) -> SourceConfig:
    return SourceConfig(name="notes", roots=[str(root)], **extra)  # type: ignore[arg-type]


def _tree(root: Path) -> None:
    (root / "a").mkdir(parents=True)
    (root / "a" / "one.md").write_text("one")
    (root / "two.txt").write_text("two")
    (root / "node_modules" / "pkg").mkdir(parents=True)
    (root / "node_modules" / "pkg" / "index.js").write_text("x")


def test_fingerprint_is_stable_and_moves_with_every_kind_of_change(tmp_path: Path) -> None:
    _tree(tmp_path)
    source = _source(tmp_path)
    first = fingerprint(source)
    assert first.files == 2  # node_modules pruned, as the walk prunes it
    assert fingerprint(source) == first  # nothing changed: the same digest

    seen = {first.digest}
    # An edit that keeps the size (only the mtime moves) still counts.
    path = tmp_path / "a" / "one.md"
    path.write_text("uno")
    os.utime(path, ns=(first.newest_mtime_ns + 10**9, first.newest_mtime_ns + 10**9))
    for change in (
        lambda: (tmp_path / "three.md").write_text("three"),  # added
        lambda: (tmp_path / "two.txt").unlink(),  # deleted
        lambda: (tmp_path / "three.md").rename(tmp_path / "drei.md"),  # renamed
    ):
        current = fingerprint(source)
        assert current.digest not in seen
        seen.add(current.digest)
        change()
    assert fingerprint(source).digest not in seen


def test_pruned_and_excluded_files_do_not_count(tmp_path: Path) -> None:
    _tree(tmp_path)
    source = _source(tmp_path, exclude=["*.txt"])
    before = fingerprint(source)
    (tmp_path / "node_modules" / "pkg" / "more.js").write_text("y")
    (tmp_path / "other.txt").write_text("excluded")
    assert fingerprint(source) == before


def test_missing_root_is_reported_not_raised(tmp_path: Path) -> None:
    result = fingerprint(_source(tmp_path / "unmounted"))
    assert not result.available and result.missing_roots == (str(tmp_path / "unmounted"),)


def test_messages_source_is_watched_by_chat_db_and_its_wal(tmp_path: Path) -> None:
    database = tmp_path / "chat.db"
    writer = sqlite3.connect(database)
    writer.execute("PRAGMA journal_mode=wal")
    writer.execute("CREATE TABLE message (ROWID INTEGER PRIMARY KEY, text TEXT)")
    writer.commit()
    writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    source = SourceConfig(
        name="messages", kind="messages", roots=[str(tmp_path)], corpus_class="communication"
    )
    before = fingerprint(source)
    main_stat = database.stat()
    # A new message lands in the -wal; the main file does not move until a checkpoint.
    writer.execute("INSERT INTO message (text) VALUES ('see you at eight')")
    writer.commit()
    assert database.stat().st_mtime_ns == main_stat.st_mtime_ns
    assert Path(f"{database}-wal").stat().st_size > 0
    after = fingerprint(source)
    assert after.digest != before.digest
    # Given as the database file itself, the same two files are watched.
    by_file = SourceConfig(
        name="messages", kind="messages", roots=[str(database)], corpus_class="communication"
    )
    assert fingerprint(by_file).files == 2
    writer.close()


def test_change_decisions_and_cursor(tmp_path: Path) -> None:
    _tree(tmp_path)
    current = {"notes": fingerprint(_source(tmp_path))}
    first = changed_sources(current, {}, registered=["notes"])
    [request] = first.requests
    assert request.source == "notes" and request.previous is None
    cursor = parse_change_cursor(dump_change_cursor(first.cursor))
    # Nothing changed since: nothing to request, the cursor stays.
    again = changed_sources(current, cursor, registered=["notes"])
    assert again.requests == [] and again.unchanged == ["notes"] and again.cursor == cursor
    # The same transition seen twice gives the same run key.
    repeat = changed_sources(current, {}, registered=["notes"])
    assert repeat.requests[0].run_key == request.run_key
    # Not registered, or a run in progress: no request, and the cursor does not move.
    waiting = changed_sources(current, {}, registered=[])
    assert waiting.requests == [] and "notes" in waiting.waiting and waiting.cursor == {}
    busy = changed_sources(current, {}, registered=["notes"], in_progress=["notes"])
    assert busy.requests == [] and "in progress" in busy.waiting["notes"]
    # A source gone from the config is forgotten.
    assert changed_sources({}, cursor, registered=["notes"]).cursor == {}
    # A damaged or foreign cursor counts as empty.
    assert parse_change_cursor("{not json") == {}
    assert parse_change_cursor('{"version": 99, "sources": {}}') == {}


def test_schedule_decision_skips_busy_and_unregistered() -> None:
    plan = scheduled_sources(["a", "b", "c"], ["a", "b"], ["b"])
    assert plan.run == ["a"]
    assert plan.skipped == {
        "b": "its last run is still in progress",
        "c": "its partition is not registered yet",
    }
