"""Dagster resources: one per boundary Garage crosses (the database, the model servers and the
egress guard in front of them)."""

from resources.database import DatabaseResource
from resources.inference import EgressGuardResource, InferenceResource

__all__ = ["DatabaseResource", "EgressGuardResource", "InferenceResource"]
