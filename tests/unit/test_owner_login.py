"""The owner's login links: good once, for ten minutes, kept only as hashes in owner-only
files."""

from __future__ import annotations

import stat
from pathlib import Path

from garage.owner_login import LINK_SECONDS, LOGINS_FILE, new_login, session_key, use_login


def test_a_link_works_once_and_not_after_ten_minutes(tmp_path: Path) -> None:
    folder = tmp_path / "secrets"
    first = new_login(folder, now=1000.0)
    second = new_login(folder, now=1000.0)
    assert first != second
    assert use_login(folder, first, now=1001.0)
    assert not use_login(folder, first, now=1002.0)  # replayed
    assert not use_login(folder, second, now=1000.0 + LINK_SECONDS + 1)  # expired
    assert not use_login(folder, "", now=1001.0)
    assert not use_login(folder, "not-a-token", now=1001.0)


def test_only_hashes_are_kept_and_the_files_are_the_owners(tmp_path: Path) -> None:
    folder = tmp_path / "secrets"
    token = new_login(folder)
    key = session_key(folder)
    assert token not in (folder / LOGINS_FILE).read_text()
    assert session_key(folder) == key  # made once
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for name in (LOGINS_FILE, "ui.session"):
        assert stat.S_IMODE((folder / name).stat().st_mode) == 0o600
