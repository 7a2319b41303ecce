"""The ``garage`` command: a click group whose subcommands live in one module each.

Commands of the layers above the library (the Dagster layer's ``garage up`` and ``garage
down``) are added through the ``garage.cli`` entry points (pyproject.toml): the library
names none of them.
"""

from __future__ import annotations

import logging
import sys

import click

from garage import __version__
from garage.cli.ask_cmd import ask_cmd
from garage.cli.common import GarageContext, extensions
from garage.cli.config_cmd import config_group
from garage.cli.db_cmd import db_group
from garage.cli.distilled_facts_cmd import cluster_facts_cmd
from garage.cli.embed_cmd import embed_cmd, models_group
from garage.cli.eval_cmd import eval_cmd
from garage.cli.facts_cmd import enrich_facts_cmd, facts_group
from garage.cli.graph_cmd import graph_group
from garage.cli.ingest_cmd import ingest_cmd
from garage.cli.mcp_cmd import mcp_group, mcp_serve_cmd
from garage.cli.search_cmd import search_cmd
from garage.cli.sources_cmd import sources_group
from garage.cli.status_cmd import status_cmd


class _Garage(click.Group):
    """The group, with the extensions' commands added the first time it is asked for one.

    Not at import: an extension's module imports ``garage.cli`` itself, and would find it
    half made."""

    _extended = False

    def _extend(self) -> None:
        if not self._extended:
            self._extended = True
            for register in extensions("garage.cli"):
                register(self)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        self._extend()
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._extend()
        return super().list_commands(ctx)


@click.group(cls=_Garage, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="garage")
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False),
    envvar="GARAGE_CONFIG",
    help="Configuration file (default ~/.garage.json).",
)
@click.option("-v", "--verbose", is_flag=True, help="Log what Garage is doing.")
@click.pass_context
def cli(ctx: click.Context, config_file: str | None, verbose: bool) -> None:
    """Garage: a private, local index of your files, mail and chats for AI clients."""
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    ctx.obj = GarageContext(config_file)


cli.add_command(config_group)
cli.add_command(sources_group)
cli.add_command(status_cmd)
cli.add_command(db_group)
cli.add_command(ingest_cmd)
cli.add_command(embed_cmd)
cli.add_command(models_group)
cli.add_command(ask_cmd)
cli.add_command(mcp_serve_cmd)
cli.add_command(mcp_group)
cli.add_command(search_cmd)
cli.add_command(eval_cmd)
cli.add_command(enrich_facts_cmd)
cli.add_command(facts_group)
cli.add_command(cluster_facts_cmd)
cli.add_command(graph_group)


def main() -> None:
    try:
        cli(standalone_mode=True)
    except KeyboardInterrupt:  # pragma: no cover - interactive
        click.echo("interrupted", err=True)
        sys.exit(130)
