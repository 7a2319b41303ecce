"""The folder table: received folders, the owner's folders, and where matching starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from garage.attribute.pathrules import match_path

ROOT = Path("/home/jane/Documents")


@pytest.mark.parametrize(
    ("relative", "rule", "matched", "relation"),
    [
        ("Downloads/report.pdf", "received-folder", "Downloads", "received"),
        ("Attachments/a.docx", "received-folder", "Attachments", "received"),
        ("Mail_Downloads/a.pdf", "received-folder", "Mail_Downloads", "received"),
        ("mail downloads/a.pdf", "received-folder", "mail downloads", "received"),
        ("Phone/WhatsApp/Media/WhatsApp Video/a.mp4", "received-folder", "WhatsApp", "received"),
        ("Telegram Desktop/scan.pdf", "received-folder", "Telegram Desktop", "received"),
        ("RECEIVED/x.txt", "received-folder", "RECEIVED", "received"),
        ("Notes/idea.md", "own-writing-folder", "Notes", "authored"),
        ("My Documents/letter.docx", "own-writing-folder", "My Documents", "authored"),
        ("writing/Drafts/ch1.md", "own-writing-folder", "Drafts", "authored"),
        ("journal/2024-01-01.md", "own-writing-folder", "journal", "authored"),
        ("jane_doe/cv.pdf", "owner-folder", "jane_doe", "authored"),
        ("Jane Doe/Notes/x.md", "owner-folder", "Jane Doe", "authored"),
        # A received folder anywhere wins: notes' attachments, a course's notes downloaded.
        ("Notes/Attachments/paper.pdf", "received-folder", "Attachments", "received"),
        ("Downloads/Course Notes/Notes/week1.pdf", "received-folder", "Downloads", "received"),
        ("Jane Doe/Downloads/x.pdf", "received-folder", "Downloads", "received"),
    ],
)  # fmt: skip
def test_table(relative: str, rule: str, matched: str, relation: str) -> None:
    found = match_path(ROOT / relative, root=ROOT, self_name="Jane Doe")
    assert found is not None
    assert (found.rule, found.matched, found.relation) == (rule, matched, relation)


@pytest.mark.parametrize(
    "relative",
    ["report.pdf", "Projects/x/report.pdf", "Downloads.pdf", "Notes.md", "Notebook/x.md",
     "Work/Download Manager Notes.txt"],
)  # fmt: skip
def test_no_rule(relative: str) -> None:
    assert match_path(ROOT / relative, root=ROOT, self_name="Jane Doe") is None


def test_folders_above_the_root_do_not_count() -> None:
    # The machine's own prefix says nothing: a user whose home is /home/notes, a mount point.
    root = Path("/home/notes/Downloads-archive-not/Work")
    assert match_path(root / "a.pdf", root=root) is None
    assert match_path(Path("/home/notes/Work/a.pdf"), root=Path("/home/notes/Work")) is None


def test_the_roots_own_name_counts() -> None:
    root = Path("/home/jane/Downloads")
    found = match_path(root / "paper.pdf", root=root)
    assert found is not None and found.matched == "Downloads"


def test_without_a_root_or_outside_it_the_whole_path_counts() -> None:
    assert match_path(Path("/home/jane/Downloads/a.pdf")) is not None
    found = match_path(Path("/srv/Notes/a.md"), root=Path("/elsewhere"))
    assert found is not None and found.rule == "own-writing-folder"


def test_owner_folder_needs_an_owner() -> None:
    assert match_path(ROOT / "Jane Doe" / "cv.pdf", root=ROOT, self_name=None) is None
