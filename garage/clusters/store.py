"""Reading what clustering needs from the tables, and writing its groups back.

Writing is one transaction: the groups, their vectors in ``fact_emb_<slug>`` and the links of
every potential fact whose links changed, so a crash leaves the previous grouping whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.rows import tuple_row
from psycopg.types.json import Jsonb

from garage.clusters.model import Group, Node, unit
from garage.config.fact_prompts import METADATA_PROMPT
from garage.embed.registry import RegisteredModel


@dataclass(frozen=True)
class Links:
    """A potential fact's links as stored."""

    restates: int | None
    distilled: int | None
    grouped_under: str | None


@dataclass(frozen=True)
class StoredGroup:
    id: int
    fact_class: str
    anchor_key: str | None
    status: str
    statement: str | None
    members_sha256: str
    seed: np.ndarray | None


def _array(value: Any) -> np.ndarray:
    """A vector column as float32 (pgvector's loader gives a Vector or an ndarray)."""
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    return np.asarray(value, dtype=np.float32)


def _rows(
    conn: psycopg.Connection[Any], query: Any, params: Any = None, *, binary: bool = False
) -> list[tuple[Any, ...]]:
    # Vectors come fastest in binary: parsing 10^5 vectors from text takes seconds.
    with conn.cursor(row_factory=tuple_row, binary=binary) as cur:
        return cur.execute(query, params).fetchall()


def load_nodes(
    conn: psycopg.Connection[Any], model: RegisteredModel
) -> tuple[list[Node], dict[int, Links]]:
    """Every potential fact with a vector under ``model``, and the links of every fact."""
    register_vector(conn)
    rows = _rows(
        conn,
        sql.SQL(
            "SELECT f.id, f.document_id, f.fact_class, f.text, f.key, f.prompt_name,"
            " d.corpus_class, p.embedding FROM facts f"
            " JOIN documents d ON d.id = f.document_id JOIN {} p ON p.fact_id = f.id"
            " ORDER BY f.id"
        ).format(sql.Identifier(model.fact_table)),
        binary=True,
    )
    nodes = [
        Node(
            fact_id=row[0],
            document_id=row[1],
            fact_class=row[2],
            text=row[3],
            vector=unit(_array(row[7])),
            communication=row[6] == "communication",
            # Only header facts anchor; a model fact never carries a key.
            key=row[4] if row[5] == METADATA_PROMPT and row[4] else None,
        )
        for row in rows
    ]
    links = {
        row[0]: Links(row[1], row[2], row[3])
        for row in _rows(
            conn, "SELECT id, restates_fact_id, distilled_fact_id, grouped_under FROM facts"
        )
    }
    return nodes, links


def load_groups(conn: psycopg.Connection[Any], model: RegisteredModel) -> list[StoredGroup]:
    register_vector(conn)
    rows = _rows(
        conn,
        sql.SQL(
            "SELECT g.id, g.fact_class, g.anchor_key, g.status, g.statement, g.members_sha256,"
            " e.seed, e.embedding, g.model FROM distilled_facts g"
            " LEFT JOIN {} e ON e.distilled_fact_id = g.id ORDER BY g.id"
        ).format(sql.Identifier(model.distilled_table)),
        binary=True,
    )
    groups = []
    for row in rows:
        seed = row[6] if row[6] is not None else row[7]
        groups.append(
            StoredGroup(
                id=row[0],
                fact_class=row[1],
                anchor_key=row[2],
                status=row[3],
                statement=row[4],
                members_sha256=row[5],
                # A group made under another model has no seed in this one's space.
                seed=None if seed is None or row[8] != model.name else _array(seed),
            )
        )
    return groups


@dataclass(frozen=True)
class LastRun:
    model: str
    settings_sha256: str


def last_run(conn: psycopg.Connection[Any]) -> LastRun | None:
    rows = _rows(
        conn,
        "SELECT model, settings_sha256 FROM cluster_runs WHERE finished_at IS NOT NULL"
        " ORDER BY id DESC LIMIT 1",
    )
    return LastRun(*rows[0]) if rows else None


def start_run(conn: psycopg.Connection[Any], mode: str, model: str, settings_sha256: str) -> int:
    rows = _rows(
        conn,
        "INSERT INTO cluster_runs (mode, model, settings_sha256) VALUES (%s, %s, %s) RETURNING id",
        (mode, model, settings_sha256),
    )
    return int(rows[0][0])


def finish_run(conn: psycopg.Connection[Any], run_id: int, report: dict[str, Any]) -> None:
    conn.execute(
        "UPDATE cluster_runs SET finished_at = now(), report = %s WHERE id = %s",
        (Jsonb(report), run_id),
    )


