"""distilled_facts and graph: in the definitions (unpartitioned, after every potential_facts
partition and the default model's vectors), and materialized by the `dagster` CLI with counts
in their metadata."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import psycopg

from garage_assets.definitions import defs
from tests.conftest import LlamaServers
from tests.integration.cluster_helpers import build_corpus

ROOT = Path(__file__).resolve().parents[2]


def test_distilled_facts_and_graph_are_defined() -> None:
    graph = defs.resolve_asset_graph()
    distilled = graph.get(dg.AssetKey("distilled_facts"))
    assert dg.AssetKey("potential_facts") in distilled.parent_keys
    assert distilled.partitions_def is None
    assert graph.get(dg.AssetKey("graph")).parent_keys == {dg.AssetKey("distilled_facts")}


def test_materialize_distilled_facts_and_graph_from_the_dagster_cli(
    migrated_db: str, llama: LlamaServers, tmp_path: Path
) -> None:
    folder = tmp_path / "mixed"
    config = build_corpus(migrated_db, llama, folder)
    raw = config.model_dump(mode="json", exclude_defaults=True, by_alias=True)
    raw["sources"] = [{"name": "mixed", "roots": [str(folder)]}]
    raw["schedule"] = {"enabled": False, "watch": False}
    path = tmp_path / "garage.json"
    path.write_text(json.dumps(raw))
    home = tmp_path / "dagster"
    home.mkdir()
    env = dict(
        os.environ,
        GARAGE_CONFIG=str(path),
        GARAGE_DATABASE_URL=migrated_db,
        GARAGE_DATA_DIR=str(tmp_path / "data"),
        DAGSTER_HOME=str(home),
    )
    run_config = json.dumps({"ops": {"distilled_facts": {"config": {"ask_model": False}}}})
    for selection, extra in (("distilled_facts", ["--config-json", run_config]), ("graph", [])):
        result = subprocess.run(
            [sys.executable, "-m", "dagster", "asset", "materialize", "-m",
             "garage_assets.definitions", "--select", selection, *extra],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr[-3000:]
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
