"""A small real corpus for the pages, served: two Python tutorial pages and a CPython test
module (real text), a note holding a seeded phrase, a chat thread, and hostile input — a file
named ``"><img src=x onerror=alert(1)>.md`` whose text holds ``<script>``, a mail whose body
holds ``<script>`` and an ``onerror=`` attribute, and a fact quoting HTML. Facts are written
as enrich-facts writes them (grounded spans), two of them grouped in a distilled fact, and the
graph is rebuilt, so every page has something to show."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from garage.config import GarageConfig
from garage.embed import embed
from garage.graph import rebuild_graph
from garage.inference import EgressGuard, InferenceClient
from garage.pages.serve import serving
from tests.conftest import LlamaServers, _with_database, llama_config
from tests.integration.ingest_helpers import run_ingest
from tests.integration.search_helpers import insert_thread, tutorial
from tests.servers import free_port

SEEDED = "quartz lantern festival"
HOSTILE_NAME = '"><img src=x onerror=alert(1)>.md'
HOSTILE_NOTE = (
    "# Notes <script>alert('note')</script>\n\n"
    f"The {SEEDED} opens on the ninth of May in the old harbour. "
    "Bring a <b onmouseover=alert(2)>torch</b> and warm clothes.\n"
    # One unbroken word wider than a phone: the pages must wrap it, not scroll sideways.
    f"Reference {'7' * 160}\n"
)
HOSTILE_MAIL = """\
From: Mallory <mallory@example.net>
To: Jane Doe <jane@example.org>
Subject: <script>alert('subject')</script> invoice
Date: Mon, 04 Mar 2024 10:00:00 +0000
Message-ID: <evil1@example.net>
Content-Type: text/plain; charset=utf-8

Please pay the invoice <img src=x onerror=alert(3)> before Friday.
<script>alert('mail')</script>
The quartz harbour office keeps the receipts.
"""
FACT_HTML = "<b onmouseover=alert(2)>torch</b>"


@dataclass(frozen=True)
class Site:
    url: str  # the pages' base URL, .../garage
    port: int
    database_url: str
    config: GarageConfig
    hostile_id: int  # the hostile note's document id
    mail_id: int
    errors_id: int  # the tutorial's "errors" page


def _document(conn: psycopg.Connection[Any], like: str) -> tuple[int, str]:
    row = conn.execute(
        "SELECT id, content FROM documents WHERE uri LIKE %s ORDER BY id LIMIT 1", (like,)
    ).fetchone()
    assert row is not None, like
    return int(row[0]), str(row[1])


def _fact(conn: psycopg.Connection[Any], document_id: int, content: str, text: str,
          fact_class: str, ord_: int) -> int:  # fmt: skip
    start = content.index(text)
    row = conn.execute(
        "INSERT INTO facts (document_id, prompt_name, prompt_sha256, model, fact_class, text,"
        " start_offset, end_offset, alignment, ord) VALUES"
        " (%s, 'default', 'p', 'llama_server:test', %s, %s, %s, %s, 'match_exact', %s)"
        " RETURNING id",
        (document_id, fact_class, text, start, start + len(text), ord_),
    ).fetchone()
    assert row is not None
    return int(row[0])


def build(root: Path, url: str, llama: LlamaServers) -> tuple[GarageConfig, dict[str, int]]:
    notes, mail, docs = root / "notes", root / "mail", root / "docs"
    notes.mkdir(parents=True)
    mail.mkdir(parents=True)
    (notes / HOSTILE_NAME).write_text(HOSTILE_NOTE)
    (mail / "invoice.eml").write_text(HOSTILE_MAIL)
    tutorial(docs, ["errors", "controlflow"])
    sources = [
        {"name": "docs", "roots": [str(docs)], "default_author": "Python Docs Team"},
        {"name": "notes", "roots": [str(notes)]},
        {"name": "mail", "roots": [str(mail)], "kind": "files", "corpus_class": "communication"},
    ]
    # SmolLM2's verdict is seldom a confident yes, nor its answer a reading of the excerpts:
    # with the threshold and the support check off, the page has an answer to stream.
    config = llama_config(
        llama, sources=sources,
        identity={"self_name": "Jane Doe", "emails": ["jane@example.org"]},
        ask={"answer_threshold": 0.0, "min_support": 0.0},
    ).model_copy(deep=True)  # fmt: skip
    config.database.url = url
    for source in ("docs", "notes", "mail"):
        run_ingest(url, config, source)
    with psycopg.connect(url, autocommit=True) as conn:
        insert_thread(conn)
        hostile_id, hostile = _document(conn, "%onerror%")
        mail_id, _ = _document(conn, "%invoice.eml")
        errors_id, errors = _document(conn, "%errors.txt")
        first = _fact(conn, hostile_id, hostile, FACT_HTML, "fact", 0)
        second = _fact(conn, hostile_id, hostile, f"The {SEEDED} opens on the ninth of May",
                       "event", 1)  # fmt: skip
        third = _fact(conn, errors_id, errors, "exception", "term", 0)
        group = conn.execute(
            "INSERT INTO distilled_facts (fact_class, representative_fact_id, statement, status,"
            " model, nodes) VALUES ('event', %s, %s, 'confirmed', 'test', 2) RETURNING id",
            (second, f"The {SEEDED} is in May."),
        ).fetchone()
        assert group is not None
        conn.execute(
            "UPDATE facts SET distilled_fact_id = %s WHERE id = ANY(%s)",
            (group[0], [first, second]),
        )
        del third
        with InferenceClient(EgressGuard.from_config(config)) as client:
            embed(conn, client, config)
        rebuild_graph(conn, config)
    return config, {"hostile": hostile_id, "mail": mail_id, "errors": errors_id}


@contextmanager
def pages_site(pg_server_url: str, llama: LlamaServers, root: Path) -> Iterator[Site]:
    from garage.db.migrate import ensure_migrated

    name = f"garage_test_pages_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = _with_database(pg_server_url, name)
    try:
        ensure_migrated(url)
        config, ids = build(root, url, llama)
        port = free_port()
        with serving(config, url, port=port) as base:
            yield Site(base, port, url, config, ids["hostile"], ids["mail"], ids["errors"])
    finally:
        with psycopg.connect(pg_server_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@contextmanager
def slow_model_pages(site: Site) -> Iterator[tuple[str, int, Any]]:
    """The pages over ``site`` with a chat model that writes a long answer slowly (a fake LM
    Studio server, named as one: the test watches the model's connection close, which a real
    server does not report); yields (the pages' base URL, their port, the fake's state)."""
    from tests.fakes.model_servers import FakeState, fake_server

    words = " ".join(["word"] * 400)
    reply = '{"stated": "yes", "excerpts": [1], "answer": "' + words + '"}'
    state = FakeState(models={"slow"}, reply=reply, stream_delay=0.05)
    with fake_server("lmstudio", state) as model_url:
        config = site.config.model_copy(deep=True)
        config.inference.provider, config.inference.model = "lmstudio", "slow"
        config.inference.lmstudio_host = model_url
        port = free_port()
        with serving(config, site.database_url, port=port) as base:
            yield base, port, state
