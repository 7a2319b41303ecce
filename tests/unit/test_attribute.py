"""The precedence of the signals, end to end: sender, git, metadata, path, source default."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import docx
import pptx
import pytest

from garage.attribute import Attribution, GitAuthorIndex, Identity, attribute

OWNER = Identity(self_name="Jane Doe", emails=("jane@example.org", "J.Doe@Work.example"))


@pytest.fixture(autouse=True)
def isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("HOME", str(tmp_path))


def committed(repo: Path, name: str, email: str, files: dict[str, str]) -> Path:
    """A real repository at `repo` with one commit of `files` by `name`."""
    repo.mkdir(parents=True)
    for relative, text in files.items():
        (repo / relative).parent.mkdir(parents=True, exist_ok=True)
        (repo / relative).write_text(text)
    who = ["-c", f"user.name={name}", "-c", f"user.email={email}", "-C", str(repo)]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "first"]):
        subprocess.run(["git", *who, *args], check=True, capture_output=True)
    return repo


def run(path: Path, **kwargs: object) -> Attribution:
    options: dict[str, object] = {
        "identity": OWNER,
        "git": GitAuthorIndex(),
        "embedded_author": None,
        "source_default": None,
    }
    result = attribute(path, **(options | kwargs))  # type: ignore[arg-type]
    json.dumps(result.evidence)
    return result


def summary(result: Attribution) -> tuple[str | None, str, str]:
    return result.author, result.relation, result.signal


def test_identity_matching_ignores_case_and_whitespace() -> None:
    assert OWNER.is_self("  jane   DOE ")
    assert OWNER.is_self(None, "JANE@example.org ")
    assert OWNER.is_self("Someone Else", "<j.doe@work.example>")
    assert OWNER.is_self("J. Doe", "jane@example.org")
    assert not OWNER.is_self("Jane Doe-Smith", "other@example.org")
    assert not OWNER.is_self(None, None)
    assert not Identity(self_name=None).is_self("Jane Doe", "jane@example.org")


def test_git_beats_metadata_path_and_default(tmp_path: Path) -> None:
    repo = committed(tmp_path / "Downloads" / "lib", "Linus", "l@x.example", {"a.txt": "x"})
    result = run(repo / "a.txt", embedded_author="Ada Lovelace", source_default="Jane Doe")
    assert summary(result) == ("Linus", "received", "git")


def test_metadata_beats_path_and_default(tmp_path: Path) -> None:
    path = tmp_path / "Notes" / "paper.pdf"
    path.parent.mkdir()
    path.write_text("x")
    result = run(path, embedded_author="  Ada   Lovelace ", source_default="Jane Doe")
    assert summary(result) == ("Ada Lovelace", "received", "metadata")
    assert result.evidence == {"field": "/Author", "value": "Ada Lovelace"}
    mine = run(path, embedded_author="JANE DOE")  # the owner appears under her configured name
    assert summary(mine) == ("Jane Doe", "authored", "metadata")


def test_a_tool_name_author_falls_through_to_the_path(tmp_path: Path) -> None:
    root = tmp_path / "home"
    deck = root / "Downloads" / "deck.pptx"
    deck.parent.mkdir(parents=True)
    pptx.Presentation().save(str(deck))
    embedded = pptx.Presentation(str(deck)).core_properties.last_modified_by  # "Steve Canny"
    result = run(deck, embedded_author=embedded, source_default="Jane Doe", root=root)
    assert summary(result) == (None, "received", "path")
    assert result.evidence["rule"] == "received-folder"
    assert result.evidence["matched"] == "Downloads" and result.evidence["root"] == str(root)
    assert result.evidence["skipped"] == [
        {
            "signal": "metadata",
            "field": "dc:creator",
            "value": "Steve Canny",
            "why": "names a program or placeholder, not a person",
        }
    ]


def test_path_beats_the_source_default(tmp_path: Path) -> None:
    root = tmp_path / "home"
    result = run(root / "Notes" / "x.md", source_default="Ada Lovelace", root=root)
    assert summary(result) == ("Jane Doe", "authored", "path")


def test_source_default_decides_last(tmp_path: Path) -> None:
    document = tmp_path / "home" / "report.docx"
    document.parent.mkdir()
    docx.Document().save(str(document))  # its author is "python-docx": filtered out
    embedded = docx.Document(str(document)).core_properties.author
    root = tmp_path / "home"
    own = run(document, embedded_author=embedded, source_default="jane doe", root=root)
    assert summary(own) == ("Jane Doe", "authored", "source_default")
    other = run(document, embedded_author=embedded, source_default="ACME Corp", root=root)
    assert summary(other) == ("ACME Corp", "received", "source_default")
    assert other.evidence["value"] == "ACME Corp"
    nothing = run(document, embedded_author=embedded, source_default="  ", root=root)
    assert summary(nothing) == (None, "unknown", "none")
    assert nothing.evidence["skipped"][0]["signal"] == "metadata"  # type: ignore[index]


def test_sender_decides_mail_and_skips_git_and_metadata(tmp_path: Path) -> None:
    repo = committed(tmp_path / "Maildir", "Linus", "l@x.example", {"cur/1.eml": "From: x"})
    message = repo / "cur" / "1.eml"
    received = run(message, embedded_author="Ada Lovelace", sender=("Bob Smith", "bob@x.example"))
    assert summary(received) == ("Bob Smith", "received", "sender")
    assert received.evidence == {"name": "Bob Smith", "email": "bob@x.example"}
    sent = run(message, embedded_author="Ada Lovelace", sender=("J. Doe", "jane@example.org"))
    assert summary(sent) == ("Jane Doe", "authored", "sender")
    address_only = run(message, sender=(None, " bob@x.example "))
    assert summary(address_only) == ("bob@x.example", "received", "sender")


def test_a_senders_address_decides_not_the_name_in_front_of_it(tmp_path: Path) -> None:
    message = tmp_path / "1.eml"
    message.write_text("From: x")
    # Anyone can write the owner's name in front of their own address.
    spoofed = run(message, sender=("Jane Doe", "someone-else@x.example"))
    assert summary(spoofed) == ("Jane Doe", "received", "sender")
    # The owner's address under any display name is the owner.
    mine = run(message, sender=("Work account", "J.DOE@work.example"))
    assert summary(mine) == ("Jane Doe", "authored", "sender")
    # With no address at all, the name is all there is.
    assert summary(run(message, sender=("Jane Doe", None))) == ("Jane Doe", "authored", "sender")


def test_a_sender_with_neither_name_nor_address_falls_to_the_path(tmp_path: Path) -> None:
    root = tmp_path / "mail"
    message = root / "Received" / "1.eml"
    result = run(message, embedded_author="Ada Lovelace", sender=(None, " "), root=root)
    assert summary(result) == (None, "received", "path")
    assert result.evidence["skipped"] == [
        {"signal": "sender", "why": "the message names no sender"}
    ]


def test_without_a_git_index_git_is_not_consulted(tmp_path: Path) -> None:
    repo = committed(tmp_path / "r", "Linus", "l@x.example", {"a.txt": "x"})
    result = run(repo / "a.txt", git=None, embedded_author="Ada Lovelace")
    assert summary(result) == ("Ada Lovelace", "received", "metadata")
    assert "skipped" not in result.evidence


def test_owner_without_a_configured_name_keeps_the_signals_spelling(tmp_path: Path) -> None:
    anonymous = Identity(self_name=None, emails=("jane@example.org",))
    repo = committed(tmp_path / "r", "jane d", "jane@example.org", {"a.txt": "x"})
    result = run(repo / "a.txt", identity=anonymous)
    assert summary(result) == ("jane d", "authored", "git")
    # With no name, a path rule can still say "authored", but not by whom.
    assert summary(run(tmp_path / "Notes" / "a.md", identity=anonymous, git=None)) == (
        None,
        "authored",
        "path",
    )
