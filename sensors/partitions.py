"""Keep the ``sources`` dynamic partitions in step with the configured sources."""

from __future__ import annotations

import dagster as dg

from garage_assets.partitions import SOURCES_PARTITIONS_NAME, sources_partitions
from resources.database import DatabaseResource
from sensors.logic import partition_changes


@dg.sensor(minimum_interval_seconds=60, default_status=dg.DefaultSensorStatus.RUNNING)
def source_partitions_sensor(
    context: dg.SensorEvaluationContext, database: DatabaseResource
) -> dg.SensorResult | dg.SkipReason:
    """Add a partition for each new source in the config; remove those of deleted sources."""
    configured = [source.name for source in database.garage_config().sources]
    registered = context.instance.get_dynamic_partitions(SOURCES_PARTITIONS_NAME)
    changes = partition_changes(configured, registered)
    if not changes.add and not changes.remove:
        return dg.SkipReason(f"{len(configured)} source partition(s) already match the config")
    requests: list[dg.AddDynamicPartitionsRequest | dg.DeleteDynamicPartitionsRequest] = []
    if changes.add:
        requests.append(sources_partitions.build_add_request(changes.add))
    if changes.remove:
        requests.append(sources_partitions.build_delete_request(changes.remove))
    return dg.SensorResult(dynamic_partitions_requests=requests)
