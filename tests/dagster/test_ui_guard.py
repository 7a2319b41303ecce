"""The Dagster UI as `garage up` serves it: forged Host, another site's Origin and GraphQL
mutations over GET are refused by the real webserver; the UI still loads, and runs its own
GraphQL, in headless Chromium at 127.0.0.1 and localhost; a DNS-rebound name does not."""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from garage.cli import cli
from garage.owner_login import COOKIE, HEALTH_PATH, login_url, new_login
from garage_assets.commands import group_members
from tests.servers import free_port

ROOT = Path(__file__).resolve().parents[2]
GARAGE = [sys.executable, "-m", "garage.cli"]
WIPE = "mutation { wipeAssets(assetPartitionRanges: []) { __typename } }"
LOCATION = "garage_assets.definitions"


@dataclass(frozen=True)
class ServedUI:
    port: int
    pid: int  # the session `garage up` started: webserver, daemon, code server
    log: Path
    cookie: str  # the owner's session, from the login link `garage up` printed
    secrets: Path  # where the session key and pending logins are kept

    def link(self, host: str = "127.0.0.1", next_path: str | None = None) -> str:
        """A fresh one-time login link, as `garage up --login` makes it."""
        return login_url(f"http://{host}:{self.port}", new_login(self.secrets), next_path)


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedUI]:
    """`garage up --detach` (SQLite storage: no database needed) on a free port."""
    home = tmp_path_factory.mktemp("ui")
    config = home / "garage.json"
    config.write_text(json.dumps({"schedule": {"enabled": False, "watch": False}}))
    env = dict(
        os.environ,
        GARAGE_CONFIG=str(config),
        GARAGE_DATA_DIR=str(home / "data"),
        DAGSTER_HOME=str(home / "dagster"),
    )
    port = free_port()
    up = subprocess.run(
        [*GARAGE, "up", "--detach", "--sqlite", "--port", str(port), "--json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert up.returncode == 0, up.stderr[-3000:]
    try:
        started = json.loads(up.stdout)
        with httpx.Client(trust_env=False, timeout=30) as http:
            signed_in = http.get(started["login"])
        assert signed_in.status_code == 303 and signed_in.headers["location"] == "/"
        cookie = signed_in.cookies[COOKIE]
        yield ServedUI(
            port, int(started["pid"]), Path(started["log"]), cookie, home / "data" / "secrets"
        )
    finally:
        down = subprocess.run(
            [*GARAGE, "down", "--json"], cwd=ROOT, env=env, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
        assert json.loads(down.stdout)["stopped"] is True


def _client(port: int, cookie: str | None = None) -> httpx.Client:
    """A client on the UI's port, with the owner's session cookie when given."""
    return httpx.Client(
        base_url=f"http://127.0.0.1:{port}", trust_env=False, timeout=30,
        cookies={COOKIE: cookie} if cookie else None,
    )  # fmt: skip


def test_a_forged_host_is_refused_by_the_ui_and_graphql(ui: ServedUI) -> None:
    forged = {"Host": f"attacker.example:{ui.port}"}
    with _client(ui.port, ui.cookie) as http:
        assert http.get("/server_info").status_code == 200
        assert http.get("/server_info", headers={"Host": f"localhost:{ui.port}"}).status_code == 200
        assert http.get("/server_info", headers=forged).status_code == 421
        assert http.get("/", headers=forged).status_code == 421
        response = http.post("/graphql", json={"query": "{ version }"}, headers=forged)
        assert response.status_code == 421


def test_the_pages_are_served_beside_the_ui_behind_the_same_guard(ui: ServedUI) -> None:
    """Garage's pages at /garage/ on the UI's own address: a forged Host is refused there too,
    and another site's POST (which would start a model's answer) is refused."""
    with _client(ui.port, ui.cookie) as http:
        style = http.get("/garage/static/garage.css")
        assert style.status_code == 200 and style.headers["content-type"].startswith("text/css")
        assert "script-src 'self'" in style.headers["content-security-policy"]
        forged = {"Host": f"attacker.example:{ui.port}"}
        assert http.get("/garage/static/garage.css", headers=forged).status_code == 421
        other = {"Origin": "http://attacker.example"}
        response = http.post("/garage/ask/stream", data={"q": "x"}, headers=other)
        assert response.status_code == 403
        # The Dagster UI is still everything else.
        assert http.get("/server_info").status_code == 200


def test_another_sites_requests_and_mutations_over_get_are_refused(ui: ServedUI) -> None:
    with _client(ui.port, ui.cookie) as http:
        own = {"Origin": f"http://localhost:{ui.port}"}
        assert http.post("/graphql", json={"query": "{ version }"}, headers=own).status_code == 200
        other = {"Origin": "http://attacker.example"}
        assert (
            http.post("/graphql", json={"query": "{ version }"}, headers=other).status_code == 403
        )
        # A form a page can post without CORS: Dagster reads the query from the URL.
        form = http.post(
            "/graphql", params={"query": WIPE}, headers=other, content=b"x=1",
        )  # fmt: skip
        assert form.status_code == 403
        # An <img src> would send this one; Dagster would run the mutation.
        assert http.get("/graphql", params={"query": WIPE}).status_code == 405
        assert http.get("/graphql", params={"query": "{ version }"}).status_code == 200


def test_a_websocket_from_another_site_is_refused(ui: ServedUI) -> None:
    def handshake(origin: str) -> str:
        with socket.create_connection(("127.0.0.1", ui.port), timeout=10) as conn:
            conn.sendall(
                (
                    f"GET /graphql HTTP/1.1\r\nHost: 127.0.0.1:{ui.port}\r\nUpgrade: websocket\r\n"
                    "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                    f"Sec-WebSocket-Protocol: graphql-ws\r\nOrigin: {origin}\r\n"
                    f"Cookie: {COOKIE}={ui.cookie}\r\n\r\n"
                ).encode()
            )
            return conn.recv(1024).decode("latin-1").split("\r\n")[0]

    assert " 101 " in handshake(f"http://127.0.0.1:{ui.port}")
    assert " 403 " in handshake("http://attacker.example")


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("chromium is not installed (scripts/test installs it with apt as root)")
    return found


def _page_text(url: str, profile: Path) -> str:
    """The page as headless Chromium renders it after its scripts ran, tags stripped.
    `attacker.example` resolves to 127.0.0.1, as a DNS-rebinding attacker would make it."""
    result = subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         f"--user-data-dir={profile}", "--host-resolver-rules=MAP attacker.example 127.0.0.1",
         "--virtual-time-budget=20000", "--dump-dom", url],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    text = re.sub(r"<script.*?</script>|<style.*?</style>", " ", result.stdout, flags=re.S)
    return " ".join(re.sub(r"<[^>]+>", " ", text).split())


def test_the_ui_loads_in_chromium_only_under_its_own_names(ui: ServedUI, tmp_path: Path) -> None:
    for name in ("127.0.0.1", "localhost"):
        # The code locations page is filled by the UI's own GraphQL POSTs (Origin: this page),
        # opened through a login link, as the owner opens it.
        link = ui.link(name, "/deployment/locations")
        text = _page_text(link, tmp_path / name)
        assert "Code locations" in text and LOCATION in text and "Loaded" in text, text[:500]
    text = _page_text(f"http://attacker.example:{ui.port}/", tmp_path / "rebound")
    assert "misdirected request" in text and LOCATION not in text


def test_the_ui_refuses_to_listen_beyond_loopback(tmp_path: Path) -> None:
    env = {"GARAGE_CONFIG": str(tmp_path / "none.json"), "DAGSTER_HOME": str(tmp_path / "d")}
    for host in ("0.0.0.0", "192.168.1.20", "::"):
        result = CliRunner().invoke(cli, ["up", "--sqlite", "--host", host], env=env)
        assert result.exit_code == 1 and "only on loopback" in result.output, result.output


def test_the_code_server_socket_is_owner_only(ui: ServedUI) -> None:
    """The webserver and the daemon reach the definitions' code server over a Unix socket in
    /tmp; `garage up` creates it owner-only, so another account cannot ask it to run code."""
    sockets = []
    for pid in group_members(ui.pid):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--socket" in argv:
            sockets.append(Path(argv[argv.index(b"--socket") + 1].decode()))
    assert sockets, "no code server with a Unix socket in the session of `garage up`"
    for path in sockets:
        mode = path.stat().st_mode
        assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) & 0o077 == 0, (path, oct(mode))


def test_the_ui_writes_no_access_log(ui: ServedUI) -> None:
    """A URL can carry what a person searched for: the server does not keep them."""
    with _client(ui.port, ui.cookie) as http:
        http.get("/server_info", params={"q": "zebra-whisper-in-a-url"})
        http.get("/", headers={"Host": "attacker.example"}, params={"q": "zebra-whisper-in-a-url"})
    assert "zebra-whisper-in-a-url" not in ui.log.read_text(errors="replace")


def test_the_ui_stops_when_its_daemon_dies(tmp_path: Path) -> None:
    """No UI without its daemon (sensors and queued runs would silently stand still): the
    webserver and the code server stop with it, and the process says so with status 1."""
    (tmp_path / "garage.json").write_text(json.dumps({"schedule": {"enabled": False}}))
    env = dict(
        os.environ,
        GARAGE_CONFIG=str(tmp_path / "garage.json"),
        GARAGE_DATA_DIR=str(tmp_path / "data"),
        DAGSTER_HOME=str(tmp_path / "dagster"),
    )
    init = subprocess.run(
        [*GARAGE, "up", "--sqlite", "--init-only"], cwd=ROOT, env=env, capture_output=True,
        timeout=120,
    )  # fmt: skip
    assert init.returncode == 0, init.stderr[-2000:]
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "garage_assets.ui", "--port", str(port)], cwd=ROOT, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        with _client(port) as http:
            for _ in range(240):
                try:
                    if http.get(HEALTH_PATH).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(0.5)
        daemons = [
            pid
            for pid in group_members(process.pid)
            if b"dagster._daemon" in Path(f"/proc/{pid}/cmdline").read_bytes()
        ]
        assert len(daemons) == 1
        os.kill(daemons[0], signal.SIGKILL)
        assert process.wait(timeout=90) == 1
        deadline = time.monotonic() + 60
        while group_members(process.pid) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert group_members(process.pid) == []
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)


