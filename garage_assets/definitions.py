"""The Dagster definitions `dagster dev -w workspace.yaml` loads."""

from __future__ import annotations

import dagster as dg

from garage_assets.embeddings import embedding_assets
from garage_assets.ingest import ingest
from resources.database import DatabaseResource
from resources.inference import EgressGuardResource, InferenceResource
from sensors.partitions import source_partitions_sensor

defs = dg.Definitions(
    assets=[ingest, *embedding_assets()],
    sensors=[source_partitions_sensor],
    resources={
        "database": DatabaseResource(),
        "inference": InferenceResource(egress=EgressGuardResource()),
    },
)
