"""Ingest end to end: real files of every kind, a real git repository, the real database."""

from __future__ import annotations

import os
import shutil
import zipfile
from pathlib import Path

import pytest

import garage.ingest.stages as stages
from garage.ingest import IngestError
from tests.integration.ingest_helpers import (
    PROSE,
    git,
    make_config,
    rows,
    run_ingest,
    write_docx,
    write_markdown,
    write_pptx,
    write_xlsx,
)
from tests.material import material

STDLIB = Path(os.__file__).parent
DOC_PAGE = "usr/share/doc/python3.11/html/_sources/tutorial/controlflow.rst.txt"


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every file ingest reads (a spy around the real read: the bytes still come from disk)."""
    seen: list[Path] = []
    real = stages.read_bytes

    def spy(path: Path, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(path)
        return real(path, **kwargs)

    monkeypatch.setattr(stages, "read_bytes", spy)
    return seen


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    """A real mixed folder: notes, Office files, a PDF, and a git repository of code."""
    root = tmp_path / "home"
    (root / "notes").mkdir(parents=True)
    write_markdown(root / "notes" / "harbour.md", "The Harbour at Dawn")
    write_docx(root / "report.docx", "Quarterly Report", author="Ada Lovelace")
    write_pptx(root / "deck.pptx", "Roadmap Review")
    write_xlsx(root / "expenses.xlsx")
    shutil.copy(material("pypdf") / "resources" / "crazyones.pdf", root / "crazyones.pdf")
    repo = root / "project"
    repo.mkdir()
    shutil.copy(STDLIB / "textwrap.py", repo / "textwrap_copy.py")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "first")
    # Things no person wrote, which the walk must never enter.
    (root / "node_modules" / "pkg").mkdir(parents=True)
    (root / "node_modules" / "pkg" / "index.md").write_text(PROSE)
    return root


def test_mixed_folder_indexes_every_kind(migrated_db: str, mixed: Path, tmp_path: Path) -> None:
    config = make_config(
        tmp_path,
        [{"name": "home", "roots": [str(mixed)], "default_author": "Jane Doe"}],
        identity={"self_name": "Jane Doe", "emails": ["jane@example.org"]},
    )
    report = run_ingest(migrated_db, config, "home")
    assert report.completed and report.failed == 0, report.errors
    assert report.indexed == 6 and report.seen == 6
    docs = {
        Path(uri).name: (title, cls, extractor, author, relation, signal)
        for uri, title, cls, extractor, author, relation, signal in rows(
            migrated_db,
            "SELECT d.uri, d.title, d.corpus_class, d.extractor, a.name, d.attribution,"
            " d.attribution_signal FROM documents d LEFT JOIN authors a ON a.id = d.author_id",
        )
    }
    assert set(docs) == {
        "harbour.md",
        "report.docx",
        "deck.pptx",
        "expenses.xlsx",
        "crazyones.pdf",
        "textwrap_copy.py",
    }
    assert docs["harbour.md"][:3] == ("The Harbour at Dawn", "document", "markdown")
    assert docs["report.docx"][0] == "Quarterly Report"
    assert docs["report.docx"][3:] == ("Ada Lovelace", "received", "metadata")
    # python-pptx writes its own name as the author: filtered, so the source default decides.
    assert docs["deck.pptx"][3] == "Jane Doe" and docs["deck.pptx"][5] != "metadata"
    assert docs["textwrap_copy.py"][1:3] == ("code", "code")
    assert docs["textwrap_copy.py"][3:] == ("Jane Doe", "authored", "git")
    signatures = dict(
        rows(
            migrated_db,
            "SELECT DISTINCT ON (d.extractor) d.extractor, c.chunker FROM chunks c"
            " JOIN documents d ON d.id = c.document_id",
        )
    )
    assert signatures["code"] == "code:python:1500/150"
    assert signatures["docx"].startswith(("recursive:1000/100", "markdown:1000/100"))
    xlsx = rows(migrated_db, "SELECT content FROM documents WHERE extractor = 'xlsx'")[0][0]
    assert "| Date | Item | Amount | Note |" in xlsx
    pdf = rows(migrated_db, "SELECT content FROM documents WHERE extractor = 'pdf'")[0][0]
    assert "crazy ones" in pdf.lower()


def test_rerun_reads_nothing_and_changes_nothing(
    migrated_db: str, mixed: Path, tmp_path: Path, reads: list[Path]
) -> None:
    config = make_config(tmp_path, [{"name": "home", "roots": [str(mixed)]}])
    run_ingest(migrated_db, config, "home")
    before = rows(migrated_db, "SELECT id, document_id, ord, text FROM chunks ORDER BY id")
    reads.clear()
    again = run_ingest(migrated_db, config, "home")
    assert reads == []
    assert again.stat_skipped == 6 and again.indexed == 0 and again.deleted == 0
    assert rows(migrated_db, "SELECT id, document_id, ord, text FROM chunks ORDER BY id") == before
    runs = rows(
        migrated_db,
        "SELECT completed, seen_count, indexed_count, stat_skipped_count FROM ingest_runs"
        " ORDER BY id",
    )
    assert runs == [(True, 6, 6, 0), (True, 6, 0, 6)]
    seen = rows(migrated_db, "SELECT count(*) FROM ingest_seen WHERE run_id = %s", again.run_id)
    assert seen == [(6,)]


def test_touch_refreshes_stat_without_reextracting(
    migrated_db: str, tmp_path: Path, reads: list[Path]
) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    note = write_markdown(root / "a.md", "A")
    config = make_config(tmp_path, [{"name": "notes", "roots": [str(root)]}])
    run_ingest(migrated_db, config, "notes")
    os.utime(note, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    report = run_ingest(migrated_db, config, "notes")
    assert report.unchanged == 1 and report.indexed == 0
    assert rows(migrated_db, "SELECT mtime_ns FROM documents") == [(1_700_000_000_000_000_000,)]


def test_editing_the_end_reinserts_only_the_last_chunks(migrated_db: str, tmp_path: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    long_note = root / "journal.md"
    paragraphs = [f"Day {i}. {PROSE}" for i in range(60)]
    long_note.write_text("# Journal\n\n" + "\n\n".join(paragraphs) + "\n")
    config = make_config(tmp_path, [{"name": "notes", "roots": [str(root)]}])
    run_ingest(migrated_db, config, "notes")
    before = rows(migrated_db, "SELECT ord, id FROM chunks ORDER BY ord")
    assert len(before) > 10
    long_note.write_text(long_note.read_text() + "\nA new last line about the lighthouse.\n")
    report = run_ingest(migrated_db, config, "notes")
    assert report.indexed == 1
    after = rows(migrated_db, "SELECT ord, id FROM chunks ORDER BY ord")
    unchanged = [pair for pair in after if pair in before]
    assert len(unchanged) >= len(before) - 2  # only the tail was rebuilt
    assert report.chunks_new <= 2 and report.chunks_kept == len(unchanged)
    assert "lighthouse" in rows(migrated_db, "SELECT text FROM chunks ORDER BY ord DESC")[0][0]


def test_deletion_guard_refuses_an_emptied_root(migrated_db: str, tmp_path: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    for i in range(8):
        write_markdown(root / f"n{i}.md", f"Note {i}")
    config = make_config(tmp_path, [{"name": "notes", "roots": [str(root)]}])
    assert run_ingest(migrated_db, config, "notes").indexed == 8

    (root / "n0.md").unlink()  # one of eight (12.5%) is an ordinary deletion
    assert run_ingest(migrated_db, config, "notes").deleted == 1

    for path in root.iterdir():  # an emptied (or unmounted-and-recreated) folder
        path.unlink()
    refused = run_ingest(migrated_db, config, "notes")
    assert refused.deletion_refused and "refusing to delete 7 of 7" in refused.deletion_refused
    assert refused.deleted == 0
    assert rows(migrated_db, "SELECT count(*) FROM documents") == [(7,)]

    shutil.rmtree(root)
    with pytest.raises(IngestError, match="does not exist"):
        run_ingest(migrated_db, config, "notes")
    assert rows(migrated_db, "SELECT count(*) FROM documents") == [(7,)]

    root.mkdir()
    forced = run_ingest(migrated_db, config, "notes", force=True)
    assert forced.deleted == 7
    assert rows(migrated_db, "SELECT count(*) FROM documents") == [(0,)]


def test_limit_leaves_the_run_incomplete_and_deletes_nothing(
    migrated_db: str, tmp_path: Path
) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    for i in range(5):
        write_markdown(root / f"n{i}.md", f"Note {i}")
    config = make_config(tmp_path, [{"name": "notes", "roots": [str(root)]}])
    run_ingest(migrated_db, config, "notes")
    partial = run_ingest(migrated_db, config, "notes", limit=2)
    assert partial.completed is False and partial.seen == 2 and partial.deleted == 0
    assert rows(migrated_db, "SELECT count(*) FROM documents") == [(5,)]
    assert rows(migrated_db, "SELECT completed FROM ingest_runs ORDER BY id DESC LIMIT 1") == [
        (False,)
    ]


def test_bad_input_gets_an_outcome_and_loses_nothing(migrated_db: str, tmp_path: Path) -> None:
    root = tmp_path / "inbox"
    root.mkdir()
    good_pdf = root / "crazyones.pdf"
    shutil.copy(material("pypdf") / "resources" / "crazyones.pdf", good_pdf)
    write_markdown(root / "fine.md", "Fine")
    config = make_config(
        tmp_path, [{"name": "inbox", "roots": [str(root)]}], limits={"max_file_bytes": 50_000_000}
    )
    assert run_ingest(migrated_db, config, "inbox").indexed == 2

    shutil.copy(material("ocrmypdf") / "tests" / "resources" / "invalid.pdf", root / "broken.pdf")
    with zipfile.ZipFile(root / "fake.docx", "w") as archive:
        archive.writestr("hello.txt", "not a word document")
    (root / "image.md").write_bytes(bytes(range(256)) * 64)  # binary named .md
    (root / "empty.md").write_bytes(b"")
    (root / "blank.txt").write_text("  \n\t\n")
    (root / "huge.txt").write_bytes(b"a line of text\n" * 4_000_000)  # 60 MB, over the limit
    (root / "loop").mkdir()
    os.symlink(root / "loop", root / "loop" / "again")
    good_pdf.write_bytes(b"%PDF-1.4 truncated garbage")  # an indexed file goes bad
    report = run_ingest(migrated_db, config, "inbox")
    assert report.completed
    failures = dict(rows(migrated_db, "SELECT uri, reason FROM ingest_outcomes"))
    names = {Path(uri).name: reason for uri, reason in failures.items()}
    assert {"broken.pdf", "fake.docx", "image.md", "huge.txt", "crazyones.pdf"} <= set(names)
    assert "broken.pdf" in names["broken.pdf"] and "fake.docx" in names["fake.docx"]
    assert "too large" in names["huge.txt"]
    assert names["empty.md"] == "no text" and names["blank.txt"] == "no text"
    # The PDF that went bad keeps its earlier document and chunks.
    kept = rows(migrated_db, "SELECT count(*) FROM documents WHERE uri LIKE %s", "%crazyones.pdf")
    assert kept == [(1,)]
    assert any("broken.pdf" in line for line in report.errors)
    # Remembered: a rerun does not read the bad files again.
    again = run_ingest(migrated_db, config, "inbox")
    assert again.failed <= 1 and again.stat_skipped >= 5  # the symlink loop is re-reported


def test_file_names_that_are_not_utf8_are_indexed(migrated_db: str, tmp_path: Path) -> None:
    # Linux names are bytes: an archive from an old Latin-1 machine has names Python can only
    # hold with surrogates, which PostgreSQL refuses. The file is indexed all the same.
    root = tmp_path / "old"
    root.mkdir()
    raw = os.fsencode(root) + b"/caf\xe9 notes.md"
    with open(raw, "wb") as handle:
        handle.write((material("python3.11-doc") / DOC_PAGE).read_bytes())
    with open(os.fsencode(root) + b"/bin\xfe.txt", "wb") as handle:
        handle.write(bytes(range(256)) * 4)  # binary: fails, and its outcome is stored
    config = make_config(tmp_path, [{"name": "old", "roots": [str(root)]}])
    report = run_ingest(migrated_db, config, "old")
    assert report.completed and report.indexed == 1 and report.failed == 1
    [(uri, title, path)] = rows(migrated_db, "SELECT uri, title, metadata->>'path' FROM documents")
    assert uri.endswith("/caf%E9%20notes.md")  # the exact bytes, percent-encoded
    assert title == ":keyword:`!if` Statements" and path.endswith("/caf\ufffd notes.md")
    [(failed, reason)] = rows(migrated_db, "SELECT uri, reason FROM ingest_outcomes")
    assert failed.endswith("/bin%FE.txt") and "bin\ufffd.txt" in reason
    assert rows(migrated_db, "SELECT count(*) FROM chunks") != [(0,)]
    again = run_ingest(migrated_db, config, "old")
    assert (again.indexed, again.stat_skipped) == (0, 2)


def test_placeholders_are_budgeted_and_keep_older_rows(
    migrated_db: str, tmp_path: Path, reads: list[Path]
) -> None:
    root = tmp_path / "cloud"
    root.mkdir()
    note = write_markdown(root / "synced.md", "Synced note")
    config = make_config(
        tmp_path, [{"name": "cloud", "roots": [str(root)]}], limits={"materialize_max_files": 0}
    )
    run_ingest(migrated_db, config, "cloud")
    stat = note.stat()
    # The sync client evicts it: same size and mtime, no blocks (a sparse file has that shape).
    size = stat.st_size
    note.unlink()
    with open(note, "wb") as handle:
        handle.truncate(size)
    os.utime(note, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    reads.clear()
    report = run_ingest(migrated_db, config, "cloud")
    assert reads == [] and report.stat_skipped == 1

    os.utime(note, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # changed in the cloud
    report = run_ingest(migrated_db, config, "cloud")
    assert reads == [] and report.placeholders == 1 and report.indexed == 0
    assert rows(migrated_db, "SELECT placeholder_count FROM ingest_runs ORDER BY id DESC")[0] == (
        1,
    )
    assert rows(migrated_db, "SELECT count(*) FROM chunks") != [(0,)]  # older row kept
