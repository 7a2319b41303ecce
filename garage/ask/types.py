"""What answering returns: a cited answer (``AskResult``, one ``Citation`` per excerpt shown),
a raw generation (``GenerateResult``), the progress callback both report through, and the
answer lengths a caller may ask for."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

ANSWER_TOKENS = 400
MAX_ANSWER_TOKENS = 4096

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
    # ``ask.min_support`` decides on (reckoned with the check off too, and recorded); None
    # for a refusal.
    support: float | None = None
    # ask.quote: the excerpt's words the model copied before answering, and whether they are
    # in an excerpt it named (garage.ask.quote); None when not asked or not checked.
    quote: str | None = None
    quote_found: bool | None = None


@dataclass(frozen=True)
class GenerateResult:
    text: str
    model: str
