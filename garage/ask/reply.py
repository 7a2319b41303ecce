"""The model's reply to the excerpts, streamed: a JSON object the server constrains
(garage.ask.structured) whose verdict, "stated": "yes" or "no", comes first, then the excerpts
it names and the answer's text.

The verdict is decided on the model's probability of "yes" (from the server's token
log-probabilities, against ``ask.answer_threshold``) rather than on its greedy pick. The
answer is streamed (``on_text``), bounded by the model's wall-clock limit, and stops when
``cancel`` is set; a prompt the server still finds too long is retried with fewer excerpts.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from garage.ask import prompts
from garage.ask.excerpts import EXCERPT_CHARS, MIN_EXCERPT_CHARS, ask_messages, citations_for
from garage.ask.structured import (
    AnswerStream,
    answer_schema,
    verdict,
    verdict_starts,
    yes_probability,
)
from garage.ask.types import Citation, Finish, Progress
from garage.inference import ContextExceeded, LocalChatModel
from garage.inference.stream import Delta, GenerationStopped
from garage.search import SearchHit

# The JSON around the answer ({"stated": "yes", "excerpts": [1, 2], "answer": "..."}) costs
# tokens of its own: the answer keeps its whole budget on top of them.
STRUCTURE_TOKENS = 24
# ask.quote: the copied words come on top of that (a quote is at most QUOTE_CHARS characters).
QUOTE_TOKENS = 80
# How many likeliest tokens the server reports at each position; the verdict's "yes" and
# "no" are among them.
VERDICT_ALTERNATIVES = 10


@dataclass
class Generated:
    text: str  # the answer's text, out of the reply's JSON
    shown: list[Citation]
    finish: Finish
    first_token_ms: float | None
    excerpts: list[int] = field(default_factory=list)  # the excerpts the reply named
    stated_probability: float | None = None
    quote: str | None = None  # the excerpt's words the reply copied (ask.quote)


def stream_answer(
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
    quote: bool = False,
) -> Generated:
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
        citations = shown if count == len(shown) else citations_for(hits[:count], excerpt_chars)
        if on_progress:
            on_progress(1, 2, f"asking {model.model} with {len(citations)} excerpt(s)")
        reply = AnswerStream()
        pieces = 0
        finish: Finish = "stop"
        first_token_ms = None
        overruled: str | None = None
        stream = model.stream(
            ask_messages(question, citations, rare, quote),
            corpus_classes={c.corpus_class for c in citations},
            json_schema=answer_schema(len(citations), stated_only=stated_only, quote=quote),
            # Greedy: an answer from excerpts gains nothing from sampling, and the same
            # question then gets the same answer.
            temperature=0.0,
            max_tokens=answer_tokens + STRUCTURE_TOKENS + (QUOTE_TOKENS if quote else 0),
            cancel=cancel,
            top_logprobs=None if stated_only else VERDICT_ALTERNATIVES,
        )
        try:
            for delta in stream:
                if delta.text:
                    if first_token_ms is None:
                        first_token_ms = ms_since(asked)
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
            return Generated(
                cut.answer,
                citations,
                "time_limit",
                first_token_ms,
                cut.excerpts,
                probability,
                cut.quote,
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
            return Generated(
                prompts.NOT_IN_EXCERPTS, citations, "stop", first_token_ms, [], probability
            )
        if overruled == "yes":
            stated_only = True
            shown = citations
            continue
        if on_progress:
            on_progress(2, 2, "answered")
        whole = reply.result()
        return Generated(
            whole.answer,
            citations,
            finish,
            first_token_ms,
            whole.excerpts,
            probability,
            whole.quote,
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


def ms_since(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 1)
