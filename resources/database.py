"""The database resource: the Garage config, the server it names, a migrated schema."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
from pydantic import PrivateAttr

from garage.config import GarageConfig, config_path, load_config
from garage.db import connect, resolve_url
from garage.db.connect import Conn
from garage.db.migrate import ensure_migrated


class DatabaseResource(dg.ConfigurableResource):
    """Garage's PostgreSQL. Empty fields mean: the config file, and the server it names (the
    embedded default when it names none)."""

    config_file: str | None = None
    database_url: str | None = None

    _url: str | None = PrivateAttr(default=None)

    def garage_config(self) -> GarageConfig:
        path = Path(self.config_file).expanduser() if self.config_file else config_path()
        config = load_config(path)
        if self.database_url:
            config = config.model_copy(
                update={"database": config.database.model_copy(update={"url": self.database_url})}
            )
        return config

    def url(self) -> str:
        # Resolve and migrate once per run process, not once per asset.
        if self._url is None:
            url = resolve_url(self.garage_config())
            ensure_migrated(url)
            self._url = url
        return self._url

    @contextmanager
    def connection(self) -> Iterator[Conn]:
        with connect(self.url()) as conn:
            yield conn
