"""The walker and the placeholder rules, on real folders."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from garage.materialize import (
    MaterializationBudget,
    ReadTimeout,
    is_placeholder,
    read_bytes,
)
from garage.walk import WalkEntry, WalkError, walk


def tree(root: Path, files: list[str]) -> None:
    for rel in files:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"content of {rel}\n")


def rels(root: Path, **options) -> list[str]:  # type: ignore[no-untyped-def]
    return [e.rel for e in walk(root, **options) if isinstance(e, WalkEntry)]


def test_walk_prunes_default_exclusions_and_sorts(tmp_path: Path) -> None:
    tree(tmp_path, [
        "b.md", "a/notes.md", ".git/config", "node_modules/x/readme.md", ".venv/lib/a.py",
        "proj/__pycache__/m.pyc", "proj/build/out.txt", "sysdiagnose_2024/log.txt",
        "x.logarchive/data.txt", "proj/main.py", ".DS_Store",
    ])  # fmt: skip
    # A folder's files come before its subfolders; both sorted by name.
    assert rels(tmp_path) == ["b.md", "a/notes.md", "proj/main.py"]
    everything = rels(tmp_path, default_excludes=False)
    assert ".git/config" in everything and "node_modules/x/readme.md" in everything


def test_excluded_folders_are_never_entered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree(tmp_path, ["keep/a.md", "node_modules/deep/b.md", "private/c.md"])
    listed: list[str] = []
    real = os.scandir

    def spy(path):  # type: ignore[no-untyped-def]
        listed.append(str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", spy)
    assert rels(tmp_path, exclude=["private"]) == ["keep/a.md"]
    assert not any("node_modules" in p or "private" in p for p in listed)


def test_include_and_exclude_globs(tmp_path: Path) -> None:
    tree(tmp_path, ["a.md", "b.txt", "sub/c.md", "sub/deeper/d.md", "drafts/e.md"])
    assert rels(tmp_path, include=["*.md"]) == [
        "a.md",
        "drafts/e.md",
        "sub/c.md",
        "sub/deeper/d.md",
    ]
    assert rels(tmp_path, include=["sub/*.md"]) == ["sub/c.md"]
    assert rels(tmp_path, include=["sub/**/*.md"]) == ["sub/c.md", "sub/deeper/d.md"]
    assert rels(tmp_path, exclude=["**/drafts/**", "*.txt"]) == [
        "a.md", "sub/c.md", "sub/deeper/d.md",
    ]  # fmt: skip


def test_symlink_loops_and_special_files_are_not_followed(tmp_path: Path) -> None:
    tree(tmp_path, ["a/x.md"])
    os.symlink(tmp_path / "a", tmp_path / "a" / "loop")
    os.symlink(tmp_path / "a" / "x.md", tmp_path / "link.md")
    os.mkfifo(tmp_path / "pipe.md")
    assert rels(tmp_path) == ["a/x.md"]


def test_missing_root_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        list(walk(tmp_path / "unmounted"))
    tree(tmp_path, ["ok.md"])
    with pytest.raises(FileNotFoundError, match="not a folder"):
        list(walk(tmp_path / "ok.md"))


def test_entries_carry_stat_fields(tmp_path: Path) -> None:
    tree(tmp_path, ["a.md"])
    [entry] = list(walk(tmp_path))
    assert isinstance(entry, WalkEntry)
    st = (tmp_path / "a.md").stat()
    assert (entry.size, entry.mtime_ns, entry.blocks) == (st.st_size, st.st_mtime_ns, st.st_blocks)
    assert entry.path == tmp_path / "a.md"
    assert not isinstance(entry, WalkError)


def test_sparse_file_looks_like_a_dataless_placeholder(tmp_path: Path) -> None:
    real, sparse, empty = tmp_path / "real.md", tmp_path / "sparse.md", tmp_path / "empty.md"
    real.write_text("x" * 5000)
    with open(sparse, "wb") as handle:
        handle.truncate(5000)
    empty.write_bytes(b"")
    entries = {e.path.name: e for e in walk(tmp_path) if isinstance(e, WalkEntry)}
    assert not is_placeholder(entries["real.md"])
    assert is_placeholder(entries["sparse.md"])
    assert not is_placeholder(entries["empty.md"])
    flagged = WalkEntry(str(real), "real.md", 5000, 0, 8, 0x40000000)
    assert is_placeholder(flagged)  # macOS SF_DATALESS


def test_budget_caps_files_and_bytes() -> None:
    budget = MaterializationBudget(max_files=2, max_bytes=100)
    assert budget.try_spend(60) and not budget.try_spend(60) and budget.try_spend(40)
    assert budget.exhausted and not budget.try_spend(0)
    assert budget.as_dict()["files_used"] == 2
    assert MaterializationBudget().try_spend(10**12)


def test_a_hanging_read_is_abandoned(tmp_path: Path) -> None:
    fifo = tmp_path / "hangs.md"
    os.mkfifo(fifo)  # opening it blocks until a writer comes: a download that never finishes
    started = time.monotonic()
    with pytest.raises(ReadTimeout, match="hangs.md"):
        read_bytes(fifo, timeout=0.3)
    assert time.monotonic() - started < 5
    os.close(os.open(fifo, os.O_RDWR))  # let the abandoned thread finish


def test_read_bytes_limits_size(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_bytes(b"a" * 1000)
    assert read_bytes(big, max_bytes=1000) == b"a" * 1000
    with pytest.raises(OSError, match="larger than 999 bytes"):
        read_bytes(big, max_bytes=999)
    assert read_bytes(big, timeout=5) == b"a" * 1000


def test_entry_uri_is_what_pathlib_gives(tmp_path: Path) -> None:
    tree(tmp_path, ["with space/naïve #1 ?.md", ".hidden", "noext", "trailing."])
    entries = [e for e in walk(tmp_path) if isinstance(e, WalkEntry)]
    assert len(entries) == 4
    for entry in entries:
        assert entry.uri == entry.path.as_uri()
    from garage.extract import extractor_for

    assert [extractor_for(e.path_str) for e in entries if e.rel != "with space/naïve #1 ?.md"] == [
        None, None, None,
    ]  # fmt: skip
    assert extractor_for(str(tmp_path / "with space" / "naïve #1 ?.md")).name == "markdown"  # type: ignore[union-attr]
