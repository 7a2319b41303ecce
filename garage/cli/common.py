"""What every subcommand shares: the config it runs with, and how errors and JSON are printed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, is_dataclass
from pathlib import Path

import click

from garage.config import ConfigError, GarageConfig, config_path, load_config
from garage.db import DatabaseError


class GarageContext:
    def __init__(self, config_file: str | None):
        self.path = Path(config_file).expanduser() if config_file else config_path()

    def config(self, *, check_roots: bool = False, overrides: bool = True) -> GarageConfig:
        with user_errors():
            return load_config(self.path, env=None if overrides else {}, check_roots=check_roots)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn the errors a person can act on into a message and exit status 1, not a traceback."""
    try:
        yield
    except (ConfigError, DatabaseError) as error:
        raise click.ClickException(str(error)) from None


def echo_json(value: object) -> None:
    def default(obj: object) -> object:
        if is_dataclass(obj) and not isinstance(obj, type):
            return asdict(obj)
        if isinstance(obj, Path):
            return str(obj)
        raise TypeError(f"cannot serialise {type(obj).__name__}")

    click.echo(json.dumps(value, indent=2, default=default, sort_keys=False))
