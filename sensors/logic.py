"""Pure decisions behind the sensors, testable without a Dagster instance."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class PartitionChanges:
    add: list[str]
    remove: list[str]


def partition_changes(configured: Iterable[str], registered: Iterable[str]) -> PartitionChanges:
    """The partitions to add and delete so that they follow the configured sources."""
    configured_set, registered_set = set(configured), set(registered)
    return PartitionChanges(
        add=sorted(configured_set - registered_set),
        remove=sorted(registered_set - configured_set),
    )
