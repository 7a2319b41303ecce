"""The key Garage's own llama-servers ask for, and which requests carry it.

llama-server answers any ``Host`` and, by default, echoes any ``Origin`` back in its CORS
headers: on loopback, a web page the owner opens could use the models, directly or through DNS
rebinding. ``scripts/llama`` therefore starts them with ``--api-key-file``, and they answer only
requests that carry the key, which no page can know. The key is kept in an owner-only file,
``GARAGE_LLAMA_API_KEY_FILE``, else ``${GARAGE_CACHE:-~/.cache/garage}/llama.key``, where
``scripts/llama`` writes it; read when a client is made, never at import, never logged.

It goes to loopback llama-server hosts only: a model host elsewhere is not one of this
machine's servers and has no business with their key.
"""

from __future__ import annotations

import os
from pathlib import Path

from garage.inference.egress import is_loopback

KEY_FILE_VARIABLE = "GARAGE_LLAMA_API_KEY_FILE"
KEY_FILE_NAME = "llama.key"


def key_file() -> Path:
    named = os.environ.get(KEY_FILE_VARIABLE)
    if named:
        return Path(named).expanduser()
    cache = os.environ.get("GARAGE_CACHE") or "~/.cache/garage"
    return Path(cache).expanduser() / KEY_FILE_NAME


def load_key() -> str | None:
    """The first key in the file (llama-server's format: one per line, # comments), or None
    when there is no readable file: servers started without a key need none."""
    try:
        lines = key_file().read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    keys = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    return keys[0] if keys else None


def auth_headers(provider: str, host: str, key: str | None) -> dict[str, str]:
    """The Authorization header for a request to ``host``, when it should carry the key."""
    if key and provider == "llama_server" and is_loopback(host):
        return {"Authorization": f"Bearer {key}"}
    return {}
