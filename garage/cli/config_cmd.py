"""``garage config path|show|validate``."""

from __future__ import annotations

import click

from garage.cli.common import GarageContext, echo_json


@click.group("config")
def config_group() -> None:
    """Inspect and check the configuration file."""


@config_group.command("path")
@click.pass_obj
def config_path_cmd(obj: GarageContext) -> None:
    """Print the path of the configuration file in use."""
    click.echo(str(obj.path))


@config_group.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the default is also JSON).")
@click.pass_obj
def config_show(obj: GarageContext, as_json: bool) -> None:
    """Print the effective configuration: the file, defaults filled in, environment applied."""
    config = obj.config()
    echo_json(config.model_dump(mode="json"))


@config_group.command("validate")
@click.pass_obj
def config_validate(obj: GarageContext) -> None:
    """Check the file: unknown keys, wrong types, missing source roots."""
    config = obj.config(check_roots=True)
    where = str(obj.path) if obj.path.exists() else f"{obj.path} (absent: defaults)"
    click.echo(f"{where}: valid, {len(config.sources)} source(s)")
