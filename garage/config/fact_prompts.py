"""The shape of one ``facts.prompts`` entry, validated when the config loads.

An entry is a name, a description (the instructions), few-shot examples in LangExtract's shape
(a text and the extractions expected from it, each a class, the quoted text and optional
attributes), an optional scope and an enabled flag. Every field but the name may be left out:
an entry named ``default`` overrides the built-in default field by field, and any field it
leaves out keeps the built-in's (see ``garage.facts.prompts``). Unknown keys are errors, so a
typo names its entry and field instead of silently doing nothing.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

PROMPT_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
# Facts read from header fields with no model are stored under this prompt name.
METADATA_PROMPT = "metadata"


class _Strict(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )


class ExampleExtraction(_Strict):
    # "class" is a Python keyword, and LangExtract's own word for it: read it by alias.
    extraction_class: str = Field(alias="class", min_length=1, max_length=64)
    text: str = Field(min_length=1)
    attributes: dict[str, str | list[str]] = Field(default_factory=dict)


class PromptExample(_Strict):
    text: str = Field(min_length=1)
    extractions: list[ExampleExtraction] = Field(min_length=1)

    @model_validator(mode="after")
    def _quotes_are_in_the_text(self) -> PromptExample:
        # An example that quotes text its own passage does not hold teaches the model to
        # invent, and every such fact would then be dropped as ungrounded.
        for index, extraction in enumerate(self.extractions):
            if extraction.text not in self.text:
                raise ValueError(
                    f"extractions[{index}].text {extraction.text!r} does not occur in the "
                    "example's text; quote it exactly"
                )
        return self


CorpusClassName = Literal["document", "code", "communication"]


class PromptScope(_Strict):
    corpus_classes: list[CorpusClassName] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)


class FactPromptEntry(_Strict):
    name: str
    description: str | None = Field(default=None, min_length=1)
    examples: list[PromptExample] | None = Field(default=None, min_length=1)
    scope: PromptScope | None = None
    enabled: bool | None = None

    @field_validator("name")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        if not PROMPT_NAME.match(value):
            raise ValueError(
                "must be 1-64 lower-case letters, digits, '_' or '-', starting with a letter "
                "or digit"
            )
        if value == METADATA_PROMPT:
            raise ValueError(f"{METADATA_PROMPT!r} is reserved for the facts read from headers")
        return value


def check_prompt_entries(entries: list[FactPromptEntry]) -> list[FactPromptEntry]:
    """Names are unique, and an entry other than ``default`` says what to ask (it has no
    built-in to fall back on)."""
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        if entry.name in seen:
            raise ValueError(f"[{index}:{entry.name}]: a second prompt with this name")
        seen.add(entry.name)
        if entry.name != "default":
            for field in ("description", "examples"):
                if getattr(entry, field) is None:
                    raise ValueError(
                        f"[{index}:{entry.name}].{field}: required for a prompt that is not "
                        "the built-in default"
                    )
    return entries
