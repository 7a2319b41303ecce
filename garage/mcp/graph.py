"""rag_graph_labels, rag_graph_find and rag_graph_neighbors: the AGE graph for an MCP client.

The same reads as ``garage graph labels|find|neighbors``, for the MCP client as they are for
the owner at the CLI (no model host reads them: rag_agent's tools are the corpus tools); where
the server has no AGE every call says so.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from garage.ask.tools import tool_errors
from garage.db.runtime import Runtime
from garage.graph import (
    GraphUnavailable,
    LabelCount,
    Neighbourhood,
    Vertex,
    find_vertices,
    graph_labels,
    neighbourhood,
)
from garage.graph.read import MAX_FIND, MAX_HOPS

Label = Annotated[str, Field(min_length=1, max_length=63, pattern=r"^[A-Za-z][A-Za-z0-9_]*$")]


@dataclass(frozen=True)
class GraphLabels:
    labels: list[LabelCount]


@dataclass(frozen=True)
class GraphVertices:
    vertices: list[Vertex]


class GraphTools:
    def __init__(self, runtime: Runtime):
        self.runtime = runtime

    def rag_graph_labels(self) -> GraphLabels:
        """List the graph's vertex and edge labels with how many of each it holds."""
        with _graph_errors(), self.runtime.reader() as conn:
            return GraphLabels(graph_labels(conn))

    def rag_graph_find(
        self,
        text: Annotated[
            str,
            Field(min_length=1, max_length=200, description="Words of a title, name or fact."),
        ],
        labels: Annotated[
            list[Label], Field(max_length=20, description="Only vertices of these labels.")
        ] = [],  # noqa: B006
        limit: Annotated[int, Field(ge=1, le=MAX_FIND, description="Vertices to return.")] = 20,
    ) -> GraphVertices:
        """Find graph vertices (documents, authors, facts) whose title contains the text.

        Pass a vertex's label and id as Label:id to rag_graph_neighbors."""
        with _graph_errors(), self.runtime.reader() as conn:
            return GraphVertices(find_vertices(conn, text, labels=tuple(labels), limit=limit))

    def rag_graph_neighbors(
        self,
        vertex: Annotated[
            str,
            Field(
                min_length=1, max_length=100, description="Label:id (e.g. Document:12) or a vid."
            ),
        ],
        hops: Annotated[int, Field(ge=1, le=MAX_HOPS, description="How many hops out.")] = 1,
    ) -> Neighbourhood:
        """Get a vertex's neighbourhood in the graph, within a number of hops.

        Returns the vertices within hops edges of it, each with its ring, and the edges
        between them."""
        with _graph_errors(), self.runtime.reader() as conn:
            return neighbourhood(conn, vertex, hops=hops)

    def all(self) -> list:  # type: ignore[type-arg]
        return [self.rag_graph_labels, self.rag_graph_find, self.rag_graph_neighbors]


@contextmanager
def _graph_errors() -> Iterator[None]:
    try:
        with tool_errors():
            yield
    except GraphUnavailable as error:
        raise ToolError(str(error)) from error
