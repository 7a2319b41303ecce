"""The documents/chunks multi-asset materializes a source partition, in process and by CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import psycopg

from garage_assets.ingest import ingest
from resources.database import DatabaseResource
from tests.integration.ingest_helpers import write_docx, write_markdown

ROOT = Path(__file__).resolve().parents[2]


def _source(tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    notes.mkdir()
    write_markdown(notes / "a.md", "First")
    write_markdown(notes / "b.md", "Second")
    write_docx(notes / "c.docx", "Third", author="Ada Lovelace")
    config = tmp_path / "garage.json"
    config.write_text(json.dumps({"sources": [{"name": "notes", "roots": [str(notes)]}]}))
    return config


def test_materialize_reports_counts(migrated_db: str, tmp_path: Path) -> None:
    config = _source(tmp_path)
    database = DatabaseResource(config_file=str(config), database_url=migrated_db)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("sources", ["notes"])
        result = dg.materialize(
            [ingest], partition_key="notes", resources={"database": database}, instance=instance
        )
        assert result.success
        events = {}
        for event in result.get_asset_materialization_events():
            materialization = event.event_specific_data.materialization  # type: ignore[union-attr]
            events[materialization.asset_key.to_user_string()] = materialization.metadata
        assert events["documents"]["indexed"].value == 3
        assert events["documents"]["completed"].value is True
        assert events["chunks"]["new"].value >= 3
        again = dg.materialize(
            [ingest], partition_key="notes", resources={"database": database}, instance=instance
        )
        docs = [
            e.event_specific_data.materialization.metadata  # type: ignore[union-attr]
            for e in again.get_asset_materialization_events()
            if e.asset_key == dg.AssetKey("documents")
        ]
        assert docs[0]["stat_skipped"].value == 3 and docs[0]["indexed"].value == 0


def test_dagster_cli_materializes_one_partition(migrated_db: str, tmp_path: Path) -> None:
    config = _source(tmp_path)
    home = tmp_path / "dagster"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env = dict(
        os.environ,
        DAGSTER_HOME=str(home),
        GARAGE_CONFIG=str(config),
        GARAGE_DATABASE_URL=migrated_db,
    )
    with dg.DagsterInstance.from_config(str(home)) as instance:
        instance.add_dynamic_partitions("sources", ["notes"])
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "dagster",
            "asset",
            "materialize",
            "-m",
            "garage_assets.definitions",
            "--select",
            "documents,chunks",
            "--partition",
            "notes",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    with psycopg.connect(migrated_db) as conn:
        assert conn.execute("SELECT count(*) FROM documents").fetchone() == (3,)
