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
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import psycopg
from psycopg.rows import tuple_row

from garage.ask import prompts
from garage.ask.citations import ReadCitations, read_citations, says_not_in_excerpts
from garage.ask.coverage import missing_words, question_words, rare_words
from garage.ask.focus import Embed, focus_all
from garage.ask.structured import (
    AnswerStream,
    answer_schema,
    verdict,
    verdict_starts,
    yes_probability,
)
from garage.ask.support import support
from garage.config import GarageConfig
from garage.embed.registry import default_model
from garage.inference import ContextExceeded, EgressRefused, InferenceClient, LocalChatModel
from garage.inference.client import Message
from garage.inference.egress import EgressGuard
from garage.inference.stream import Delta, GenerationStopped
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
# How many likeliest tokens the server reports at each position; the verdict's "yes" and
# "no" are among them.
VERDICT_ALTERNATIVES = 10

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
    # The model's probability that an excerpt states the answer (from the server's token
    # log-probabilities; None where it gives none), which ``ask.answer_threshold`` decides on.
    stated_probability: float | None = None
    # The share of the answer's own words that its excerpts hold (garage.ask.support), which
    # ``ask.min_support`` decides on; None when it was not reckoned (a refusal).
    support: float | None = None


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
    if on_progress:
        on_progress(0, None, "choosing the sentences of each excerpt")
    hits = focus_hits(conn, config, question, hits)
    settings = config.ask
    rare = rare_words(conn, question_words(question)) if settings.name_missing_words else []
    shown = fit_excerpts(model, question, hits, answer_tokens + STRUCTURE_TOKENS, rare)
    generated = _generate(
        model,
        question,
        hits,
        shown,
        answer_tokens,
        rare,
        settings.answer_threshold,
        on_text,
        on_progress,
        cancel,
    )
    shown = generated.shown
    if len(shown) < len(hits):
        notes.append(f"{len(hits) - len(shown)} excerpt(s) left out to fit the model's context")
    read, markers = _read_answer(generated, len(shown))
    if markers and on_text:
        on_text(markers)  # the streamed answer ends with its sources too
    not_in = says_not_in_excerpts(read.text) and not read.cited
    backing = None
    if not not_in and read.text.strip() and settings.min_support > 0:
        # An answer whose own words no excerpt holds came from elsewhere: withdrawn, and
        # said so after the text a client has already seen streamed.
        backing = support(question, read.text, [c.excerpt for c in shown])
        if backing < settings.min_support:
            notes.append(
                f"the answer was withdrawn: {backing:.0%} of its own words are in the "
                f"excerpts, under ask.min_support {settings.min_support:g}"
            )
            read = ReadCitations(prompts.NOT_IN_EXCERPTS, [], read.unresolved)
            not_in = True
    if read.unresolved:
        names = ", ".join(f"[{n}]" for n in read.unresolved)
        notes.append(f"the answer cited {names}, which name no excerpt: dropped")
    if not read.cited and not not_in:
        notes.append("the answer cites no excerpt")
    chance = generated.stated_probability
    if not_in and chance is not None and chance < settings.answer_threshold:
        notes.append(
            f"the model gave {chance:.2f} that an excerpt states the answer, under "
            f"ask.answer_threshold {settings.answer_threshold:g}"
        )
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
        stated_probability=generated.stated_probability,
        support=backing,
    )


def focus_hits(
    conn: psycopg.Connection[Any], config: GarageConfig, question: str, hits: list[SearchHit]
) -> list[SearchHit]:
    """Each chunk hit with its excerpt narrowed to the sentences around its best match
    (garage.ask.focus), and its offsets to theirs where the chunk is a verbatim span of its
    document. A fact hit is a sentence already, and stays as it is."""
    limit = config.ask.excerpt_chars
    chunk_ids = [h.chunk_id for h in hits if h.fact_id is None]
    if not chunk_ids:
        return hits
    # A tuple cursor: callers' connections may carry a dict row factory.
    with conn.cursor(row_factory=tuple_row) as cur:
        rows = cur.execute("SELECT id, text FROM chunks WHERE id = ANY(%s)", (chunk_ids,))
        texts: dict[int, str] = dict(rows.fetchall())
    wanted = [h for h in hits if h.fact_id is None and h.chunk_id in texts]
    classes = {h.corpus_class for h in wanted}
    with _embedder(conn, config, classes) as embed:
        focused = focus_all(question, [texts[h.chunk_id] for h in wanted], limit, embed)
    narrowed: dict[int, SearchHit] = {}
    for hit, part in zip(wanted, focused, strict=True):
        verbatim = hit.end_offset - hit.start_offset == len(texts[hit.chunk_id])
        narrowed[hit.chunk_id] = replace(
            hit,
            excerpt=part.text,
            start_offset=hit.start_offset + part.start if verbatim else hit.start_offset,
            end_offset=hit.start_offset + part.end if verbatim else hit.end_offset,
        )
    return [narrowed.get(h.chunk_id, h) if h.fact_id is None else h for h in hits]


