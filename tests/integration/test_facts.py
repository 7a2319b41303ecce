"""Potential facts end to end, on real PostgreSQL and the real llama-servers (SmolLM2 under a
JSON schema for extraction, MiniLM for vectors). Assertions are about structure — spans,
counts, keys, cascades — never about what a 135M model chose to say."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from click.testing import CliRunner

from garage.cli import cli
from garage.embed import embed
from garage.facts import enrich_facts
from garage.facts.language_model import GarageLanguageModel, extraction_schema
from garage.inference import EgressGuard, EgressRefused, InferenceClient, LocalChatModel
from garage.ingest import ingest_source
from garage.search import SearchQuery, search
from tests.conftest import LlamaServers
from tests.integration.facts_helpers import NOTES, facts_config, write_folder

ENTITIES = {
    "name": "entities",
    "description": (
        "Extract every named person, place, organization and event mentioned in this text. "
        "Quote each mention exactly as it appears; do not paraphrase. For each, give "
        "attributes: name (the full canonical name if the text states it, else the mention), "
        "and kind."
    ),
    "examples": [
        {
            "text": (
                "On 12 May 2019 Jane Doe of Acme Corp presented the Q2 roadmap at the Austin "
                "Convention Center."
            ),
            "extractions": [
                {"class": "event", "text": "presented the Q2 roadmap",
                 "attributes": {"name": "Q2 roadmap presentation", "kind": "presentation"}},
                {"class": "person", "text": "Jane Doe",
                 "attributes": {"name": "Jane Doe", "kind": "person"}},
                {"class": "organization", "text": "Acme Corp",
                 "attributes": {"name": "Acme Corp", "kind": "company"}},
                {"class": "place", "text": "Austin Convention Center",
                 "attributes": {"name": "Austin Convention Center", "kind": "venue"}},
            ],
        }
    ],
}  # fmt: skip


def _ingest(url: str, config: Any, **options: Any) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        ingest_source(conn, config, config.source("mixed"), **options)


def _enrich(url: str, config: Any, **options: Any):  # type: ignore[no-untyped-def]
    with psycopg.connect(url, autocommit=True) as conn:
        return enrich_facts(conn, config, **options)


def _one(url: str, query: str, *params: Any) -> Any:
    with psycopg.connect(url) as conn:
        row = conn.execute(query, params).fetchone()
    assert row is not None
    return row[0]


def _ungrounded(url: str) -> int:
    """Facts whose stored text is not the document's text at their offsets (must be none)."""
    return int(
        _one(
            url,
            "SELECT count(*) FROM facts f JOIN documents d ON d.id = f.document_id"
            " WHERE substr(d.content, f.start_offset + 1, f.end_offset - f.start_offset)"
            " IS DISTINCT FROM f.text",
        )
    )


GARDEN_FACTS = (
    "SELECT count(*) FROM facts f JOIN documents d ON d.id = f.document_id"
    " WHERE d.uri LIKE '%%garden.md'"
)
GARDEN_RUNS = (
    "SELECT count(*) FROM fact_runs r JOIN documents d ON d.id = r.document_id"
    " WHERE d.uri LIKE '%%garden.md'"
)


@pytest.fixture
def corpus(migrated_db: str, llama: LlamaServers, tmp_path: Path) -> tuple[str, Any, Path]:
    folder = write_folder(tmp_path / "mixed")
    config = facts_config(llama, folder, migrated_db)
    _ingest(migrated_db, config)
    return migrated_db, config, folder


