"""rag_agent: the local model drives the five read-only tools until it can answer.

Each reply is a tool call or the answer, in the shape garage.ask.agent_protocol constrains,
reads and validates.

With ``search_first`` (the default) the question goes to rag_search before the model's first
reply and the hits appear as a call it already made: small models otherwise read "when did I
last talk to BMW?" as a question about their training data and say they have no access.

Content rule: when the model host is not loopback, the tools run with communications withheld
(search returns documents and code only, rag_get_document refuses a communication), and every
request carries the classes the conversation holds, so the egress guard checks it again.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any, Literal

from mcp.server.mcpserver.exceptions import ToolError

from garage.ask import prompts
from garage.ask.agent_protocol import AgentTool, Call, answer_of, parse_reply, reply_schema
from garage.ask.excerpts import trim
from garage.ask.tools import AuthorList, CorpusTools, SourceList
from garage.ask.types import Progress
from garage.config import GarageConfig
from garage.db.runtime import Runtime
from garage.inference import ContextExceeded, InferenceError, LocalChatModel
from garage.inference.client import Message
from garage.search import CorpusStats, SearchResponse
from garage.search.documents import DocumentText

DEFAULT_STEPS = 6
MAX_STEPS = 20
SEARCH_FIRST_LIMIT = 5
REPLY_TOKENS = 400
# What one tool result may take of a small model's context.
RESULT_CHARS = 3000
HIT_CHARS = 400


@dataclass(frozen=True)
class AgentStep:
    number: int
    tool: str | None  # None when the reply was not a usable tool call
    arguments: dict[str, Any]
    ok: bool
    error: str | None  # what went back to the model to correct
    result: str  # what the model was shown
    preset: bool = False  # the search_first call, made before the model's first reply
    reply: str = ""  # the model's reply that made this call


@dataclass(frozen=True)
class AgentCitation:
    document_id: int
    uri: str
    title: str | None
    source: str
    corpus_class: str


@dataclass(frozen=True)
class AgentResult:
    question: str
    answer: str
    steps: list[AgentStep]
    citations: list[AgentCitation]  # one per document the model saw, in the order it saw them
    model: str
    stopped: Literal["answer", "step_limit"]
    notes: list[str] = field(default_factory=list)


class Agent:
    def __init__(
        self,
        tools: CorpusTools,
        model: LocalChatModel,
        config: GarageConfig,
        *,
        reply_tokens: int = REPLY_TOKENS,
    ):
        self.model = model
        self.reply_tokens = reply_tokens
        self.config = config
        self.tools = {t.name: t for t in map(AgentTool.of, tools.read_tools())}
        self.allow_communications = tools.allow_communications

    @classmethod
    def for_model(
        cls, runtime: Runtime, model: LocalChatModel, *, reply_tokens: int = REPLY_TOKENS
    ) -> Agent:
        """rag_agent over the index for ``model``, under the content rule: when the model host
        is not loopback, its tools withhold communications. Every front door builds it here,
        so none can hand a remote model the tools without the rule."""
        tools = CorpusTools(runtime, allow_communications=model.is_loopback)
        return cls(tools, model, runtime.config, reply_tokens=reply_tokens)

    def system_prompt(self) -> str:
        owner = self.config.identity.self_name
        signatures = "\n".join(f"- {tool.signature()}" for tool in self.tools.values())
        return prompts.AGENT_SYSTEM.format(
            owner=f"{owner}'s" if owner else "the user's",
            communications=prompts.AGENT_COMMUNICATIONS if self.allow_communications else "",
            signatures=signatures,
        )

    def run(
        self,
        question: str,
        *,
        max_steps: int = DEFAULT_STEPS,
        search_first: bool = True,
        on_progress: Progress | None = None,
        cancel: threading.Event | None = None,
    ) -> AgentResult:
        """Let the model call tools until it answers, at most ``max_steps`` calls.
        ``on_progress`` hears each step; ``cancel`` stops the run (and the generation in
        flight, freeing the server)."""
        if not isinstance(question, str) or not question.strip():
            raise ValueError("question: is empty")
        if not 1 <= max_steps <= MAX_STEPS:
            raise ValueError(f"max_steps: must be between 1 and {MAX_STEPS}, not {max_steps}")
        run = _Run(self, question.strip(), cancel)
        total = max_steps + 1

        def progress(message: str) -> None:
            if on_progress:
                on_progress(min(len(run.steps), max_steps), total, message)

        if search_first:
            arguments = {"query": run.question, "limit": SEARCH_FIRST_LIMIT}
            call_text = json.dumps({"tool": "rag_search", "arguments": arguments})
            run.messages.append({"role": "assistant", "content": call_text})
            run.execute(Call("rag_search", arguments, None), reply=call_text, preset=True)
            progress("searched for the question")
        schema = reply_schema(list(self.tools))
        for _ in range(max_steps):
            progress(f"{self.model.model} is choosing a tool or answering")
            reply = run.complete(schema)
            call = parse_reply(reply)
            if call is None:
                progress("answered")
                return run.result(answer_of(reply), "answer")
            run.messages.append({"role": "assistant", "content": reply})
            run.execute(call, reply=reply)
            step = run.steps[-1]
            outcome = "ok" if step.ok else f"error: {step.error}"
            progress(f"step {step.number}: {step.tool or '?'} {outcome}")
        run.messages.append({"role": "user", "content": prompts.STEP_LIMIT})
        reply = run.complete(reply_schema(None))
        if parse_reply(reply) is None and answer_of(reply):
            return run.result(answer_of(reply), "step_limit")
        return run.result(f"No answer within {max_steps} tool calls.", "step_limit")


class _Run:
    """One question's conversation, steps and the documents it has seen."""

    def __init__(self, agent: Agent, question: str, cancel: threading.Event | None = None):
        self.agent = agent
        self.question = question
        self.cancel = cancel
        self.messages: list[Message] = [
            {"role": "system", "content": agent.system_prompt()},
            {"role": "user", "content": question},
        ]
        self.steps: list[AgentStep] = []
        self.seen: dict[int, AgentCitation] = {}
        self.notes: list[str] = []
        self._compacted: set[int] = set()

    def complete(self, schema: dict[str, Any]) -> str:
        """The model's next reply, in ``schema``'s shape; older tool results are left out
        when the context is full."""
        classes = {c.corpus_class for c in self.seen.values()}
        while True:
            try:
                return self.agent.model.complete(
                    self.messages,
                    corpus_classes=classes,
                    json_schema=schema,
                    temperature=0.2,
                    max_tokens=self.agent.reply_tokens,
                    cancel=self.cancel,
                )
            except ContextExceeded:
                if not self._compact_one():
                    raise InferenceError(
                        "the conversation no longer fits the model's context, even with earlier "
                        "tool results left out"
                    ) from None

    def _compact_one(self) -> bool:
        for index, message in enumerate(self.messages):
            if index in self._compacted or message["role"] != "user" or index < 2:
                continue
            if message["content"].startswith("Result of "):
                head = message["content"].split("\n", 1)[0]
                self.messages[index] = {
                    "role": "user",
                    "content": f"{head}\n(left out to fit the model's context)",
                }
                self._compacted.add(index)
                self.notes.append("earlier tool results were left out to fit the model's context")
                return True
        return False

    def execute(self, call: Call, *, reply: str, preset: bool = False) -> None:
        number = len(self.steps) + 1
        error = call.error
        shown = ""
        if error is None:
            tool = self.agent.tools.get(call.tool or "")
            if tool is None:
                error = (
                    f"there is no tool {call.tool!r}; the tools are {', '.join(self.agent.tools)}"
                )
            else:
                try:
                    value = tool.call(call.arguments)
                    shown = self._render(value)
                except ToolError as failure:
                    error = str(failure)
        if error is None:
            content = prompts.TOOL_RESULT.format(tool=call.tool, result=shown)
        else:
            content = prompts.TOOL_ERROR.format(error=error)
            shown = content
        self.messages.append({"role": "user", "content": content})
        self.steps.append(
            AgentStep(number, call.tool, call.arguments, error is None, error, shown, preset, reply)
        )

    def _see(self, document_id: int, uri: str, title: str | None, source: str, cls: str) -> None:
        self.seen.setdefault(document_id, AgentCitation(document_id, uri, title, source, cls))

    def _render(self, value: Any) -> str:
        """A tool's result as the model reads it: short lines, bounded in size."""
        if isinstance(value, SearchResponse):
            if not value.hits:
                return "No matching passages."
            blocks: list[str] = []
            size = 0
            for hit in value.hits:
                about = ", ".join(x for x in (hit.source, hit.corpus_class, hit.author) if x)
                block = (
                    f"[doc {hit.document_id}] {hit.title or hit.uri} ({about})\n"
                    f"{trim(hit.excerpt, HIT_CHARS)}"
                )
                # Whole hits only, and only those shown count as seen: a citation must name
                # a document whose line the model actually read.
                if blocks and size + 2 + len(block) > RESULT_CHARS:
                    blocks.append(f"({len(value.hits) - len(blocks)} more hits left out)")
                    break
                self._see(hit.document_id, hit.uri, hit.title, hit.source, hit.corpus_class)
                blocks.append(block)
                size += len(block) + 2
            return _bounded("\n\n".join(blocks))
        if isinstance(value, DocumentText):
            self._see(value.document_id, value.uri, value.title, value.source, value.corpus_class)
            text = trim(value.content, RESULT_CHARS)
            more = (
                f"\n(characters {value.start}-{value.end} of {value.total_chars}; for more, "
                f"call again with start={value.end})"
                if value.truncated or len(text) < len(value.content)
                else ""
            )
            return f"[doc {value.document_id}] {value.title or value.uri}\n{text}{more}"
        if isinstance(value, SourceList):
            lines = [
                f"- {s.name}: {s.kind}, {s.corpus_class}, {s.documents} documents"
                for s in value.sources
            ]
            return "\n".join(lines) or "No sources."
        if isinstance(value, AuthorList):
            lines = [
                f"- {a.name}{f' <{a.email}>' if a.email else ''}: {a.documents} documents"
                + (" (the owner)" if a.is_self else "")
                for a in value.authors
            ]
            return _bounded("\n".join(lines) or "No authors.")
        if isinstance(value, CorpusStats):
            by_class = ", ".join(f"{k}: {v}" for k, v in value.documents_by_class.items())
            return (
                f"{value.sources} sources, {value.documents} documents ({by_class}), "
                f"{value.chunks} chunks, {value.authors} authors"
            )
        return _bounded(str(value))

    def result(self, answer: str, stopped: Literal["answer", "step_limit"]) -> AgentResult:
        return AgentResult(
            question=self.question,
            answer=answer,
            steps=self.steps,
            citations=list(self.seen.values()),
            model=self.agent.model.model,
            stopped=stopped,
            notes=list(dict.fromkeys(self.notes)),
        )


def _bounded(text: str) -> str:
    return text if len(text) <= RESULT_CHARS else text[:RESULT_CHARS].rstrip() + "\n…"
