"""Notice that a source changed without reading it: a stat-only fingerprint per source.

The file-change sensor compares each source's fingerprint with the one it remembered and asks
for an ingest run of exactly the sources whose fingerprint moved. A fingerprint is a digest of
``(path, size, mtime_ns)`` for every file the walker admits, so it costs what the walk costs —
one ``lstat`` per candidate, pruned folders never entered — and opens nothing. An edit, an
addition, a deletion or a rename each change it; a ``touch`` does too, and ingest then settles
that file by hash without re-extracting it.

A Messages source is one SQLite database: it is watched by ``chat.db`` and its ``-wal``, since
new messages land in the write-ahead log long before a checkpoint touches the main file. The
``-shm`` file changes on every read and is ignored.

The fingerprint is stable across processes (a keyed hash, not Python's randomised ``hash``), so
a restarted Dagster code server does not see every source as changed.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from garage.config import SourceConfig
from garage.walk import WalkError, walk

MESSAGES_DATABASE = "chat.db"


@dataclass(frozen=True)
class SourceFingerprint:
    digest: str  # blake2b over (root, path, size, mtime) of every watched file, hex
    files: int  # files the fingerprint covers
    newest_mtime_ns: int  # the most recent modification among them
    missing_roots: tuple[str, ...] = ()  # roots that do not exist (unmounted, moved)
    walk_errors: int = 0  # unreadable folders and files that vanished mid-walk

    @property
    def available(self) -> bool:
        """Whether every root is there: ingest refuses a source with a missing root."""
        return not self.missing_roots

    def as_cursor(self) -> dict[str, Any]:
        return {"digest": self.digest, "files": self.files, "newest": self.newest_mtime_ns}

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def fingerprint(source: SourceConfig) -> SourceFingerprint:
    """The source's fingerprint now: a stat-only pass over everything ingest would look at."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(source.kind.encode())
    files = 0
    newest = 0
    errors = 0
    missing: list[str] = []
    for root in source.root_paths():
        digest.update(b"\x00root\x00" + os.fsencode(str(root)))
        if source.kind == "messages":
            watched = _messages_files(root)
            if watched is None:
                missing.append(str(root))
                continue
            for path in watched:
                try:
                    st = os.stat(path)
                except FileNotFoundError:
                    digest.update(b"\x00absent\x00" + os.fsencode(path))
                    continue
                files += 1
                newest = max(newest, st.st_mtime_ns)
                digest.update(f"\x00{path}\x00{st.st_size}\x00{st.st_mtime_ns}".encode())
            continue
        try:
            entries = walk(
                root,
                include=source.include,
                exclude=source.exclude,
                default_excludes=source.default_excludes,
            )
            # One hash update per file: the walk's stat is the budget, so the per-file work
            # here is a join and an update, not a Path or a dataclass.
            update = digest.update
            for item in entries:
                if isinstance(item, WalkError):
                    errors += 1
                    update(b"\x00error\x00" + os.fsencode(str(item.path)))
                    continue
                files += 1
                mtime = item.mtime_ns
                if mtime > newest:
                    newest = mtime
                update(
                    f"\x00{item.rel}\x00{item.size}\x00{mtime}".encode("utf-8", "surrogateescape")
                )
        except FileNotFoundError:
            missing.append(str(root))
    return SourceFingerprint(
        digest=digest.hexdigest(),
        files=files,
        newest_mtime_ns=newest,
        missing_roots=tuple(missing),
        walk_errors=errors,
    )


def _messages_files(root: Path) -> list[str] | None:
    """``chat.db`` and its ``-wal`` for a Messages root (the database file, or the folder
    holding it); None when neither the file nor the folder exists."""
    if root.is_dir():
        database = root / MESSAGES_DATABASE
    elif root.exists():
        database = root
    else:
        return None
    return [str(database), f"{database}-wal"]
