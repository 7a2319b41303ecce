"""rag_list_facts and rag_fact_stats: the stored potential facts, for an MCP client.

Bounded like the corpus tools: every limit, offset and list size is in the schema. They serve
the MCP client as ``garage facts`` serves the owner (no model host reads them: rag_agent's
tools are the corpus tools).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from garage.ask.tools import MAX_ID, Names, tool_errors
from garage.db.runtime import Runtime
from garage.facts.browse import (
    MAX_FACTS,
    FactList,
    FactQuery,
    FactStats,
    fact_stats,
    list_facts,
)
from garage.search.types import CorpusClass

ClassName = Annotated[str, Field(min_length=1, max_length=64)]


class FactTools:
    def __init__(self, runtime: Runtime):
        self.runtime = runtime

    def rag_list_facts(
        self,
        text: Annotated[
            str | None,
            Field(min_length=1, max_length=1000, description="Words the fact contains."),
        ] = None,
        substring: Annotated[
            bool, Field(description="Match text as a substring rather than full-text.")
        ] = False,
        sources: Annotated[Names, Field(description="Only these sources (names).")] = [],  # noqa: B006
        document_id: Annotated[
            int | None, Field(ge=1, le=MAX_ID, description="Only this document's facts.")
        ] = None,
        classes: Annotated[
            list[ClassName], Field(max_length=20, description="Only these fact classes.")
        ] = [],  # noqa: B006
        corpus_classes: Annotated[
            list[CorpusClass], Field(max_length=3, description="Only these kinds of content.")
        ] = [],  # noqa: B006
        limit: Annotated[int, Field(ge=1, le=MAX_FACTS, description="Facts to return.")] = 50,
        offset: Annotated[int, Field(ge=0, le=1_000_000, description="Facts to skip.")] = 0,
        context_chars: Annotated[
            int, Field(ge=0, le=1000, description="Document text on each side of the span.")
        ] = 200,
    ) -> FactList:
        """List the potential facts extracted from the owner's documents.

        Each comes with its document, its exact span in it and the text around it."""
        with tool_errors():
            chosen = tuple(dict.fromkeys(corpus_classes))
            query = FactQuery(
                text=text,
                substring=substring,
                sources=tuple(sources),
                document_id=document_id,
                classes=tuple(classes),
                corpus_classes=chosen,
                limit=limit,
                offset=offset,
                context_chars=context_chars,
            )
            with self.runtime.reader() as conn:
                return list_facts(conn, query)

    def rag_fact_stats(
        self,
        sources: Annotated[Names, Field(description="Only these sources (names).")] = [],  # noqa: B006
    ) -> FactStats:
        """Count the potential facts per source and class, and per prompt."""
        with tool_errors(), self.runtime.reader() as conn:
            return fact_stats(conn, tuple(sources))

    def all(self) -> list:  # type: ignore[type-arg]
        return [self.rag_list_facts, self.rag_fact_stats]
