"""The `garage` command end to end, against real files and the real test server."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest
from click.testing import CliRunner

from garage.cli import cli


@pytest.fixture
def runner(isolated_env: Path) -> CliRunner:
    return CliRunner()


def test_help_everywhere(runner: CliRunner) -> None:
    for args in ([], ["config"], ["sources"], ["db"], ["db", "status"], ["sources", "add"]):
        result = runner.invoke(cli, [*args, "--help"])
        assert result.exit_code == 0, result.output
        assert "Usage:" in result.output


def test_sources_add_list_remove_registers_partition(runner: CliRunner, isolated_env: Path) -> None:
    notes = isolated_env / "Notes"
    notes.mkdir()
    result = runner.invoke(cli, ["sources", "add", "notes", str(notes), "--exclude", "*.tmp"])
    assert result.exit_code == 0, result.output
    assert "partition registered" in result.output

    instance = dg.DagsterInstance.from_config(str(isolated_env / "dagster"))
    assert instance.get_dynamic_partitions("sources") == ["notes"]

    listed = runner.invoke(cli, ["sources", "list", "--json"])
    assert listed.exit_code == 0
    [source] = json.loads(listed.output)
    assert source["name"] == "notes" and source["roots"] == [str(notes.resolve())]
    assert source["exclude"] == ["*.tmp"] and source["corpus_class"] == "document"

    again = runner.invoke(cli, ["sources", "add", "notes", str(notes)])
    assert again.exit_code == 1 and "already exists" in again.output

    removed = runner.invoke(cli, ["sources", "remove", "notes"])
    assert removed.exit_code == 0, removed.output
    assert instance.get_dynamic_partitions("sources") == []
    assert json.loads(runner.invoke(cli, ["sources", "list", "--json"]).output) == []


def test_sources_add_refuses_missing_root_and_bad_name(
    runner: CliRunner, isolated_env: Path
) -> None:
    result = runner.invoke(cli, ["sources", "add", "notes", str(isolated_env / "gone")])
    assert result.exit_code == 1
    assert "does not exist" in result.output
    result = runner.invoke(cli, ["sources", "add", "bad name", str(isolated_env)])
    assert result.exit_code == 1 and "letters, digits" in result.output
    assert not (isolated_env / "garage.json").exists()


def test_mail_source_defaults_to_communication(runner: CliRunner, isolated_env: Path) -> None:
    result = runner.invoke(cli, ["sources", "add", "mail", str(isolated_env), "--kind", "mail"])
    assert result.exit_code == 0, result.output
    [source] = json.loads(runner.invoke(cli, ["sources", "list", "--json"]).output)
    assert source["corpus_class"] == "communication"


def test_config_commands(runner: CliRunner, isolated_env: Path) -> None:
    path = isolated_env / "garage.json"
    assert runner.invoke(cli, ["config", "path"]).output.strip() == str(path)
    assert "absent: defaults" in runner.invoke(cli, ["config", "validate"]).output
    path.write_text(json.dumps({"sources": [{"name": "x", "roots": ["/nonexistent-root"]}]}))
    result = runner.invoke(cli, ["config", "validate"])
    assert result.exit_code == 1
    assert f"{path}: invalid configuration" in result.output
    assert "sources[0:x].roots[0]: /nonexistent-root does not exist" in result.output
    path.write_text('{"database": {"url": 5}}')
    shown = runner.invoke(cli, ["config", "show"])
    assert shown.exit_code == 1 and "database.url" in shown.output


def test_db_migrate_and_status_against_the_age_server(
    runner: CliRunner, blank_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GARAGE_DATABASE_URL", blank_db)
    result = runner.invoke(cli, ["db", "migrate", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["applied"][0] == "001_core.sql" and report["graph"] == "created"
    status = json.loads(runner.invoke(cli, ["db", "status", "--json"]).output)
    assert status["mode"] == "external"
    assert status["server_version"].startswith("17")
    assert status["extensions"]["vector"]["installed"]
    assert status["extensions"]["age"]["installed"]
    assert status["migrations_applied"] == len(report["applied"])
    again = json.loads(runner.invoke(cli, ["db", "migrate", "--json"]).output)
    assert again["applied"] == [] and again["graph"] == "present"


def test_db_errors_are_clear(runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GARAGE_DATABASE_URL", "postgresql://nobody:secret@127.0.0.1:1/none")
    result = runner.invoke(cli, ["db", "migrate"])
    assert result.exit_code == 1
    assert (
        "cannot connect to PostgreSQL at postgresql://nobody:***@127.0.0.1:1/none" in result.output
    )
    assert "secret" not in result.output
