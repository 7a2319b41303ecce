"""The ``sources`` dynamic partitions: one partition per configured source."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from garage.orchestrator import INSTANCE_FILE, write_instance_config

SOURCES_PARTITIONS_NAME = "sources"
sources_partitions = dg.DynamicPartitionsDefinition(name=SOURCES_PARTITIONS_NAME)


def instance_at(home: Path) -> dg.DagsterInstance:
    """The Dagster instance in ``home``, as `dagster dev` would open it.

    Its storage is whatever ``home/dagster.yaml`` says: ``garage dagster`` writes that file
    (PostgreSQL by default). Before the first ``garage dagster`` the same writer makes a SQLite
    one; ``garage dagster`` then registers every configured source in the storage it chooses,
    so a partition added here is never lost by the move.
    """
    if not (home / INSTANCE_FILE).exists():
        write_instance_config(home, None)
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
