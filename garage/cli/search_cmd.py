"""``garage search``: the command-line front door to hybrid search."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime

import click

from garage.cli.common import GarageContext, echo_json, user_errors
from garage.db import connect, resolve_url
from garage.db.migrate import ensure_migrated


def _when(option: str, value: str | None, *, end_of_day: bool) -> datetime | None:
    """``--since``/``--until`` read as every front door reads a date filter."""
    from garage.search.filters import parse_date

    try:
        return parse_date(option, value, end_of_day=end_of_day)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None


@click.command("search")
@click.argument("text", nargs=-1, required=True)
@click.option(
    "--mode",
    type=click.Choice(["hybrid", "vector", "keyword"]),
    default="hybrid",
    show_default=True,
    help="Fuse both engines, or run one.",
)
@click.option("--source", "sources", multiple=True, help="Only this source (repeatable).")
@click.option(
    "--class",
    "classes",
    multiple=True,
    type=click.Choice(["document", "code", "communication"]),
    help="Only this corpus class (repeatable).",
)
@click.option("--author", "authors", multiple=True, help="Author name or address (repeatable).")
@click.option("--since", help="Dated on or after (YYYY-MM-DD or ISO 8601; UTC if no zone).")
@click.option("--until", help="Dated on or before (a bare date includes the whole day).")
@click.option(
    "--direction",
    type=click.Choice(["sent", "received"]),
    help="Messages only: sent by you, or received.",
)
@click.option("--sender", help="Messages only: part of the sender's name or address.")
@click.option("--model", help="Embedding model (default: the registry's default).")
@click.option(
    "--limit", type=click.IntRange(1, 100), default=10, show_default=True, help="Hits to show."
)
@click.option("--json", "as_json", is_flag=True, help="Print the response as JSON.")
@click.pass_obj
def search_cmd(
    obj: GarageContext,
    text: tuple[str, ...],
    mode: str,
    sources: tuple[str, ...],
    classes: tuple[str, ...],
    authors: tuple[str, ...],
    since: str | None,
    until: str | None,
    direction: str | None,
    sender: str | None,
    model: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """Search the index for TEXT: vectors and BM25, fused (search.fusion: rrf or convex).

    With no embedding model reachable, runs keyword-only and says so.
    """
    from garage.search import SearchError, SearchQuery, search

    config = obj.config()
    query = SearchQuery(
        text=" ".join(text),
        limit=limit,
        mode=mode,  # type: ignore[arg-type]
        sources=sources,
        corpus_classes=classes,  # type: ignore[arg-type]
        authors=authors,
        date_from=_when("--since", since, end_of_day=False),
        date_to=_when("--until", until, end_of_day=True),
        direction=direction,  # type: ignore[arg-type]
        sender=sender,
        model=model,
    )
    with user_errors():
        url = resolve_url(config)
        ensure_migrated(url)
        with connect(url, autocommit=True) as conn:
            try:
                response = search(conn, config, query)
            except SearchError as error:
                raise click.ClickException(str(error)) from None
    if as_json:
        echo_json(asdict(response))
        return
    if response.degraded:
        click.echo(f"note: {response.degraded}", err=True)
    if response.partial:
        click.echo(response.partial, err=True)
    if not response.hits:
        click.echo(f"no hits ({response.mode}, {response.took_ms:.0f} ms)")
        return
    for number, hit in enumerate(response.hits, 1):
        ranks = ", ".join(
            f"{name} #{rank}"
            for name, rank in (("vector", hit.vector_rank), ("keyword", hit.keyword_rank))
            if rank is not None
        )
        where = f"{hit.source} · {hit.corpus_class}" + (f" · {hit.author}" if hit.author else "")
        click.echo(click.style(f"{number}. {hit.title or hit.uri}", bold=True))
        click.echo(f"   {hit.uri} [{hit.start_offset}:{hit.end_offset}]")
        if hit.fact_id is not None:
            click.echo(
                f"   fact #{hit.fact_id} ({hit.fact_class}, prompt {hit.fact_prompt}) of document "
                f"{hit.document_id}, span {hit.start_offset}-{hit.end_offset}"
            )
        click.echo(f"   {where} · score {hit.score:.4f} ({ranks})")
        excerpt = " ".join(hit.excerpt.split())
        click.echo(f"   {excerpt[:300]}{'…' if len(excerpt) > 300 else ''}")
    click.echo(f"{len(response.hits)} hits ({response.mode}, {response.took_ms:.0f} ms)")
