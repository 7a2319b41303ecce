"""Attribution: who wrote a document, and whether that was the owner.

Signals, in precedence order; the first that answers decides, and records its evidence:

1. **sender** (mail only): when `sender` is given the message's From decides — authored when it
   is the owner, received otherwise — and git and metadata are skipped, since a mail file's git
   history or embedded fields describe the archive, not the message.
2. **git**: authoritative for tracked files, and the only signal that tells the owner's own
   repository from a clone of someone else's (see `_from_git`).
3. **metadata**: the embedded author, unless `looks_like_tool_name` says a program wrote it.
4. **path**: the folder table in `pathrules`.
5. **source default**: the source's `default_author`.

When none answers the result is relation "unknown", signal "none". Signals that were present but
could not answer (an untracked file, a corrupt repository, a tool-name author) are listed under
`evidence["skipped"]` of whatever result follows, so a surprising attribution can be explained.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from garage.attribute.git import FileHistory, GitAuthor, GitAuthorIndex, GitMiss
from garage.attribute.metadata import author_field, clean_author, looks_like_tool_name
from garage.attribute.pathrules import match_path

__all__ = [
    "Attribution",
    "FileHistory",
    "GitAuthor",
    "GitAuthorIndex",
    "GitMiss",
    "Identity",
    "attribute",
    "looks_like_tool_name",
]

_MAX_LISTED_AUTHORS = 20  # evidence stays small on a file with hundreds of committers


def _fold(text: str) -> str:
    return " ".join(text.split()).casefold()


def _fold_email(email: str) -> str:
    return email.strip().strip("<>").strip().casefold()


@dataclass(frozen=True)
class Identity:
    self_name: str | None  # the owner's name, from config identity.self_name
    emails: tuple[str, ...] = ()  # the owner's addresses

    def is_self(self, name: str | None, email: str | None = None) -> bool:
        """Either the address or the name matches (case- and whitespace-insensitive): people
        commit under several addresses, and a name alone is what documents carry."""
        return self.is_self_address(email) or self.is_self_name(name)

    def is_self_address(self, email: str | None) -> bool:
        return bool(email) and _fold_email(email or "") in {_fold_email(e) for e in self.emails}

    def is_self_name(self, name: str | None) -> bool:
        return bool(name and self.self_name and _fold(name) == _fold(self.self_name))


@dataclass(frozen=True)
class Attribution:
    author: str | None  # the display name decided on
    relation: str  # "authored" | "received" | "unknown"
    signal: str  # "git" | "metadata" | "sender" | "path" | "source_default" | "none"
    evidence: dict[str, object]  # JSON-serialisable


def _by_name(
    name: str, email: str | None, identity: Identity, signal: str, evidence: dict[str, object]
) -> Attribution:
    # The owner always appears under the configured name, whatever spelling the signal used.
    if identity.is_self(name, email):
        return Attribution(identity.self_name or name, "authored", signal, evidence)
    return Attribution(name, "received", signal, evidence)


def _by_sender(name: str | None, email: str | None, identity: Identity) -> Attribution:
    """A message's sender: its address decides. Anyone can put the owner's name in front of
    their own address ("Jane Doe <someone-else@example.org>"); only a message with no address
    at all falls back to the name."""
    evidence: dict[str, object] = {"name": name, "email": email}
    mine = identity.is_self_address(email) if email else identity.is_self_name(name)
    if mine:
        return Attribution(identity.self_name or name or email, "authored", "sender", evidence)
    return Attribution(name or email, "received", "sender", evidence)


def _listed(authors: tuple[GitAuthor, ...]) -> list[dict[str, object]]:
    return [{"name": a.name, "email": a.email, "commits": a.commits} for a in authors]


def _from_git(found: FileHistory, identity: Identity) -> Attribution:
    """The owner authored a file when they have commits on it and either started or mostly
    wrote the repository, or wrote most of the file. Otherwise the file is received from its
    main author: a clone of someone else's repository stays theirs even after the owner fixed a
    typo in it, and a collaborator's file in the owner's repository stays the collaborator's."""

    def me(author: GitAuthor) -> bool:
        return identity.is_self(author.name, author.email)

    mine = [a for a in found.authors if me(a)]
    # Whose repository: who made its first commit, or who made most of its commits.
    own_repo = any(map(me, found.root_authors)) or me(found.repo_authors[0])
    main = found.authors[0]
    evidence: dict[str, object] = {
        "repo": str(found.repo),
        "path": found.path,
        "commits": sum(a.commits for a in found.authors),
        "authors": _listed(found.authors[:_MAX_LISTED_AUTHORS]),
        "authors_total": len(found.authors),
        "own_repo": own_repo,
        "owner_commits": sum(a.commits for a in mine),
    }
    if mine and (own_repo or mine[0] is main):
        evidence["email"] = mine[0].email
        evidence["rule"] = "main author" if mine[0] is main else "owner's commits, own repository"
        return Attribution(identity.self_name or mine[0].name, "authored", "git", evidence)
    evidence["email"] = main.email
    evidence["rule"] = "main author"
    return Attribution(main.name, "received", "git", evidence)


def attribute(
    path: Path,
    *,
    identity: Identity,
    git: GitAuthorIndex | None,
    embedded_author: str | None,
    source_default: str | None,
    sender: tuple[str | None, str | None] | None = None,
    root: Path | None = None,
) -> Attribution:
    """Decide who wrote `path`; never raises for a missing or broken repository."""
    skipped: list[dict[str, object]] = []

    def noted(result: Attribution) -> Attribution:
        if skipped:
            result.evidence["skipped"] = skipped
        return result

    if sender is not None:
        name, email = (part.strip() if part else None for part in sender)
        if name or email:
            return _by_sender(name, email, identity)
        skipped.append({"signal": "sender", "why": "the message names no sender"})
    elif git is not None:
        found = git.lookup(path)
        if isinstance(found, FileHistory):
            return _from_git(found, identity)
        if found.repo is not None:
            skipped.append({"signal": "git", "repo": str(found.repo), "why": found.reason})

    if sender is None and embedded_author is not None:
        cleaned = clean_author(embedded_author)
        field = author_field(path)
        if cleaned:
            evidence: dict[str, object] = {"field": field, "value": cleaned}
            return noted(_by_name(cleaned, None, identity, "metadata", evidence))
        why = "names a program or placeholder, not a person"
        skipped.append({"signal": "metadata", "field": field, "value": embedded_author, "why": why})

    match = match_path(path, root=root, self_name=identity.self_name)
    if match is not None:
        author = identity.self_name if match.relation == "authored" else None
        evidence = {"rule": match.rule, "matched": match.matched}
        if root is not None:
            evidence["root"] = str(root)
        return noted(Attribution(author, match.relation, "path", evidence))

    if source_default and source_default.strip():
        default = " ".join(source_default.split())
        return noted(_by_name(default, None, identity, "source_default", {"value": default}))

    return noted(Attribution(None, "unknown", "none", {}))
