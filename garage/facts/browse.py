"""Reading stored facts back: ``garage facts list`` / ``stats`` and the MCP tools over them.

Filtered by text (full-text, or a substring), source, document, extraction class and corpus
class; each fact comes with the document text around its grounding span, so a reader can
judge it where it stands.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql

MAX_FACTS = 500
MAX_CONTEXT_CHARS = 2000


@dataclass(frozen=True)
class FactQuery:
    text: str | None = None
    substring: bool = False  # ILIKE instead of full-text
    sources: tuple[str, ...] = ()
    document_id: int | None = None
    classes: tuple[str, ...] = ()
    corpus_classes: tuple[str, ...] = ()
    prompts: tuple[str, ...] = ()
    limit: int = 50
    offset: int = 0
    context_chars: int = 200


@dataclass(frozen=True)
class FactRow:
    fact_id: int
    document_id: int
    uri: str
    title: str | None
    source: str
    corpus_class: str
    fact_class: str
    text: str
    start_offset: int
    end_offset: int
    prompt_name: str
    model: str
    alignment: str
    key: str | None
    attributes: dict[str, Any]
    before: str  # the document text just before the span
    after: str  # and just after it


@dataclass(frozen=True)
class FactList:
    facts: list[FactRow]
    total: int  # matching facts, of which `facts` is one page


@dataclass(frozen=True)
class FactCount:
    source: str
    fact_class: str
    facts: int
    documents: int


@dataclass(frozen=True)
class FactStats:
    facts: int
    documents_with_facts: int
    by_source_and_class: list[FactCount] = field(default_factory=list)
    by_prompt: dict[str, int] = field(default_factory=dict)


def _like(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _where(query: FactQuery) -> tuple[sql.Composable, dict[str, Any]]:
    parts: list[sql.Composable] = [sql.SQL("true")]
    params: dict[str, Any] = {}
    if query.text:
        if query.substring:
            parts.append(sql.SQL("f.text ILIKE %(text)s"))
            params["text"] = _like(query.text)
        else:
            # The same expression the GIN index in 006 is built on.
            parts.append(
                sql.SQL(
                    "to_tsvector('english', f.text) @@ websearch_to_tsquery('english', %(text)s)"
                )
            )
            params["text"] = query.text
    for column, name, values in (
        ("s.name", "sources", query.sources),
        ("f.fact_class", "classes", query.classes),
        ("d.corpus_class", "corpus_classes", query.corpus_classes),
        ("f.prompt_name", "prompts", query.prompts),
    ):
        if values:
            parts.append(sql.SQL("{} = ANY(%({})s)").format(sql.SQL(column), sql.SQL(name)))
            params[name] = list(values)
    if query.document_id is not None:
        parts.append(sql.SQL("f.document_id = %(document_id)s"))
        params["document_id"] = query.document_id
    return sql.SQL(" AND ").join(parts), params


_FROM = sql.SQL(
    "FROM facts f JOIN documents d ON d.id = f.document_id JOIN sources s ON s.id = d.source_id"
)


def list_facts(conn: psycopg.Connection[Any], query: FactQuery) -> FactList:
    if not 1 <= query.limit <= MAX_FACTS:
        raise ValueError(f"limit: must be between 1 and {MAX_FACTS}")
    if query.offset < 0:
        raise ValueError("offset: must not be negative")
    if not 0 <= query.context_chars <= MAX_CONTEXT_CHARS:
        raise ValueError(f"context_chars: must be between 0 and {MAX_CONTEXT_CHARS}")
    where, params = _where(query)
    params |= {"limit": query.limit, "offset": query.offset, "ctx": query.context_chars}
    total_row = conn.execute(
        sql.SQL("SELECT count(*) AS n {} WHERE {}").format(_FROM, where), params
    ).fetchone()
    total = int(total_row["n"] if isinstance(total_row, dict) else total_row[0]) if total_row else 0
    statement = sql.SQL(
        "SELECT f.id AS fact_id, f.document_id, d.uri, d.title, s.name AS source,"
        " d.corpus_class, f.fact_class, f.text, f.start_offset, f.end_offset, f.prompt_name,"
        " f.model, f.alignment, f.key, f.attributes,"
        " substr(d.content, greatest(f.start_offset - %(ctx)s, 0) + 1,"
        "        f.start_offset - greatest(f.start_offset - %(ctx)s, 0)) AS before,"
        " substr(d.content, f.end_offset + 1, %(ctx)s) AS after"
        " {} WHERE {} ORDER BY f.document_id, f.prompt_name, f.ord"
        " LIMIT %(limit)s OFFSET %(offset)s"
    ).format(_FROM, where)
    with conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
        rows = cur.execute(statement, params).fetchall()
    return FactList([FactRow(**row) for row in rows], total)


def fact_stats(conn: psycopg.Connection[Any], sources: tuple[str, ...] = ()) -> FactStats:
    where, params = _where(FactQuery(sources=sources))
    with conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
        counts = cur.execute(
            sql.SQL(
                "SELECT s.name AS source, f.fact_class, count(*) AS facts,"
                " count(DISTINCT f.document_id) AS documents {} WHERE {}"
                " GROUP BY s.name, f.fact_class ORDER BY s.name, count(*) DESC, f.fact_class"
            ).format(_FROM, where),
            params,
        ).fetchall()
        totals = cur.execute(
            sql.SQL(
                "SELECT count(*) AS facts, count(DISTINCT f.document_id) AS documents {} WHERE {}"
            ).format(_FROM, where),
            params,
        ).fetchone()
        prompts = cur.execute(
            sql.SQL(
                "SELECT f.prompt_name, count(*) AS n {} WHERE {} GROUP BY f.prompt_name"
                " ORDER BY f.prompt_name"
            ).format(_FROM, where),
            params,
        ).fetchall()
    assert totals is not None
    return FactStats(
        facts=int(totals["facts"]),
        documents_with_facts=int(totals["documents"]),
        by_source_and_class=[
            FactCount(r["source"], r["fact_class"], int(r["facts"]), int(r["documents"]))
            for r in counts
        ],
        by_prompt={r["prompt_name"]: int(r["n"]) for r in prompts},
    )