def save(
    conn: psycopg.Connection[Any],
    model: RegisteredModel,
    groups: list[Group],
    deleted: list[int],
    links: dict[int, tuple[int | None, Group | None]],
    stored: dict[int, Links],
) -> int:
    """Write the groups (new rows get their id), delete ``deleted``, and link each fact in
    ``links`` (fact id → (restates, group)); return how many facts' links changed.

    Set-based throughout: a full run over 10^5 facts writes 10^4 groups, and a statement per
    group would spend the run's time on round trips."""
    register_vector(conn)
    with conn.transaction():
        if deleted:
            conn.execute("DELETE FROM distilled_facts WHERE id = ANY(%s)", (deleted,))
        # Only rows with something new: an incremental run over a large corpus touches few.
        changed_groups = [g for g in groups if not g.unchanged]
        new_groups = [g for g in changed_groups if g.id is None]
        if new_groups:
            # Ids drawn first, so one statement inserts them all and each group knows its own.
            ids = _rows(
                conn,
                "SELECT nextval(pg_get_serial_sequence('distilled_facts', 'id'))"
                " FROM generate_series(1, %s)",
                (len(new_groups),),
            )
            for group, (new_id,) in zip(new_groups, ids, strict=True):
                group.id = int(new_id)
        if changed_groups:
            _write_groups(conn, model, changed_groups, inserted={id(g) for g in new_groups})
            # An anchor's vector never moves: once written, it is not written again.
            _write_vectors(
                conn,
                model,
                [g for g in changed_groups if g.anchor_key is None or g.status_stored is None],
            )
        changed = [
            (fact_id, restates, group.id if group is not None else None)
            for fact_id, (restates, group) in links.items()
            if fact_id in stored
            and (
                stored[fact_id].restates != restates
                or stored[fact_id].distilled != (group.id if group is not None else None)
                or stored[fact_id].grouped_under != model.name
            )
        ]
        if changed:
            conn.execute(
                "UPDATE facts f SET restates_fact_id = u.restates,"
                " distilled_fact_id = u.distilled, grouped_under = %s"
                " FROM unnest(%s::bigint[], %s::bigint[], %s::bigint[]) AS u(id, restates,"
                " distilled) WHERE f.id = u.id",
                (
                    model.name,
                    [c[0] for c in changed],
                    [c[1] for c in changed],
                    [c[2] for c in changed],
                ),
            )
    return len(changed)


_GROUP_COLUMNS = (
    "id bigint, fact_class text, representative_fact_id bigint, statement text, status text,"
    " anchor_key text, model text, nodes integer, spread real, radius real, drift real,"
    " members_sha256 text"
)


def _write_groups(
    conn: psycopg.Connection[Any], model: RegisteredModel, groups: list[Group], inserted: set[int]
) -> None:
    """The groups' rows through one COPY: new ones inserted, the others updated."""
    conn.execute(f"CREATE TEMP TABLE cluster_groups ({_GROUP_COLUMNS}, new boolean) ON COMMIT DROP")
    with conn.cursor() as cur, cur.copy("COPY cluster_groups FROM STDIN") as copy:
        for group in groups:
            representative = group.representative
            assert representative is not None
            spread, radius, drift = group.stats()
            copy.write_row((group.id, group.fact_class, representative.fact_id, group.statement,
                            group.status, group.anchor_key, model.name, len(group.members),
                            spread, radius, drift, group.members_sha256,
                            id(group) in inserted))  # fmt: skip
    columns = (
        "fact_class, representative_fact_id, statement, status, anchor_key, model, nodes,"
        " spread, radius, drift, members_sha256"
    )
    conn.execute(
        f"INSERT INTO distilled_facts (id, {columns}) SELECT id, {columns} FROM cluster_groups"
        " WHERE new ORDER BY id"
    )
    conn.execute(
        "UPDATE distilled_facts g SET fact_class = u.fact_class,"
        " representative_fact_id = u.representative_fact_id, statement = u.statement,"
        " status = u.status, anchor_key = u.anchor_key, model = u.model, nodes = u.nodes,"
        " spread = u.spread, radius = u.radius, drift = u.drift,"
        " members_sha256 = u.members_sha256, updated_at = now()"
        " FROM cluster_groups u WHERE NOT u.new AND g.id = u.id"
    )


def _write_vectors(
    conn: psycopg.Connection[Any], model: RegisteredModel, groups: list[Group]
) -> None:
    """Centroids and seeds in ``fact_emb_<slug>``, through a binary COPY (parsing 10^4
    vectors from text costs more than writing them)."""
    if not groups:
        return
    dims = sql.Literal(model.dimensions)
    conn.execute(
        sql.SQL(
            "CREATE TEMP TABLE cluster_vectors (id bigint, embedding vector({d}),"
            " seed vector({d})) ON COMMIT DROP"
        ).format(d=dims)
    )
    with (
        conn.cursor() as cur,
        cur.copy("COPY cluster_vectors FROM STDIN WITH (FORMAT BINARY)") as copy,
    ):
        copy.set_types(["int8", "vector", "vector"])
        for group in groups:
            copy.write_row((group.id, group.centroid.astype(np.float32),
                            group.seed.astype(np.float32)))  # fmt: skip
    conn.execute(
        sql.SQL(
            "INSERT INTO {} (distilled_fact_id, embedding, seed)"
            " SELECT id, embedding, seed FROM cluster_vectors ORDER BY id"
            " ON CONFLICT (distilled_fact_id) DO UPDATE SET embedding = EXCLUDED.embedding,"
            " seed = EXCLUDED.seed, updated_at = now()"
        ).format(sql.Identifier(model.distilled_table))
    )
