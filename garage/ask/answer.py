"""rag_ask: a cited answer from the index, the one code path of the CLI, the MCP server and
any other front door.

``ask`` runs the same retrieval as search, numbers the excerpts (each trimmed to ~1,200
characters) and asks the local chat model which of them answer the question and what they say,
as a JSON object the server constrains (garage.ask.structured); the excerpts it names become
the answer's [n]. The result carries one Citation per excerpt the model was shown, so [n]
resolves back to a document, and says which of them the answer cites (``cited``), which
numbers it wrote that name no excerpt (``unresolved``, dropped from the text), and whether
the model said the excerpts do not hold the answer (``not_in_excerpts``).

The prompt is fitted to the model's context in tokens (garage.ask.excerpts): fewer excerpts
are shown rather than a prompt the server would refuse or cut. The answer is streamed
(``on_text``, garage.ask.reply), bounded by the model's wall-clock limit, and stops when
``cancel`` is set; ``on_progress`` hears how far it got.

Privacy: every excerpt's corpus class passes the egress guard for the model's host before it
goes into the prompt, and the request itself carries the classes of what it holds, so a
communication (mail, chats) never reaches a model host that is not loopback. For such a host
the search is restricted to documents and code up front, so the excerpts it may see still
fill the limit.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import psycopg

from garage.ask import prompts
from garage.ask.citations import ReadCitations, read_citations, says_not_in_excerpts
from garage.ask.coverage import question_words, rare_words
from garage.ask.excerpts import fit_excerpts, focus_hits
from garage.ask.quote import quote_found
from garage.ask.reply import QUOTE_TOKENS, STRUCTURE_TOKENS, Generated, ms_since, stream_answer
from garage.ask.support import support
from garage.ask.types import ANSWER_TOKENS, AskResult, Progress
from garage.config import GarageConfig
from garage.inference import EgressRefused, LocalChatModel
from garage.search import SearchQuery, search
from garage.search.types import CorpusClass

DEFAULT_EXCERPTS = 6
MAX_EXCERPTS = 20
# What a model host that is not this machine may be shown.
REMOTE_CLASSES: tuple[CorpusClass, ...] = ("document", "code")
ALL_CLASSES: tuple[CorpusClass, ...] = ("document", "code", "communication")


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
            took_ms=ms_since(started),
        )
    if on_progress:
        on_progress(0, None, "choosing the sentences of each excerpt")
    hits = focus_hits(conn, config, question, hits)
    settings = config.ask
    rare = rare_words(conn, question_words(question)) if settings.name_missing_words else []
    reply_tokens = answer_tokens + STRUCTURE_TOKENS + (QUOTE_TOKENS if settings.quote else 0)
    shown = fit_excerpts(model, question, hits, reply_tokens, rare, settings.quote)
    generated = stream_answer(
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
        settings.quote,
    )
    shown = generated.shown
    if len(shown) < len(hits):
        notes.append(f"{len(hits) - len(shown)} excerpt(s) left out to fit the model's context")
    read, markers = _read_answer(generated, len(shown))
    if markers and on_text:
        on_text(markers)  # the streamed answer ends with its sources too
    not_in = says_not_in_excerpts(read.text) and not read.cited
    quoted = None
    if settings.quote and not not_in and generated.finish == "stop":
        # The words it says it copied must be in an excerpt it named: an answer whose quote
        # is nowhere it was shown is not from the excerpts. Withdrawn, like an unsupported one.
        named = [shown[n - 1].excerpt for n in read.cited if 1 <= n <= len(shown)]
        quoted = quote_found(generated.quote or "", named)
        if not quoted and settings.quote_check:
            notes.append("the answer was withdrawn: the words it quoted are in no excerpt it named")
            read = ReadCitations(prompts.NOT_IN_EXCERPTS, [], read.unresolved)
            not_in = True
    backing = None
    if not not_in and read.text.strip():
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
        took_ms=ms_since(started),
        stated_probability=generated.stated_probability,
        support=backing,
        quote=generated.quote,
        quote_found=quoted,
    )


def _read_answer(generated: Generated, shown: int) -> tuple[ReadCitations, str]:
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