def test_grounded_facts_metadata_vectors_and_a_search_hit(corpus: tuple[str, Any, Path]) -> None:
    url, config, _ = corpus
    report = _enrich(url, config)
    assert report.documents_read == 3 and report.failed == 0
    assert report.facts_stored > report.metadata_facts > 0
    stored = _one(url, "SELECT count(*) FROM facts")
    assert stored == report.facts_stored
    assert _ungrounded(url) == 0

    # The mail's header facts: the sender keyed on the authors row ingest made for her, a
    # recipient with no row on the address, the subject without Re:/Fwd:.
    with psycopg.connect(url) as conn:
        meta = conn.execute(
            "SELECT fact_class, text, key FROM facts WHERE prompt_name = 'metadata' ORDER BY ord"
        ).fetchall()
        alice = conn.execute("SELECT id FROM authors WHERE email = 'alice@example.net'").fetchone()
    assert alice is not None
    assert [m[0] for m in meta] == ["sender", "recipient", "recipient", "subject"]
    assert meta[0] == ("sender", "Alice Martin <alice@example.net>", f"author:{alice[0]}")
    assert meta[1] == ("recipient", "Jane Doe <jane@example.org>", "address:jane@example.org")
    assert meta[2] == ("recipient", "bob@example.com", "address:bob@example.com")
    assert meta[3] == ("subject", "Train tickets to Lisbon", "subject:train tickets to lisbon")

    # Every fact has exactly one chunk, at its span, under the extractor's chunker.
    assert _one(url, "SELECT count(*) FROM chunks WHERE fact_id IS NOT NULL") == stored
    assert (
        _one(
            url,
            "SELECT count(*) FROM chunks c JOIN facts f ON f.id = c.fact_id"
            " WHERE (c.start_offset, c.end_offset) <> (f.start_offset, f.end_offset)",
        )
        == 0
    )
    chunkers = {
        row[0]
        for row in psycopg.connect(url).execute(
            "SELECT DISTINCT chunker FROM chunks WHERE fact_id IS NOT NULL"
        )
    }
    assert chunkers == {"facts:metadata", "facts:langextract:smollm2-135m-instruct"}

    # The ordinary backfill embeds fact chunks into potential_fact_emb_<slug>, not emb_<slug>.
    client = InferenceClient(EgressGuard.from_config(config))
    with psycopg.connect(url, autocommit=True) as conn, client:
        embed(conn, client, config)
    assert _one(url, "SELECT count(*) FROM potential_fact_emb_all_minilm_l6_v2") == stored
    assert (
        _one(
            url,
            "SELECT count(*) FROM emb_all_minilm_l6_v2 e JOIN chunks c ON c.id = e.chunk_id"
            " WHERE c.fact_id IS NOT NULL",
        )
        == 0
    )

    # A model fact's own words find it: the hit says it is a fact, with document, span, prompt.
    fact_id, text, document_id, start, end = (
        psycopg.connect(url)
        .execute(
            "SELECT id, text, document_id, start_offset, end_offset FROM facts"
            " WHERE prompt_name = 'default' ORDER BY length(text) DESC LIMIT 1"
        )
        .fetchone()
    )  # type: ignore[misc]
    # A busy machine (two cores shared) can take seconds to embed one query.
    search_settings = config.search.model_copy(update={"embed_timeout_seconds": 120.0})
    config = config.model_copy(update={"search": search_settings})
    with psycopg.connect(url) as conn:
        response = search(conn, config, SearchQuery(text=text, mode="vector", limit=10))
        assert response.mode == "vector", response.degraded
        hits = [h for h in response.hits if h.fact_id == fact_id]
        assert hits, [(h.fact_id, h.excerpt) for h in response.hits]
        hit = hits[0]
        assert (hit.document_id, hit.start_offset, hit.end_offset) == (document_id, start, end)
        assert hit.fact_prompt == "default" and hit.fact_class == "fact"
        assert response.hits[0].vector_rank == 1
        # Content chunks are in the same ranking.
        assert any(h.fact_id is None for h in response.hits)
        # Filters reach facts through their document: another source has none of them.
        other = search(conn, config, SearchQuery(text=text, mode="vector", sources=("elsewhere",)))
        assert other.hits == []
        hybrid = search(conn, config, SearchQuery(text=text, mode="hybrid", limit=20))
        assert any(h.fact_id == fact_id for h in hybrid.hits)


