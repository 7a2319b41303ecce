"""``garage mcp install``: the config snippet that makes an MCP client spawn ``garage-mcp``, or
(``--http``) reach ``garage mcp-serve`` with the owner's bearer token.

Printed by default; written only with ``--write`` and the owner's consent, merged into the
client's file (other servers kept, the previous file saved next to it as ``.bak``). A file
that holds the token is written owner-only (0600), as the token's own file is.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SERVER_NAME = "garage"


@dataclass(frozen=True)
class Client:
    name: str
    label: str
    key: str  # the top-level object the client keeps its servers in
    typed: bool  # whether each entry names its transport ("type": "stdio")
    # The field an HTTP server's address goes in, for clients whose file can carry request
    # headers (the bearer token); None where the file holds only servers the client spawns.
    url_key: str | None = "url"

    def path(self, home: Path, platform: str = sys.platform) -> Path:
        return _PATHS[self.name](home, platform)


def _app_support(home: Path, platform: str, *parts: str) -> Path:
    if platform == "darwin":
        return home.joinpath("Library", "Application Support", *parts)
    if platform.startswith("win"):
        return Path(os.environ.get("APPDATA", home / "AppData" / "Roaming")).joinpath(*parts)
    return Path(os.environ.get("XDG_CONFIG_HOME", home / ".config")).joinpath(*parts)


_PATHS = {
    "claude-desktop": lambda h, p: _app_support(h, p, "Claude", "claude_desktop_config.json"),
    "cursor": lambda h, p: h / ".cursor" / "mcp.json",
    "windsurf": lambda h, p: h / ".codeium" / "windsurf" / "mcp_config.json",
    "vscode": lambda h, p: _app_support(h, p, "Code", "User", "mcp.json"),
    # Claude Code's project scope: the .mcp.json of the folder it runs in.
    "claude-code": lambda h, p: Path.cwd() / ".mcp.json",
}

CLIENTS = {
    c.name: c
    for c in (
        # Claude Desktop adds remote servers through its own settings, not this file.
        Client("claude-desktop", "Claude Desktop", "mcpServers", typed=False, url_key=None),
        Client("cursor", "Cursor", "mcpServers", typed=False),
        Client("windsurf", "Windsurf", "mcpServers", typed=False, url_key="serverUrl"),
        Client("vscode", "VS Code", "servers", typed=True),
        Client("claude-code", "Claude Code", "mcpServers", typed=True),
    )
}


def garage_mcp_command() -> str:
    """The garage-mcp next to the running interpreter (the project's venv), else on PATH."""
    beside = Path(sys.executable).parent / "garage-mcp"
    if beside.exists():
        return str(beside)
    return shutil.which("garage-mcp") or str(beside)


def server_entry(client: Client, config_file: Path, env: dict[str, str]) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "stdio"} if client.typed else {}
    variables = {"GARAGE_CONFIG": str(config_file.expanduser().resolve())}
    if env.get("GARAGE_DATA_DIR"):
        variables["GARAGE_DATA_DIR"] = str(Path(env["GARAGE_DATA_DIR"]).expanduser().resolve())
    entry |= {"command": garage_mcp_command(), "args": [], "env": variables}
    return entry


def http_entry(client: Client, url: str, token: str) -> dict[str, Any]:
    """The entry for ``garage mcp-serve`` at ``url``, carrying the bearer token."""
    if client.url_key is None:
        raise ValueError(
            f"{client.label} reads only servers it starts itself from its file, so it cannot "
            f"send a token there: use `garage mcp install --client {client.name}` without "
            "--http (the client starts garage-mcp as you, and stdio needs no token)"
        )
    entry: dict[str, Any] = {"type": "http"} if client.typed else {}
    return entry | {client.url_key: url, "headers": {"Authorization": f"Bearer {token}"}}


def merged(existing: str | None, client: Client, entry: dict[str, Any], path: Path) -> str:
    """The client's file with the garage entry added or replaced, everything else kept."""
    data: Any = {}
    if existing and existing.strip():
        try:
            data = json.loads(existing)
        except ValueError as error:
            raise ValueError(
                f"{path} is not valid JSON ({error}); fix it or add the snippet by hand"
            ) from None
    if not isinstance(data, dict):
        raise ValueError(f"{path} does not hold a JSON object; add the snippet by hand")
    servers = data.setdefault(client.key, {})
    if not isinstance(servers, dict):
        raise ValueError(f"{path}: {client.key!r} is not an object; add the snippet by hand")
    servers[SERVER_NAME] = entry
    return json.dumps(data, indent=2) + "\n"


def write(path: Path, text: str, *, private: bool = False) -> Path | None:
    """Write ``text`` to ``path``, keeping the previous file as ``<name>.bak``; ``private``
    (the text holds a token): the file, and its backup, readable by the owner only."""
    backup = None
    if path.exists():
        backup = path.with_name(path.name + ".bak")
        shutil.copy2(path, backup)
        if private:
            backup.chmod(0o600)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.touch(mode=0o600 if private else 0o666)
    if private:
        tmp.chmod(0o600)
    tmp.write_text(text)
    tmp.replace(path)
    return backup
