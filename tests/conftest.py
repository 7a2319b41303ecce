"""Shared fixtures: the real PostgreSQL 17 server with pgvector and AGE, and blank databases.

The server comes from ``GARAGE_TEST_DATABASE_URL`` when set (what `.ci/run` exports), else from
``scripts/pg-age start``, which provisions it once and reuses it afterwards.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def pg_server_url() -> str:
    url = os.environ.get("GARAGE_TEST_DATABASE_URL")
    if not url:
        result = subprocess.run(
            [str(ROOT / "scripts" / "pg-age"), "start"],
            capture_output=True,
            text=True,
            timeout=900,
        )
        if result.returncode != 0:
            pytest.fail(f"scripts/pg-age start failed:\n{result.stderr}")
        url = result.stdout.strip().splitlines()[-1]
    with psycopg.connect(url, autocommit=True) as conn:
        names = {row[0] for row in conn.execute("SELECT name FROM pg_available_extensions")}
    missing = {"vector", "age"} - names
    if missing:
        pytest.fail(f"the test server at {url} lacks {sorted(missing)}")
    return url


def _with_database(url: str, name: str) -> str:
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(url)
    params["dbname"] = name
    return make_conninfo(**params)


@pytest.fixture
def blank_db(pg_server_url: str) -> Iterator[str]:
    """A new, empty database on the test server, dropped afterwards."""
    name = f"garage_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield _with_database(pg_server_url, name)
    finally:
        with psycopg.connect(pg_server_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@pytest.fixture
def migrated_db(blank_db: str) -> str:
    from garage.db.migrate import ensure_migrated

    ensure_migrated(blank_db)
    return blank_db


@pytest.fixture
def second_db(pg_server_url: str) -> Any:
    """Another blank, migrated database: the uninterrupted reference."""
    from garage.db.migrate import ensure_migrated

    name = f"garage_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = _with_database(pg_server_url, name)
    ensure_migrated(url)
    yield url
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


@pytest.fixture
def other_account() -> Iterator[str]:
    """A throwaway local account, deleted afterwards (creating one needs root): who the access
    tests try to connect as."""
    if os.geteuid() != 0:
        pytest.skip("creating another local account needs root")
    name = f"garage-probe-{uuid.uuid4().hex[:8]}"
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
        check=True, capture_output=True,
    )  # fmt: skip
    try:
        yield name
    finally:
        subprocess.run(["userdel", name], capture_output=True)


@pytest.fixture
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of its own: config file, data dir and Dagster home all under tmp_path."""
    monkeypatch.setenv("GARAGE_CONFIG", str(tmp_path / "garage.json"))
    monkeypatch.setenv("GARAGE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    for variable in ("GARAGE_DATABASE_URL", "GARAGE_OLLAMA_HOST", "GARAGE_LLAMA_HOST"):
        monkeypatch.delenv(variable, raising=False)
    return tmp_path


# -- local model servers -------------------------------------------------------------------


@dataclass(frozen=True)
class LlamaServers:
    """The real llama-server processes `scripts/llama start` runs on loopback."""

    embed_url: str
    chat_url: str
    embed2_url: str
    embed_model: str = "all-minilm-l6-v2"
    embed_dimensions: int = 384
    chat_model: str = "smollm2-135m-instruct"
    embed2_model: str = "smollm2-135m-embed"
    embed2_dimensions: int = 576


@pytest.fixture(scope="session")
def llama() -> Iterator[LlamaServers]:
    """The local llama-servers: those `scripts/test` started (named in the environment), or
    started here with `scripts/llama start` and stopped again when the session ends."""
    keys = (
        "GARAGE_TEST_LLAMA_EMBED_URL",
        "GARAGE_TEST_LLAMA_CHAT_URL",
        "GARAGE_TEST_LLAMA_EMBED2_URL",
    )
    urls = {key: os.environ.get(key) for key in keys}
    started_here = False
    if not all(urls.values()):
        script = ["bash", str(ROOT / "scripts" / "llama")]
        running = subprocess.run([*script, "status"], capture_output=True, cwd=ROOT).returncode == 0
        result = subprocess.run(
            [*script, "start"], capture_output=True, text=True, timeout=1800, cwd=ROOT
        )
        if result.returncode != 0:
            pytest.fail(f"scripts/llama start failed:\n{result.stderr[-3000:]}")
        started_here = not running
        for line in result.stdout.splitlines():
            key, _, value = line.partition("=")
            if key in urls:
                urls[key] = value.strip()
    yield LlamaServers(
        embed_url=str(urls["GARAGE_TEST_LLAMA_EMBED_URL"]),
        chat_url=str(urls["GARAGE_TEST_LLAMA_CHAT_URL"]),
        embed2_url=str(urls["GARAGE_TEST_LLAMA_EMBED2_URL"]),
    )
    if started_here:
        subprocess.run(["bash", str(ROOT / "scripts" / "llama"), "stop"], cwd=ROOT, timeout=60)


def llama_config(llama: LlamaServers, *, two_models: bool = False, **sections: Any) -> Any:
    """A GarageConfig whose models are the real local servers: MiniLM as the default embedding
    model (plus pooled SmolLM2 with ``two_models``), SmolLM2 as the chat model."""
    from garage.config import GarageConfig

    models = [
        {
            "name": llama.embed_model,
            "provider": "llama_server",
            "host": llama.embed_url,
            "model": llama.embed_model,
            "dimensions": llama.embed_dimensions,
        }
    ]
    if two_models:
        models.append(
            {
                "name": llama.embed2_model,
                "provider": "llama_server",
                "host": llama.embed2_url,
                "model": llama.embed2_model,
                "dimensions": llama.embed2_dimensions,
            }
        )
    raw: dict[str, Any] = {
        "embedding": {"default": llama.embed_model, "models": models},
        "inference": {
            "provider": "llama_server",
            "model": llama.chat_model,
            "llama_host": llama.chat_url,
        },
    }
    raw.update(sections)
    return GarageConfig.model_validate(raw)
