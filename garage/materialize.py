"""Stage 2, materialize: recognise cloud placeholders from a stat, and meter their downloads.

Cloud placeholders are stubs — zero bytes from the old Dropbox client, dataless files with their
real size from File Provider clients such as iCloud Drive and today's Dropbox — and reading one
asks the provider to download it. So reads of placeholders are capped per run by a
MaterializationBudget; hitting the cap is not a failure, because ingest is idempotent and
repeated bounded runs converge on the full corpus.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from garage.walk import WalkEntry

# macOS stat flag of a File Provider file whose contents are not on disk.
SF_DATALESS = 0x40000000


def is_placeholder(entry: WalkEntry) -> bool:
    """True for a file whose bytes are not on this disk, decided from its stat alone.

    A size with no allocated blocks is a dataless file (and a sparse one has the same shape,
    which is how tests make one). The old Dropbox client's stubs are zero-byte files; an empty
    file is indistinguishable from them by stat, and reading it costs nothing, so it is not
    treated as a placeholder.
    """
    if entry.flags is not None and entry.flags & SF_DATALESS:
        return True
    return entry.size > 0 and entry.blocks == 0


@dataclass
class MaterializationBudget:
    max_files: int | None = None  # None: unlimited
    max_bytes: int | None = None
    files_used: int = field(default=0, init=False)
    bytes_used: int = field(default=0, init=False)

    def try_spend(self, size: int) -> bool:
        """Reserve one download of ``size`` bytes; False when it would go over the cap."""
        if self.max_files is not None and self.files_used + 1 > self.max_files:
            return False
        if self.max_bytes is not None and self.bytes_used + size > self.max_bytes:
            return False
        self.files_used += 1
        self.bytes_used += size
        return True

    @property
    def exhausted(self) -> bool:
        return (self.max_files is not None and self.files_used >= self.max_files) or (
            self.max_bytes is not None and self.bytes_used >= self.max_bytes
        )

    def as_dict(self) -> dict[str, int | None]:
        return {
            "files_used": self.files_used,
            "bytes_used": self.bytes_used,
            "max_files": self.max_files,
            "max_bytes": self.max_bytes,
        }


class ReadTimeout(Exception):
    def __init__(self, path: Path, timeout: float):
        super().__init__(f"{path}: read abandoned after {timeout:g}s (a placeholder that hangs?)")
        self.path = path
        self.timeout = timeout


class FileTooLarge(OSError):
    def __init__(self, path: Path, limit: int):
        super().__init__(f"{path}: larger than {limit} bytes")
        self.strerror = f"larger than {limit} bytes"


def _read(path: Path, max_bytes: int | None) -> bytes:
    with open(path, "rb") as handle:
        data = handle.read() if max_bytes is None else handle.read(max_bytes + 1)
    if max_bytes is not None and len(data) > max_bytes:
        raise FileTooLarge(path, max_bytes)
    return data


def read_bytes(path: Path, *, timeout: float | None = None, max_bytes: int | None = None) -> bytes:
    """Read a file whole. With a timeout the read runs on one daemon thread — the only worker
    thread ingest has — and is abandoned if it hangs, so a stuck download cannot stall a run."""
    if timeout is None:
        return _read(path, max_bytes)
    result: dict[str, object] = {}

    def work() -> None:
        try:
            result["data"] = _read(path, max_bytes)
        except BaseException as error:  # handed back to the caller below
            result["error"] = error

    thread = threading.Thread(target=work, name=f"materialize {path.name}", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise ReadTimeout(path, timeout)
    if "error" in result:
        raise result["error"]  # type: ignore[misc]
    return result["data"]  # type: ignore[return-value]
