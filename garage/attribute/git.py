"""Who committed what: one `git log` pass per repository, cached as a path → authors map.

`git log --follow` per file would mean one process per file (18k of them on a real home
directory); a single `--name-status` pass per repository gives every file's authors at once, and
following renames inside that pass costs nothing extra.

The log is read newest-first (`--topo-order`), so a rename `old → new` seen at commit C means
every older commit that touched `old` was really about the file now called `new`. An add means
older commits on that name belong to an earlier, deleted incarnation, which does not count.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

# Author name, email and parents, each NUL-terminated by -z; \x01 marks where a commit starts.
_FORMAT = "%x01%aN%x00%aE%x00%P"
_STATUS = re.compile(r"[ACDMRTUXB]\d*")
# Config that would change or pollute the output, whatever the user's own git config says.
_CONFIG = (
    "core.quotepath=off",
    "log.showRoot=true",
    "log.showSignature=false",
    "diff.renames=true",
    "color.ui=never",
)

_LOCATING = frozenset(
    {"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
     "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES"}
)  # fmt: skip


@dataclass(frozen=True)
class GitAuthor:
    name: str
    email: str
    commits: int


@dataclass(frozen=True)
class FileHistory:
    """A tracked file: its authors, and enough about the repository to judge whose it is."""

    repo: Path
    path: str  # relative to the repository root, with forward slashes
    authors: tuple[GitAuthor, ...]  # commits touching this file, most first
    repo_authors: tuple[GitAuthor, ...]  # every non-merge commit in the repository, most first
    root_authors: tuple[GitAuthor, ...]  # who made the root commit(s): who started the repository


@dataclass(frozen=True)
class GitMiss:
    """Why git has no answer; `repo` is None when the path is in no repository at all."""

    repo: Path | None
    reason: str


@dataclass
class _RepoLog:
    people: dict[str, tuple[str, str]] = field(default_factory=dict)  # key -> (name, email)
    # HEAD path -> author key -> [commits, age of the oldest one]; age breaks ties toward the
    # creator of the file rather than whoever touched it last.
    files: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    commits: dict[str, list[int]] = field(default_factory=dict)
    roots: dict[str, list[int]] = field(default_factory=dict)
    # Ranked once per repository, not once per file asked.
    repo_authors: tuple[GitAuthor, ...] = ()
    root_authors: tuple[GitAuthor, ...] = ()


def _key(name: str, email: str) -> str:
    # The address identifies a committer better than a name does; .mailmap (%aN/%aE) already
    # folds a person's several identities together when the repository has one.
    return email.strip().casefold() or "name:" + " ".join(name.split()).casefold()


def _credit(counts: dict[str, list[int]], key: str, age: int) -> None:
    entry = counts.setdefault(key, [0, age])
    entry[0] += 1
    entry[1] = age


def _ranked(log: _RepoLog, counts: dict[str, list[int]]) -> tuple[GitAuthor, ...]:
    order = sorted(counts.items(), key=lambda item: (-item[1][0], -item[1][1]))
    return tuple(GitAuthor(*log.people[key], commits=n) for key, (n, _) in order)


def _commits(tokens: list[str]) -> Iterator[tuple[str, str, str, list[list[str]]]]:
    """(name, email, parents, [[status, path, (path2)], ...]) for each commit, newest first."""
    i, count = 0, len(tokens)
    while i < count:
        token = tokens[i].lstrip("\n")
        if not token.startswith("\x01") or i + 2 >= count:
            i += 1  # the empty tail after the last NUL, or output we do not understand
            continue
        name, email, parents = token[1:], tokens[i + 1], tokens[i + 2]
        i += 3
        changes: list[list[str]] = []
        while i < count and _STATUS.fullmatch(status := tokens[i].lstrip("\n")):
            width = 2 if status[0] in "RC" else 1  # renames and copies name two paths
            changes.append([status[0], *tokens[i + 1 : i + 1 + width]])
            i += 1 + width
        yield name, email, parents, changes


def parse_log(output: bytes) -> _RepoLog:
    # Paths decode the way pathlib does (surrogateescape), so a non-UTF-8 name still matches.
    tokens = os.fsdecode(output).split("\0")
    log = _RepoLog()
    # The HEAD path of the file a historical name refers to at this point of the walk back in
    # time; None for a file that does not survive to HEAD. Unlisted names map to themselves.
    target: dict[str, str | None] = {}
    for age, (name, email, parents, changes) in enumerate(_commits(tokens)):
        name = name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        email = email.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        key = _key(name, email)
        log.people.setdefault(key, (name, email))  # the newest spelling wins
        _credit(log.commits, key, age)
        if not parents.strip():
            _credit(log.roots, key, age)
        gone: list[str] = []
        moved: dict[str, str | None] = {}
        for status, *paths in changes:
            current = paths[-1]
            head = target.get(current, current)
            if status != "D" and head is not None:
                _credit(log.files.setdefault(head, {}), key, age)
            if status in "ADRC":
                gone.append(current)  # before this commit, no file of ours had this name
            if status == "R":
                moved[paths[0]] = head
        # Apply after the whole commit, so that a swap (a → b, b → a) reads the old state.
        target.update(dict.fromkeys(gone, None) | moved)
    log.repo_authors = _ranked(log, log.commits)
    log.root_authors = _ranked(log, log.roots)
    return log


class GitAuthorIndex:
    """Caches one `git log --name-status` pass per repository (built lazily on the first file
    asked for in that repo) and the repository root of every directory seen."""

    def __init__(self, *, git: str = "git", timeout: float = 600.0) -> None:
        self._git = git
        self._timeout = timeout
        self._roots: dict[str, Path | None] = {}
        self._logs: dict[Path, _RepoLog | str] = {}  # a str is why the log could not be read

    def repo_for(self, path: Path) -> Path | None:
        """The nearest enclosing directory holding `.git` (a directory, or a file for worktrees
        and submodules); one stat per directory ever, however many files live in it."""
        directory = os.path.dirname(os.path.abspath(path))
        walked: list[str] = []
        found: Path | None = None
        while True:
            if directory in self._roots:
                found = self._roots[directory]
                break
            walked.append(directory)
            if os.path.lexists(os.path.join(directory, ".git")):
                found = Path(directory)
                break
            parent = os.path.dirname(directory)
            if parent == directory:
                break
            directory = parent
        for seen in walked:
            self._roots[seen] = found
        return found

    def lookup(self, path: Path) -> FileHistory | GitMiss:
        repo = self.repo_for(path)
        if repo is None:
            return GitMiss(None, "not in a git repository")
        log = self._log(repo)
        if isinstance(log, str):
            return GitMiss(repo, log)
        relative = Path(os.path.abspath(path)).relative_to(repo).as_posix()
        counts = log.files.get(relative)
        if not counts:
            return GitMiss(repo, "untracked in the repository")
        return FileHistory(
            repo=repo,
            path=relative,
            authors=_ranked(log, counts),
            repo_authors=log.repo_authors,
            root_authors=log.root_authors,
        )

    def authors(self, path: Path) -> list[GitAuthor] | None:
        """Authors of the commits touching `path`, most commits first; None when the path is in
        no repository, is untracked, or the repository's log cannot be read."""
        found = self.lookup(path)
        return list(found.authors) if isinstance(found, FileHistory) else None

    def _log(self, repo: Path) -> _RepoLog | str:
        if repo not in self._logs:
            self._logs[repo] = self._read(repo)
        return self._logs[repo]

    def _read(self, repo: Path) -> _RepoLog | str:
        command = [self._git, "-C", str(repo)]
        for setting in _CONFIG:
            command += ["-c", setting]
        command += ["log", "--no-merges", "--topo-order", "-M", "--name-status", "-z"]
        command += ["--no-ext-diff", "--no-textconv", f"--format={_FORMAT}"]
        # A repository-locating variable inherited from a hook would point git elsewhere; the
        # ceiling stops a broken `.git` from sending discovery up into an enclosing repository.
        env = {k: v for k, v in os.environ.items() if k not in _LOCATING}
        env |= {"GIT_CEILING_DIRECTORIES": str(repo.parent), "LC_ALL": "C"}
        # Never take the index lock in someone's working repository; never prompt.
        env |= {"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"}
        try:
            done = subprocess.run(
                command, capture_output=True, timeout=self._timeout, env=env, check=False
            )
        except FileNotFoundError:
            return f"git is not installed ({self._git} not found)"
        except (OSError, subprocess.SubprocessError) as error:
            return f"git log failed: {error}"
        if done.returncode != 0:
            message = done.stderr.decode("utf-8", "replace").strip().splitlines()
            return f"git log failed: {message[0] if message else f'exit {done.returncode}'}"
        return parse_log(done.stdout)
