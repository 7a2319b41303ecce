"""The Dagster definitions load, and the partitions sensor follows the config."""

from __future__ import annotations

import importlib
import json
import logging
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from garage.config import GarageConfig
from garage.config.model import ScheduleConfig
from garage_assets import definitions
from garage_assets.definitions import build_definitions, defs
from sensors.logic import partition_changes
from sensors.partitions import source_partitions_sensor

ROOT = Path(__file__).resolve().parents[2]


def test_definitions_load_and_validate() -> None:
    repository = defs.get_repository_def()
    assert "source_partitions_sensor" in {s.name for s in repository.sensor_defs}
    assert "database" in defs.resources  # type: ignore[operator]


def test_workspace_validates_with_the_dagster_cli(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "dagster", "definitions", "validate", "-w", "workspace.yaml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={"DAGSTER_HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "All code locations passed validation" in result.stderr + result.stdout


def test_partition_changes_logic() -> None:
    changes = partition_changes(["a", "b"], ["b", "c"])
    assert changes.add == ["a"] and changes.remove == ["c"]
    assert partition_changes([], []).add == []


def test_partitions_sensor_adds_and_removes(isolated_env: Path) -> None:
    (isolated_env / "notes").mkdir()
    config = {"sources": [{"name": "notes", "roots": [str(isolated_env / "notes")]}]}
    (isolated_env / "garage.json").write_text(json.dumps(config))
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("sources", ["stale"])
        # Only the resource the sensor uses: the inference resource nests the egress guard,
        # which build_sensor_context can only open inside a `with`.
        resources = {"database": defs.resources["database"]}  # type: ignore[index]
        result = source_partitions_sensor(
            dg.build_sensor_context(instance=instance, resources=resources)
        )
        assert isinstance(result, dg.SensorResult)
        kinds = {type(r).__name__: r for r in result.dynamic_partitions_requests or []}
        assert kinds["AddDynamicPartitionsRequest"].partition_keys == ["notes"]
        assert kinds["DeleteDynamicPartitionsRequest"].partition_keys == ["stale"]

        instance.delete_dynamic_partition("sources", "stale")
        instance.add_dynamic_partitions("sources", ["notes"])
        skipped = source_partitions_sensor(
            dg.build_sensor_context(instance=instance, resources=resources)
        )
        assert isinstance(skipped, dg.SkipReason)


def _resolved(built: dg.Definitions) -> dg.RepositoryDefinition:
    """Definitions resolved under a live instance: Dagster reads its state storage then, and
    an earlier test's instance may be closed."""
    with dg.instance_for_test():
        return built.get_repository_def()


def test_the_config_is_read_once_when_the_definitions_load(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = {"name": "mini", "provider": "llama_server", "model": "mini", "dimensions": 8}
    config = {
        "embedding": {"default": "mini", "models": [model]},
        "facts": {"automatic": True},
        "schedule": {"incremental_cron": "*/5 * * * *", "timezone": "Europe/Lisbon"},
    }
    (isolated_env / "garage.json").write_text(json.dumps(config))
    import garage.config

    reads: list[object] = []
    real = garage.config.load_config

    def counting(*args: object, **kwargs: object) -> GarageConfig:
        reads.append(args)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(garage.config, "load_config", counting)
    try:
        loaded = importlib.reload(definitions).defs
        assert len(reads) == 1
        graph = _resolved(loaded).asset_graph
        keys = {key.to_user_string() for key in graph.get_all_asset_keys()}
        assert {"emb_mini", "potential_fact_emb_mini"} <= keys
        # Every setting the definitions hold came from that one read.
        facts = graph.get(dg.AssetKey("potential_facts"))
        assert facts.automation_condition is not None  # facts.automatic
        [schedule] = _resolved(loaded).schedule_defs
        assert schedule.cron_schedule == "*/5 * * * *"
        assert schedule.execution_timezone == "Europe/Lisbon"
    finally:
        monkeypatch.undo()
        importlib.reload(definitions)


def test_a_broken_config_loads_the_defaults_and_says_so(
    isolated_env: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (isolated_env / "garage.json").write_text('{"schedule": {"incremental_cron": "99 * * * *"}}')
    with caplog.at_level(logging.ERROR, logger="garage_assets.definitions"):
        broken = build_definitions(definitions._garage_config())
    assert "schedule.incremental_cron" in caplog.text
    keys = {key.to_user_string() for key in _resolved(broken).asset_graph.get_all_asset_keys()}
    # No model is known: no vector assets; the rest of the UI is there to say what is wrong.
    assert not any(key.startswith(("emb_", "potential_fact_emb_")) for key in keys)
    assert {"documents", "chunks", "potential_facts", "distilled_facts", "graph"} <= keys
    [schedule] = _resolved(broken).schedule_defs
    assert schedule.cron_schedule == "0 * * * *"


def test_a_cron_dagster_refuses_gives_way_to_the_default(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A config that skipped validation (the config refuses this cron itself): Dagster's own
    # parser is the last word, and the code location still loads.
    config = GarageConfig.model_construct(
        schedule=ScheduleConfig.model_construct(incremental_cron="99 * * * *")
    )
    with caplog.at_level(logging.ERROR, logger="garage_assets.definitions"):
        settings = definitions._schedule_settings(config)
    assert settings.incremental_cron == "0 * * * *"
    assert "schedule.incremental_cron '99 * * * *'" in caplog.text
    [schedule] = _resolved(build_definitions(config)).schedule_defs
    assert schedule.cron_schedule == "0 * * * *"