# Run as another local account: read the owner's session key, then ask the UI without it.
OTHER_ACCOUNT_PROBE = """
import sys, urllib.error, urllib.request
try:
    open(sys.argv[1]).read()
    print("READ")
except PermissionError:
    print("unreadable")
for url in sys.argv[2:]:
    try:
        print(urllib.request.urlopen(url, timeout=30).status)
    except urllib.error.HTTPError as error:
        print(error.code)
"""


def test_only_the_owners_browser_gets_in(ui: ServedUI, other_account: str) -> None:
    """Without the owner's cookie the UI, its GraphQL API and the pages answer 401 with a page
    saying how to get in; a login link works once; the health path answers anyone."""
    own = {"Origin": f"http://127.0.0.1:{ui.port}"}
    with _client(ui.port) as http:
        for path in ("/", "/deployment/locations", "/garage/", "/garage/search?q=x"):
            response = http.get(path)
            assert response.status_code == 401, path
            assert "garage up --login" in response.text
        assert http.post("/graphql", json={"query": "{ version }"}, headers=own).status_code == 401
        assert http.get(HEALTH_PATH).status_code == 200
        http.cookies.set(COOKIE, "x" * 43)
        assert http.get("/server_info").status_code == 401
    with _client(ui.port) as http:
        link = ui.link()
        first = http.get(link)
        assert first.status_code == 303 and first.cookies[COOKIE] == ui.cookie
        cookie_line = first.headers["set-cookie"]
        assert "HttpOnly" in cookie_line and "SameSite=Strict" in cookie_line
        assert http.get("/server_info").status_code == 200
    with _client(ui.port) as http:
        replayed = http.get(link)  # the same link again: used, so refused
        assert replayed.status_code == 401 and COOKIE not in replayed.cookies
        made_up = http.get(login_url(f"http://127.0.0.1:{ui.port}", "y" * 43))
        assert made_up.status_code == 401
        # A login link sends the browser only to a path of this server.
        away = http.get(ui.link(next_path="//attacker.example/"))
        assert away.status_code == 303 and away.headers["location"] == "/"

    key = ui.secrets / "ui.session"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE(ui.secrets.stat().st_mode) == 0o700
    account = pwd.getpwnam(other_account)
    base = f"http://127.0.0.1:{ui.port}"
    probe = subprocess.run(
        ["setpriv", f"--reuid={account.pw_uid}", f"--regid={account.pw_gid}", "--clear-groups",
         sys.executable, "-c", OTHER_ACCOUNT_PROBE, str(key), f"{base}/server_info",
         f"{base}/garage/"],
        capture_output=True, text=True, timeout=60, cwd="/",
        env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"},
    )  # fmt: skip
    assert probe.returncode == 0, probe.stderr[-2000:]
    assert probe.stdout.split() == ["unreadable", "401", "401"]
