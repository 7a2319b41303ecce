"""distilled_facts and graph: in the definitions (distilled_facts unpartitioned, after every
potential_facts partition and the clustering model's fact and chunk vectors; graph after all it
projects), and materialized by the `dagster` CLI with counts in their metadata."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import psycopg

from garage.config import GarageConfig
from garage.embed.registry import configured_models
from garage_assets import definitions
from garage_assets.definitions import build_definitions, defs
from tests.conftest import LlamaServers
from tests.dagster.helpers import materialize, one_source_env
from tests.integration.cluster_helpers import build_corpus


def _keys(*names: str) -> set[dg.AssetKey]:
    return {dg.AssetKey(name) for name in names}


def test_distilled_facts_and_graph_are_defined() -> None:
    # The definitions as loaded, and as built from the default config (bge-m3 the default
    # model), whatever config the machine running the tests has.
    loaded = definitions._garage_config() or GarageConfig()
    [default] = [m for m in configured_models(loaded) if m.is_default]
    # A live instance while the new definitions resolve: Dagster reads its state storage then,
    # and an earlier test's instance is closed.
    with dg.instance_for_test():
        built = build_definitions(GarageConfig()).resolve_asset_graph()
    for graph, model in ((defs.resolve_asset_graph(), default.slug), (built, "bge_m3")):
        distilled = graph.get(dg.AssetKey("distilled_facts"))
        assert distilled.parent_keys == _keys(
            "potential_facts", f"potential_fact_emb_{model}", f"emb_{model}"
        )
        assert distilled.partitions_def is None
        assert graph.get(dg.AssetKey("graph")).parent_keys == _keys(
            "documents", "chunks", "potential_facts", "distilled_facts"
        )
        fact_vectors = graph.get(dg.AssetKey(f"potential_fact_emb_{model}"))
        assert fact_vectors.parent_keys == _keys("potential_facts")
        assert fact_vectors.partitions_def is not None


def test_materialize_distilled_facts_and_graph_from_the_dagster_cli(
    migrated_db: str, llama: LlamaServers, tmp_path: Path
) -> None:
    folder = tmp_path / "mixed"
    config = build_corpus(migrated_db, llama, folder)
    raw = config.model_dump(mode="json", exclude_defaults=True, by_alias=True)
    env, home = one_source_env(tmp_path, raw, "mixed", folder, migrated_db)
    run_config = json.dumps({"ops": {"distilled_facts": {"config": {"ask_model": False}}}})
    for selection, extra in (("distilled_facts", ["--config-json", run_config]), ("graph", [])):
        materialize(env, "--select", selection, *extra)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        metadata = {}
        for key in ("distilled_facts", "graph"):
            event = instance.get_latest_materialization_event(dg.AssetKey(key))
            assert event is not None and event.asset_materialization is not None
            metadata[key] = {k: v.value for k, v in event.asset_materialization.metadata.items()}
    with psycopg.connect(migrated_db) as conn:
        distilled = conn.execute("SELECT count(*) FROM distilled_facts").fetchone()
        facts = conn.execute("SELECT count(*) FROM facts").fetchone()
    assert distilled is not None and facts is not None
    assert metadata["distilled_facts"]["distilled_facts"] == distilled[0] > 0
    assert metadata["distilled_facts"]["facts"] == facts[0]
    assert metadata["distilled_facts"]["mode"] == "full"
    assert metadata["graph"]["vertices_Fact"] == distilled[0]
    assert metadata["graph"]["edges_STATES"] == facts[0]
