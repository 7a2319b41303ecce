"""The stdio MCP entry point clients spawn (``garage-mcp``)."""

from __future__ import annotations

import sys


def main() -> None:
    # The MCP server arrives with the search issue; until then say so plainly on stderr, so a
    # client that spawns this shows an understandable error instead of hanging.
    print(
        "garage-mcp: the MCP server is not available yet in this version of Garage", file=sys.stderr
    )
    sys.exit(2)
