"""rag_ask, rag_agent and rag_generate: the tools that also generate text, on the local model.

Each call builds the configured chat model (``inference.provider`` / ``inference.model``),
whose client passes every request through the egress guard, and closes it afterwards.
rag_ask and rag_agent report progress (when the client sends a progress token) and stop the
model's generation when the call is cancelled (garage.mcp.progress).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field

from garage.ask import (
    ANSWER_TOKENS,
    DEFAULT_EXCERPTS,
    MAX_ANSWER_TOKENS,
    MAX_EXCERPTS,
    AskResult,
    GenerateResult,
    Progress,
    ask,
    chat_model,
    generate,
)
from garage.ask.agent import DEFAULT_STEPS, MAX_STEPS, Agent, AgentResult
from garage.ask.tools import Names, tool_errors
from garage.db.runtime import Runtime
from garage.mcp.progress import run_reporting
from garage.search.types import CorpusClass

Question = Annotated[
    str, Field(min_length=1, max_length=4000, description="The question, in plain words.")
]


class GenerativeTools:
    def __init__(self, runtime: Runtime):
        self.runtime = runtime

    async def rag_ask(
        self,
        question: Question,
        limit: Annotated[
            int, Field(ge=1, le=MAX_EXCERPTS, description="Excerpts to answer from.")
        ] = DEFAULT_EXCERPTS,
        sources: Annotated[Names, Field(description="Only these sources (names).")] = [],  # noqa: B006
        corpus_classes: Annotated[
            list[CorpusClass], Field(max_length=3, description="Only these kinds of content.")
        ] = [],  # noqa: B006
        max_tokens: Annotated[
            int, Field(ge=1, le=MAX_ANSWER_TOKENS, description="Longest answer, in tokens.")
        ] = ANSWER_TOKENS,
        ctx: Context | None = None,
    ) -> AskResult:
        """Answer a question from the owner's index with the local model, citing excerpts as [n].

        Searches like rag_search, shows the model the best excerpts, numbered, and returns
        its answer with one citation per excerpt so each [n] resolves to a document.
        """
        config = self.runtime.config

        def work(progress: Progress, cancel: threading.Event) -> AskResult:
            with tool_errors(), chat_model(config) as model, self.runtime.reader() as conn:
                return ask(
                    conn,
                    config,
                    question,
                    limit=limit,
                    sources=sources,
                    corpus_classes=corpus_classes,
                    model=model,
                    answer_tokens=max_tokens,
                    on_progress=progress,
                    cancel=cancel,
                )

        return await run_reporting(work, ctx)

    async def rag_agent(
        self,
        question: Question,
        max_steps: Annotated[
            int, Field(ge=1, le=MAX_STEPS, description="Most tool calls the model may make.")
        ] = DEFAULT_STEPS,
        search_first: Annotated[
            bool, Field(description="Search for the question before the model's first reply.")
        ] = True,
        ctx: Context | None = None,
    ) -> AgentResult:
        """Answer a question by letting the local model search and read the index itself.

        The model calls rag_search, rag_get_document, rag_list_sources, rag_list_authors and
        rag_stats as it sees fit; the result has its answer, every step it took, and one
        citation per document it saw.
        """
        config = self.runtime.config

        def work(progress: Progress, cancel: threading.Event) -> AgentResult:
            with tool_errors(), chat_model(config) as model:
                return Agent.for_model(self.runtime, model).run(
                    question,
                    max_steps=max_steps,
                    search_first=search_first,
                    on_progress=progress,
                    cancel=cancel,
                )

        return await run_reporting(work, ctx)

    def rag_generate(
        self,
        prompt: Annotated[
            str, Field(min_length=1, max_length=50_000, description="The prompt, sent as is.")
        ],
        system: Annotated[
            str | None, Field(max_length=10_000, description="An optional system message.")
        ] = None,
        max_tokens: Annotated[
            int, Field(ge=1, le=MAX_ANSWER_TOKENS, description="Longest reply, in tokens.")
        ] = ANSWER_TOKENS,
        temperature: Annotated[float | None, Field(ge=0, le=2)] = None,
    ) -> GenerateResult:
        """Generate text from a prompt with the local model, without searching the index."""
        with tool_errors(), chat_model(self.runtime.config) as model:
            return generate(
                model, prompt, system=system, max_tokens=max_tokens, temperature=temperature
            )

    def all(self) -> list[Callable[..., Any]]:
        return [self.rag_ask, self.rag_agent, self.rag_generate]
