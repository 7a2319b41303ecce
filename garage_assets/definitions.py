"""The Dagster definitions `dagster dev -w workspace.yaml` loads."""

from __future__ import annotations

import dagster as dg

from garage_assets.ingest import ingest
from resources.database import DatabaseResource
from sensors.partitions import source_partitions_sensor

defs = dg.Definitions(
    assets=[ingest],
    sensors=[source_partitions_sensor],
    resources={"database": DatabaseResource()},
)
