"""Stage 2, materialize: recognise cloud placeholders from a stat, and meter their downloads.

Cloud placeholders are stubs — zero bytes from the old Dropbox client, dataless files with their
real size from File Provider clients such as iCloud Drive and today's Dropbox — and reading one
asks the provider to download it. So reads of placeholders are capped per run by a
MaterializationBudget; hitting the cap is not a failure, because ingest is idempotent and
repeated bounded runs converge on the full corpus.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from garage.walk import WalkEntry

# macOS stat flag of a File Provider file whose contents are not on disk.
SF_DATALESS = 0x40000000
# Attributes the Dropbox client puts on every file it syncs ("attrs" by today's client,
# "attributes" by the old one); Linux requires the "user." namespace.
_DROPBOX_XATTRS: tuple[str, ...] = ("com.dropbox.attrs", "com.dropbox.attributes")
if sys.platform.startswith("linux"):
    _DROPBOX_XATTRS = tuple("user." + name for name in _DROPBOX_XATTRS)


def _xattr_probe() -> Callable[[str, str], bool]:
    """has_xattr(path, name), without following symlinks and without opening the file."""
    if hasattr(os, "getxattr"):  # Linux

        def has(path: str, name: str) -> bool:
            try:
                os.getxattr(path, name, follow_symlinks=False)
            except OSError:
                return False
            return True

        return has
    if sys.platform == "darwin":  # the stdlib has no xattr calls there
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        getxattr = libc.getxattr
        getxattr.restype = ctypes.c_ssize_t
        getxattr.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p]
        getxattr.argtypes += [ctypes.c_size_t, ctypes.c_uint32, ctypes.c_int]
        nofollow = 0x0001  # XATTR_NOFOLLOW

        def has(path: str, name: str) -> bool:
            # A NULL buffer asks for the value's size: nothing is read.
            return getxattr(os.fsencode(path), name.encode(), None, 0, 0, nofollow) >= 0

        return has
    return lambda path, name: False


_has_xattr = _xattr_probe()


def is_placeholder(entry: WalkEntry) -> bool:
    """True for a file whose bytes are not on this disk. Never opens or reads the file.

    - macOS ``SF_DATALESS`` in st_flags: a File Provider file (iCloud Drive, today's Dropbox)
      whose contents are in the cloud.
    - A size with no allocated blocks: the same, seen where the flag is not reported. A sparse
      file has that shape too (which is how the tests make one); reading it costs nothing but
      a budget slot, a fair price for not downloading real placeholders unmetered.
    - A zero-byte file carrying a Dropbox attribute: the old Dropbox client's stub. Asking for
      the attribute is one getxattr, made only for zero-byte files (rare), and neither opens nor
      downloads the file. A plain empty file has no such attribute and is not a placeholder
      (reading it costs nothing). A genuinely empty file inside Dropbox is counted as one and
      costs one budget slot: indistinguishable by stat, and harmless.
    """
    if entry.flags is not None and entry.flags & SF_DATALESS:
        return True
    if entry.size > 0:
        return entry.blocks == 0
    return any(_has_xattr(entry.path_str, name) for name in _DROPBOX_XATTRS)


@dataclass
class MaterializationBudget:
    """How many placeholders one run may download, in files and in bytes (None: unlimited)."""

    max_files: int | None = None
    max_bytes: int | None = None
    files_used: int = field(default=0, init=False)
    bytes_used: int = field(default=0, init=False)

    def try_spend(self, size: int) -> bool:
        """Reserve one download of ``size`` bytes; False, spending nothing, when it would go
        over either cap. A file too big for what is left is refused, but a smaller one may still
        fit afterwards."""
        if self.max_files is not None and self.files_used + 1 > self.max_files:
            return False
        if self.max_bytes is not None and self.bytes_used + size > self.max_bytes:
            return False
        self.files_used += 1
        self.bytes_used += size
        return True

    @property
    def exhausted(self) -> bool:
        """A cap has been reached: the run downloads nothing more of any real size."""
        return (self.max_files is not None and self.files_used >= self.max_files) or (
            self.max_bytes is not None and self.bytes_used >= self.max_bytes
        )

    def as_dict(self) -> dict[str, int | bool | None]:
        return {
            "max_files": self.max_files,
            "max_bytes": self.max_bytes,
            "files_used": self.files_used,
            "bytes_used": self.bytes_used,
            "exhausted": self.exhausted,
        }


class ReadTimeout(Exception):
    """A read did not finish in time; the worker was abandoned, still blocked."""

    def __init__(self, path: Path, timeout: float):
        super().__init__(f"{path}: read abandoned after {timeout:g}s (a download that hangs?)")
        self.path = path
        self.timeout = timeout


class FileTooLarge(OSError):
    """More than ``max_bytes``: an OSError, so a caller's "cannot read" handling covers it."""

    def __init__(self, path: Path, limit: int):
        super().__init__(f"{path}: larger than {limit} bytes")
        self.strerror = f"larger than {limit} bytes"
        self.filename = str(path)
        self.path = path
        self.limit = limit


def _read(path: Path, max_bytes: int | None) -> bytes:
    with open(path, "rb") as handle:
        # One byte past the limit tells "exactly max_bytes" from "more"; nothing more is read,
        # so a 200 MB file costs at most max_bytes + 1 of memory before it is refused.
        data = handle.read() if max_bytes is None else handle.read(max_bytes + 1)
    if max_bytes is not None and len(data) > max_bytes:
        raise FileTooLarge(path, max_bytes)
    return data


def read_bytes(path: Path, *, timeout: float | None = None, max_bytes: int | None = None) -> bytes:
    """Read a file whole; raise FileTooLarge (an OSError) past ``max_bytes``.

    Without a timeout the read happens here (files on disk). With one — for placeholders — it
    runs on a single daemon worker thread and the caller waits at most ``timeout`` seconds; a
    read that hangs (a provider that never delivers) raises ReadTimeout and its thread is left
    blocked, so it cannot stall ingest nor keep the process from exiting. Reads are one at a
    time: at most one live worker, plus any abandoned ones still stuck in the kernel.
    """
    if timeout is None:
        return _read(path, max_bytes)
    outcome: list[bytes | BaseException] = []

    def work() -> None:
        try:
            outcome.append(_read(path, max_bytes))
        except BaseException as error:  # handed back to the caller's thread below
            outcome.append(error)

    worker = threading.Thread(target=work, name=f"garage-read {path.name}", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise ReadTimeout(path, timeout)
    result = outcome[0]
    if isinstance(result, BaseException):
        raise result
    return result
