"""Stage 1, walk: stat each candidate once and yield a small record; open nothing.

Opening is where the cost is — parsing, and for cloud placeholders, downloading. Pruning
happens during descent, so excluded subtrees (VCS internals, node_modules, virtualenvs, caches,
build output, sysdiagnose bundles) are never entered. Symlinks are not followed: a link to a
folder could loop or leave the source, and a link to a file is indexed at its real path by the
source that holds it.
"""

from __future__ import annotations

import os
import re
import stat as stat_module
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fnmatch import translate
from functools import cached_property
from pathlib import Path
from urllib.parse import quote_from_bytes

# Folders no person wrote. Matched against a folder's own name.
DEFAULT_EXCLUDES: tuple[str, ...] = (
    ".git", ".hg", ".svn", ".bzr", "_darcs", ".jj",
    "node_modules", "bower_components", ".venv", "venv", ".virtualenvs", "site-packages",
    "__pycache__", ".cache", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox", ".nox",
    ".gradle", ".idea", ".vscode", ".terraform", ".next", ".nuxt", ".parcel-cache",
    "build", "dist", "target", "out", ".build", "DerivedData", "Pods", "vendor",
    ".Trash", ".Trashes", ".Spotlight-V100", ".fseventsd", ".DocumentRevisions-V100",
    "sysdiagnose_*", "*.logarchive", "*.xcarchive", "*.photoslibrary", "*.app", "*.framework",
)  # fmt: skip
# Files no person wrote.
DEFAULT_EXCLUDED_FILES: tuple[str, ...] = (".DS_Store", "Thumbs.db", "desktop.ini", "*.pyc")


@dataclass(frozen=True)
class WalkEntry:
    path_str: str  # absolute; a str, because building a Path per file is most of a walk's cost
    rel: str  # relative to the root, '/'-separated
    size: int
    mtime_ns: int
    blocks: int | None  # st_blocks where the OS has it
    flags: int | None  # st_flags where the OS has it (macOS)

    @cached_property
    def path(self) -> Path:
        return Path(self.path_str)

    @cached_property
    def uri(self) -> str:
        # What Path.as_uri() gives, without building the Path.
        return "file://" + quote_from_bytes(os.fsencode(self.path_str))


@dataclass(frozen=True)
class WalkError:
    path: Path
    reason: str


def _names(patterns: Sequence[str]) -> re.Pattern[str] | None:
    return re.compile("|".join(translate(p) for p in patterns)) if patterns else None


def _globs(patterns: Sequence[str]) -> re.Pattern[str] | None:
    """Path globs relative to the root: ``*`` stays inside a folder, ``**`` crosses folders,
    and a pattern with no ``/`` matches a name at any depth (as in .gitignore)."""
    if not patterns:
        return None
    parts = []
    for pattern in patterns:
        pattern = pattern.strip("/")
        if "/" not in pattern:
            pattern = "**/" + pattern
        regex = ""
        i = 0
        while i < len(pattern):
            if pattern.startswith("**/", i):
                regex += "(?:.*/)?"
                i += 3
            elif pattern.startswith("**", i):
                regex += ".*"
                i += 2
            elif pattern[i] == "*":
                regex += "[^/]*"
                i += 1
            elif pattern[i] == "?":
                regex += "[^/]"
                i += 1
            else:
                regex += re.escape(pattern[i])
                i += 1
        parts.append(regex)
    return re.compile("(?:" + "|".join(parts) + r")\Z")


def walk(
    root: Path,
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    default_excludes: bool = True,
) -> Iterator[WalkEntry | WalkError]:
    """Every regular file under ``root`` that the globs admit, in sorted order.

    ``exclude`` globs prune folders as well as files; ``include`` globs filter files only.
    A missing root raises FileNotFoundError: the caller must tell "unmounted" from "empty".
    """
    root = Path(root).absolute()
    if not root.is_dir():
        raise FileNotFoundError(f"source root {root} does not exist or is not a folder")
    skip_dir = _names(DEFAULT_EXCLUDES) if default_excludes else None
    skip_file = _names(DEFAULT_EXCLUDED_FILES) if default_excludes else None
    excluded = _globs(exclude)
    included = _globs(include)
    has_flags = hasattr(os.stat_result, "st_flags")
    prefix = len(str(root)) + 1
    stack = [str(root)]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except FileNotFoundError:
            yield WalkError(Path(folder), "vanished during walk")
            continue
        except OSError as error:
            yield WalkError(Path(folder), f"cannot list folder: {error.strerror or error}")
            continue
        subfolders = []
        for entry in entries:
            name = entry.name
            rel = entry.path[prefix:]
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                yield WalkError(Path(entry.path), "vanished during walk")
                continue
            except OSError as error:
                yield WalkError(Path(entry.path), f"cannot stat: {error.strerror or error}")
                continue
            mode = st.st_mode
            if stat_module.S_ISDIR(mode):
                if skip_dir is not None and skip_dir.match(name):
                    continue
                if excluded is not None and excluded.match(rel):
                    continue
                subfolders.append(entry.path)
            elif stat_module.S_ISREG(mode):
                if skip_file is not None and skip_file.match(name):
                    continue
                if excluded is not None and excluded.match(rel):
                    continue
                if included is not None and not included.match(rel):
                    continue
                yield WalkEntry(
                    entry.path,
                    rel,
                    st.st_size,
                    st.st_mtime_ns,
                    getattr(st, "st_blocks", None),
                    st.st_flags if has_flags else None,  # type: ignore[attr-defined]
                )
            # Symlinks, sockets, FIFOs and devices are not documents.
        stack.extend(reversed(subfolders))
