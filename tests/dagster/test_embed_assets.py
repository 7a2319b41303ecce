"""One emb_<slug> asset per configured model, materialized with the real resources: the real
PostgreSQL and the real llama-server."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import psycopg
import pytest

from garage_assets.embeddings import embedding_assets
from garage_assets.ingest import ingest
from resources.database import DatabaseResource
from resources.inference import EgressGuardResource, InferenceResource
from tests.conftest import LlamaServers, llama_config
from tests.integration.ingest_helpers import write_markdown


def _metadata(result: dg.ExecuteInProcessResult) -> dict[str, dict[str, object]]:
    events = {}
    for event in result.get_asset_materialization_events():
        materialization = event.event_specific_data.materialization  # type: ignore[union-attr]
        events[materialization.asset_key.to_user_string()] = {
            key: value.value for key, value in materialization.metadata.items()
        }
    return events


def test_two_assets_per_model_with_the_default_models() -> None:
    from garage.config import GarageConfig

    assets = embedding_assets(GarageConfig())
    specs = {spec.key.to_user_string(): spec for a in assets for spec in a.specs}
    # The guide's two defaults, each with its chunk vectors and its fact vectors.
    assert set(specs) == {
        "emb_bge_m3",
        "emb_nomic_embed_text",
        "potential_fact_emb_bge_m3",
        "potential_fact_emb_nomic_embed_text",
    }
    for name, spec in specs.items():
        upstream = "potential_facts" if name.startswith("potential_fact_emb_") else "chunks"
        assert {dep.asset_key for dep in spec.deps} == {dg.AssetKey(upstream)}
        assert spec.partitions_def is not None
        assert spec.automation_condition is not None  # eager, after their upstream
    assert embedding_assets(None) == []


def test_materialize_ingest_then_embeddings(
    migrated_db: str, llama: LlamaServers, tmp_path: Path
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    write_markdown(notes / "a.md", "Harbour", paragraphs=6)
    write_markdown(notes / "b.md", "Breakwater", paragraphs=2)
    config = llama_config(
        llama, two_models=True, sources=[{"name": "notes", "roots": [str(notes)]}]
    )
    config_file = tmp_path / "garage.json"
    config_file.write_text(json.dumps(config.model_dump(exclude_none=True)))
    database = DatabaseResource(config_file=str(config_file), database_url=migrated_db)
    inference = InferenceResource(
        config_file=str(config_file), egress=EgressGuardResource(config_file=str(config_file))
    )
    assets = [ingest, *embedding_assets(config)]
    resources = {"database": database, "inference": inference}
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("sources", ["notes"])
        result = dg.materialize(
            assets, partition_key="notes", resources=resources, instance=instance
        )
        assert result.success
        events = _metadata(result)
        chunks = events["chunks"]["new"]
        for table in ("emb_all_minilm_l6_v2", "emb_smollm2_135m_embed"):
            assert events[table]["vectors_written"] == chunks
            assert events[table]["table"] == table
            assert events[table]["truncated"] == 0
            assert float(events[table]["chunks_per_second"]) > 0  # type: ignore[arg-type]
        assert events["emb_all_minilm_l6_v2"]["dimensions"] == 384
        again = _metadata(
            dg.materialize(assets, partition_key="notes", resources=resources, instance=instance)
        )
        assert again["emb_all_minilm_l6_v2"]["vectors_written"] == 0
    with psycopg.connect(migrated_db) as conn:
        count = conn.execute("SELECT count(*) FROM emb_smollm2_135m_embed").fetchone()
    assert count is not None and count[0] == chunks


def test_unknown_partition_fails_clearly(
    migrated_db: str, llama: LlamaServers, tmp_path: Path
) -> None:
    config = llama_config(llama)
    config_file = tmp_path / "garage.json"
    config_file.write_text(json.dumps(config.model_dump(exclude_none=True)))
    resources = {
        "database": DatabaseResource(config_file=str(config_file), database_url=migrated_db),
        "inference": InferenceResource(
            config_file=str(config_file), egress=EgressGuardResource(config_file=str(config_file))
        ),
    }
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("sources", ["gone"])
        with pytest.raises(dg.Failure, match="no source named 'gone'"):
            dg.materialize(
                embedding_assets(config),
                partition_key="gone",
                resources=resources,
                instance=instance,
            )
