"""The MCP server: stdio through ``garage-mcp`` (what clients spawn), streamable HTTP through
``garage mcp-serve``, and ``garage mcp install`` for client config snippets."""

from __future__ import annotations

import sys


def main() -> None:
    """``garage-mcp``: serve the index over stdio, with the config in GARAGE_CONFIG."""
    # Everything but the protocol goes to stderr: stdout belongs to the MCP client.
    from garage.config import ConfigError, load_config
    from garage.db import DatabaseError
    from garage.db.runtime import Runtime
    from garage.mcp.server import build_server

    try:
        runtime = Runtime.from_config(load_config())
    except (ConfigError, DatabaseError) as error:
        print(f"garage-mcp: {error}", file=sys.stderr)
        sys.exit(1)
    build_server(runtime).run("stdio")
