"""The effective fact prompts: the built-in default merged with ``facts.prompts``.

The merge rule (the architecture guide's): an entry named ``default`` overrides the built-in
field by field — ``{"name": "default", "enabled": false}`` turns it off, and a description or
examples left out keep the built-in's — and any other entry is added after it, so adding a
prompt never silently drops the default.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from garage.config import GarageConfig
from garage.config.fact_prompts import FactPromptEntry, PromptExample


@dataclass(frozen=True)
class ExampleFact:
    fact_class: str
    text: str
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Example:
    text: str
    extractions: tuple[ExampleFact, ...]


@dataclass(frozen=True)
class FactPrompt:
    name: str
    description: str
    examples: tuple[Example, ...]
    corpus_classes: tuple[str, ...] = ()  # empty: every class
    sources: tuple[str, ...] = ()  # empty: every source
    enabled: bool = True
    builtin: bool = False

    @property
    def sha256(self) -> str:
        """Over what the model is asked (description and examples), not the scope or flag:
        widening a prompt's scope does not make its existing facts stale."""
        payload = {
            "description": self.description,
            "examples": [
                {
                    "text": e.text,
                    "extractions": [
                        {"class": x.fact_class, "text": x.text, "attributes": x.attributes}
                        for x in e.extractions
                    ],
                }
                for e in self.examples
            ],
        }
        encoded = json.dumps(payload, sort_keys=True, ensure_ascii=False).encode("utf-8")
        return hashlib.sha256(encoded).hexdigest()

    @property
    def classes(self) -> tuple[str, ...]:
        """The extraction classes its examples teach, in first-seen order."""
        seen = dict.fromkeys(x.fact_class for e in self.examples for x in e.extractions)
        return tuple(seen)

    def applies_to(self, corpus_class: str, source: str) -> bool:
        if self.corpus_classes and corpus_class not in self.corpus_classes:
            return False
        return not (self.sources and source not in self.sources)

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "examples": [
                {
                    "text": e.text,
                    "extractions": [
                        {"class": x.fact_class, "text": x.text}
                        | ({"attributes": x.attributes} if x.attributes else {})
                        for x in e.extractions
                    ],
                }
                for e in self.examples
            ],
            "scope": {"corpus_classes": list(self.corpus_classes), "sources": list(self.sources)},
            "enabled": self.enabled,
            "builtin": self.builtin,
            "sha256": self.sha256,
        }


# Deliberately generic: it has no notion of what kind of document it is given.
DEFAULT_PROMPT = FactPrompt(
    name="default",
    description=(
        "Extract every standalone claim the text makes: a statement of fact that can be "
        "understood on its own. Quote each claim exactly as it appears in the text, in the "
        "document's own wording; do not paraphrase, summarise or add anything. Skip greetings, "
        "questions and instructions."
    ),
    examples=(
        Example(
            text=(
                "Hi all, quick update. The Lisbon office opens on 3 March. Maria Santos will "
                "lead the team of twelve engineers. Let me know if you have questions!"
            ),
            extractions=(
                ExampleFact("fact", "The Lisbon office opens on 3 March."),
                ExampleFact("fact", "Maria Santos will lead the team of twelve engineers."),
            ),
        ),
    ),
    builtin=True,
)


def _examples(entries: Sequence[PromptExample]) -> tuple[Example, ...]:
    return tuple(
        Example(
            e.text,
            tuple(
                ExampleFact(x.extraction_class, x.text, dict(x.attributes)) for x in e.extractions
            ),
        )
        for e in entries
    )


def merge_prompts(entries: Sequence[FactPromptEntry]) -> list[FactPrompt]:
    """The built-in default (as overridden by an entry named ``default``), then the others in
    the order the config lists them."""
    default = DEFAULT_PROMPT
    others: list[FactPrompt] = []
    for entry in entries:
        scope = entry.scope
        if entry.name == "default":
            default = FactPrompt(
                name="default",
                description=entry.description or default.description,
                examples=_examples(entry.examples) if entry.examples else default.examples,
                corpus_classes=tuple(scope.corpus_classes) if scope else default.corpus_classes,
                sources=tuple(scope.sources) if scope else default.sources,
                enabled=default.enabled if entry.enabled is None else entry.enabled,
                builtin=True,
            )
            continue
        # Validation at config load guarantees a description and examples here.
        assert entry.description is not None and entry.examples is not None
        others.append(
            FactPrompt(
                name=entry.name,
                description=entry.description,
                examples=_examples(entry.examples),
                corpus_classes=tuple(scope.corpus_classes) if scope else (),
                sources=tuple(scope.sources) if scope else (),
                enabled=True if entry.enabled is None else entry.enabled,
            )
        )
    return [default, *others]


def effective_prompts(config: GarageConfig) -> list[FactPrompt]:
    return merge_prompts(config.facts.prompts)


class UnknownPrompt(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


def select_prompts(prompts: Sequence[FactPrompt], names: Sequence[str]) -> list[FactPrompt]:
    """Those named (a disabled one included: naming it is asking for it), else every enabled
    one."""
    if not names:
        return [p for p in prompts if p.enabled]
    by_name = {p.name: p for p in prompts}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        known = ", ".join(by_name)
        raise UnknownPrompt(f"no fact prompt named {', '.join(unknown)} (prompts: {known})")
    return [by_name[n] for n in dict.fromkeys(names)]
