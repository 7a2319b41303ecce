"""rag_ask and rag_generate without MCP: the CLI and the MCP server share this code.

``ask`` runs the same retrieval as search, numbers the excerpts (each trimmed to ~1,200
characters) and asks the local chat model which of them answer the question and what they say,
as a JSON object the server constrains (garage.ask.structured); the excerpts it names become
the answer's [n]. The result carries one Citation per excerpt the model was shown, so [n]
resolves back to a document, and says which of them the answer cites (``cited``), which
numbers it wrote that name no excerpt (``unresolved``, dropped from the text), and whether
the model said the excerpts do not hold the answer (``not_in_excerpts``).

The prompt is fitted to the model's context in tokens (the server counts them when it can):
fewer excerpts are shown rather than a prompt the server would refuse or cut. The answer is
streamed (``on_text``), bounded by the model's wall-clock limit, and stops when ``cancel`` is
set; ``on_progress`` hears how far it got.

Privacy: every excerpt's corpus class passes the egress guard for the model's host before it
goes into the prompt, and the request itself carries the classes of what it holds, so a
communication (mail, chats) never reaches a model host that is not loopback. For such a host
the search is restricted to documents and code up front, so the excerpts it may see still
fill the limit.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import psycopg

from garage.ask import prompts
from garage.ask.citations import ReadCitations, read_citations, says_not_in_excerpts
from garage.ask.coverage import missing_words, question_words, rare_words
from garage.ask.structured import AnswerStream, answer_schema
from garage.config import GarageConfig
from garage.inference import ContextExceeded, EgressRefused, LocalChatModel
from garage.inference.client import Message
from garage.inference.stream import GenerationStopped
from garage.search import SearchHit, SearchQuery, search
from garage.search.types import CorpusClass

EXCERPT_CHARS = 1200
DEFAULT_EXCERPTS = 6
MAX_EXCERPTS = 20
ANSWER_TOKENS = 400
MAX_ANSWER_TOKENS = 4096
# What a model host that is not this machine may be shown.
REMOTE_CLASSES: tuple[CorpusClass, ...] = ("document", "code")
ALL_CLASSES: tuple[CorpusClass, ...] = ("document", "code", "communication")
# Room left in the context for the chat template's own tokens around each message.
TEMPLATE_TOKENS = 64
MIN_EXCERPT_CHARS = 300
# The JSON around the answer ({"stated": "yes", "excerpts": [1, 2], "answer": "..."}) costs
# tokens of its own: the answer keeps its whole budget on top of them.
STRUCTURE_TOKENS = 24

# (progress, total, message): how far a call got, for clients that show it.
Progress = Callable[[float, float | None, str], None]
Finish = Literal["stop", "length", "time_limit"]


@dataclass(frozen=True)
class Citation:
    number: int  # the [n] the answer cites
    document_id: int
    chunk_id: int
    uri: str
    title: str | None
    source: str
    corpus_class: str
    author: str | None
    start_offset: int  # where the excerpt's chunk lies in the document's text
    end_offset: int
    excerpt: str  # exactly what the model was shown


@dataclass(frozen=True)
class AskResult:
    question: str
    answer: str
    citations: list[Citation]  # one per excerpt the model was shown
    model: str
    search_mode: str  # hybrid, or keyword when no embedding model was reachable
    degraded: str | None = None
    # Excerpts the egress guard kept from the model (communications for a host elsewhere).
    withheld: int = 0
    notes: list[str] = field(default_factory=list)
    cited: list[int] = field(default_factory=list)  # the [n] the answer cites, first-cited first
    unresolved: list[int] = field(default_factory=list)  # [n] it wrote that name no excerpt
    not_in_excerpts: bool = False  # the model said the excerpts do not hold the answer
    finish: Finish = "stop"  # "length": cut at max_tokens; "time_limit": stopped by the clock
    first_token_ms: float | None = None  # from the request to the first piece of the answer
    took_ms: float = 0.0  # the whole call, search included


@dataclass(frozen=True)
class GenerateResult:
    text: str
    model: str


@contextmanager
def chat_model(config: GarageConfig) -> Iterator[LocalChatModel]:
    """The configured local chat model, its client closed afterwards."""
    model = LocalChatModel.from_config(config)
    try:
        yield model
    finally:
        model.client.close()


def trim(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` cut to about ``limit`` characters at a word boundary."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ", limit * 3 // 4)
    return (cut[:space] if space > 0 else cut).rstrip() + " …"


def allowed_classes(
    model: LocalChatModel, requested: Sequence[str]
) -> tuple[tuple[CorpusClass, ...], list[str]]:
    """The corpus classes a search for this model may return, and a note when narrowed."""
    for value in requested:
        if value not in ALL_CLASSES:
            raise ValueError(f"corpus_classes: {value!r} is not one of {', '.join(ALL_CLASSES)}")
    wanted = tuple(c for c in ALL_CLASSES if c in requested) or ALL_CLASSES
    if model.is_loopback:
        return wanted, []
    kept = tuple(c for c in wanted if c in REMOTE_CLASSES)
    if not kept:
        raise EgressRefused(
            f"the chat model's host {model.host} is not on this machine, and communications "
            "(mail, chats) only go to a model on this machine: nothing to search"
        )
    note = (
        []
        if kept == wanted
        else [f"communications were left out: the model host {model.host} is not on this machine"]
    )
    return kept, note


def ask(
    conn: psycopg.Connection[Any],
    config: GarageConfig,
    question: str,
    *,
    limit: int = DEFAULT_EXCERPTS,
    sources: Sequence[str] = (),
    corpus_classes: Sequence[str] = (),
    model: LocalChatModel,
    answer_tokens: int = ANSWER_TOKENS,
    on_text: Callable[[str], None] | None = None,
    on_progress: Progress | None = None,
    cancel: threading.Event | None = None,
) -> AskResult:
    """Answer ``question`` from the index with the local chat model, citing [n]."""
    started = time.monotonic()
    if not isinstance(question, str) or not question.strip():
        raise ValueError("question: is empty")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_EXCERPTS:
        raise ValueError(f"limit: must be between 1 and {MAX_EXCERPTS}, not {limit!r}")
    guard = model.client.guard
    # The host itself first: a model host the config does not name is refused outright.
    guard.check(model.host, model_id=model.model)
    classes, notes = allowed_classes(model, corpus_classes)
    if on_progress:
        on_progress(0, None, "searching the index")
    response = search(
        conn,
        config,
        SearchQuery(
            text=question,
            limit=limit,
            sources=tuple(sources),
            corpus_classes=classes,
        ),
    )
    hits, withheld = [], 0
    for hit in response.hits:
        try:
            guard.check(model.host, corpus_classes=[hit.corpus_class], model_id=model.model)
        except EgressRefused:
            withheld += 1
            continue
        hits.append(hit)
    if withheld:
        notes.append(f"{withheld} excerpt(s) withheld from the model by the egress guard")
    if not hits:
        return AskResult(
            question,
            prompts.NO_EXCERPTS,
            [],
            model.model,
            response.mode,
            response.degraded,
            withheld,
            notes,
            not_in_excerpts=True,
            took_ms=_ms_since(started),
        )
    rare = rare_words(conn, question_words(question))
    shown = fit_excerpts(model, question, hits, answer_tokens + STRUCTURE_TOKENS, rare)
    generated = _generate(
        model, question, hits, shown, answer_tokens, rare, on_text, on_progress, cancel
    )
    shown = generated.shown
    if len(shown) < len(hits):
        notes.append(f"{len(hits) - len(shown)} excerpt(s) left out to fit the model's context")
    read, markers = _read_answer(generated, len(shown))
    if markers and on_text:
        on_text(markers)  # the streamed answer ends with its sources too
    not_in = says_not_in_excerpts(read.text) and not read.cited
    if read.unresolved:
        names = ", ".join(f"[{n}]" for n in read.unresolved)
        notes.append(f"the answer cited {names}, which name no excerpt: dropped")
    if not read.cited and not not_in:
        notes.append("the answer cites no excerpt")
    if generated.finish == "time_limit":
        notes.append(f"the answer was stopped at the time limit ({model.time_limit:g} s)")
    elif generated.finish == "length":
        notes.append(f"the answer was cut at {answer_tokens} tokens")
    return AskResult(
        question,
        read.text.strip(),
        shown,
        model.model,
        response.mode,
        response.degraded,
        withheld,
        notes,
        cited=read.cited,
        unresolved=read.unresolved,
        not_in_excerpts=not_in,
        finish=generated.finish,
        first_token_ms=generated.first_token_ms,
        took_ms=_ms_since(started),
    )


def _read_answer(generated: _Generated, shown: int) -> tuple[ReadCitations, str]:
    """The answer's text and citations: the excerpts the reply named, then any [n] the text
    itself cites. Named excerpts the text does not already cite are appended as [n] markers,
    so the answer a person reads carries its sources."""
    inline = read_citations(generated.text, shown)
    named = list(dict.fromkeys(generated.excerpts))
    valid = [n for n in named if 1 <= n <= shown]
    unresolved = list(dict.fromkeys([n for n in named if n not in valid] + inline.unresolved))
    cited = list(dict.fromkeys(valid + inline.cited))
    text = inline.text.strip()
    missing = [n for n in valid if n not in inline.cited]
    markers = " " + "".join(f"[{n}]" for n in missing) if missing and text else ""
    return ReadCitations(text + markers, cited, unresolved), markers


def _ms_since(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 1)


def _citations(hits: Sequence[SearchHit], excerpt_chars: int) -> list[Citation]:
    return [
        Citation(
            number=n,
            document_id=hit.document_id,
            chunk_id=hit.chunk_id,
            uri=hit.uri,
            title=hit.title,
            source=hit.source,
            corpus_class=hit.corpus_class,
            author=hit.author,
            start_offset=hit.start_offset,
            end_offset=hit.end_offset,
            excerpt=trim(hit.excerpt, excerpt_chars),
        )
        for n, hit in enumerate(hits, 1)
    ]


def ask_messages(
    question: str, citations: Sequence[Citation], rare: Sequence[str] = ()
) -> list[Message]:
    """The prompt: the excerpts, the question, and the question's ``rare`` words (see
    garage.ask.coverage) that no excerpt contains."""
    blocks = []
    for c in citations:
        about = ", ".join(x for x in (c.source, c.corpus_class, c.author) if x)
        # "Excerpt [n]", not a bare "[n]" opening the line: a small model copies a bare one
        # to the front of its answer as a list marker, whatever it then says.
        blocks.append(f"Excerpt [{c.number}], from {c.title or c.uri} ({about}):\n{c.excerpt}")
    missing = missing_words(question, blocks, rare)
    coverage = prompts.ASK_COVERAGE.format(words=", ".join(missing)) if missing else ""
    user = prompts.ASK_USER.format(
        excerpts="\n\n".join(blocks), question=question.strip(), coverage=coverage
    )
    return [{"role": "system", "content": prompts.ASK_SYSTEM}, {"role": "user", "content": user}]


def prompt_tokens(model: LocalChatModel, messages: Sequence[Message], classes: set[str]) -> int:
    """The messages' length in the model's tokens, with room for the chat template."""
    text = "\n".join(m["content"] for m in messages)
    return model.count_tokens(text, corpus_classes=classes) + TEMPLATE_TOKENS


def fit_excerpts(
    model: LocalChatModel,
    question: str,
    hits: Sequence[SearchHit],
    answer_tokens: int,
    rare: Sequence[str] = (),
) -> list[Citation]:
    """As many of the best excerpts as fit the context with room for the answer: the
    lowest-ranked go first; a lone excerpt still too long is shortened."""
    budget = model.context_tokens() - answer_tokens
    count, excerpt_chars = len(hits), EXCERPT_CHARS
    while True:
        citations = _citations(hits[:count], excerpt_chars)
        messages = ask_messages(question, citations, rare)
        used = prompt_tokens(model, messages, {c.corpus_class for c in citations})
        if used <= budget:
            return citations
        if count > 1:
            count -= 1
        elif excerpt_chars > MIN_EXCERPT_CHARS:
            excerpt_chars = max(MIN_EXCERPT_CHARS, excerpt_chars * budget // used - 20)
        else:
            return citations  # the question alone is too long: let the server say so


@dataclass
class _Generated:
    text: str  # the answer's text, out of the reply's JSON
    shown: list[Citation]
    finish: Finish
    first_token_ms: float | None
    excerpts: list[int] = field(default_factory=list)  # the excerpts the reply named


def _generate(
    model: LocalChatModel,
    question: str,
    hits: Sequence[SearchHit],
    shown: list[Citation],
    answer_tokens: int,
    rare: Sequence[str],
    on_text: Callable[[str], None] | None,
    on_progress: Progress | None,
    cancel: threading.Event | None,
) -> _Generated:
    """Stream the answer; should the server still refuse the prompt as too long (its count
    and ours can differ), show fewer excerpts and try again."""
    count, excerpt_chars = len(shown), EXCERPT_CHARS
    while True:
        citations = shown if count == len(shown) else _citations(hits[:count], excerpt_chars)
        if on_progress:
            on_progress(1, 2, f"asking {model.model} with {len(citations)} excerpt(s)")
        reply = AnswerStream()
        pieces = 0
        finish: Finish = "stop"
        first_token_ms = None
        asked = time.monotonic()
        try:
            for delta in model.stream(
                ask_messages(question, citations, rare),
                corpus_classes={c.corpus_class for c in citations},
                json_schema=answer_schema(len(citations)),
                # Greedy: an answer from excerpts gains nothing from sampling, and the same
                # question then gets the same answer.
                temperature=0.0,
                max_tokens=answer_tokens + STRUCTURE_TOKENS,
                cancel=cancel,
            ):
                if delta.text:
                    if first_token_ms is None:
                        first_token_ms = _ms_since(asked)
                    pieces += 1
                    added = reply.feed(delta.text)
                    if added and on_text:
                        on_text(added)
                    if on_progress and pieces % 16 == 0:
                        done = min(pieces / answer_tokens, 0.99)
                        on_progress(1 + done, 2, f"{pieces} pieces of the answer")
                if delta.finish_reason == "length":
                    finish = "length"
        except GenerationStopped as stopped:
            if stopped.reason != "time_limit":
                raise
            cut = reply.result()
            return _Generated(cut.answer, citations, "time_limit", first_token_ms, cut.excerpts)
        except ContextExceeded:
            if pieces:
                raise
            if count > 1:
                count = max(1, count // 2)
                continue
            if excerpt_chars > MIN_EXCERPT_CHARS:
                excerpt_chars //= 2
                continue
            raise
        if on_progress:
            on_progress(2, 2, "answered")
        whole = reply.result()
        return _Generated(whole.answer, citations, finish, first_token_ms, whole.excerpts)


def generate(
    model: LocalChatModel,
    prompt: str,
    *,
    system: str | None = None,
    max_tokens: int = ANSWER_TOKENS,
    temperature: float | None = None,
) -> GenerateResult:
    """The local chat model's reply to a raw prompt: no retrieval, nothing from the index."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError("prompt: is empty")
    messages: list[Message] = []
    if system:
        messages.append({"role": "system", "content": system})
    messages.append({"role": "user", "content": prompt})
    text = model.complete(messages, temperature=temperature, max_tokens=max_tokens)
    return GenerateResult(text.strip(), model.model)
