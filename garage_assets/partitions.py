"""The ``sources`` dynamic partitions: one partition per configured source."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

SOURCES_PARTITIONS_NAME = "sources"
sources_partitions = dg.DynamicPartitionsDefinition(name=SOURCES_PARTITIONS_NAME)


def instance_at(home: Path) -> dg.DagsterInstance:
    """The Dagster instance in ``home`` (created on first use), as `dagster dev` would open it."""
    home.mkdir(parents=True, exist_ok=True)
    config_file = home / "dagster.yaml"
    if not config_file.exists():
        config_file.write_text("telemetry:\n  enabled: false\n")
    return dg.DagsterInstance.from_config(str(home))


def register_source(instance: dg.DagsterInstance, name: str) -> bool:
    """Add the source's partition; return False when it was already there."""
    if instance.has_dynamic_partition(SOURCES_PARTITIONS_NAME, name):
        return False
    instance.add_dynamic_partitions(SOURCES_PARTITIONS_NAME, [name])
    return True


def unregister_source(instance: dg.DagsterInstance, name: str) -> bool:
    if not instance.has_dynamic_partition(SOURCES_PARTITIONS_NAME, name):
        return False
    instance.delete_dynamic_partition(SOURCES_PARTITIONS_NAME, name)
    return True
