"""The read-only corpus tools: rag_search, rag_get_document, rag_list_sources, rag_list_authors
and rag_stats.

Answering's own tools, the ones rag_agent's model calls. The MCP server registers the same
plain methods with annotated parameters as they are, and rag_agent validates a model's
arguments against the very same signatures, so both check arguments the same way. Every
bound (limits, offsets, lengths, list sizes) is in the schema, so a hostile call is refused
before any query runs; what only the database can tell (an unknown id) comes back as a
ToolError naming the field.

``allow_communications`` is the content rule for a model host that is not loopback: search
then returns documents and code only, and a communication is never handed out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Any

from mcp.server.mcpserver.exceptions import ToolError
from psycopg.errors import QueryCanceled
from pydantic import Field

from garage.db import DatabaseError
from garage.db.runtime import Runtime
from garage.inference import InferenceError
from garage.search import (
    MAX_LIMIT,
    AuthorSummary,
    CorpusStats,
    SearchError,
    SearchQuery,
    SearchResponse,
    SourceSummary,
    corpus_stats,
    list_authors,
    list_sources,
    search,
)
from garage.search.corpus import MAX_AUTHORS
from garage.search.documents import (
    DEFAULT_LENGTH,
    MAX_LENGTH,
    DocumentNotFound,
    DocumentRefused,
    DocumentText,
    get_document,
)
from garage.search.filters import parse_date
from garage.search.types import CorpusClass, Direction, Mode

MAX_ID = 2**63 - 1  # bigint
Name = Annotated[str, Field(min_length=1, max_length=200)]
Names = Annotated[list[Name], Field(max_length=50)]
Date = Annotated[
    str, Field(max_length=40, description="YYYY-MM-DD or an ISO 8601 date-time (UTC if no zone)")
]


@dataclass(frozen=True)
class SourceList:
    sources: list[SourceSummary]


@dataclass(frozen=True)
class AuthorList:
    authors: list[AuthorSummary]


@contextmanager
def tool_errors() -> Iterator[None]:
    """What a caller can correct, as a ToolError whose message reaches the caller."""
    try:
        yield
    except ToolError:
        raise
    except QueryCanceled:
        raise ToolError(
            "the query took too long and was stopped; narrow it (fewer terms, a filter)"
        ) from None
    except (
        SearchError,
        DocumentNotFound,
        DocumentRefused,
        InferenceError,
        DatabaseError,
        ValueError,
    ) as error:
        raise ToolError(str(error)) from error


class CorpusTools:
    def __init__(self, runtime: Runtime, *, allow_communications: bool = True):
        self.runtime = runtime
        self.allow_communications = allow_communications

    def rag_search(
        self,
        query: Annotated[
            str, Field(min_length=1, max_length=10_000, description="What to look for.")
        ],
        limit: Annotated[int, Field(ge=1, le=MAX_LIMIT, description="Hits to return.")] = 10,
        mode: Annotated[
            Mode, Field(description="hybrid fuses meaning and keywords; or one of them.")
        ] = "hybrid",
        sources: Annotated[Names, Field(description="Only these sources (names).")] = [],  # noqa: B006
        corpus_classes: Annotated[
            list[CorpusClass], Field(max_length=3, description="Only these kinds of content.")
        ] = [],  # noqa: B006
        authors: Annotated[Names, Field(description="Only by these people (name or email).")] = [],  # noqa: B006
        date_from: Date | None = None,
        date_to: Date | None = None,
        direction: Annotated[
            Direction | None, Field(description="Messages only: sent by the owner or received.")
        ] = None,
        sender: Annotated[
            str | None,
            Field(min_length=1, max_length=200, description="Messages only: part of the sender."),
        ] = None,
    ) -> SearchResponse:
        """Search the owner's files, notes, code, mail and chats for passages about a query.

        Returns the best-matching excerpts with their document_id, title, source, author and
        scores; pass a document_id to rag_get_document for the full text.
        """
        with tool_errors():
            classes = tuple(dict.fromkeys(corpus_classes))
            if not self.allow_communications:
                classes = self._without_communications(classes)
            search_query = SearchQuery(
                text=query,
                limit=limit,
                mode=mode,
                sources=tuple(sources),
                corpus_classes=classes,
                authors=tuple(authors),
                date_from=parse_date("date_from", date_from),
                date_to=parse_date("date_to", date_to, end_of_day=True),
                direction=direction,
                sender=sender,
            )
            with self.runtime.reader() as conn:
                return search(conn, self.runtime.config, search_query)

    @staticmethod
    def _without_communications(classes: tuple[CorpusClass, ...]) -> tuple[CorpusClass, ...]:
        if not classes:
            return ("document", "code")
        kept = tuple(c for c in classes if c != "communication")
        if not kept:
            raise ValueError(
                "corpus_classes: communications are not available here, because the model "
                "host is not on this machine; search document or code"
            )
        return kept

    def rag_get_document(
        self,
        document_id: Annotated[
            int | None, Field(ge=1, le=MAX_ID, description="The id from a search hit.")
        ] = None,
        uri: Annotated[
            str | None, Field(min_length=1, max_length=4096, description="Or the document's URI.")
        ] = None,
        source: Annotated[
            str | None, Field(min_length=1, max_length=200, description="With uri: the source.")
        ] = None,
        start: Annotated[
            int, Field(ge=0, le=2**31 - 1, description="First character to return.")
        ] = 0,
        length: Annotated[
            int, Field(ge=1, le=MAX_LENGTH, description="At most this many characters.")
        ] = DEFAULT_LENGTH,
    ) -> DocumentText:
        """Get the text of one document by its document_id (or uri), optionally a range of it.

        Long documents come back in parts: when truncated is true, call again with
        start set to the returned end.
        """
        with tool_errors(), self.runtime.reader() as conn:
            return get_document(
                conn,
                document_id=document_id,
                uri=uri,
                source=source,
                start=start,
                length=length,
                allow_communications=self.allow_communications,
            )

    def rag_list_sources(self) -> SourceList:
        """List the sources in the index (folders, mailboxes, chat archives) with their counts."""
        with tool_errors(), self.runtime.reader() as conn:
            return SourceList(list_sources(conn))

    def rag_list_authors(
        self,
        limit: Annotated[int, Field(ge=1, le=MAX_AUTHORS, description="Authors to return.")] = 100,
    ) -> AuthorList:
        """List the people who wrote the indexed documents, those with most documents first."""
        with tool_errors(), self.runtime.reader() as conn:
            return AuthorList(list_authors(conn, limit))

    def rag_stats(self) -> CorpusStats:
        """Count what the index holds: sources, documents, chunks, authors and embeddings."""
        with tool_errors(), self.runtime.reader() as conn:
            return corpus_stats(conn)

    def read_tools(self) -> list[Callable[..., Any]]:
        """The five read-only tools, in the order a model should consider them."""
        return [
            self.rag_search,
            self.rag_get_document,
            self.rag_list_sources,
            self.rag_list_authors,
            self.rag_stats,
        ]
