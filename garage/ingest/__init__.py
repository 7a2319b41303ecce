"""Stages 1–6: walk, materialize, extract, quality gate, attribute, chunk and store."""

from garage.ingest.pipeline import IngestError, ingest_source
from garage.ingest.report import IngestReport

__all__ = ["IngestError", "IngestReport", "ingest_source"]
