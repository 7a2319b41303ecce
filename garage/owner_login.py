"""The owner's browser session for `garage up`: a one-time login link exchanged for a cookie.

Any local account can connect to a loopback port, so the Dagster UI and Garage's pages must ask
for something only the owner's processes hold. `garage up` (and `garage up --login`) writes a
fresh login token — good once, for ten minutes — into the owner-only secrets folder
(garage.tokens) and prints a link carrying it; the server exchanges it for an HttpOnly,
SameSite=Strict cookie holding the session key (an owner-only file too), and forgets the token.
Every other request without that cookie gets 401 and a page saying how to get in. Only the
token's hash is kept on disk, so reading the pending logins would not give a usable link.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.cookies import CookieError, SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote

from garage import tokens

LOGIN_PATH = "/_garage/login"
HEALTH_PATH = "/_garage/health"  # answers without a session: `garage up` waits on it
COOKIE = "garage_session"
SESSION_FILE = "ui.session"
LOGINS_FILE = "ui.logins"
LINK_SECONDS = 600.0

LOCKED_OUT = b"""<!doctype html><meta charset="utf-8"><title>Garage: sign in</title>
<h1>Sign in to Garage</h1>
<p>This page is only for the account that runs Garage. In that account, run</p>
<pre>garage up --login</pre>
<p>and open the link it prints (good once, for ten minutes).</p>
"""
USED_LINK = b"""<!doctype html><meta charset="utf-8"><title>Garage: sign in</title>
<h1>This login link cannot be used</h1>
<p>It was used already, has expired, or is not Garage's. Run <code>garage up --login</code> for
a new one.</p>
"""


def secrets_folder(data_dir: Path) -> Path:
    return data_dir / tokens.SECRETS_FOLDER


def session_key(folder: Path) -> str:
    """The value of the owner's cookie, made once (an owner-only file)."""
    return tokens.owner_token(folder / SESSION_FILE)


def login_url(base: str, token: str, next_path: str | None = None) -> str:
    """The link that signs a browser in, then opens ``next_path`` (default: the UI's start)."""
    link = f"{base}{LOGIN_PATH}?token={token}"
    return link + (f"&next={quote(next_path)}" if next_path else "")


def new_login(folder: Path, *, now: float | None = None) -> str:
    """A fresh one-time login token; its hash is kept until it is used or expires."""
    token = secrets.token_urlsafe(tokens.TOKEN_BYTES)
    now = time.time() if now is None else now
    with _locked(folder):
        pending = _pending(folder, now)
        pending.append((_digest(token), now + LINK_SECONDS))
        _write(folder, pending)
    return token


def use_login(folder: Path, token: str, *, now: float | None = None) -> bool:
    """True once for a token `new_login` made within the last ten minutes; it is forgotten
    here, so the same link replayed is refused."""
    if not token:
        return False
    now = time.time() if now is None else now
    wanted = _digest(token)
    with _locked(folder):
        pending = _pending(folder, now)
        kept = [entry for entry in pending if not tokens.matches(entry[0], wanted)]
        _write(folder, kept)
    return len(kept) < len(pending)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """One reader-writer of the pending logins at a time: two tabs opening one link, or a login
    while `garage up --login` writes, must not both win or lose a token."""
    tokens.owner_folder(folder)
    descriptor = os.open(folder / (LOGINS_FILE + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


def _pending(folder: Path, now: float) -> list[tuple[str, float]]:
    try:
        lines = (folder / LOGINS_FILE).read_text().splitlines()
    except FileNotFoundError:
        return []
    out = []
    for line in lines:
        digest, _, expiry = line.partition(" ")
        try:
            if float(expiry) > now:
                out.append((digest, float(expiry)))
        except ValueError:
            continue  # a line half written by hand: it names no usable token
    return out


def _write(folder: Path, pending: list[tuple[str, float]]) -> None:
    fresh = folder / f".{LOGINS_FILE}.{secrets.token_hex(4)}"
    descriptor = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.writelines(f"{digest} {expiry:.0f}\n" for digest, expiry in pending)
    fresh.replace(folder / LOGINS_FILE)


class OwnerSession:
    """ASGI middleware: only a request carrying the owner's cookie reaches ``app``; the login
    link sets it, the health path answers anyone."""

    def __init__(self, app: Any, folder: Path):
        self.app = app
        self.folder = folder
        self.key = session_key(folder)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        if kind == "http" and path == HEALTH_PATH:
            await _respond(send, 200, b"text/plain; charset=utf-8", b"ok\n")
            return
        if kind == "http" and path == LOGIN_PATH:
            await self._login(scope, send)
            return
        if self._has_session(scope):
            await self.app(scope, receive, send)
            return
        if kind == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        await _respond(send, 401, b"text/html; charset=utf-8", LOCKED_OUT)

    def _has_session(self, scope: Any) -> bool:
        for name, value in scope.get("headers") or []:
            if name != b"cookie":
                continue
            cookie: SimpleCookie = SimpleCookie()
            try:
                cookie.load(value.decode("latin-1"))
            except CookieError:
                continue
            morsel = cookie.get(COOKIE)
            if morsel is not None and tokens.matches(morsel.value, self.key):
                return True
        return False

    async def _login(self, scope: Any, send: Any) -> None:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        token = (query.get("token") or [""])[0]
        if scope.get("method") != "GET" or not use_login(self.folder, token):
            await _respond(send, 401, b"text/html; charset=utf-8", USED_LINK)
            return
        cookie = f"{COOKIE}={self.key}; HttpOnly; SameSite=Strict; Path=/"
        target = (query.get("next") or ["/"])[0]
        # A path of this server only: "//host" or a scheme would send the owner elsewhere.
        if not target.startswith("/") or target.startswith("//") or "\\" in target:
            target = "/"
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [
                    (b"location", target.encode("latin-1", errors="replace")),
                    (b"set-cookie", cookie.encode()),
                    (b"cache-control", b"no-store"),
                    (b"referrer-policy", b"no-referrer"),
                    (b"content-length", b"0"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": b""})


async def _respond(send: Any, status: int, content_type: bytes, body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type),
                (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-store"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
