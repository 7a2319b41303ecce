"""Sensors and schedules: each delegates to a pure function in ``sensors.logic``."""

from sensors.partitions import source_partitions_sensor

__all__ = ["source_partitions_sensor"]
