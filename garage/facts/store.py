"""Writing a document's facts: every prompt's result for one document in one transaction.

Re-extracting a document with a prompt replaces that prompt's facts only (deleting a fact
cascades into its chunk and its vectors). Each fact gets a chunk of its own — ``chunks.fact_id``,
its offsets the fact's span — so the ordinary embedding backfill gives it a vector under every
registered model with no fact-specific path. ``fact_runs`` records what each prompt ran with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from garage.facts.grounding import GroundedFact
from garage.ingest.store import sha256_text

LANGEXTRACT_CHUNKER = "facts:langextract:{model}"
METADATA_CHUNKER = "facts:metadata"


@dataclass(frozen=True)
class PromptOutcome:
    """What one prompt produced for one document, ready to store."""

    prompt_name: str
    prompt_sha256: str
    model: str  # '<provider>:<model id>' or 'metadata'
    chunker: str
    facts: Sequence[GroundedFact]
    dropped: int


def chunk_text(fact: GroundedFact) -> str:
    """What the fact's chunk says: the span itself for a plain claim; for a typed mention the
    class too, so "person: Jane Doe" is found by what it is as well as by its words."""
    if fact.fact_class == "fact":
        return fact.text
    return f"{fact.fact_class}: {fact.text}"


def store_outcomes(
    conn: psycopg.Connection[Any],
    document_id: int,
    content_sha256: str,
    outcomes: Sequence[PromptOutcome],
) -> bool:
    """Replace each prompt's facts for the document; False (and nothing written) when the
    document changed or went away since its text was read. The caller owns no transaction:
    this is one."""
    with conn.transaction():
        row = conn.execute(
            "SELECT content_sha256 FROM documents WHERE id = %s FOR UPDATE", (document_id,)
        ).fetchone()
        current = (
            None if row is None else (row["content_sha256"] if isinstance(row, dict) else row[0])
        )
        if current != content_sha256:
            # Ingest replaced the text meanwhile: these spans point into text that is gone.
            return False
        for outcome in outcomes:
            _replace(conn, document_id, content_sha256, outcome)
    return True


def _replace(
    conn: psycopg.Connection[Any], document_id: int, content_sha256: str, outcome: PromptOutcome
) -> None:
    conn.execute(
        "DELETE FROM facts WHERE document_id = %s AND prompt_name = %s",
        (document_id, outcome.prompt_name),
    )
    with conn.cursor() as cur:
        for ord_, fact in enumerate(outcome.facts):
            cur.execute(
                "INSERT INTO facts (document_id, prompt_name, prompt_sha256, model, fact_class,"
                " text, start_offset, end_offset, alignment, attributes, key, ord)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
                (
                    document_id,
                    outcome.prompt_name,
                    outcome.prompt_sha256,
                    outcome.model,
                    fact.fact_class,
                    fact.text,
                    fact.start,
                    fact.end,
                    fact.alignment,
                    Jsonb(fact.attributes),
                    fact.key,
                    ord_,
                ),
            )
            inserted = cur.fetchone()
            assert inserted is not None
            fact_id = inserted["id"] if isinstance(inserted, dict) else inserted[0]
            text = chunk_text(fact)
            cur.execute(
                "INSERT INTO chunks (document_id, ord, text, text_sha256, start_offset,"
                " end_offset, heading, chunker, modality, fact_id, metadata)"
                " VALUES (%s, %s, %s, %s, %s, %s, NULL, %s, 'text', %s, %s)",
                (
                    document_id,
                    ord_,
                    text,
                    sha256_text(text),
                    fact.start,
                    fact.end,
                    outcome.chunker,
                    fact_id,
                    Jsonb({"fact_class": fact.fact_class, "prompt": outcome.prompt_name}),
                ),
            )
    conn.execute(
        "INSERT INTO fact_runs (document_id, prompt_name, prompt_sha256, content_sha256, model,"
        " facts_stored, dropped) VALUES (%s, %s, %s, %s, %s, %s, %s)"
        " ON CONFLICT (document_id, prompt_name) DO UPDATE SET"
        " prompt_sha256 = EXCLUDED.prompt_sha256, content_sha256 = EXCLUDED.content_sha256,"
        " model = EXCLUDED.model, facts_stored = EXCLUDED.facts_stored,"
        " dropped = EXCLUDED.dropped, ran_at = now()",
        (
            document_id,
            outcome.prompt_name,
            outcome.prompt_sha256,
            content_sha256,
            outcome.model,
            len(outcome.facts),
            outcome.dropped,
        ),
    )


def current_runs(
    conn: psycopg.Connection[Any], document_id: int
) -> dict[str, tuple[str, str, str]]:
    """prompt name → (prompt hash, content hash, model) of its last run over the document."""
    rows = conn.execute(
        "SELECT prompt_name, prompt_sha256, content_sha256, model FROM fact_runs"
        " WHERE document_id = %s",
        (document_id,),
    ).fetchall()
    result = {}
    for row in rows:
        values = tuple(row.values()) if isinstance(row, dict) else tuple(row)
        result[values[0]] = (values[1], values[2], values[3])
    return result
