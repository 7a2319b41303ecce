"""The migrations are package data: found inside the installed package, and shipped in a
wheel by pyproject's package-data, so an install that is not a checkout can migrate."""

from __future__ import annotations

import fnmatch
import os
import tomllib
from pathlib import Path

import pytest

import garage
from garage.db.migrate import discover, schema_dir

ROOT = Path(__file__).resolve().parents[2]


def test_the_schema_is_found_inside_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GARAGE_SCHEMA_DIR", raising=False)
    assert schema_dir() == Path(garage.__file__).parent / "schema"
    assert [m.version for m in discover()][:2] == [1, 2]


def test_every_migration_is_shipped_in_the_wheel() -> None:
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = settings["tool"]["setuptools"]["package-data"]["garage"]
    package = Path(garage.__file__).parent
    files = [os.path.relpath(path, package) for path in (package / "schema").iterdir()]
    assert files and all(any(fnmatch.fnmatch(f, p) for p in patterns) for f in files)
