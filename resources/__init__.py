"""Dagster resources: one per boundary Garage crosses (the database; later the model servers)."""

from resources.database import DatabaseResource

__all__ = ["DatabaseResource"]
