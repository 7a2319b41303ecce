"""The Dagster definitions load, and the partitions sensor follows the config."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import dagster as dg

from garage_assets.definitions import defs
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
