"""Where a file sits says something about who wrote it: the fallback after git and metadata.

The rules look only at folder names (never the file name), from the source root's own name down
to the file's parent, so the machine's prefix above the root (`/home/jane`, `/Users/…`) cannot
trigger them. Folder names compare case-folded with `_`, `-` and `.` read as spaces, so
"Mail_Downloads" and "mail downloads" are the same folder.

| rule                | folders                                                  | relation |
|---------------------|----------------------------------------------------------|----------|
| received-folder     | Downloads, Download, Attachments, Mail Downloads,        | received |
|                     | Received, Received Files, AirDrop, WhatsApp (+ Images,   |          |
|                     | Documents, Video, Audio, Voice Notes), Telegram,         |          |
|                     | Telegram Desktop (+ Images, Documents, Video, Audio)     |          |
| owner-folder        | a folder named after the owner (identity.self_name)      | authored |
| own-writing-folder  | My Documents, Notes, Journal, Journals, Diary, Drafts    | authored |

A received folder anywhere in the path wins over an authored one: `Notes/Attachments/x.pdf` and
`Downloads/Course Notes/x.pdf` are both someone else's work, and claiming authorship is the
stronger statement of the two. A received file's author stays unknown: the folder says who
did not write it, not who did.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path


def normal_folder(name: str) -> str:
    return " ".join(re.sub(r"[_.\-]+", " ", name).split()).casefold()


def _names(*names: str) -> frozenset[str]:
    return frozenset(normal_folder(name) for name in names)


_WHATSAPP = ("Images", "Documents", "Video", "Audio", "Voice Notes")
_TELEGRAM = ("Images", "Documents", "Video", "Audio")

RECEIVED_FOLDERS = _names(
    "Downloads",
    "Download",
    "Attachments",
    "Mail Downloads",
    "Received",
    "Received Files",
    "AirDrop",
    "WhatsApp",
    *(f"WhatsApp {kind}" for kind in _WHATSAPP),
    "Telegram",
    "Telegram Desktop",
    *(f"Telegram {kind}" for kind in _TELEGRAM),
)
AUTHORED_FOLDERS = _names("My Documents", "Notes", "Journal", "Journals", "Diary", "Drafts")


@dataclass(frozen=True)
class PathMatch:
    rule: str  # "received-folder" | "owner-folder" | "own-writing-folder"
    matched: str  # the folder name as it appears in the path
    relation: str  # "authored" | "received"


def _folders(path: Path, root: Path | None) -> list[str]:
    absolute = Path(os.path.abspath(path))
    if root is not None:
        base = Path(os.path.abspath(root))
        if absolute.is_relative_to(base) and absolute != base:
            return [base.name, *absolute.relative_to(base).parts[:-1]]
    return list(absolute.parts[1:-1])  # no root given, or the file lies outside it


def match_path(
    path: Path, *, root: Path | None = None, self_name: str | None = None
) -> PathMatch | None:
    """The first rule of the table that a folder of `path` matches, or None."""
    folders = [(name, normal_folder(name)) for name in _folders(path, root)]
    for name, folded in folders:
        if folded in RECEIVED_FOLDERS:
            return PathMatch("received-folder", name, "received")
    owner = normal_folder(self_name) if self_name else None
    for name, folded in folders:
        if owner and folded == owner:
            return PathMatch("owner-folder", name, "authored")
    for name, folded in folders:
        if folded in AUTHORED_FOLDERS:
            return PathMatch("own-writing-folder", name, "authored")
    return None
