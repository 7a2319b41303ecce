"""Distilled facts on real PostgreSQL with real MiniLM vectors: restatements, anchors, the
guard, full and incremental runs, the vectors under a second model, distillation by the real
chat model, and the egress rule. The facts are stored at chosen sentences of real notes and
mails, so what belongs together is known; the model's wording is never asserted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector

from garage.clusters import ClusterError, cluster_facts
from garage.clusters.guard import compatible, read_claim
from garage.config import GarageConfig
from garage.inference import EgressGuard, InferenceClient, LocalChatModel
from tests.conftest import LlamaServers
from tests.integration.cluster_helpers import build_corpus, embed_all, store_claims

FE = "fact_emb_all_minilm_l6_v2"
PFE = "potential_fact_emb_all_minilm_l6_v2"


def _cluster(url: str, config: GarageConfig, **options: Any):  # type: ignore[no-untyped-def]
    with psycopg.connect(url, autocommit=True) as conn:
        return cluster_facts(conn, config, **options)


def _rows(url: str, query: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(query, params).fetchall()


def _group_of(url: str, text: str) -> int:
    [(group,)] = _rows(url, "SELECT distilled_fact_id FROM facts WHERE text = %s", text)
    assert group is not None, text
    return int(group)


def _groups(url: str) -> dict[int, set[int]]:
    groups: dict[int, set[int]] = {}
    for fact_id, group in _rows(
        url, "SELECT id, distilled_fact_id FROM facts WHERE restates_fact_id IS NULL"
    ):
        if group is not None:
            groups.setdefault(group, set()).add(fact_id)
    return groups


def _assert_guard_held(url: str) -> None:
    """No group (metadata aside, linked by key) and no restatement joins facts whose claims
    disagree."""
    rows = _rows(
        url,
        "SELECT f.distilled_fact_id, f.text FROM facts f JOIN distilled_facts g"
        " ON g.id = f.distilled_fact_id WHERE f.prompt_name <> 'metadata'"
        " AND f.restates_fact_id IS NULL",
    )
    claims: dict[int, set[Any]] = {}
    for group, text in rows:
        claims.setdefault(group, set()).add(read_claim(text))
    for group, found in claims.items():
        assert len(found) == 1, (group, found)
    for text, rep_text in _rows(
        url,
        "SELECT f.text, r.text FROM facts f JOIN facts r ON r.id = f.restates_fact_id",
    ):
        assert compatible(read_claim(text), read_claim(rep_text)), (text, rep_text)


@pytest.fixture
def corpus(migrated_db: str, llama: LlamaServers, tmp_path: Path) -> tuple[str, Any, Path]:
    folder = tmp_path / "mixed"
    config = build_corpus(migrated_db, llama, folder)
    return migrated_db, config, folder


def test_full_run_restatements_anchors_groups_and_the_guard(
    migrated_db: str, llama: LlamaServers, tmp_path: Path
) -> None:
    from tests.conftest import llama_config

    folder = tmp_path / "mixed"
    two = llama_config(llama, two_models=True)
    config = build_corpus(migrated_db, llama, folder, embedding=two.embedding.model_dump())
    url = migrated_db
    report = _cluster(url, config)
    assert report.mode == "full" and report.model == "all-minilm-l6-v2"
    facts_with_vectors = _rows(url, f"SELECT count(*) FROM {PFE}")[0][0]
    assert report.facts == facts_with_vectors == _rows(url, "SELECT count(*) FROM facts")[0][0]

    # Level 1: within lisbon.md the shorter statement restates the longer one.
    [(restates, longer)] = _rows(
        url,
        "SELECT f.restates_fact_id, r.text FROM facts f JOIN facts r ON r.id = f.restates_fact_id"
        " WHERE f.text = 'The Lisbon office opens on 3 March 2025.'",
    )
    assert longer == "The Lisbon office will open on 3 March 2025."
    assert report.restatements == 1
    # ...and links to its representative's group, which another document's wording joined.
    lisbon = _group_of(url, "The Lisbon office will open on 3 March 2025.")
    assert _group_of(url, "The Lisbon office opens on 3 March 2025.") == lisbon
    assert _group_of(url, "Our Lisbon office opens its doors on 3 March 2025.") == lisbon
    assert _group_of(url, "Tomatoes need six hours of sun each day.") == _group_of(
        url, "Tomato plants need six hours of sunlight every day."
    )
    # The guard: close in meaning (MiniLM puts 42/45 at 0.96), never grouped.
    assert _group_of(url, "Acme has 42 employees.") != _group_of(url, "Acme has 45 employees.")
    assert _group_of(url, "The meeting is on Tuesday.") != _group_of(
        url, "The meeting is not on Tuesday."
    )
    assert _group_of(url, "The rain barrel holds two hundred litres.") != _group_of(
        url, "The rain barrel does not hold two hundred litres."
    )
    _assert_guard_held(url)

    # Anchors: one per distinct key, every metadata fact linked to its key's anchor.
    keys = {row[0] for row in _rows(url, "SELECT DISTINCT key FROM facts WHERE key IS NOT NULL")}
    anchors = dict(_rows(url, "SELECT anchor_key, id FROM distilled_facts WHERE status = 'anchor'"))
    assert set(anchors) == keys and report.anchors == len(keys)
    unlinked = _rows(
        url,
        "SELECT count(*) FROM facts f JOIN distilled_facts g ON g.id = f.distilled_fact_id"
        " WHERE f.key IS NOT NULL AND g.anchor_key IS DISTINCT FROM f.key",
    )
    assert unlinked == [(0,)]
    # The extracted person quoting Alice's header joined her anchor, with no model asked.
    [(alice_key,)] = _rows(
        url, "SELECT DISTINCT key FROM facts WHERE key LIKE 'author:%%' AND text LIKE 'Alice%%'"
    )
    alice = _rows(
        url,
        "SELECT fact_class, distilled_fact_id FROM facts"
        " WHERE text = 'Alice Martin <alice@example.net>'",
    )
    assert {c for c, _ in alice} == {"sender", "recipient", "person"}
    assert {g for _, g in alice} == {anchors[alice_key]}
    assert report.anchored == 1
    # An anchor's centroid and seed are its first fact's vector.
    with psycopg.connect(url) as conn:
        register_vector(conn)
        for key, group in anchors.items():
            first = conn.execute(
                f"SELECT p.embedding FROM facts f JOIN {PFE} p ON p.fact_id = f.id"
                " WHERE f.key = %s ORDER BY f.id LIMIT 1",
                (key,),
            ).fetchone()[0]
            centroid, seed = conn.execute(
                f"SELECT embedding, seed FROM {FE} WHERE distilled_fact_id = %s", (group,)
            ).fetchone()
            expected = first.to_numpy() / np.linalg.norm(first.to_numpy())
            assert np.allclose(centroid.to_numpy(), expected, atol=1e-5)
            assert np.allclose(seed.to_numpy(), expected, atol=1e-5)

    # Every fact is linked; nodes count the representatives; one vector per distilled fact.
    assert _rows(url, "SELECT count(*) FROM facts WHERE distilled_fact_id IS NULL") == [(0,)]
    mismatched = _rows(
        url,
        "SELECT count(*) FROM distilled_facts g WHERE nodes <> (SELECT count(*) FROM facts f"
        " WHERE f.distilled_fact_id = g.id AND f.restates_fact_id IS NULL)",
    )
    assert mismatched == [(0,)]
    distilled = _rows(url, "SELECT count(*) FROM distilled_facts")[0][0]
    assert distilled == report.distilled_facts
    assert _rows(url, f"SELECT count(*) FROM {FE}") == [(distilled,)]

    # Under the second model a distilled fact's vector is the normalized mean of its nodes'.
    other, other_pfe = "fact_emb_smollm2_135m_embed", "potential_fact_emb_smollm2_135m_embed"
    assert report.other_model_vectors == distilled
    with psycopg.connect(url) as conn:
        register_vector(conn)
        vectors = conn.execute(
            f"SELECT p.embedding FROM facts f JOIN {other_pfe} p ON p.fact_id = f.id"
            " WHERE f.distilled_fact_id = %s AND f.restates_fact_id IS NULL",
            (lisbon,),
        ).fetchall()
        mean = np.mean([v[0].to_numpy() for v in vectors], axis=0)
        stored = conn.execute(
            f"SELECT embedding, seed FROM {other} WHERE distilled_fact_id = %s", (lisbon,)
        ).fetchone()
    assert len(vectors) == 2
    assert np.allclose(stored[0].to_numpy(), mean / np.linalg.norm(mean), atol=1e-4)
    assert stored[1] is None
    # The embedding backfill writes them too (here: after they were lost), embedding nothing.
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DELETE FROM {other}")
    embed_all(url, config)
    assert _rows(url, f"SELECT count(*) FROM {other}") == [(distilled,)]
    assert _rows(url, f"SELECT count(*) FROM {FE}") == [(distilled,)]  # centroids untouched


def test_incremental_attach_recentre_and_never_merge(corpus: tuple[str, Any, Path]) -> None:
    url, config, folder = corpus
    first = _cluster(url, config)
    assert first.mode == "full"
    before = _groups(url)
    anchor_vectors = _rows(
        url,
        f"SELECT e.distilled_fact_id, e.embedding::text FROM {FE} e"
        " JOIN distilled_facts g ON g.id = e.distilled_fact_id WHERE g.anchor_key IS NOT NULL",
    )

    # Nothing new: an incremental run changes no link and keeps every row.
    again = _cluster(url, config)
    assert again.mode == "incremental" and again.links_changed == 0
    assert again.groups_new == 0 and again.groups_deleted == 0
    assert _groups(url) == before

    # A new note: one more wording of the Lisbon claim, one of Alice, and a claim of its own.
    lisbon = _group_of(url, "The Lisbon office will open on 3 March 2025.")
    (folder / "later.md").write_text(
        "The Lisbon office is opening on 3 March 2025.\n\n"
        "Alice Martin <alice@example.net>\n\nThe boiler needs a service every autumn.\n"
    )
    from garage.ingest import ingest_source

    with psycopg.connect(url, autocommit=True) as conn:
        ingest_source(conn, config, config.source("mixed"))
    store_claims(
        url,
        {
            "later.md": [
                "The Lisbon office is opening on 3 March 2025.",
                "person|Alice Martin <alice@example.net>",
                "The boiler needs a service every autumn.",
            ]
        },
    )
    embed_all(url, config)
    third = _cluster(url, config)
    assert third.mode == "incremental"
    assert third.documents_compared == 1 and third.new_representatives == 3
    assert _group_of(url, "The Lisbon office is opening on 3 March 2025.") == lisbon
    assert third.attached == 1 and third.anchored == 1 and third.stood_alone == 1
    after = _groups(url)
    # No merge: every earlier group's members are still together, in the same row, and no
    # two earlier groups share one.
    for group, members in before.items():
        assert members <= after[group]
    assert len(after) == len(before) + 1
    _assert_guard_held(url)
    # Anchors did not move.
    assert (
        _rows(
            url,
            f"SELECT e.distilled_fact_id, e.embedding::text FROM {FE} e"
            " JOIN distilled_facts g ON g.id = e.distilled_fact_id WHERE g.anchor_key IS NOT NULL",
        )
        == anchor_vectors
    )

    # garden.md goes: the tomato group lost a node and is re-centred on the one left.
    tomato = _group_of(url, "Tomatoes need six hours of sun each day.")
    (folder / "garden.md").unlink()
    with psycopg.connect(url, autocommit=True) as conn:
        ingest_source(conn, config, config.source("mixed"), force=True)
    fourth = _cluster(url, config)
    assert fourth.groups_recentred >= 1
    [(nodes, status, centroid_ok)] = _rows(
        url,
        f"SELECT g.nodes, g.status, (e.embedding <=> p.embedding) < 1e-5"
        f" FROM distilled_facts g JOIN {FE} e ON e.distilled_fact_id = g.id"
        f" JOIN facts f ON f.distilled_fact_id = g.id JOIN {PFE} p ON p.fact_id = f.id"
        " WHERE g.id = %s",
        tomato,
    )
    assert (nodes, status, centroid_ok) == (1, "single", True)
    # Groups of garden.md's own claims had no node left and are gone.
    assert fourth.groups_deleted == 2
    assert _rows(url, "SELECT count(*) FROM distilled_facts WHERE nodes = 0") == [(0,)]


def test_a_full_run_keeps_the_rows_of_groups_found_again(corpus: tuple[str, Any, Path]) -> None:
    url, config, _ = corpus
    _cluster(url, config)
    before = _rows(url, "SELECT id, members_sha256 FROM distilled_facts ORDER BY id")
    again = _cluster(url, config, full=True)
    assert again.mode == "full" and again.groups_new == 0 and again.groups_deleted == 0
    assert _rows(url, "SELECT id, members_sha256 FROM distilled_facts ORDER BY id") == before
    # A changed grouping setting makes the next run full by itself.
    facts = config.facts.model_copy(update={"cluster_threshold": 0.8})
    changed = _cluster(url, config.model_copy(update={"facts": facts}))
    assert changed.mode == "full"


def test_a_person_named_by_an_anchors_address_or_name_joins_it(
    corpus: tuple[str, Any, Path],
) -> None:
    """MiniLM puts "alice@example.net" and "Jane Doe" below the similarity threshold of the
    headers "Alice Martin <alice@example.net>" and "Jane Doe <jane@example.org>"; the address
    and the full name are evidence enough."""
    url, config, _ = corpus
    store_claims(
        url,
        {"tickets.eml": ["person|alice@example.net"], "reply.eml": ["person|Jane Doe"]},
        prompt="people",
    )
    embed_all(url, config)
    report = _cluster(url, config)
    anchors = dict(_rows(url, "SELECT anchor_key, id FROM distilled_facts WHERE status = 'anchor'"))
    keys = dict(_rows(url, "SELECT text, key FROM facts WHERE prompt_name = 'metadata'"))
    alice = anchors[keys["Alice Martin <alice@example.net>"]]
    jane = anchors[keys["Jane Doe <jane@example.org>"]]
    by_text = dict(
        _rows(url, "SELECT text, distilled_fact_id FROM facts WHERE prompt_name = 'people'")
    )
    assert by_text == {"alice@example.net": alice, "Jane Doe": jane}
    assert report.anchored == 3  # and minutes.md's quoted header, as before
    _assert_guard_held(url)


def test_loose_thresholds_still_never_break_the_guard(corpus: tuple[str, Any, Path]) -> None:
    """With every threshold at 0.3 similarity alone would merge most of the corpus; only the
    guard keeps the real restatements that disagree apart."""
    url, config, _ = corpus
    loose = config.facts.model_copy(
        update={"cluster_restate_threshold": 0.3, "cluster_seed_threshold": 0.3,
                "cluster_threshold": 0.3, "cluster_max_drift": 0.6}
    )  # fmt: skip
    report = _cluster(url, config.model_copy(update={"facts": loose}))
    assert report.mode == "full"
    # Pairs at 0.85-0.96 that disagree, far past every threshold, stay apart.
    for a, b in (
        ("Acme has 42 employees.", "Acme has 45 employees."),
        ("The meeting is on Tuesday.", "The meeting is not on Tuesday."),
        ("The rain barrel holds two hundred litres.",
         "The rain barrel does not hold two hundred litres."),
    ):  # fmt: skip
        assert _group_of(url, a) != _group_of(url, b)
    _assert_guard_held(url)


def test_binary_quantized_default_model_cannot_cluster(
    migrated_db: str, llama: LlamaServers
) -> None:
    from tests.conftest import llama_config

    config = llama_config(llama)
    models = [m.model_copy(update={"binary_quantization": True}) for m in config.embedding.models]
    embedding = config.embedding.model_copy(update={"models": models})
    database = config.database.model_copy(update={"url": migrated_db})
    config = config.model_copy(update={"embedding": embedding, "database": database})
    with pytest.raises(ClusterError, match="binary-quantized"):
        _cluster(migrated_db, config)
    assert _rows(migrated_db, "SELECT count(*) FROM cluster_runs") == [(0,)]


def test_distillation_by_the_real_chat_model(
    migrated_db: str, llama: LlamaServers, tmp_path: Path
) -> None:
    """Tight similarity 0.999: every group of several goes to SmolLM2, which confirms it with a
    sentence or dissolves it. What it says is its own; that nothing stays pending is ours."""
    config = build_corpus(
        migrated_db, llama, tmp_path / "mixed", facts={"cluster_tight_similarity": 0.999}
    )
    several = 0
    client = InferenceClient(EgressGuard.from_config(config))
    with client:
        report = _cluster(migrated_db, config, chat=LocalChatModel.from_config(config, client))
    several = report.confirmed + report.dissolved
    assert several >= 2 and report.model_requests == several
    assert report.pending == 0 and report.tight == 0
    for status, statement, nodes in _rows(
        migrated_db,
        "SELECT status, statement, nodes FROM distilled_facts WHERE status <> 'anchor'",
    ):
        if status == "confirmed":
            assert statement and nodes > 1
        else:
            assert status == "single" and statement is None and nodes == 1
    _assert_guard_held(migrated_db)


def test_a_group_holding_mail_never_reaches_a_remote_model(
    migrated_db: str, llama: LlamaServers, tmp_path: Path
) -> None:
    config = build_corpus(
        migrated_db,
        llama,
        tmp_path / "mixed",
        mail_claims=True,
        facts={"cluster_tight_similarity": 0.999},
    )
    remote = "http://10.11.12.13:8080"
    inference = config.inference.model_copy(update={"llama_host": remote})
    remote_config = config.model_copy(update={"inference": inference})
    seen: list[str] = []

    def fake_remote_model(request: httpx.Request) -> httpx.Response:
        # A fake stands in for a model host off this machine: it records what reached it and
        # answers "not the same claim".
        seen.append(request.content.decode())
        reply = '{"same": false, "statement": ""}'
        return httpx.Response(
            200, json={"choices": [{"message": {"role": "assistant", "content": reply}}]}
        )

    client = InferenceClient(
        EgressGuard.from_config(remote_config),
        transport=httpx.MockTransport(fake_remote_model),
        retries=0,
    )
    with client:
        chat = LocalChatModel.from_config(remote_config, client)
        report = _cluster(migrated_db, remote_config, chat=chat)
    assert report.withheld_egress == 1
    assert not any("night train" in body for body in seen)
    # The mail's group was not kept: each of its facts stands alone.
    for text in (
        "The night train leaves Madrid at ten.",
        "The night train departs from Madrid at ten.",
    ):
        [(nodes, status)] = _rows(
            migrated_db,
            "SELECT g.nodes, g.status FROM facts f JOIN distilled_facts g"
            " ON g.id = f.distilled_fact_id WHERE f.text = %s",
            text,
        )
        assert (nodes, status) == (1, "single")
