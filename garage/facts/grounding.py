"""Run one prompt over one document's text with LangExtract, and keep only grounded facts.

Grounding is the rule that makes a potential fact worth anything: each is stored with the exact
span of ``documents.content`` it came from, and its text *is* that span
(``content[start:end]``) — the quoted text when LangExtract found it verbatim, else the span it
aligned the quote to. A fact LangExtract could not locate (no character interval: the model
invented or rewrote it beyond recognition) is dropped and counted, never stored.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from garage.facts.claims import CLAIM_CLASS, is_claim
from garage.facts.language_model import GarageLanguageModel
from garage.facts.prompts import FactPrompt

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GroundedFact:
    fact_class: str
    text: str  # == content[start:end]
    start: int
    end: int
    alignment: str
    attributes: dict[str, Any] = field(default_factory=dict)
    key: str | None = None  # metadata facts only


@dataclass
class PromptResult:
    prompt: FactPrompt
    facts: list[GroundedFact]
    dropped: int  # extractions that could not be located in the content
    seconds: float
    requests: int
    unparsed: int = 0  # replies LangExtract could not parse: their chunk yielded nothing
    not_claims: int = 0  # grounded "fact" spans that state nothing (a heading, a header line)


def _examples(prompt: FactPrompt) -> list[Any]:
    from langextract.core import data

    return [
        data.ExampleData(
            text=example.text,
            extractions=[
                data.Extraction(
                    extraction_class=x.fact_class,
                    extraction_text=x.text,
                    attributes=dict(x.attributes) or None,
                )
                for x in example.extractions
            ],
        )
        for example in prompt.examples
    ]


def ground(content: str, extractions: list[Any]) -> tuple[list[GroundedFact], int]:
    """Keep what has a span in ``content``, once per (class, span); count the rest."""
    facts: list[GroundedFact] = []
    seen: set[tuple[str, int, int]] = set()
    dropped = 0
    for extraction in extractions:
        interval = extraction.char_interval
        start = getattr(interval, "start_pos", None)
        end = getattr(interval, "end_pos", None)
        if start is None or end is None or not 0 <= start < end <= len(content):
            dropped += 1
            continue
        span = content[start:end]
        if not span.strip():
            dropped += 1
            continue
        identity = (str(extraction.extraction_class), start, end)
        if identity in seen:
            continue  # the same span twice (a second pass, an overlap): one fact
        seen.add(identity)
        status = extraction.alignment_status
        facts.append(
            GroundedFact(
                fact_class=str(extraction.extraction_class),
                text=span,
                start=start,
                end=end,
                alignment=status.value if status is not None else "match_exact",
                attributes=_plain_attributes(extraction.attributes),
            )
        )
    return facts, dropped


def _plain_attributes(attributes: Any) -> dict[str, Any]:
    if not isinstance(attributes, dict):
        return {}
    return {
        str(k): v if isinstance(v, (str, list)) else str(v)
        for k, v in attributes.items()
        if v is not None
    }


def extract_prompt(
    content: str,
    prompt: FactPrompt,
    model: GarageLanguageModel,
    *,
    max_char_buffer: int = 1000,
) -> PromptResult:
    """One prompt over one text: LangExtract chunks it, builds the few-shot prompts, parses
    the replies and aligns each quote to the text; grounding decides what is kept."""
    import langextract as lx
    from langextract.prompt_validation import PromptValidationLevel

    started = time.monotonic()
    calls_before, unparsed_before = model.calls, model.unparsed
    annotated = lx.extract(
        text_or_documents=content,
        prompt_description=prompt.description,
        examples=_examples(prompt),
        model=model,
        fence_output=False,
        use_schema_constraints=False,
        max_char_buffer=max_char_buffer,
        batch_length=1,
        max_workers=1,
        show_progress=False,
        # Examples are checked when the config loads (each quote occurs in its example).
        prompt_validation_level=PromptValidationLevel.OFF,
        # A chunk whose reply does not parse costs that chunk, not the document.
        resolver_params={"suppress_parse_errors": True},
    )
    extractions = list(annotated.extractions or [])
    facts, dropped = ground(content, extractions)
    if dropped:
        log.info("%s: %d extractions could not be located and were dropped", prompt.name, dropped)
    claims = [f for f in facts if f.fact_class != CLAIM_CLASS or is_claim(f.text)]
    if len(claims) < len(facts):
        log.info(
            "%s: %d spans that state nothing were dropped", prompt.name, len(facts) - len(claims)
        )
    return PromptResult(
        prompt,
        claims,
        dropped,
        time.monotonic() - started,
        model.calls - calls_before,
        model.unparsed - unparsed_before,
        len(facts) - len(claims),
    )