def test_an_invented_extraction_is_dropped_and_counted(corpus: tuple[str, Any, Path]) -> None:
    url, config, _ = corpus
    # The schema leaves the model one possible quote, which no document holds: the real model
    # must produce it, LangExtract cannot align it, and grounding drops it.
    invented = "Purple zebras juggle quantum marmalade"
    schema = extraction_schema(["fact"])
    schema["properties"]["extractions"]["items"]["properties"]["fact"] = {"enum": [invented]}
    schema["properties"]["extractions"]["minItems"] = 1
    schema["properties"]["extractions"]["maxItems"] = 2
    report = _enrich(url, config, prompt_names=["default"], schema_override=schema)
    assert report.documents_read == 3
    assert report.dropped_ungrounded >= 3  # at least one per document
    assert report.facts_stored == 0
    assert _one(url, "SELECT count(*) FROM facts") == 0
    assert _one(url, "SELECT sum(dropped) FROM fact_runs") == report.dropped_ungrounded

    # Now the one possible quote is a sentence of one note: stored, at its exact offsets.
    real = "Tomatoes need six hours of sun each day."
    schema["properties"]["extractions"]["items"]["properties"]["fact"] = {"enum": [real]}
    report = _enrich(url, config, prompt_names=["default"], schema_override=schema)
    assert report.facts_stored >= 1
    [(start, end)] = set(
        psycopg.connect(url)
        .execute(
            "SELECT f.start_offset, f.end_offset FROM facts f JOIN documents d"
            " ON d.id = f.document_id WHERE d.uri LIKE '%%garden.md'"
        )
        .fetchall()
    )
    assert NOTES["garden.md"][start:end] == real
    assert _ungrounded(url) == 0


def test_stale_only_reruns_nothing_then_exactly_what_changed(
    corpus: tuple[str, Any, Path], llama: LlamaServers
) -> None:
    url, config, folder = corpus
    first = _enrich(url, config, stale_only=True)
    assert first.documents_read == 3
    second = _enrich(url, config, stale_only=True)
    assert (second.documents_read, second.prompts_run, second.requests) == (0, 0, 0)
    assert second.documents_current == 3

    # One note changes: ingest drops its facts (and runs) with the old content.
    before = _one(url, "SELECT count(*) FROM facts")
    garden_facts = _one(url, GARDEN_FACTS)
    assert _one(url, GARDEN_RUNS) > 0
    (folder / "garden.md").write_text(NOTES["garden.md"] + "\nThe shed was painted green.\n")
    _ingest(url, config)
    assert (
        _one(
            url,
            "SELECT count(*) FROM facts f JOIN documents d ON d.id = f.document_id"
            " WHERE d.uri LIKE '%%garden.md'",
        )
        == 0
    )
    # Whatever the model found in it (a small model may find nothing), it is gone with its runs.
    assert _one(url, GARDEN_RUNS) == 0
    assert _one(url, "SELECT count(*) FROM facts") == before - garden_facts
    third = _enrich(url, config, stale_only=True)
    assert third.documents_read == 1 and third.documents_current == 2
    assert third.prompts_run == 1  # the default prompt, over garden.md alone

    # A new prompt runs over every document it applies to, and the default over none.
    with_entities = facts_config(llama, folder, url, facts={"prompts": [ENTITIES]})
    fourth = _enrich(url, with_entities, stale_only=True)
    assert fourth.documents_read == 3 and fourth.prompts_run == 3
    assert fourth.prompts == ["metadata", "default", "entities"]
    assert (
        _one(
            url, "SELECT count(DISTINCT document_id) FROM fact_runs WHERE prompt_name = 'entities'"
        )
        == 3
    )
    # Re-extracting with one prompt replaces that prompt's facts only.
    default_before = _one(
        url, "SELECT array_agg(id ORDER BY id) FROM facts WHERE prompt_name = 'default'"
    )
    _enrich(url, with_entities, prompt_names=["entities"])
    assert (
        _one(url, "SELECT array_agg(id ORDER BY id) FROM facts WHERE prompt_name = 'default'")
        == default_before
    )
    assert _ungrounded(url) == 0


