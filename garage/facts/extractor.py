"""Which local chat model extracts facts: ``--model``/``--provider``, else ``facts.*``, else
``inference.*`` — never a cloud API."""

from __future__ import annotations

from dataclasses import dataclass

from garage.config import GarageConfig
from garage.facts.report import FactsError
from garage.inference.client import Provider
from garage.inference.egress import is_cloud_model


@dataclass(frozen=True)
class ExtractorChoice:
    provider: Provider
    model: str
    host: str

    @property
    def label(self) -> str:
        return f"{self.provider}:{self.model}"


def choose_extractor(
    config: GarageConfig, *, model: str | None = None, provider: str | None = None
) -> ExtractorChoice | None:
    """``--model``/``--provider``, else ``facts.*``, else ``inference.*``; None when nothing
    names a model."""
    facts, inference = config.facts, config.inference
    chosen_provider: str = provider or (facts.provider if facts.model else inference.provider)
    chosen_model = model or facts.model or inference.model
    if not chosen_model:
        return None
    if chosen_provider not in ("ollama", "lmstudio", "llama_server"):
        raise FactsError(f"--provider: {chosen_provider!r} is not ollama, lmstudio or llama_server")
    if is_cloud_model(chosen_model):
        raise FactsError(
            f"model {chosen_model!r} names a cloud API; facts are extracted by a local model only"
        )
    typed: Provider = chosen_provider  # type: ignore[assignment]
    return ExtractorChoice(typed, chosen_model, inference.host_for(typed))
