"""potential_fact_emb_<slug>: the potential facts' vectors as an asset of their own, after
potential_facts, and the guard on distilled_facts that no fact is left out of clustering for
want of a vector. Materialized in process with the real resources: the real PostgreSQL and the
real llama-server (MiniLM embeds; the facts are the mail's header facts, read with no model)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import psycopg
import pytest

from garage_assets.checks import every_potential_fact_has_a_vector
from garage_assets.distilled_facts import build_distilled_facts
from garage_assets.embeddings import embedding_assets
from garage_assets.facts import build_potential_facts
from garage_assets.graph import graph
from garage_assets.ingest import ingest
from resources.database import DatabaseResource
from resources.inference import EgressGuardResource, InferenceResource
from tests.conftest import LlamaServers
from tests.integration.facts_helpers import facts_config, write_folder

CONTENT = "emb_all_minilm_l6_v2"
FACTS = "potential_fact_emb_all_minilm_l6_v2"
# Header facts only: no chat model in the loop, and a known, nonzero number of facts.
METADATA_ONLY = {"ops": {"potential_facts": {"config": {"prompts": ["metadata"]}}}}


@dataclass
class Pipeline:
    """The fact assets over one source, "mixed", against a test database."""

    url: str
    assets: list[Any]
    resources: dict[str, Any]
    instance: dg.DagsterInstance

    def materialize(self, *keys: str, run_config: Any = None) -> dg.ExecuteInProcessResult:
        return dg.materialize(
            self.assets,
            selection=list(keys),
            partition_key="mixed",
            resources=self.resources,
            instance=self.instance,
            run_config=run_config,
        )

    def distil(self, **config: object) -> dg.ExecuteInProcessResult:
        run_config = {"ops": {"distilled_facts": {"config": {"ask_model": False, **config}}}}
        return dg.materialize(
            self.assets,
            selection=dg.AssetSelection.assets("distilled_facts").without_checks(),
            resources=self.resources,
            instance=self.instance,
            run_config=run_config,
            raise_on_error=False,
        )

    def check(self) -> dg.AssetCheckEvaluation:
        result = dg.materialize(
            self.assets,
            selection=dg.AssetSelection.checks(every_potential_fact_has_a_vector),
            resources=self.resources,
            instance=self.instance,
            raise_on_error=False,
        )
        [evaluation] = result.get_asset_check_evaluations()
        return evaluation

    def count(self, query: str) -> int:
        with psycopg.connect(self.url) as conn:
            row = conn.execute(query).fetchone()
        assert row is not None
        return int(row[0])


@pytest.fixture
def pipeline(migrated_db: str, llama: LlamaServers, tmp_path: Path) -> Any:
    folder = write_folder(tmp_path / "mixed")
    config = facts_config(llama, folder, migrated_db)
    config_file = tmp_path / "garage.json"
    config_file.write_text(json.dumps(config.model_dump(mode="json", exclude_none=True)))
    resources = {
        "database": DatabaseResource(config_file=str(config_file), database_url=migrated_db),
        "inference": InferenceResource(
            config_file=str(config_file), egress=EgressGuardResource(config_file=str(config_file))
        ),
    }
    assets = [
        ingest,
        *embedding_assets(config),
        build_potential_facts(config),
        build_distilled_facts(config),
        graph,
        every_potential_fact_has_a_vector,
    ]
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("sources", ["mixed"])
        yield Pipeline(migrated_db, assets, resources, instance)


def _metadata(result: dg.ExecuteInProcessResult, key: str) -> dict[str, Any]:
    [event] = [
        e for e in result.get_asset_materialization_events() if e.asset_key == dg.AssetKey(key)
    ]
    return {k: v.value for k, v in event.materialization.metadata.items()}  # type: ignore[union-attr]


def test_potential_facts_then_their_vectors_give_every_fact_a_vector(pipeline: Pipeline) -> None:
    content = pipeline.materialize("documents", "chunks", CONTENT)
    chunks = _metadata(content, "chunks")["source_chunks"]
    assert _metadata(content, CONTENT)["vectors_written"] == chunks
    pipeline.materialize("potential_facts", run_config=METADATA_ONLY)
    facts = pipeline.count("SELECT count(*) FROM facts")
    assert facts > 0
    # The content run came first and embedded no fact: that is the fact vectors' job.
    assert pipeline.count(f"SELECT count(*) FROM {FACTS}") == 0

    result = pipeline.materialize(FACTS)
    written = _metadata(result, FACTS)
    assert written["vectors_written"] == written["pending_at_start"] == facts
    assert written["table"] == FACTS
    with_vector = f"SELECT count(*) FROM facts f JOIN {FACTS} p ON p.fact_id = f.id"
    assert pipeline.count(with_vector) == facts
    # The content vectors are still one per content chunk: no fact chunk went in there.
    assert pipeline.count(f"SELECT count(*) FROM {CONTENT}") == chunks
    assert pipeline.check().passed
    # A second run has nothing left to embed.
    assert _metadata(pipeline.materialize(FACTS), FACTS)["vectors_written"] == 0


def test_distilled_facts_refuses_and_the_check_fails_while_a_fact_lacks_a_vector(
    pipeline: Pipeline,
) -> None:
    pipeline.materialize("documents", "chunks", CONTENT)
    pipeline.materialize("potential_facts", run_config=METADATA_ONLY)
    pipeline.materialize(FACTS)
    facts = pipeline.count("SELECT count(*) FROM facts")
    # One fact loses its vector (as a fact stored after the last fact-vector run would lack one).
    with psycopg.connect(pipeline.url, autocommit=True) as conn:
        conn.execute(f"DELETE FROM {FACTS} WHERE fact_id = (SELECT min(id) FROM facts)")

    check = pipeline.check()
    assert not check.passed
    assert check.metadata["count"].value == 1
    assert check.description is not None
    assert f"1 potential fact(s) have no vector in {FACTS}" in check.description
    assert "mixed: 1" in check.description

    refused = pipeline.distil()
    assert not refused.success
    [failure] = [e for e in refused.all_events if e.is_step_failure]
    message = failure.step_failure_data.error.message  # type: ignore[union-attr]
    assert "1 potential fact(s) have no vector" in message
    assert pipeline.count("SELECT count(*) FROM distilled_facts") == 0

    # Asked to, it distils the facts that have a vector, and only those.
    partial = pipeline.distil(allow_facts_without_vectors=True)
    assert partial.success
    assert _metadata(partial, "distilled_facts")["facts"] == facts - 1

    # The fact vectors' asset gives the fact its vector back, and the guard is satisfied.
    assert _metadata(pipeline.materialize(FACTS), FACTS)["vectors_written"] == 1
    assert pipeline.check().passed
    whole = pipeline.distil()
    assert whole.success
    assert _metadata(whole, "distilled_facts")["facts"] == facts


# A terminal's writer of the source "mixed": holds its lock for a few seconds, in a process of
# its own (locks are re-entrant within one process, so a thread would not make the run wait).
HOLDER = """
import sys, time, psycopg
from garage.locks import writing
with psycopg.connect(sys.argv[1], autocommit=True) as conn, writing(conn, "mixed", "embed"):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def test_a_fact_vector_run_behind_a_terminal_writer_waits_and_says_who(
    pipeline: Pipeline,
) -> None:
    pipeline.materialize("documents", "chunks")
    pipeline.materialize("potential_facts", run_config=METADATA_ONLY)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, pipeline.url, "4"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        result = pipeline.materialize(FACTS)
        waited = time.monotonic() - started
    finally:
        holder.wait(timeout=60)
    assert _metadata(result, FACTS)["vectors_written"] > 0
    assert waited > 1  # it waited for the holder to finish, not embedded beside it
    said = [e.user_message for e in pipeline.instance.all_logs(result.run_id)]
    assert any(
        f"waiting for source 'mixed': it is being written by `garage embed` (pid {holder.pid}"
        in message
        for message in said
    ), said
