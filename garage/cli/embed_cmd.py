"""``garage embed`` and ``garage models``: the embedding backfill and the model registry."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict

import click

from garage.cli.common import (
    GarageContext,
    ProgressBars,
    echo_json,
    no_wait_option,
    user_errors,
    waiting,
)
from garage.db import connect, resolve_url
from garage.db.migrate import ensure_migrated


@contextmanager
def inference_errors() -> Iterator[None]:
    """Model-server and registry problems as messages, not tracebacks."""
    from garage.embed import RegistryError
    from garage.inference import InferenceError

    try:
        yield
    except (InferenceError, RegistryError) as error:
        raise click.ClickException(str(error)) from None


@click.command("embed")
@click.argument("source", required=False)
@click.option(
    "--model", "models", multiple=True, help="Only this model (repeatable; default: all)."
)
@click.option("--limit", type=click.IntRange(min=1), help="Embed at most N chunks per model.")
@click.option("--json", "as_json", is_flag=True, help="Print the reports as JSON.")
@no_wait_option
@click.pass_obj
def embed_cmd(
    obj: GarageContext,
    source: str | None,
    models: tuple[str, ...],
    limit: int | None,
    as_json: bool,
    no_wait: bool,
) -> None:
    """Give every chunk (of SOURCE, default all) a vector under each configured model.

    Resumable: what is already embedded is skipped, and an interrupted run loses at most one
    batch. Image chunks are skipped by text models. Holds the writer lock of the source (of
    every source, without SOURCE); exit status 75 with --no-wait when another run holds one.
    """
    from garage.config import data_dir
    from garage.embed import embed
    from garage.inference import EgressGuard, InferenceClient
    from garage.inference.egress import note_allowlist
    from garage.stopping import stop_on_sigterm

    config = obj.config()
    if source is not None:
        try:
            config.source(source)
        except KeyError as error:
            raise click.ClickException(str(error.args[0])) from None
    with user_errors(), inference_errors(), stop_on_sigterm() as stop:
        url = resolve_url(config)
        ensure_migrated(url)
        guard = EgressGuard.from_config(config)
        note_allowlist(guard, data_dir(config) / "egress-allowlist.json")
        client = InferenceClient(guard, timeout=config.inference.timeout_seconds)
        with (
            connect(url, autocommit=True) as conn,
            client,
            ProgressBars(" chunks", quiet=as_json) as bars,
        ):
            reports = embed(
                conn,
                client,
                config,
                model_names=list(models) or None,
                source=source,
                limit=limit,
                progress=bars.of("embed"),
                stop=stop,
                waiting=waiting(no_wait, stop),
            )
    if as_json:
        echo_json([asdict(r) | {"chunks_per_second": r.chunks_per_second} for r in reports])
    else:
        for report in reports:
            click.echo(report.summary())
    if stop.requested:
        # Stopped between batches by SIGTERM: what was embedded is kept, the rest waits.
        sys.exit(143)


@click.group("models")
def models_group() -> None:
    """The embedding models and their vector tables."""


@models_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def models_list(obj: GarageContext, as_json: bool) -> None:
    """Registered embedding models with their vector counts and what is still pending."""
    from garage.embed import register_models
    from garage.embed.backfill import pending_count
    from garage.embed.registry import vector_count

    config = obj.config()
    rows = []
    with user_errors(), inference_errors():
        url = resolve_url(config)
        ensure_migrated(url)
        with connect(url, autocommit=True) as conn:
            for model in register_models(conn, config):
                rows.append(
                    asdict(model)
                    | {
                        "table": model.table,
                        "vectors": vector_count(conn, model),
                        "pending": pending_count(conn, model),
                    }
                )
    if as_json:
        echo_json(rows)
        return
    for row in rows:
        default = " (default)" if row["is_default"] else ""
        click.echo(
            f"{row['name']}{default}: {row['provider']} {row['model_id']} at {row['host']}, "
            f"{row['dimensions']} dims, {row['modality']}; {row['vectors']} vectors in "
            f"{row['table']}, {row['pending']} pending"
        )


@models_group.command("remove")
@click.argument("name")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@no_wait_option
@click.pass_obj
def models_remove(obj: GarageContext, name: str, yes: bool, no_wait: bool) -> None:
    """Drop a model's vector table and its registry entry.

    Its vectors are every source's: it waits for every run writing a source or the corpus
    (75 with --no-wait while one does)."""
    from garage.embed.registry import remove_model

    config = obj.config()
    with user_errors(), inference_errors():
        url = resolve_url(config)
        ensure_migrated(url)
        if not yes:
            click.confirm(f"Drop every vector of {name}?", abort=True)
        with connect(url, autocommit=True) as conn:
            model = remove_model(conn, name, waiting(no_wait))
    click.echo(f"removed {model.name} and {model.table}")
