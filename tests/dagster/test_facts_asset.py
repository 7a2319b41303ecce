"""The potential_facts asset: in the definitions, off the automation sensor unless
facts.automatic, and materialized for one source partition by the `dagster` CLI."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import psycopg

from garage.config import GarageConfig
from garage_assets.definitions import defs
from garage_assets.facts import build_potential_facts
from garage_assets.partitions import instance_at, register_source
from tests.conftest import LlamaServers
from tests.dagster.helpers import materialize, one_source_env
from tests.integration.facts_helpers import facts_config, write_folder


def test_potential_facts_is_defined_and_manual_by_default() -> None:
    graph = defs.resolve_asset_graph()
    key = dg.AssetKey("potential_facts")
    assert key in graph.get_all_asset_keys()
    assert graph.get(key).parent_keys == {dg.AssetKey("documents")}
    manual = build_potential_facts(GarageConfig()).specs_by_key[key]
    assert manual.automation_condition is None
    assert build_potential_facts(None).specs_by_key[key].automation_condition is None
    automatic = GarageConfig.model_validate({"facts": {"automatic": True}})
    eager = build_potential_facts(automatic).specs_by_key[key].automation_condition
    assert eager is not None
    assert "potential_facts_job" in {job.name for job in defs.resolve_all_job_defs()}


def test_materialize_one_partition_from_the_dagster_cli(
    migrated_db: str, llama: LlamaServers, tmp_path: Path
) -> None:
    folder = write_folder(tmp_path / "mixed")
    config = facts_config(llama, folder, migrated_db)
    raw = config.model_dump(mode="json", exclude_defaults=True)
    env, home = one_source_env(tmp_path, raw, "mixed", folder, migrated_db)
    with instance_at(home) as instance:
        register_source(instance, "mixed")
    for selection in ("documents,chunks", "potential_facts"):
        materialize(env, "--select", selection, "--partition", "mixed")
    with dg.DagsterInstance.from_config(str(home)) as instance:
        event = instance.get_latest_materialization_event(dg.AssetKey("potential_facts"))
        assert event is not None and event.asset_materialization is not None
        assert event.asset_materialization.partition == "mixed"
        metadata = {k: v.value for k, v in event.asset_materialization.metadata.items()}
    assert metadata["documents_read"] == 3
    assert metadata["prompts"] == "metadata, default"
    with psycopg.connect(migrated_db) as conn:
        stored = conn.execute("SELECT count(*) FROM facts").fetchone()
    assert stored is not None and metadata["facts_stored"] == stored[0] > 0
    for name in ("dropped_ungrounded", "prompts_run", "seconds", "chars_per_second"):
        assert name in metadata
