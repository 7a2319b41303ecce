"""A corpus for the clustering and graph tests: real notes and mails ingested, header facts read
by enrich-facts with no model, and model facts stored through the facts store at chosen
sentences of the notes (so what is grouped is known), all embedded by the real MiniLM server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg

from garage.embed import embed
from garage.facts import enrich_facts
from garage.facts.grounding import GroundedFact
from garage.facts.store import PromptOutcome, store_outcomes
from garage.inference import EgressGuard, InferenceClient
from garage.ingest import ingest_source
from tests.conftest import LlamaServers
from tests.integration.facts_helpers import facts_config

# Each note's claims, stored as facts of class "fact" (or the class named before a "|").
NOTES = {
    "lisbon.md": [
        "The Lisbon office opens on 3 March 2025.",
        "The Lisbon office will open on 3 March 2025.",
        "Acme has 42 employees.",
    ],
    "lisbon-plan.md": [
        "Our Lisbon office opens its doors on 3 March 2025.",
        "Acme has 45 employees.",
        "The meeting is on Tuesday.",
    ],
    "minutes.md": [
        "The meeting is not on Tuesday.",
        "Tomatoes need six hours of sun each day.",
        "person|Alice Martin <alice@example.net>",
    ],
    "garden.md": [
        "Tomato plants need six hours of sunlight every day.",
        "The rain barrel holds two hundred litres.",
        "The rain barrel does not hold two hundred litres.",
    ],
}
# Claims stored in the mails (communications), for the egress rule.
MAIL_CLAIMS = {
    "tickets.eml": ["The night train leaves Madrid at ten."],
    "reply.eml": ["The night train departs from Madrid at ten."],
}

MAILS = {
    "tickets.eml": """\
From: Alice Martin <alice@example.net>
To: Jane Doe <jane@example.org>, bob@example.com
Subject: Re: Fwd: Train tickets to Lisbon
Date: Sat, 02 Mar 2024 09:40:00 +0000
Message-ID: <abc123@example.net>

The night train leaves Madrid at ten. I forwarded the booking to you yesterday.
""",
    "reply.eml": """\
From: Jane Doe <jane@example.org>
To: Alice Martin <alice@example.net>
Subject: Re: Train tickets to Lisbon
Date: Sat, 02 Mar 2024 11:00:00 +0000
Message-ID: <def456@example.org>

Thanks! The night train departs from Madrid at ten. I will be there early.
""",
}


def note_text(claims: list[str]) -> str:
    return "\n\n".join(c.split("|", 1)[-1] for c in claims) + "\n"


def write_corpus(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, claims in NOTES.items():
        (root / name).write_text(note_text(claims))
    for name, text in MAILS.items():
        (root / name).write_text(text)
    return root


Claim = str | tuple[str, str, dict[str, str]]  # "text", "class|text" or (class, text, attributes)


def store_claims(url: str, claims_by_file: dict[str, list[Claim]], prompt: str = "default") -> int:
    """Store each file's claims as potential facts of ``prompt``, at their spans."""
    stored = 0
    with psycopg.connect(url, autocommit=True) as conn:
        for name, claims in claims_by_file.items():
            row = conn.execute(
                "SELECT id, content, content_sha256 FROM documents WHERE uri LIKE %s",
                (f"%/{name}",),
            ).fetchone()
            assert row is not None, name
            document_id, content, content_sha256 = row
            facts = []
            for claim in claims:
                if isinstance(claim, tuple):
                    fact_class, text, attributes = claim
                else:
                    fact_class, _, text = claim.rpartition("|")
                    attributes = {}
                start = content.index(text)
                facts.append(
                    GroundedFact(
                        fact_class or "fact",
                        text,
                        start,
                        start + len(text),
                        "match_exact",
                        dict(attributes),
                    )
                )
            outcome = PromptOutcome(prompt, "test", "test:claims", "facts:test", facts, 0)
            assert store_outcomes(conn, document_id, content_sha256, [outcome])
            stored += len(facts)
    return stored


def embed_all(url: str, config: Any) -> None:
    client = InferenceClient(EgressGuard.from_config(config))
    with psycopg.connect(url, autocommit=True) as conn, client:
        embed(conn, client, config)


def build_corpus(
    url: str, llama: LlamaServers, folder: Path, *, mail_claims: bool = False, **sections: Any
) -> Any:
    write_corpus(folder)
    config = facts_config(llama, folder, url, **sections)
    with psycopg.connect(url, autocommit=True) as conn:
        ingest_source(conn, config, config.source("mixed"))
        report = enrich_facts(conn, config, prompt_names=["metadata"])
        assert report.metadata_facts > 0
    store_claims(url, NOTES | (MAIL_CLAIMS if mail_claims else {}))
    embed_all(url, config)
    return config
