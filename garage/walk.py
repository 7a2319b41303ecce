"""Stage 1, walk: stat each candidate once and yield a small record; open nothing.

Opening is where the cost is — parsing, and for cloud placeholders, downloading. Pruning
happens during descent, so excluded subtrees are never entered.

- **Symlinks are never followed** (neither to folders nor to files), so a walk cannot loop and
  cannot leave its root; a linked file is indexed at its real path by whichever source holds it.
  The root itself may be a symlink (``~/Dropbox`` often is): only what is below it is judged.
- **One syscall per file, none per folder.** Folder-ness comes from the directory listing's
  d_type (``DirEntry.is_dir(follow_symlinks=False)``); only regular-file candidates are
  ``lstat``-ed. Sockets, FIFOs and devices are skipped after that stat.
- **Virtualenvs and caches are recognised for free**: a folder whose listing holds
  ``pyvenv.cfg`` or ``CACHEDIR.TAG`` is dropped before anything in it is yielded or entered;
  the listing was needed anyway, so no extra stat is spent probing for those files.
- **Order** is deterministic: a folder's files (sorted by name) come before its subfolders,
  which are walked depth-first in name order.

Globs (``include``/``exclude``) match the path relative to the root, '/'-separated, the way
.gitignore does: ``*`` and ``?`` stay inside one path segment, ``[abc]`` is a class, ``**``
crosses segments (``**/x``, ``x/**``, ``a/**/b``), a pattern without a ``/`` matches a name at
any depth, and a pattern with one is anchored at the root (a leading ``/`` is dropped). A
trailing ``/`` matches folders only. ``exclude`` prunes folders as well as files; ``include``
filters files only (every folder is still entered).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from fnmatch import translate
from functools import cached_property
from operator import attrgetter
from pathlib import Path
from stat import S_ISREG
from urllib.parse import quote_from_bytes

# Folders no person wrote, matched against a folder's own name (fnmatch style).
DEFAULT_EXCLUDES: tuple[str, ...] = (
    # version control internals
    ".git", ".hg", ".svn", ".bzr", "_darcs", ".jj",
    # dependencies and virtualenvs (any folder holding pyvenv.cfg too, see above)
    "node_modules", "bower_components", ".venv", "venv", ".virtualenvs", "site-packages",
    "Pods", ".bundle",
    # caches (any folder holding CACHEDIR.TAG too)
    "__pycache__", ".cache", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox", ".nox",
    ".gradle", ".parcel-cache", ".terraform", ".ipynb_checkpoints",
    # build output
    "build", "dist", "target", ".next", ".nuxt", ".svelte-kit", ".build", "DerivedData",
    # diagnostics and app bundles
    "sysdiagnose_*", "*.logarchive", "*.xcarchive", "*.app", "*.framework",
    # OS housekeeping
    ".Trash", ".Trashes", ".Spotlight-V100", ".fseventsd", ".DocumentRevisions-V100",
    ".TemporaryItems", "$RECYCLE.BIN", "System Volume Information",
)  # fmt: skip
# Files no person wrote, matched against the file's name.
DEFAULT_EXCLUDED_FILES: tuple[str, ...] = (
    ".DS_Store", "._*", "Thumbs.db", "desktop.ini", "Icon\r", "*.pyc",
)  # fmt: skip
# A folder whose listing holds one of these is a virtualenv or a cache (the CACHEDIR.TAG
# convention of bford.info/cachedir, which cargo, pip, borg and others follow).
MARKER_FILES = frozenset({"pyvenv.cfg", "CACHEDIR.TAG"})


@dataclass(frozen=True)
class WalkEntry:
    # A str, not a Path: building a Path per file would cost more than its stat. ``path``
    # builds one on demand, for the few files that are actually read.
    path_str: str  # absolute
    rel: str  # relative to the root, '/'-separated
    size: int
    mtime_ns: int
    blocks: int | None  # st_blocks where the OS has it
    flags: int | None  # st_flags where the OS has it (macOS, BSD)

    @cached_property
    def path(self) -> Path:
        return Path(self.path_str)

    @cached_property
    def uri(self) -> str:
        # What Path.as_uri() gives for an absolute POSIX path, without building the Path.
        return "file://" + quote_from_bytes(os.fsencode(self.path_str))


@dataclass(frozen=True)
class WalkError:
    path: Path
    reason: str  # "permission denied", "vanished during walk", …


class _Names:
    """Name patterns split by cost: literal names are a set lookup, ``prefix*`` and ``*suffix``
    a str method call, and only real wildcards pay for a regex."""

    def __init__(self, patterns: Sequence[str]):
        wild = [p for p in patterns if any(c in p for c in "*?[")]
        self.literal = frozenset(p for p in patterns if p not in wild)
        simple = [p for p in wild if p.count("*") == 1 and not any(c in p for c in "?[")]
        self.prefixes = tuple(p[:-1] for p in simple if p.endswith("*"))
        self.suffixes = tuple(p[1:] for p in simple if p.startswith("*"))
        rest = [p for p in wild if p[:-1] not in self.prefixes and p[1:] not in self.suffixes]
        self.regex = re.compile("|".join(translate(p) for p in rest)).match if rest else None

    def __call__(self, name: str) -> bool:
        return (
            name in self.literal
            or name.startswith(self.prefixes)
            or name.endswith(self.suffixes)
            or (self.regex is not None and self.regex(name) is not None)
        )


def _glob_regex(pattern: str) -> str:
    dir_only = pattern.endswith("/")
    pattern = pattern.strip("/")
    if "/" not in pattern:
        pattern = "**/" + pattern
    out, i, n = [], 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == n:
            out.append("(?:/.*)?")  # "x/**" is everything inside x, and x itself
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[" and (close := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : close]
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            out.append("[" + ("^/" if negate else "") + body.replace("\\", "\\\\") + "]")
            i = close + 1
        else:
            out.append(re.escape(c))
            i += 1
    # Folders are matched as "rel/", files as "rel": a trailing "/" in the pattern therefore
    # admits only folders, and any other pattern admits both.
    return "".join(out) + ("/" if dir_only else "/?")


def compile_globs(patterns: Sequence[str]) -> Callable[[str], object] | None:
    """One compiled regex for all the patterns (see the module docstring for the syntax)."""
    if not patterns:
        return None
    return re.compile("(?:" + "|".join(_glob_regex(p) for p in patterns) + r")\Z").match


def walk(
    root: Path,
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    default_excludes: bool = True,
) -> Iterator[WalkEntry | WalkError]:
    """Every regular file under ``root`` that the rules admit, in a deterministic order.

    A missing root, or a file given as the root, raises FileNotFoundError: the caller must be
    able to tell "unmounted" from "empty". Anything that goes wrong below
    the root — an unreadable folder, a file or folder vanishing mid-walk — is yielded as a
    WalkError and the walk goes on.
    """
    top = os.path.abspath(root)
    if not os.path.isdir(top):
        if os.path.lexists(top):
            raise FileNotFoundError(f"source root {top} is not a folder")
        raise FileNotFoundError(f"source root {top} does not exist (unmounted or moved?)")
    dirs = _Names(DEFAULT_EXCLUDES if default_excludes else ())
    files = _Names(DEFAULT_EXCLUDED_FILES if default_excludes else ())
    # Hoisted into locals: this loop runs once per file, and its budget is about one stat.
    file_names, file_prefixes, file_suffixes, file_regex = (
        files.literal,
        files.prefixes,
        files.suffixes,
        files.regex,
    )
    excluded = compile_globs(exclude)
    included = compile_globs(include)
    has_blocks = hasattr(os.stat_result, "st_blocks")
    has_flags = hasattr(os.stat_result, "st_flags")
    by_name = attrgetter("name")
    new_entry = object.__new__
    prefix = len(top.rstrip(os.sep)) + 1
    stack = [top]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=by_name)
        except FileNotFoundError:
            yield WalkError(Path(folder), "vanished during walk")
            continue
        except PermissionError:
            yield WalkError(Path(folder), "permission denied")
            continue
        except OSError as error:
            yield WalkError(Path(folder), f"cannot list folder: {error.strerror or error}")
            continue
        if default_excludes and folder is not top:
            if any(entry.name in MARKER_FILES for entry in entries):
                continue
        subfolders = []
        for entry in entries:
            name = entry.name
            path = entry.path
            rel = path[prefix:]
            try:
                if entry.is_dir(follow_symlinks=False):
                    if dirs(name) or (excluded is not None and excluded(rel + "/")):
                        continue
                    subfolders.append(path)
                    continue
                if entry.is_symlink():
                    continue
                if (
                    name in file_names
                    or name.startswith(file_prefixes)
                    or name.endswith(file_suffixes)
                    or (file_regex is not None and file_regex(name))
                ):
                    continue
                if excluded is not None and excluded(rel):
                    continue
                if included is not None and not included(rel):
                    continue
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                yield WalkError(Path(path), "vanished during walk")
                continue
            except PermissionError:
                yield WalkError(Path(path), "permission denied")
                continue
            except OSError as error:
                yield WalkError(Path(path), f"cannot stat: {error.strerror or error}")
                continue
            if S_ISREG(st.st_mode):  # sockets, FIFOs and devices are not documents
                # The dataclass's own __init__ goes through object.__setattr__ once per field
                # (it is frozen), which alone costs about a stat; filling the instance dict
                # directly builds the identical object in a third of the time.
                item = new_entry(WalkEntry)
                fields = item.__dict__
                fields["path_str"] = path
                fields["rel"] = rel
                fields["size"] = st.st_size
                fields["mtime_ns"] = st.st_mtime_ns
                fields["blocks"] = st.st_blocks if has_blocks else None
                fields["flags"] = st.st_flags if has_flags else None  # type: ignore[attr-defined]
                yield item
        stack.extend(reversed(subfolders))
