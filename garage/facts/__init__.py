"""Stage 7, potential facts: span-grounded claims extracted from stored documents by LangExtract
on the local chat model, plus the facts a mail's or a thread's headers state with no model."""

from garage.facts.enrich import FactsError, choose_extractor, enrich_facts
from garage.facts.prompts import FactPrompt, effective_prompts, merge_prompts, select_prompts
from garage.facts.report import EnrichReport

__all__ = [
    "EnrichReport",
    "FactPrompt",
    "FactsError",
    "choose_extractor",
    "effective_prompts",
    "enrich_facts",
    "merge_prompts",
    "select_prompts",
]
