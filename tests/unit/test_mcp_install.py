"""`garage mcp install`: the snippet for each client, and writing it only with consent,
merged into the client's file with everything else kept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from garage.cli import cli
from garage.mcp import install


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    monkeypatch.delenv("GARAGE_DATA_DIR", raising=False)
    monkeypatch.delenv("GARAGE_DATABASE_URL", raising=False)
    (tmp_path / "garage.json").write_text("{}")
    return tmp_path / "home"


def _run(tmp_path: Path, *args: str, input: str | None = None):  # type: ignore[no-untyped-def]
    config = tmp_path / "garage.json"
    return CliRunner().invoke(cli, ["--config", str(config), "mcp", "install", *args], input=input)


@pytest.mark.parametrize(
    ("client", "key", "typed"),
    [("claude-desktop", "mcpServers", False), ("cursor", "mcpServers", False),
     ("windsurf", "mcpServers", False), ("vscode", "servers", True),
     ("claude-code", "mcpServers", True)],
)  # fmt: skip
def test_prints_the_snippet_and_writes_nothing(
    home: Path, tmp_path: Path, client: str, key: str, typed: bool
) -> None:
    result = _run(tmp_path, "--client", client)
    assert result.exit_code == 0, result.output
    snippet = json.loads(result.stdout)
    entry = snippet[key]["garage"]
    assert entry["command"].endswith("garage-mcp") and entry["args"] == []
    assert entry["env"] == {"GARAGE_CONFIG": str((tmp_path / "garage.json").resolve())}
    assert ("type" in entry) == typed
    assert not install.CLIENTS[client].path(home).exists()


def test_claude_desktop_paths_per_platform(tmp_path: Path) -> None:
    client = install.CLIENTS["claude-desktop"]
    mac = client.path(tmp_path, "darwin")
    assert mac == tmp_path / "Library/Application Support/Claude/claude_desktop_config.json"
    assert client.path(tmp_path, "linux").parts[-2:] == ("Claude", "claude_desktop_config.json")


def test_write_merges_after_consent_and_keeps_a_backup(home: Path, tmp_path: Path) -> None:
    target = home / ".cursor" / "mcp.json"
    target.parent.mkdir(parents=True)
    original = {"mcpServers": {"other": {"command": "other-mcp"}}, "theme": "dark"}
    target.write_text(json.dumps(original))

    refused = _run(tmp_path, "--client", "cursor", "--write", input="n\n")
    assert refused.exit_code == 1 and json.loads(target.read_text()) == original

    result = _run(tmp_path, "--client", "cursor", "--write", input="y\n")
    assert result.exit_code == 0, result.output
    written = json.loads(target.read_text())
    assert written["theme"] == "dark" and written["mcpServers"]["other"] == {"command": "other-mcp"}
    assert written["mcpServers"]["garage"]["command"].endswith("garage-mcp")
    assert json.loads((target.parent / "mcp.json.bak").read_text()) == original

    again = _run(tmp_path, "--client", "cursor", "--write", "--yes")
    assert again.exit_code == 0 and json.loads(target.read_text()) == written


def test_a_broken_client_file_is_left_alone(home: Path, tmp_path: Path) -> None:
    target = home / ".codeium" / "windsurf" / "mcp_config.json"
    target.parent.mkdir(parents=True)
    target.write_text("{not json")
    result = _run(tmp_path, "--client", "windsurf", "--write", "--yes")
    assert result.exit_code == 1 and "is not valid JSON" in result.output
    assert target.read_text() == "{not json"
    target.write_text('{"mcpServers": []}')
    result = _run(tmp_path, "--client", "windsurf", "--write", "--yes")
    assert result.exit_code == 1 and "'mcpServers' is not an object" in result.output


def test_unknown_client_is_refused(home: Path, tmp_path: Path) -> None:
    result = _run(tmp_path, "--client", "notepad")
    assert result.exit_code == 2 and "notepad" in result.output


@pytest.mark.parametrize(
    ("client", "key", "url_key", "typed"),
    [("cursor", "mcpServers", "url", False), ("windsurf", "mcpServers", "serverUrl", False),
     ("vscode", "servers", "url", True), ("claude-code", "mcpServers", "url", True)],
)  # fmt: skip
def test_http_snippet_carries_the_owners_token(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, client: str, key: str,
    url_key: str, typed: bool,
) -> None:  # fmt: skip
    monkeypatch.setenv("GARAGE_DATA_DIR", str(tmp_path / "data"))
    result = _run(tmp_path, "--client", client, "--http", "--url", "http://127.0.0.1:9000/mcp")
    assert result.exit_code == 0, result.output
    entry = json.loads(result.stdout)[key]["garage"]
    token = (tmp_path / "data" / "secrets" / "mcp.token").read_text().strip()
    assert entry[url_key] == "http://127.0.0.1:9000/mcp"
    assert entry["headers"] == {"Authorization": f"Bearer {token}"}
    assert (entry.get("type") == "http") == typed and "command" not in entry
    # The same token the next time: made once, not per snippet.
    again = _run(tmp_path, "--client", client, "--http", "--url", "http://127.0.0.1:9000/mcp")
    assert json.loads(again.stdout)[key]["garage"]["headers"] == entry["headers"]


def test_http_snippet_written_owner_only(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GARAGE_DATA_DIR", str(tmp_path / "data"))
    target = home / ".cursor" / "mcp.json"
    target.parent.mkdir(parents=True)
    target.write_text('{"mcpServers": {}}')
    target.chmod(0o644)
    result = _run(tmp_path, "--client", "cursor", "--http", "--write", "--yes")
    assert result.exit_code == 0, result.output
    assert target.stat().st_mode & 0o777 == 0o600
    assert target.with_name("mcp.json.bak").stat().st_mode & 0o777 == 0o600
    assert (
        "Bearer "
        in json.loads(target.read_text())["mcpServers"]["garage"]["headers"]["Authorization"]
    )


def test_http_snippet_for_a_client_whose_file_cannot_carry_a_token(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GARAGE_DATA_DIR", str(tmp_path / "data"))
    result = _run(tmp_path, "--client", "claude-desktop", "--http")
    assert result.exit_code == 1
    assert "without --http" in result.output and "needs no token" in result.output