@contextmanager
def _embedder(
    conn: psycopg.Connection[Any], config: GarageConfig, classes: set[str]
) -> Iterator[Embed | None]:
    """The index's default text model as a function, or None when there is none."""
    registered = default_model(conn, "text")
    if registered is None:
        yield None
        return
    client = InferenceClient(
        EgressGuard.from_config(config),
        timeout=config.search.embed_timeout_seconds,
        retries=1,
        backoff=0.2,
    )

    def embed(texts: list[str]) -> list[list[float]]:
        return client.embed(
            registered.provider,  # type: ignore[arg-type]
            registered.host,
            registered.model_id,
            texts,
            corpus_classes=classes,
        ).vectors

    try:
        yield embed
    finally:
        client.close()


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
    stated_probability: float | None = None


def _generate(
    model: LocalChatModel,
    question: str,
    hits: Sequence[SearchHit],
    shown: list[Citation],
    answer_tokens: int,
    rare: Sequence[str],
    threshold: float,
    on_text: Callable[[str], None] | None,
    on_progress: Progress | None,
    cancel: threading.Event | None,
) -> _Generated:
    """Stream the answer; should the server still refuse the prompt as too long (its count
    and ours can differ), show fewer excerpts and try again.

    The reply opens with the verdict, "stated": "yes" or "no". Where the server reports the
    likeliest tokens at that position, the verdict is decided on the model's probability of
    "yes" against ``threshold`` rather than on its greedy pick: a "no" the threshold
    overrules is asked again under the "yes" branch alone (the server has the prompt cached,
    so only the reply is new), and a "yes" it overrules is stopped and declined before any
    of its answer is written."""
    count, excerpt_chars = len(shown), EXCERPT_CHARS
    stated_only = False
    probability: float | None = None
    asked = time.monotonic()
    while True:
        citations = shown if count == len(shown) else _citations(hits[:count], excerpt_chars)
        if on_progress:
            on_progress(1, 2, f"asking {model.model} with {len(citations)} excerpt(s)")
        reply = AnswerStream()
        pieces = 0
        finish: Finish = "stop"
        first_token_ms = None
        overruled: str | None = None
        stream = model.stream(
            ask_messages(question, citations, rare),
            corpus_classes={c.corpus_class for c in citations},
            json_schema=answer_schema(len(citations), stated_only=stated_only),
            # Greedy: an answer from excerpts gains nothing from sampling, and the same
            # question then gets the same answer.
            temperature=0.0,
            max_tokens=answer_tokens + STRUCTURE_TOKENS,
            cancel=cancel,
            top_logprobs=None if stated_only else VERDICT_ALTERNATIVES,
        )
        try:
            for delta in stream:
                if delta.text:
                    if first_token_ms is None:
                        first_token_ms = _ms_since(asked)
                    pieces += 1
                    before = len(reply.raw)
                    added = reply.feed(delta.text)
                    if not stated_only and verdict_starts(reply.raw, before):
                        probability = _yes_probability(delta)
                    if not stated_only and overruled is None:
                        overruled = _overruled(verdict(reply.raw), probability, threshold)
                        if overruled is not None:
                            break
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
            return _Generated(
                cut.answer, citations, "time_limit", first_token_ms, cut.excerpts, probability
            )
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
        finally:
            # Closing the stream closes its connection: the server stops writing a reply
            # whose verdict was overruled.
            stream.close()
        if overruled == "no":
            return _Generated(
                prompts.NOT_IN_EXCERPTS, citations, "stop", first_token_ms, [], probability
            )
        if overruled == "yes":
            stated_only = True
            shown = citations
            continue
        if on_progress:
            on_progress(2, 2, "answered")
        whole = reply.result()
        return _Generated(
            whole.answer, citations, finish, first_token_ms, whole.excerpts, probability
        )


def _yes_probability(delta: Delta) -> float | None:
    """The probability of "yes" at the first token of the verdict's value in ``delta``."""
    for alternatives in delta.alternatives:
        probability = yes_probability(alternatives)
        if probability is not None:
            return probability
    return None


def _overruled(said: str | None, probability: float | None, threshold: float) -> str | None:
    """The verdict the threshold gives where it differs from what the model wrote; None
    while the verdict is unwritten, when there is no probability, or when they agree."""
    if said is None or probability is None:
        return None
    decided = "yes" if probability >= threshold else "no"
    return decided if decided != said else None


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