def test_a_communication_is_never_sent_to_a_non_loopback_host(
    corpus: tuple[str, Any, Path],
) -> None:
    url, config, _ = corpus
    remote = "http://10.11.12.13:8080"
    inference = config.inference.model_copy(update={"llama_host": remote})
    remote_config = config.model_copy(update={"inference": inference})
    attempts: list[httpx.Request] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        attempts.append(request)
        raise AssertionError(f"a request reached the transport: {request.url}")

    # The model LangExtract drives refuses before its client touches the transport.
    client = InferenceClient(
        EgressGuard.from_config(remote_config), transport=httpx.MockTransport(refuse), retries=0
    )
    with client:
        model = GarageLanguageModel(
            LocalChatModel(client, "llama_server", remote, "smollm2-135m-instruct"),
            corpus_class="communication",
            schema=extraction_schema(["fact"]),
        )
        with pytest.raises(EgressRefused, match="communication"):
            list(model.infer(["Subject: a private mail"]))

        # Through enrich-facts: the mail's prompts are skipped and counted before any
        # request, and its header facts (no model) are still stored.
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("DELETE FROM documents WHERE corpus_class <> 'communication'")
        report = _enrich(url, remote_config, client=client)
    assert attempts == []
    assert report.refused_egress == 1 and report.requests == 0
    assert report.metadata_facts > 0
    assert _one(url, "SELECT count(*) FROM facts WHERE prompt_name <> 'metadata'") == 0


def test_deleting_a_document_removes_its_facts_chunks_and_vectors(
    corpus: tuple[str, Any, Path],
) -> None:
    url, config, folder = corpus
    _enrich(url, config, prompt_names=["metadata"])
    client = InferenceClient(EgressGuard.from_config(config))
    with psycopg.connect(url, autocommit=True) as conn, client:
        embed(conn, client, config)
    mail_facts = _one(url, "SELECT count(*) FROM facts")
    assert mail_facts > 0
    assert _one(url, "SELECT count(*) FROM potential_fact_emb_all_minilm_l6_v2") == mail_facts
    (folder / "tickets.eml").unlink()
    _ingest(url, config, force=True)  # one of three files: over the 25% deletion guard
    assert _one(url, "SELECT count(*) FROM documents WHERE uri LIKE '%%tickets.eml'") == 0
    for table in ("facts", "fact_runs", "potential_fact_emb_all_minilm_l6_v2"):
        assert _one(url, f"SELECT count(*) FROM {table}") == 0, table
    assert _one(url, "SELECT count(*) FROM chunks WHERE fact_id IS NOT NULL") == 0


def test_entities_recipe_from_the_cli(
    migrated_db: str, llama: LlamaServers, tmp_path: Path
) -> None:
    folder = write_folder(tmp_path / "mixed")
    config = facts_config(llama, folder, migrated_db, facts={"prompts": [ENTITIES]})
    path = tmp_path / "garage.json"
    raw = config.model_dump(mode="json", exclude_defaults=True)
    raw["sources"] = [{"name": "mixed", "roots": [str(folder)]}]
    path.write_text(json.dumps(raw))
    runner = CliRunner()
    env = {"GARAGE_CONFIG": str(path), "GARAGE_DATA_DIR": str(tmp_path / "data")}

    def garage(*args: str) -> Any:
        result = runner.invoke(cli, list(args), env=env, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout) if "--json" in args else result.stdout

    assert [p["name"] for p in garage("facts", "prompts", "list", "--json")] == [
        "default",
        "entities",
    ]
    assert "person" in garage("facts", "prompts", "show", "entities")
    _ingest(migrated_db, config)
    report = garage("enrich-facts", "mixed", "--prompt", "entities", "--json")
    assert report["prompts"] == ["entities"] and report["documents_read"] == 3
    assert report["facts_stored"] >= 1
    classes = {
        row[0]
        for row in psycopg.connect(migrated_db).execute("SELECT DISTINCT fact_class FROM facts")
    }
    assert classes and classes <= {"person", "place", "organization", "event"}
    assert _ungrounded(migrated_db) == 0

    listed = garage("facts", "list", "--json", "--limit", "5")
    assert listed["total"] == report["facts_stored"] and len(listed["facts"]) <= 5
    first = listed["facts"][0]
    assert first["prompt_name"] == "entities" and first["text"]
    assert garage("facts", "list", "--evidence").count("span ") >= 1
    stats = garage("facts", "stats", "--json")
    assert stats["facts"] == report["facts_stored"]
    assert sum(c["facts"] for c in stats["by_source_and_class"]) == stats["facts"]
    assert stats["by_prompt"] == {"entities": stats["facts"]}


