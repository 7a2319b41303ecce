"""What every subcommand shares: the config it runs with, and how errors and JSON are printed."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, is_dataclass
from datetime import datetime
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import click

from garage.config import ConfigError, GarageConfig, config_path, load_config
from garage.db import DatabaseError
from garage.locks import Busy, Waiting
from garage.progress import Progress
from garage.stopping import StopSignal

# Another run is writing the same source (or the corpus) and --no-wait was given: try later.
# 75 is EX_TEMPFAIL in sysexits.h, "a temporary failure; the user is invited to retry".
EXIT_BUSY = 75
EXIT_STOPPED = 143  # stopped by SIGTERM (128 + 15): the run is recorded incomplete

F = Callable[..., object]


def no_wait_option(command: F) -> F:
    """``--no-wait`` for the commands that write a source or the corpus."""
    return click.option(
        "--no-wait",
        is_flag=True,
        help=(
            "When another run is writing the same source, exit at once with status 75 "
            "instead of waiting for it."
        ),
    )(command)


def waiting(no_wait: bool, stop: StopSignal | None = None) -> Waiting:
    """How a command waits for a source another run is writing: saying so on stderr."""
    return Waiting(
        wait=not no_wait, notify=lambda line: click.echo(f"garage: {line}", err=True), stop=stop
    )


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
    except Busy as error:
        click.echo(f"Error: {error}", err=True)
        sys.exit(EXIT_STOPPED if error.stopped else EXIT_BUSY)


def echo_json(value: object) -> None:
    def default(obj: object) -> object:
        if is_dataclass(obj) and not isinstance(obj, type):
            return asdict(obj)
        if isinstance(obj, Path):
            return str(obj)
        if isinstance(obj, datetime):
            return obj.isoformat()
        raise TypeError(f"cannot serialise {type(obj).__name__}")

    click.echo(json.dumps(value, indent=2, default=default, sort_keys=False))


class ProgressBars:
    """One progress bar per stage on stderr, on a terminal only (never under ``--json`` or in
    a pipe, where it would be noise in what another program reads).

    Every bar shows its rate (items/s); once the run says how many items it expects, the bar
    shows how far it is and the time left at its rate too."""

    # The rate behind the time left: mostly the run's average, a little the last updates',
    # so one slow batch does not swing the estimate (tqdm's default, 0.3, follows it closely).
    SMOOTHING = 0.1

    def __init__(self, unit: str, *, quiet: bool):
        self.unit = unit
        self.quiet = quiet or not sys.stderr.isatty()
        self.bars: dict[str, Any] = {}

    def __enter__(self) -> ProgressBars:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __call__(self, stage: str, done: int, expected: int = 0) -> None:
        """Count ``done`` more for ``stage`` (its bar opened on first use), and ``expected``
        more to do (fewer, when negative)."""
        if self.quiet:
            return
        if stage not in self.bars:
            from tqdm import tqdm

            self.bars[stage] = tqdm(
                desc=stage, unit=self.unit, leave=False, smoothing=self.SMOOTHING
            )
        bar = self.bars[stage]
        if expected:
            bar.total = max(0, (bar.total or 0) + expected)
        bar.update(done)
        if bar.total is not None and bar.n > bar.total:
            bar.total = bar.n  # more than expected came: the bar stays whole, not past it
        if expected:
            bar.refresh()

    def of(self, stage: str) -> Progress | None:
        """The counter of one stage, its bar shown at once; None when there is no terminal."""
        if self.quiet:
            return None
        self(stage, 0)

        def count(done: int, expected: int = 0) -> None:
            self(stage, done, expected)

        return count

    def note(self, stage: str, text: str) -> None:
        """A few words after a stage's counts (the file in hand, say)."""
        if stage in self.bars:
            self.bars[stage].set_postfix_str(text, refresh=False)

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()


def extensions(group: str) -> list[Any]:
    """What the installed packages registered under the entry-point ``group``, loaded.

    The layers above the library (the Dagster layer) add to the ``garage`` command this way:
    ``garage.cli`` entries take the click group and add their commands, ``garage.sources``
    entries are told when ``garage sources`` adds or removes a source. Installing the project
    (``pip install -e .``) records them."""
    return [entry.load() for entry in sorted(entry_points(group=group), key=lambda e: e.name)]
