"""The MCP server: thirteen tools over the official SDK's MCPServer.

Every tool returns a dataclass, so its structured result maps field for field (scalars and
lists would be wrapped in ``{"result": ...}``). None of them changes configuration: the
server reads the corpus and talks to the local model, nothing else.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

from garage import __version__
from garage.ask.tools import CorpusTools
from garage.db.runtime import Runtime
from garage.mcp.facts import FactTools
from garage.mcp.generative import GenerativeTools
from garage.mcp.graph import GraphTools

INSTRUCTIONS = (
    "Garage is the owner's private, local index of their files, notes, code, mail and chats. "
    "Use rag_search to find passages, rag_get_document to read a document, and rag_ask for a "
    "cited answer from the local model."
)

_READS = ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=True)
# Generation reads too, but its answer differs from call to call.
_GENERATES = ToolAnnotations(read_only_hint=True, open_world_hint=False, idempotent_hint=False)


def build_server(runtime: Runtime) -> MCPServer:
    server: MCPServer = MCPServer(
        "garage",
        title="Garage",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
    )
    for fn in CorpusTools(runtime).read_tools():
        server.add_tool(fn, annotations=_READS, structured_output=True)
    for fn in GenerativeTools(runtime).all():
        server.add_tool(fn, annotations=_GENERATES, structured_output=True)
    for fn in FactTools(runtime).all():
        server.add_tool(fn, annotations=_READS, structured_output=True)
    for fn in GraphTools(runtime).all():
        server.add_tool(fn, annotations=_READS, structured_output=True)
    return server
