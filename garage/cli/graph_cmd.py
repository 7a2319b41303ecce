"""``garage graph``: the AGE graph (rebuilt, its labels, found, drawn); ``garage cluster-facts``
is ``distilled_facts_cmd.py``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from garage.cli.common import (
    GarageContext,
    echo_json,
    no_wait_option,
    user_errors,
    waiting,
)
from garage.db import connect, resolve_url
from garage.db.migrate import ensure_migrated


@contextmanager
def graph_errors() -> Iterator[None]:
    from garage.clusters import ClusterError
    from garage.embed import RegistryError
    from garage.graph import GraphUnavailable
    from garage.graph.picture import PictureError
    from garage.inference import InferenceError

    try:
        yield
    except (ClusterError, GraphUnavailable, PictureError, InferenceError, RegistryError) as error:
        raise click.ClickException(str(error)) from None
    except ValueError as error:
        raise click.ClickException(str(error)) from None


@click.group("graph")
def graph_group() -> None:
    """The Apache AGE graph `garage` (where the server has AGE)."""


def _conn(obj: GarageContext) -> Any:
    config = obj.config()
    url = resolve_url(config)
    ensure_migrated(url)
    return config, connect(url, autocommit=True)


@graph_group.command("rebuild")
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
@no_wait_option
@click.pass_obj
def graph_rebuild(obj: GarageContext, as_json: bool, no_wait: bool) -> None:
    """Re-project the tables (and the prompts' graph blocks) into the graph."""
    from garage.graph import rebuild_graph

    with user_errors(), graph_errors():
        config, conn = _conn(obj)
        with conn:
            report = rebuild_graph(conn, config, waiting(no_wait))
    if as_json:
        echo_json(report)
    else:
        click.echo(report.summary())


@graph_group.command("labels")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def graph_labels_cmd(obj: GarageContext, as_json: bool) -> None:
    """Every vertex and edge label in the graph, with its count."""
    from garage.graph import graph_labels

    with user_errors(), graph_errors():
        _, conn = _conn(obj)
        with conn:
            labels = graph_labels(conn)
    if as_json:
        echo_json({"labels": labels})
        return
    for label in labels:
        click.echo(f"{label.kind:6}  {label.label:24} {label.count}")


@graph_group.command("find")
@click.argument("text")
@click.option("--label", "labels", multiple=True, help="Only vertices of this label (repeatable).")
@click.option("--limit", type=click.IntRange(1, 200), default=20, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def graph_find(
    obj: GarageContext, text: str, labels: tuple[str, ...], limit: int, as_json: bool
) -> None:
    """Vertices whose title or name contains TEXT: documents, authors, facts, statements."""
    from garage.graph import find_vertices

    with user_errors(), graph_errors():
        _, conn = _conn(obj)
        with conn:
            found = find_vertices(conn, text, labels=labels, limit=limit)
    if as_json:
        echo_json({"vertices": found})
        return
    for vertex in found:
        click.echo(f"{vertex.label}:{vertex.id}  {vertex.title or ''}  (vertex {vertex.vid})")
    click.echo(f"{len(found)} vertices", err=True)


@graph_group.command("neighbors")
@click.argument("vertex")
@click.option("--hops", type=click.IntRange(1, 4), default=1, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--svg", "svg_file", type=click.Path(dir_okay=False), help="Draw it to this file.")
@click.option(
    "--format", "fmt", type=click.Choice(["svg", "dot"]), help="Print the picture (svg or dot)."
)
@click.pass_obj
def graph_neighbors(
    obj: GarageContext,
    vertex: str,
    hops: int,
    as_json: bool,
    svg_file: str | None,
    fmt: str | None,
) -> None:
    """The neighbourhood of VERTEX (Label:id, e.g. Document:12, or a vertex id), one ring per
    hop; --svg draws it with Graphviz's twopi."""
    from garage.graph import neighbourhood
    from garage.graph.picture import render, to_dot

    with user_errors(), graph_errors():
        _, conn = _conn(obj)
        with conn:
            hood = neighbourhood(conn, vertex, hops=hops)
        if svg_file:
            Path(svg_file).write_bytes(render(to_dot(hood), "svg"))
        if fmt == "dot":
            click.echo(to_dot(hood), nl=False)
            return
        if fmt == "svg":
            sys.stdout.buffer.write(render(to_dot(hood), "svg"))
            return
    if as_json:
        echo_json(hood)
        return
    for ring in range(hops + 1):
        members = [v for v in hood.vertices if v.ring == ring]
        if members:
            click.echo(f"ring {ring}:")
            for v in members:
                click.echo(f"  {v.label}:{v.id}  {v.title or ''}")
    click.echo(f"{len(hood.vertices)} vertices, {len(hood.edges)} edges"
               + (" (cut short)" if hood.truncated else ""), err=True)  # fmt: skip
    if svg_file:
        click.echo(f"drawn to {svg_file}", err=True)
