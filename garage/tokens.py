"""Owner-only tokens: a random secret in a file only the owner's account can read.

Any local account can connect to a loopback port, so a server that answers with the owner's
mail must ask for something only the owner's processes can know. The token is 32 random bytes
(URL-safe text), written once into a file of mode 0600 inside a folder of mode 0700 under
Garage's data folder, and read from there by the owner's own tools; it is never logged, never
put in the config file (which other tools read and back up), and compared in constant time.
"""

from __future__ import annotations

import hmac
import os
import secrets
import stat
from pathlib import Path

TOKEN_BYTES = 32
SECRETS_FOLDER = "secrets"
MCP_TOKEN = "mcp.token"


class TokenFileError(Exception):
    """The token file cannot be trusted or made; the message names it and what to do."""


def token_path(data_dir: Path, name: str) -> Path:
    return data_dir / SECRETS_FOLDER / name


def owner_token(path: Path, *, rotate: bool = False) -> str:
    """The token in ``path``, made first if there is none (or anew with ``rotate``).

    A file another account could read, or one owned by another account, is refused rather
    than used: its secret may already be known."""
    owner_folder(path.parent)
    if not rotate:
        try:
            return _read(path)
        except FileNotFoundError:
            pass
    token = secrets.token_urlsafe(TOKEN_BYTES)
    # Written beside and renamed: a reader never sees half a token, and the mode is 0600 from
    # the first byte (O_EXCL on a fresh name, so no earlier file's mode is inherited).
    fresh = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    descriptor = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(token + "\n")
    fresh.replace(path)
    return token


def matches(given: str | bytes, expected: str | bytes) -> bool:
    """Constant-time comparison, so the time to refuse says nothing about the token."""
    a = given.encode() if isinstance(given, str) else given
    b = expected.encode() if isinstance(expected, str) else expected
    return hmac.compare_digest(a, b)


def owner_folder(folder: Path) -> None:
    """Make ``folder`` (0700), or check an existing one is this account's and tighten it."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = folder.stat()
    if info.st_uid != os.geteuid():
        raise TokenFileError(f"{folder} belongs to another account; remove it and try again")
    if stat.S_IMODE(info.st_mode) & 0o077:
        # Made by an older Garage or by hand: tightening it is what the owner would do.
        folder.chmod(0o700)


def _read(path: Path) -> str:
    info = path.stat()
    if info.st_uid != os.geteuid():
        raise TokenFileError(f"{path} belongs to another account; remove it (a new token is made)")
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise TokenFileError(
            f"{path} is readable by other accounts (mode {stat.S_IMODE(info.st_mode):o}), so its "
            "token may be known; remove it (a new token is made)"
        )
    token = path.read_text().strip()
    if len(token) < TOKEN_BYTES:
        raise TokenFileError(f"{path} holds no token; remove it (a new token is made)")
    return token
