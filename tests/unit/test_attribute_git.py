"""The git signal on real repositories made with the real git in tmp_path."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from garage.attribute import GitAuthorIndex, Identity, attribute

JANE = ("Jane Doe", "jane@example.org")  # the owner
ADA = ("Ada Lovelace", "ada@example.com")
LINUS = ("Linus Upstream", "linus@upstream.example")
OWNER = Identity(self_name="Jane Doe", emails=("jane@example.org",))


@pytest.fixture(autouse=True)
def isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither the host's git config nor its environment may leak into the repositories."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_AUTHOR_NAME"):
        monkeypatch.delenv(name, raising=False)


def git(repo: Path, *args: str, who: tuple[str, str] = JANE) -> None:
    command = ["git", "-c", f"user.name={who[0]}", "-c", f"user.email={who[1]}", "-C", str(repo)]
    subprocess.run([*command, *args], check=True, capture_output=True)


def new_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    return path


def commit(repo: Path, who: tuple[str, str], files: dict[str, str] | None = None) -> None:
    for name, text in (files or {}).items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", "change", who=who)


def names(index: GitAuthorIndex, path: Path) -> list[tuple[str, int]] | None:
    found = index.authors(path)
    return None if found is None else [(a.name, a.commits) for a in found]


def decide(index: GitAuthorIndex, path: Path, embedded: str | None = None):  # type: ignore[no-untyped-def]
    result = attribute(
        path, identity=OWNER, git=index, embedded_author=embedded, source_default=None
    )
    json.dumps(result.evidence)  # evidence must always be storable as JSON
    return result


def test_own_repository_is_authored_by_the_owner(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "mine")
    commit(repo, JANE, {"main.py": "print(1)\n"})
    commit(repo, JANE, {"main.py": "print(2)\n"})
    result = decide(GitAuthorIndex(), repo / "main.py")
    assert (result.author, result.relation, result.signal) == ("Jane Doe", "authored", "git")
    assert result.evidence["repo"] == str(repo)
    assert result.evidence["commits"] == 2 and result.evidence["own_repo"] is True
    assert result.evidence["authors"] == [
        {"name": "Jane Doe", "email": "jane@example.org", "commits": 2}
    ]
    assert result.evidence["email"] == "jane@example.org"


def test_clone_of_someone_elses_repository_is_received(tmp_path: Path) -> None:
    upstream = new_repo(tmp_path / "upstream")
    commit(upstream, LINUS, {"lib.c": "int x;\n", "README": "hello\n"})
    commit(upstream, LINUS, {"lib.c": "int y;\n"})
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(upstream), str(clone)], check=True)
    # The owner fixes a typo and adds a file of her own in the clone.
    commit(clone, JANE, {"README": "hello!\n", "notes.txt": "my notes\n"})
    index = GitAuthorIndex()

    lib = decide(index, clone / "lib.c")
    assert (lib.author, lib.relation, lib.signal) == ("Linus Upstream", "received", "git")
    assert lib.evidence["own_repo"] is False and lib.evidence["owner_commits"] == 0
    readme = decide(index, clone / "README")  # a typo fix does not make it hers
    assert (readme.author, readme.relation) == ("Linus Upstream", "received")
    assert readme.evidence["owner_commits"] == 1
    assert readme.evidence["email"] == "linus@upstream.example"
    notes = decide(index, clone / "notes.txt")  # but what she wrote there is hers
    assert (notes.author, notes.relation) == ("Jane Doe", "authored")


def test_mixed_authors_rank_by_commits_and_all_are_in_evidence(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "team")
    commit(repo, LINUS, {"plan.md": "v1\n"})  # Linus started it: not the owner's repository
    for n in range(3):
        commit(repo, ADA, {"plan.md": f"v{n + 2}\n"})
    commit(repo, JANE, {"plan.md": "v9\n"})
    commit(repo, LINUS, {"plan.md": "v10\n"})
    index = GitAuthorIndex()
    assert names(index, repo / "plan.md") == [
        ("Ada Lovelace", 3),
        ("Linus Upstream", 2),
        ("Jane Doe", 1),
    ]
    result = decide(index, repo / "plan.md")
    assert (result.author, result.relation) == ("Ada Lovelace", "received")
    assert [a["name"] for a in result.evidence["authors"]] == [  # type: ignore[union-attr]
        "Ada Lovelace",
        "Linus Upstream",
        "Jane Doe",
    ]
    assert result.evidence["commits"] == 6 and result.evidence["authors_total"] == 3


def test_owners_repository_credits_her_files_and_not_a_collaborators(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "mine")
    commit(repo, JANE, {"a.md": "1\n"})
    commit(repo, ADA, {"a.md": "2\n", "ada.md": "ada\n"})
    commit(repo, ADA, {"a.md": "3\n"})
    index = GitAuthorIndex()
    shared = decide(index, repo / "a.md")  # Ada has more commits, but it is Jane's repository
    assert (shared.author, shared.relation) == ("Jane Doe", "authored")
    assert shared.evidence["authors"][0]["name"] == "Ada Lovelace"  # type: ignore[index]
    assert shared.evidence["email"] == "jane@example.org"
    theirs = decide(index, repo / "ada.md")
    assert (theirs.author, theirs.relation) == ("Ada Lovelace", "received")


def test_ties_go_to_the_files_creator(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "r")
    commit(repo, ADA, {"x.txt": "1\n"})
    commit(repo, LINUS, {"x.txt": "2\n"})
    assert names(GitAuthorIndex(), repo / "x.txt") == [("Ada Lovelace", 1), ("Linus Upstream", 1)]


def test_renames_are_followed_inside_the_single_pass(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "r")
    body = "".join(
        f"line {n} of a long enough file to be detected as a rename\n" for n in range(30)
    )
    commit(repo, ADA, {"old.txt": body})
    commit(repo, LINUS, {"old.txt": body + "more\n"})
    git(repo, "mv", "old.txt", "mid.txt")
    commit(repo, JANE)
    (repo / "docs").mkdir()
    git(repo, "mv", "mid.txt", "docs/new name.txt")
    commit(repo, JANE, {"docs/new name.txt": body + "more\nand more\n"})
    index = GitAuthorIndex()
    assert names(index, repo / "docs" / "new name.txt") == [
        ("Jane Doe", 2),
        ("Ada Lovelace", 1),
        ("Linus Upstream", 1),
    ]
    (repo / "old.txt").write_text("a new, untracked file under the old name\n")
    assert index.authors(repo / "old.txt") is None  # history of the old name moved away


def test_a_name_reused_after_a_rename_or_deletion_starts_afresh(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "r")
    body = "".join(f"row {n} with enough text to count as the same file\n" for n in range(30))
    commit(repo, ADA, {"a.txt": body, "gone.txt": "x\n"})
    git(repo, "mv", "a.txt", "b.txt")
    git(repo, "rm", "-q", "gone.txt")
    commit(repo, ADA)
    commit(repo, LINUS, {"a.txt": "a brand new file\n", "gone.txt": "back again\n"})
    index = GitAuthorIndex()
    assert names(index, repo / "b.txt") == [("Ada Lovelace", 2)]
    assert names(index, repo / "a.txt") == [("Linus Upstream", 1)]
    assert names(index, repo / "gone.txt") == [("Linus Upstream", 1)]


@pytest.mark.parametrize(
    "relative",
    ["with spaces.txt", "naïve café/résumé 2024.md", 'quote "d" \'s.txt', "tab\there.txt",
     "new\nline.txt", "日本語/ファイル.txt", "-dash.txt"],
)  # fmt: skip
def test_awkward_paths(tmp_path: Path, relative: str) -> None:
    repo = new_repo(tmp_path / "r")
    commit(repo, ADA, {relative: "content\n", "plain.txt": "x\n"})
    index = GitAuthorIndex()
    assert names(index, repo / relative) == [("Ada Lovelace", 1)]
    assert names(index, repo / "plain.txt") == [("Ada Lovelace", 1)]


def test_untracked_file_falls_through_to_metadata(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "r")
    commit(repo, JANE, {"tracked.txt": "x\n"})
    (repo / "loose.docx").write_text("not committed")
    index = GitAuthorIndex()
    assert index.authors(repo / "loose.docx") is None
    result = decide(index, repo / "loose.docx", embedded="Ada Lovelace")
    assert (result.author, result.relation, result.signal) == (
        "Ada Lovelace",
        "received",
        "metadata",
    )
    assert result.evidence["field"] == "dc:creator"
    assert result.evidence["skipped"] == [
        {"signal": "git", "repo": str(repo), "why": "untracked in the repository"}
    ]


def test_file_outside_any_repository(tmp_path: Path) -> None:
    loose = tmp_path / "plain" / "file.txt"
    loose.parent.mkdir()
    loose.write_text("x")
    index = GitAuthorIndex()
    assert index.repo_for(loose) is None and index.authors(loose) is None
    result = decide(index, loose)
    assert (result.relation, result.signal, result.evidence) == ("unknown", "none", {})


def test_nested_repository_wins_over_the_outer_one(tmp_path: Path) -> None:
    outer = new_repo(tmp_path / "outer")
    commit(outer, JANE, {"top.txt": "x\n"})
    inner = new_repo(outer / "vendor" / "lib")
    commit(inner, LINUS, {"lib.py": "x\n"})
    index = GitAuthorIndex()
    assert index.repo_for(inner / "lib.py") == inner
    assert index.repo_for(outer / "vendor" / "other.txt") == outer
    assert decide(index, inner / "lib.py").author == "Linus Upstream"
    assert decide(index, outer / "top.txt").author == "Jane Doe"


@pytest.mark.parametrize("kind", ["garbage dir", "garbage file", "no commits"])
def test_broken_repository_falls_through_without_crashing(tmp_path: Path, kind: str) -> None:
    outer = new_repo(tmp_path / "outer")  # git must not fall back on this one's history
    commit(outer, LINUS, {"doc.pdf": "x"})
    repo = outer / "broken"
    repo.mkdir()
    if kind == "garbage dir":
        (repo / ".git").mkdir()
        (repo / ".git" / "HEAD").write_bytes(b"\x00\xffnot a ref")
        (repo / ".git" / "objects").write_text("garbage")
    elif kind == "garbage file":
        (repo / ".git").write_text("gitdir: /nowhere/at/all\n")
    else:
        new_repo(repo)
    (repo / "doc.pdf").write_text("x")
    index = GitAuthorIndex()
    assert index.repo_for(repo / "doc.pdf") == repo
    assert index.authors(repo / "doc.pdf") is None
    result = decide(index, repo / "doc.pdf", embedded="Ada Lovelace")
    assert (result.signal, result.author) == ("metadata", "Ada Lovelace")
    skipped = result.evidence["skipped"][0]  # type: ignore[index]
    assert skipped["signal"] == "git" and skipped["why"].startswith("git log failed")


def test_missing_git_falls_through(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "r")
    commit(repo, JANE, {"a.txt": "x\n"})
    index = GitAuthorIndex(git=str(tmp_path / "no-such-git"))
    result = decide(index, repo / "a.txt")
    assert result.signal == "none"
    assert "not installed" in result.evidence["skipped"][0]["why"]  # type: ignore[index]


def test_worktree_with_a_dot_git_file(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "main")
    commit(repo, ADA, {"a.txt": "x\n"})
    git(repo, "worktree", "add", "-q", str(tmp_path / "wt"))
    index = GitAuthorIndex()
    assert (tmp_path / "wt" / ".git").is_file()
    assert index.repo_for(tmp_path / "wt" / "a.txt") == tmp_path / "wt"
    assert names(index, tmp_path / "wt" / "a.txt") == [("Ada Lovelace", 1)]


def test_one_git_log_per_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repos = []
    for n in range(3):
        repo = new_repo(tmp_path / f"repo{n}")
        files = {f"dir{d}/file{f}.txt": f"{d} {f}\n" for d in range(4) for f in range(10)}
        commit(repo, JANE, files)
        commit(repo, ADA, {"dir0/file0.txt": "changed\n"})
        (repo / "untracked.txt").write_text("x")
        repos.append(repo)
    calls: list[list[str]] = []
    real_run = subprocess.run

    def spy(command, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(list(command))
        return real_run(command, *args, **kwargs)  # the real git still runs

    monkeypatch.setattr(subprocess, "run", spy)
    index = GitAuthorIndex()
    asked = 0
    for _ in range(2):
        for repo in repos:
            for path in sorted(repo.rglob("*.txt")):
                decide(index, path)
                asked += 1
    assert asked == 2 * 3 * 41
    assert len(calls) == 3
    assert all("log" in command for command in calls)
    assert sorted(command[command.index("-C") + 1] for command in calls) == sorted(map(str, repos))
    assert names(index, repos[0] / "dir0" / "file0.txt") == [("Jane Doe", 1), ("Ada Lovelace", 1)]


def test_repository_roots_are_cached_per_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = new_repo(tmp_path / "r")
    (repo / "a" / "b").mkdir(parents=True)
    probes: list[str] = []
    real = os.path.lexists

    def spy(path):  # type: ignore[no-untyped-def]
        probes.append(str(path))
        return real(path)

    monkeypatch.setattr(os.path, "lexists", spy)
    index = GitAuthorIndex()
    for n in range(500):
        assert index.repo_for(repo / "a" / "b" / f"f{n}.txt") == repo
        assert index.repo_for(repo / "a" / f"g{n}.txt") == repo
    assert sorted(probes) == sorted(str(d / ".git") for d in (repo, repo / "a", repo / "a" / "b"))