def test_a_reply_cut_off_at_max_tokens_keeps_what_it_completed_and_is_counted(
    corpus: tuple[str, Any, Path],
) -> None:
    url, config, _ = corpus
    # The schema leaves SmolLM2 one reply: three copies of a sentence of the garden note,
    # about 51 tokens. Cut at 36, the first is whole and the rest is not: LangExtract alone
    # would drop the reply as a parse error, the chunk's facts lost without a word.
    real = "Tomatoes need six hours of sun each day."
    schema = extraction_schema(["fact"])
    schema["properties"]["extractions"]["items"]["properties"]["fact"] = {"enum": [real]}
    schema["properties"]["extractions"]["minItems"] = 3
    schema["properties"]["extractions"]["maxItems"] = 3
    facts = config.facts.model_copy(update={"max_tokens": 36})
    short = config.model_copy(update={"facts": facts})
    report = _enrich(url, short, prompt_names=["default"], schema_override=schema)
    assert report.documents_read == 3 and report.failed == 0
    assert report.requests == 3 and report.cut_replies == 3 and report.unparsed_replies == 0
    assert "3 of 3 model replies were cut off at facts.max_tokens" in report.summary()
    # The completed extraction of the garden note's reply is stored, at its span.
    assert _one(url, GARDEN_FACTS) == 1
    [(start, end)] = (
        psycopg.connect(url)
        .execute(
            "SELECT f.start_offset, f.end_offset FROM facts f JOIN documents d"
            " ON d.id = f.document_id WHERE d.uri LIKE '%%garden.md'"
        )
        .fetchall()
    )
    assert NOTES["garden.md"][start:end] == real


def test_an_attribute_the_document_does_not_hold_drops_the_fact(
    corpus: tuple[str, Any, Path], llama: LlamaServers
) -> None:
    url, _, folder = corpus
    config = facts_config(llama, folder, url, facts={"prompts": [ENTITIES]})
    # SmolLM2 may quote only "Maria Santos" (in the office note) as a person, and must name
    # her "Jane Doe": the prompt's own example, which the note does not hold (the mail, which
    # does, holds no "Maria Santos" for the span).
    schema = extraction_schema(["person"], {"person": ["name"]})
    person = schema["properties"]["extractions"]["items"]
    person["properties"]["person"] = {"enum": ["Maria Santos"]}
    person["properties"]["person_attributes"]["properties"]["name"] = {"enum": ["Jane Doe"]}
    person["properties"]["person_attributes"]["required"] = ["name"]
    person["required"] = ["person", "person_attributes"]
    schema["properties"]["extractions"]["minItems"] = 1
    schema["properties"]["extractions"]["maxItems"] = 1
    report = _enrich(url, config, prompt_names=["entities"], schema_override=schema)
    assert report.documents_read == 3 and report.failed == 0
    assert report.dropped_ungrounded_attributes == 1  # the office note's
    assert report.dropped_ungrounded == 2  # the span, in the other two
    assert report.facts_stored == 0
    assert "1 for an attribute not in the text" in report.summary()

    # Named as the note names her, the same person is stored, with her name.
    person["properties"]["person_attributes"]["properties"]["name"] = {"enum": ["Maria Santos"]}
    report = _enrich(url, config, prompt_names=["entities"], schema_override=schema)
    assert (report.facts_stored, report.dropped_ungrounded_attributes) == (1, 0)
    assert _one(url, "SELECT attributes->>'name' FROM facts WHERE fact_class = 'person'") == (
        "Maria Santos"
    )
    assert _ungrounded(url) == 0
