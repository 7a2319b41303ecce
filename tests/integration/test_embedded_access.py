"""The embedded default admits its owner only: no TCP address, a data folder of 0700, and a
Unix socket another local account cannot reach, even when the data folder's path is too long
for a socket name and the wheel puts the socket elsewhere."""

from __future__ import annotations

import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from garage.db import embedded


@pytest.fixture
def open_parent() -> Iterator[Path]:
    """A folder every account may pass through (pytest's own tmp_path is 0700, which would hide
    the data folder from other accounts whatever its own mode)."""
    folder = Path(tempfile.mkdtemp(prefix="garage-embedded-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


PROBE = """
import sys, psycopg
try:
    psycopg.connect(sys.argv[1], connect_timeout=10).close()
    print("CONNECTED")
except psycopg.OperationalError as error:
    print("refused:", " ".join(str(error).split()))
"""


def _as(account: str, url: str) -> str:
    entry = pwd.getpwnam(account)
    result = subprocess.run(
        ["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--clear-groups",
         sys.executable, "-c", PROBE, url],
        capture_output=True, text=True, timeout=60, cwd="/",
        env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip()


def _check_owner_only(data_dir: Path, other_account: str) -> Path:
    url = embedded.start(data_dir)
    try:
        pgdata = embedded.pgdata_dir(data_dir)
        assert stat.S_IMODE(pgdata.stat().st_mode) == 0o700
        socket_dir = Path(str(conninfo_to_dict(url)["host"]))
        assert stat.S_IMODE(socket_dir.stat().st_mode) == 0o700
        with psycopg.connect(url) as conn:
            assert conn.execute("SHOW listen_addresses").fetchone() == ("",)  # no TCP at all
        outcome = _as(other_account, url)
        assert outcome.startswith("refused:") and "Permission denied" in outcome, outcome
    finally:
        embedded.stop(data_dir)
    return socket_dir


def test_the_embedded_default_is_owner_only(open_parent: Path, other_account: str) -> None:
    data_dir = open_parent / "data"
    socket_dir = _check_owner_only(data_dir, other_account)
    assert socket_dir == embedded.pgdata_dir(data_dir)


def test_a_socket_moved_out_of_a_long_data_path_is_owner_only_too(
    open_parent: Path, other_account: str
) -> None:
    data_dir = open_parent / ("d" * 80) / "data"  # the socket's name would pass 107 bytes
    socket_dir = _check_owner_only(data_dir, other_account)
    assert socket_dir != embedded.pgdata_dir(data_dir)
