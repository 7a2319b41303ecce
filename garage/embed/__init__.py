"""Embeddings: the model registry (one ``emb_<slug>`` table per model) and the backfill."""

from __future__ import annotations

from typing import Any

import psycopg

from garage.config import GarageConfig
from garage.embed.backfill import (
    BackfillReport,
    Chunks,
    DimensionMismatch,
    Progress,
    backfill,
)
from garage.embed.distilled import refresh_other_vectors
from garage.embed.registry import (
    RegisteredModel,
    RegistryError,
    default_model,
    find_model,
    register_models,
    registered_models,
    slugify,
)
from garage.inference.client import InferenceClient
from garage.locks import CORPUS, Waiting, writing
from garage.stopping import StopSignal

__all__ = [
    "BackfillReport",
    "DimensionMismatch",
    "RegisteredModel",
    "RegistryError",
    "backfill",
    "default_model",
    "embed",
    "find_model",
    "register_models",
    "registered_models",
    "slugify",
]

NO_IMAGE_MODEL = (
    "{count} image chunks have no vector: no image embedding model is configured (none runs "
    "on this platform yet); they are found through full-text search on their OCR text, file "
    "name and date"
)


def embed(
    conn: psycopg.Connection[Any],
    client: InferenceClient,
    config: GarageConfig,
    *,
    model_names: list[str] | None = None,
    source: str | None = None,
    limit: int | None = None,
    progress: Progress | None = None,
    stop: StopSignal | None = None,
    waiting: Waiting | None = None,
    chunks: Chunks = "all",
) -> list[BackfillReport]:
    """Register the configured models, then backfill each (or those named) in turn; a
    ``stop`` request ends the run after the batch in flight.

    The embedding stage's one entry point: ``garage embed`` runs it over every chunk, the
    ``emb_<slug>`` and ``potential_fact_emb_<slug>`` assets for one model and one source, on
    the content chunks or the potential facts' (``chunks``)."""
    models = register_models(conn, config)
    if model_names:
        wanted = set(model_names)
        unknown = wanted - {m.name for m in models} - {m.slug for m in models}
        if unknown:
            names = ", ".join(m.name for m in models) or "none configured"
            raise RegistryError(
                f"no configured embedding model named {', '.join(sorted(unknown))} "
                f"(models: {names})"
            )
        models = [m for m in models if m.name in wanted or m.slug in wanted]
    reports = []
    for model in models:
        if stop is not None and stop.requested:
            break
        reports.append(
            backfill(
                conn,
                client,
                model,
                source=source,
                batch_size=config.embedding.batch_size,
                batch_tokens=config.embedding.batch_tokens,
                limit=limit,
                progress=progress,
                stop=stop,
                waiting=waiting,
                chunks=chunks,
            )
        )
    # Distilled facts get their vector under a model that did not cluster them from their
    # nodes' new vectors there (embed/distilled.py); only new fact vectors can change it.
    # Distilled facts are corpus-wide: written under the lock cluster-facts holds.
    if chunks != "content":
        with writing(conn, CORPUS, "embed", waiting):
            for model in models:
                if model.modality == "text" and reports:
                    refresh_other_vectors(conn, model, clustered_elsewhere=True)
    has_image_model = any(m.modality == "image" for m in registered_models(conn))
    if not has_image_model:
        for report in reports:
            if report.skipped_modality:
                report.notes.append(NO_IMAGE_MODEL.format(count=report.skipped_modality))
    return reports
