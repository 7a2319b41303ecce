"""Who can connect to the pg-age server (scripts/pg-age): the owner with the password file the
URL names, and nobody else: not without the password, not with a wrong one, not another local
account (over TCP or the Unix socket). Its rules are read from the server itself."""

from __future__ import annotations

import os
import pwd
import stat
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo


def _params(url: str) -> dict[str, object]:
    return {key: value for key, value in conninfo_to_dict(url).items() if value is not None}


@pytest.fixture
def passfile(pg_server_url: str) -> Path:
    named = _params(pg_server_url).get("passfile")
    if not named:
        pytest.skip("the test server is not scripts/pg-age's (its URL names no password file)")
    return Path(str(named))


def _refused(conninfo: str) -> str:
    # No ~/.pgpass or PGPASSWORD of this account may stand in for the password under test.
    env = {"PGPASSFILE": "/nonexistent", "PGPASSWORD": ""}
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        with pytest.raises(psycopg.OperationalError) as refused:
            psycopg.connect(conninfo, connect_timeout=10).close()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return str(refused.value)


def test_the_password_file_is_owner_only_and_the_url_does_not_carry_the_password(
    pg_server_url: str, passfile: Path
) -> None:
    mode = stat.S_IMODE(passfile.stat().st_mode)
    assert mode == 0o600 and passfile.stat().st_uid == os.geteuid()
    assert stat.S_IMODE(passfile.parent.stat().st_mode) & 0o077 == 0  # the cache folder too
    password = passfile.read_text().strip().split(":", 4)[4]
    assert len(password) >= 32 and password not in pg_server_url


def test_the_server_trusts_nobody(pg_server_url: str, passfile: Path) -> None:
    with psycopg.connect(pg_server_url) as conn:
        rules = conn.execute(
            "SELECT type, user_name, address, auth_method, error FROM pg_hba_file_rules"
        ).fetchall()
        listen = conn.execute("SHOW listen_addresses").fetchone()
        socket_dirs = conn.execute("SHOW unix_socket_directories").fetchone()
        data_dir = conn.execute("SHOW data_directory").fetchone()
    assert rules and all(rule[4] is None for rule in rules)
    assert not [rule for rule in rules if rule[3] == "trust"]
    assert {rule[3] for rule in rules if rule[0] == "host"} == {"scram-sha-256"}
    assert {tuple(rule[1]) for rule in rules if rule[3] == "peer"} <= {("postgres",)}
    assert listen == ("127.0.0.1",)
    # The socket is in the data folder, which PostgreSQL keeps owner-only.
    assert socket_dirs == data_dir


def test_connecting_without_the_password_fails(pg_server_url: str, passfile: Path) -> None:
    params = _params(pg_server_url)
    params.pop("passfile")
    message = _refused(make_conninfo(**params))  # type: ignore[arg-type]
    assert "no password supplied" in message
    message = _refused(make_conninfo(**params, password="not-the-password"))  # type: ignore[arg-type]
    assert "password authentication failed" in message


PROBE = """
import sys, psycopg
for conninfo in sys.argv[1:]:
    try:
        psycopg.connect(conninfo, connect_timeout=10).close()
        print("CONNECTED", conninfo)
    except psycopg.OperationalError as error:
        print("refused:", " ".join(str(error).split()))
"""


def test_another_local_account_cannot_connect(
    pg_server_url: str, passfile: Path, other_account: str
) -> None:
    with psycopg.connect(pg_server_url) as conn:
        row = conn.execute("SHOW unix_socket_directories").fetchone()
    assert row is not None
    socket_dir = str(row[0])
    port = _params(pg_server_url).get("port", "5432")
    # On Debian 12 the server runs in a Debian 13 root under the cache: its socket folder, as
    # the host sees it, is under that root.
    cache = passfile.parent
    candidates = [Path(socket_dir), cache / "pg-age-trixie" / socket_dir.lstrip("/")]
    sockets = [str(path) for path in candidates if path.is_dir()]
    assert sockets, f"no socket folder among {candidates}"
    attempts = [pg_server_url]  # the very URL, with the password file it cannot read
    for directory in sockets:
        attempts.append(f"host={directory} port={port} user=postgres dbname=postgres")
    account = pwd.getpwnam(other_account)
    result = subprocess.run(
        ["setpriv", f"--reuid={account.pw_uid}", f"--regid={account.pw_gid}", "--clear-groups",
         sys.executable, "-c", PROBE, *attempts],
        capture_output=True, text=True, timeout=60, cwd="/",
        env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "PGPASSFILE": "/nonexistent"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert len(lines) == len(attempts) and not [line for line in lines if "CONNECTED" in line]
    assert "no password supplied" in lines[0] or "password authentication failed" in lines[0]
    assert all("Permission denied" in line for line in lines[1:]), lines
