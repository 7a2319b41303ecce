"""The ``garage`` command lists every command, the Dagster layer's included: those come through
the ``garage.cli`` entry point, so an install that lost it would lose ``garage up``."""

from __future__ import annotations

from click.testing import CliRunner

from garage.cli import cli
from garage.cli.common import extensions

EVERY_COMMAND = {
    "ask", "cluster-facts", "config", "dagster", "db", "down", "embed", "enrich-facts",
    "eval", "facts", "graph", "ingest", "mcp", "mcp-serve", "models", "search", "sources",
    "status", "up",
}  # fmt: skip


def test_the_group_holds_every_command() -> None:
    import click

    assert set(cli.list_commands(click.Context(cli))) >= EVERY_COMMAND


def test_help_lists_every_command() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    listed = {line.split()[0] for line in result.output.split("Commands:")[1].splitlines() if line}
    assert listed >= EVERY_COMMAND


def test_the_dagster_layer_hears_of_source_changes() -> None:
    from garage_assets.commands import source_partition

    assert source_partition in extensions("garage.sources")
