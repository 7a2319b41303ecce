"""Sensors, schedule, automation and asset checks, against real folders and real PostgreSQL."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import dagster as dg
import psycopg
from dagster._core.test_utils import create_run_for_test

from garage.config import GarageConfig
from garage.embed.registry import configured_models
from garage_assets.checks import ingest_checks
from garage_assets.definitions import defs
from garage_assets.embeddings import embedding_asset
from garage_assets.ingest import ingest
from garage_assets.partitions import sources_partitions
from resources.database import DatabaseResource
from resources.inference import EgressGuardResource, InferenceResource
from sensors.changes import build_source_changes_sensor
from sensors.schedules import build_incremental_schedule
from tests.integration.ingest_helpers import write_docx, write_markdown


def _config(tmp_path: Path, *names: str) -> Path:
    sources = []
    for name in names:
        folder = tmp_path / name
        folder.mkdir()
        write_markdown(folder / "a.md", f"First of {name}")
        write_markdown(folder / "b.md", f"Second of {name}")
        sources.append({"name": name, "roots": [str(folder)]})
    path = tmp_path / "garage.json"
    path.write_text(json.dumps({"sources": sources}))
    return path


def test_definitions_hold_the_orchestration() -> None:
    repository = defs.get_repository_def()
    sensors = {s.name: s for s in repository.sensor_defs}
    assert {"source_partitions_sensor", "source_changes_sensor", "garage_automation_sensor"} <= set(
        sensors
    )
    assert sensors["garage_automation_sensor"].default_status == dg.DefaultSensorStatus.RUNNING
    assert sensors["source_changes_sensor"].default_status == dg.DefaultSensorStatus.RUNNING
    [schedule] = repository.schedule_defs
    assert schedule.name == "incremental_ingest_schedule"
    assert schedule.cron_schedule == "0 * * * *"  # hourly unless the config says otherwise
    assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING
    checks = {key.name for key in repository.asset_graph.asset_check_keys}
    assert checks == {
        "last_ingest_run_completed",
        "no_chunk_without_document",
        "no_vector_without_chunk",
        "embedding_dimensions_match_registry",
        "every_potential_fact_has_a_vector",
    }
    assert repository.get_job("ingest_job").partitions_def == sources_partitions


def test_change_sensor_on_a_real_folder(isolated_env: Path) -> None:
    _config(isolated_env, "notes", "other")
    sensor = build_source_changes_sensor()
    resources = {"database": DatabaseResource()}
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("sources", ["notes", "other"])

        def tick(cursor: str | None):  # type: ignore[no-untyped-def]
            context = dg.build_sensor_context(instance=instance, cursor=cursor, resources=resources)
            return sensor(context)

        # First sight of both sources: one run each.
        first = tick(None)
        assert isinstance(first, dg.SensorResult)
        assert sorted(r.partition_key for r in first.run_requests or []) == ["notes", "other"]
        cursor = first.cursor

        # Nothing changed: skipped, with the cost in the reason.
        idle = tick(cursor)
        assert isinstance(idle, dg.SkipReason)
        assert "no source changed" in (idle.skip_message or "")

        # One file of one source edited: exactly one request, for that source.
        edited = isolated_env / "notes" / "a.md"
        edited.write_text(edited.read_text() + "\nOne more line.\n")
        changed = tick(cursor)
        assert isinstance(changed, dg.SensorResult)
        [request] = changed.run_requests or []
        assert request.partition_key == "notes"
        assert request.run_key and request.run_key.startswith("notes:")
        # The same change seen twice (a tick that failed before storing its cursor) gives the
        # same run key, which Dagster launches once.
        again = tick(cursor)
        assert isinstance(again, dg.SensorResult)
        assert [r.run_key for r in again.run_requests or []] == [request.run_key]
        # After the cursor advanced, the same state is no change at all.
        assert isinstance(tick(changed.cursor), dg.SkipReason)

        # A run of "notes" in progress: the change waits, and the cursor keeps it.
        create_run_for_test(
            instance, job_name="ingest_job", status=dg.DagsterRunStatus.STARTED,
            tags={"dagster/partition": "notes"},
        )  # fmt: skip
        (isolated_env / "notes" / "c.md").write_text("# New\n\nA new note.\n")
        waiting = tick(changed.cursor)
        assert isinstance(waiting, dg.SkipReason) and "notes" in (waiting.skip_message or "")


def test_schedule_tick_skips_sources_still_running(isolated_env: Path) -> None:
    _config(isolated_env, "notes", "other", "unregistered")
    schedule = build_incremental_schedule("15 * * * *")
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("sources", ["notes", "other"])
        create_run_for_test(
            instance, job_name="ingest_job", status=dg.DagsterRunStatus.STARTING,
            tags={"dagster/partition": "other"},
        )  # fmt: skip
        when = dt.datetime(2025, 3, 1, 10, 15, tzinfo=dt.UTC)
        context = dg.build_schedule_context(
            instance=instance,
            scheduled_execution_time=when,
            resources={"database": DatabaseResource()},
        )
        requests = schedule(context)
        assert isinstance(requests, list)
        assert [(r.partition_key, r.run_key) for r in requests] == [
            ("notes", f"notes:{when.isoformat()}")
        ]
        assert schedule.cron_schedule == "15 * * * *"


def _check_results(result: dg.ExecuteInProcessResult) -> dict[str, bool]:
    return {e.check_name: e.passed for e in result.get_asset_check_evaluations()}


def _materialize(database: DatabaseResource, instance: dg.DagsterInstance, **config: object):  # type: ignore[no-untyped-def]
    run_config = {"ops": {"ingest": {"config": config}}} if config else None
    return dg.materialize(
        [ingest, *ingest_checks],
        partition_key="notes",
        resources={"database": database},
        instance=instance,
        run_config=run_config,
    )


def _metadata(result: dg.ExecuteInProcessResult, key: str) -> dict[str, object]:
    [event] = [e for e in result.get_asset_materialization_events() if e.asset_key.path == [key]]
    return {k: v.value for k, v in event.materialization.metadata.items()}  # type: ignore[union-attr]


def test_checks_pass_on_an_ingested_source_and_fail_on_broken_invariants(
    migrated_db: str, tmp_path: Path
) -> None:
    config = _config(tmp_path, "notes")
    write_docx(tmp_path / "notes" / "c.docx", "Third", author="Ada Lovelace")
    database = DatabaseResource(config_file=str(config), database_url=migrated_db)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("sources", ["notes"])
        result = _materialize(database, instance)
        assert result.success
        assert _check_results(result) == {
            "last_ingest_run_completed": True,
            "no_chunk_without_document": True,
            "no_vector_without_chunk": True,
            "embedding_dimensions_match_registry": True,
        }
        documents = _metadata(result, "documents")
        assert documents["indexed"] == 3 and documents["source_documents"] == 3
        assert documents["source_root"] == str(tmp_path / "notes")
        assert _metadata(result, "chunks")["source_chunks"] >= 3  # type: ignore[operator]

        # Break every invariant the way keys cannot stop: triggers off (a replica's view, a
        # partial restore), and a table whose dimension disagrees with its registry entry.
        with psycopg.connect(migrated_db, autocommit=True) as conn:
            conn.execute("SET session_replication_role = replica")
            conn.execute(
                "INSERT INTO chunks (document_id, ord, text, text_sha256, start_offset,"
                " end_offset, chunker) VALUES (987654, 0, 'lost', 'x', 0, 4, 'recursive:1000/100')"
            )
            conn.execute(
                "INSERT INTO embedding_models (name, slug, provider, host, model_id, dimensions)"
                " VALUES ('tiny', 'tiny', 'llama_server', 'http://127.0.0.1:1', 'tiny', 4)"
            )
            conn.execute(
                "CREATE TABLE emb_tiny (chunk_id bigint PRIMARY KEY REFERENCES chunks (id)"
                " ON DELETE CASCADE, embedding vector(3) NOT NULL)"
            )
            conn.execute("INSERT INTO emb_tiny VALUES (123456789, '[1,2,3]')")
        # A partial run (--limit) is not a completed one.
        broken = _materialize(database, instance, limit=1)
        assert broken.success  # checks report; they do not fail the run
        assert _check_results(broken) == {
            "last_ingest_run_completed": False,
            "no_chunk_without_document": False,
            "no_vector_without_chunk": False,
            "embedding_dimensions_match_registry": False,
        }
        [dimension] = [
            e for e in broken.get_asset_check_evaluations()
            if e.check_name == "embedding_dimensions_match_registry"
        ]  # fmt: skip
        assert "vector(3), the registry says 4" in str(dimension.metadata["detail"].value)


def test_editing_one_file_re_extracts_only_that_file(migrated_db: str, tmp_path: Path) -> None:
    config = _config(tmp_path, "notes")
    database = DatabaseResource(config_file=str(config), database_url=migrated_db)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("sources", ["notes"])
        assert _metadata(_materialize(database, instance), "documents")["indexed"] == 2
        edited = tmp_path / "notes" / "b.md"
        edited.write_text(edited.read_text() + "\nA paragraph added later.\n")
        documents = _metadata(_materialize(database, instance), "documents")
        assert documents["indexed"] == 1 and documents["stat_skipped"] == 1
        assert documents["seen"] == 2


def test_downstream_assets_follow_chunks_eagerly(migrated_db: str, tmp_path: Path) -> None:
    config = _config(tmp_path, "notes")
    database = DatabaseResource(config_file=str(config), database_url=migrated_db)

    # The vectors asset as the definitions build it, for the default config's model.
    [model] = [m for m in configured_models(GarageConfig()) if m.is_default]
    assets = [ingest, embedding_asset(model)]
    emb_probe = f"emb_{model.slug}"
    conditions = {
        key.to_user_string(): spec.automation_condition
        for a in assets if isinstance(a, dg.AssetsDefinition)
        for key, spec in ((s.key, s) for s in a.specs)
    }  # fmt: skip
    assert conditions["documents"] is None and conditions[emb_probe] is not None
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("sources", ["notes"])
        inference = InferenceResource(egress=EgressGuardResource())
        definitions = dg.Definitions(
            assets=assets, resources={"database": database, "inference": inference}
        )
        before = dg.evaluate_automation_conditions(defs=definitions, instance=instance)
        assert before.total_requested == 0  # chunks missing: nothing to follow yet
        assert _materialize(database, instance).success
        after = dg.evaluate_automation_conditions(
            defs=definitions, instance=instance, cursor=before.cursor
        )
        requested = {
            (r.key.to_user_string(), partition)
            for r in after.results
            for partition in r.true_subset.expensively_compute_partition_keys()
        }
        assert requested == {(emb_probe, "notes")}
