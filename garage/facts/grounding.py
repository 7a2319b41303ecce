"""Run one prompt over one document's text with LangExtract, and keep only grounded facts.

Grounding is the rule that makes a potential fact worth anything: each is stored with the exact
span of ``documents.content`` it came from, and its text *is* that span
(``content[start:end]``) — the quoted text when LangExtract found it verbatim, else the span it
aligned the quote to. A fact LangExtract could not locate (no character interval: the model
invented or rewrote it beyond recognition) is dropped and counted, never stored.

Attributes are held to the same rule: a value the model quotes (a name, a relation's subject)
must occur in the document — ignoring case, runs of whitespace and punctuation at either end —
or the fact is dropped and counted (``dropped_ungrounded_attributes``); a small model otherwise
fills a relation's subject with the name in the prompt's own example. Which attributes quote:
those whose every value in the prompt's examples occurs in its example's text. One that the
examples fill with a value of their own (``kind: venue``, ``date: 2019-05-12``) is a label,
kept as the model gives it. And an entity class's span must be shaped like one: a pronoun or a
sentence is dropped and counted (``dropped_not_names``, see ``claims``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from garage.facts.claims import CLAIM_CLASS, is_claim, is_entity_mention
from garage.facts.language_model import Framing, GarageLanguageModel, compact_reply
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
    not_names: int = 0  # grounded entity spans that name nothing (a pronoun, a sentence)
    dropped_attributes: int = 0  # grounded spans with an attribute value the text lacks
    cut: int = 0  # replies cut off at max_tokens: their completed extractions were kept


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


def framing(prompt: FactPrompt, examples: Sequence[Any]) -> Framing:
    """The chat turns of ``prompt`` (see ``language_model``), and what LangExtract renders
    around a chunk, to find the chunk in each of its prompts. The lead is rendered as
    ``langextract.extract`` renders it with the options ``extract_prompt`` passes: JSON, no
    fences, the ``extractions`` wrapper."""
    from langextract import prompting
    from langextract.core import data
    from langextract.core import format_handler as fh

    handler, _ = fh.FormatHandler.from_resolver_params(
        resolver_params=dict(RESOLVER_PARAMS),
        base_format_type=data.FormatType.JSON,
        base_use_fences=False,
        base_attribute_suffix=data.ATTRIBUTE_SUFFIX,
        base_use_wrapper=True,
        base_wrapper_key=data.EXTRACTIONS_KEY,
    )
    template = prompting.PromptTemplateStructured(
        description=prompt.description, examples=list(examples)
    )
    marker = "\x00CHUNK\x00"
    lead, tail = prompting.QAPromptGenerator(template, handler).render(marker).split(marker)
    turns: list[dict[str, str]] = [{"role": "system", "content": prompt.description}]
    for example in prompt.examples:
        turns.append({"role": "user", "content": example.text})
        answer = compact_reply([(x.fact_class, x.text, x.attributes) for x in example.extractions])
        turns.append({"role": "assistant", "content": answer})
    return Framing(lead, tail, tuple(turns))


def label_attributes(prompt: FactPrompt) -> dict[str, frozenset[str]]:
    """Per class, the attributes the examples fill with values of their own (not found in
    the example's text): labels, which need not occur in a document. Every other attribute
    quotes the document."""
    labels: dict[str, set[str]] = {}
    for example in prompt.examples:
        text = _normal(example.text)
        for extraction in example.extractions:
            for key, value in extraction.attributes.items():
                if any(_normal(v) not in text for v in _values(value) if _normal(v)):
                    labels.setdefault(extraction.fact_class, set()).add(key)
    return {name: frozenset(keys) for name, keys in labels.items()}


_EDGE_PUNCTUATION = "\"'“”‘’«»()[]{}<>.,;:!?*_`"


def _normal(text: str) -> str:
    """Case and runs of whitespace folded, punctuation at either end stripped."""
    return " ".join(text.casefold().split()).strip(_EDGE_PUNCTUATION + " ")


def _values(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value if v is not None]
    return [] if value is None else [str(value)]


def ungrounded_attribute(
    fact: GroundedFact, content_normal: str, labels: Mapping[str, frozenset[str]]
) -> str | None:
    """The first attribute of ``fact`` that quotes text the document does not hold, as
    ``key=value``; None when every quoting attribute is found (an empty value quotes
    nothing)."""
    exempt = labels.get(fact.fact_class, frozenset())
    for key, value in fact.attributes.items():
        if key in exempt:
            continue
        for item in _values(value):
            wanted = _normal(item)
            if wanted and wanted not in content_normal:
                return f"{key}={item!r}"
    return None


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


# What a small model writes for an attribute the text does not state ("date": "None"): no
# value, so the attribute is left out rather than stored as a date called "None".
PLACEHOLDERS = frozenset({"", "none", "null", "unknown", "n/a", "na", "-", "not stated"})


def _plain_attributes(attributes: Any) -> dict[str, Any]:
    if not isinstance(attributes, dict):
        return {}
    plain: dict[str, Any] = {}
    for key, value in attributes.items():
        if isinstance(value, list):
            kept = [str(v) for v in value if v is not None and not _placeholder(str(v))]
            if kept:
                plain[str(key)] = kept
        elif value is not None and not _placeholder(str(value)):
            plain[str(key)] = value if isinstance(value, str) else str(value)
    return plain


def _placeholder(value: str) -> bool:
    return value.strip().casefold() in PLACEHOLDERS


# Passed to langextract.extract, and used to render the lead the framing recognises.
RESOLVER_PARAMS: Mapping[str, Any] = {"suppress_parse_errors": True}


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
    calls_before, unparsed_before, cut_before = model.calls, model.unparsed, model.cut
    examples = _examples(prompt)
    if model.framing is None:
        model.framing = framing(prompt, examples)
    annotated = lx.extract(
        text_or_documents=content,
        prompt_description=prompt.description,
        examples=examples,
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
        resolver_params=dict(RESOLVER_PARAMS),
    )
    extractions = list(annotated.extractions or [])
    facts, dropped = ground(content, extractions)
    if dropped:
        log.info("%s: %d extractions could not be located and were dropped", prompt.name, dropped)
    kept, not_claims, not_names, bad_attributes = filter_facts(content, prompt, facts)
    return PromptResult(
        prompt,
        kept,
        dropped,
        time.monotonic() - started,
        model.calls - calls_before,
        model.unparsed - unparsed_before,
        not_claims,
        not_names,
        bad_attributes,
        model.cut - cut_before,
    )


def filter_facts(
    content: str, prompt: FactPrompt, facts: list[GroundedFact]
) -> tuple[list[GroundedFact], int, int, int]:
    """The grounded facts worth keeping, and how many were dropped as stating nothing (a
    ``fact`` that is no claim), as naming nothing (an entity span that is a pronoun or a
    sentence) and for an attribute the document does not hold. Each is counted once, under
    the first rule it fails."""
    labels = label_attributes(prompt)
    content_normal = " ".join(content.casefold().split())
    kept: list[GroundedFact] = []
    not_claims = not_names = bad_attributes = 0
    for fact in facts:
        if fact.fact_class == CLAIM_CLASS and not is_claim(fact.text):
            not_claims += 1
        elif not is_entity_mention(fact.fact_class, fact.text):
            not_names += 1
            log.debug("%s: %s %r names nothing: dropped", prompt.name, fact.fact_class, fact.text)
        elif (missing := ungrounded_attribute(fact, content_normal, labels)) is not None:
            bad_attributes += 1
            log.debug(
                "%s: %s %r has %s, not in the text: dropped",
                prompt.name,
                fact.fact_class,
                fact.text,
                missing,
            )
        else:
            kept.append(fact)
    if not_claims or not_names or bad_attributes:
        log.info(
            "%s: dropped %d spans that state nothing, %d that name nothing, %d with an "
            "attribute the text does not hold",
            prompt.name,
            not_claims,
            not_names,
            bad_attributes,
        )
    return kept, not_claims, not_names, bad_attributes
