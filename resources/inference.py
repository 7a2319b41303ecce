"""The egress guard and the inference client as Dagster resources.

``InferenceResource`` has the guard as a required field: there is no way to build its client
without one, so no asset can reach a model server around the privacy rules.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from garage.config import GarageConfig, config_path, data_dir, load_config
from garage.inference import EgressGuard, InferenceClient
from garage.inference.egress import note_allowlist


def _load(config_file: str | None) -> GarageConfig:
    return load_config(Path(config_file).expanduser() if config_file else config_path())


class EgressGuardResource(dg.ConfigurableResource):
    """Where model requests may go: the configured model hosts, communications to loopback
    only. Built from the Garage config; widening it means editing the config (logged)."""

    config_file: str | None = None

    def guard(self) -> EgressGuard:
        config = _load(self.config_file)
        guard = EgressGuard.from_config(config)
        note_allowlist(guard, data_dir(config) / "egress-allowlist.json")
        return guard


class InferenceResource(dg.ConfigurableResource):
    """The one client for Ollama, LM Studio and llama-server."""

    egress: EgressGuardResource
    config_file: str | None = None
    timeout_seconds: float | None = None

    def client(self) -> InferenceClient:
        config = _load(self.config_file)
        timeout = self.timeout_seconds or config.inference.timeout_seconds
        return InferenceClient(self.egress.guard(), timeout=timeout)
