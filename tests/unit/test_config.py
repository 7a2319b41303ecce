"""The config file: defaults, overrides, and clear errors for real broken files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from garage.config import ConfigError, config_path, load_config, save_config
from garage.config.model import SourceConfig


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_missing_file_is_the_default(tmp_path: Path) -> None:
    config = load_config(tmp_path / "absent.json", env={})
    assert config.sources == []
    assert config.database.url is None
    assert [m.name for m in config.embedding.models] == ["bge-m3", "nomic-embed-text"]
    assert config.embedding.models[0].dimensions == 1024
    assert config.limits.max_chunks_per_document == 2000


def test_path_comes_from_garage_config(tmp_path: Path) -> None:
    assert config_path({"GARAGE_CONFIG": str(tmp_path / "x.json")}) == tmp_path / "x.json"
    assert config_path({}) == Path("~/.garage.json").expanduser()


def test_environment_overrides_url_and_hosts(tmp_path: Path) -> None:
    path = write(tmp_path / "g.json", json.dumps({"database": {"url": "postgresql://file/db"}}))
    env = {
        "GARAGE_DATABASE_URL": "postgresql://env/db",
        "GARAGE_OLLAMA_HOST": "http://127.0.0.1:9999",
    }
    config = load_config(path, env=env)
    assert config.database.url == "postgresql://env/db"
    assert config.inference.ollama_host == "http://127.0.0.1:9999"
    assert load_config(path, env={}).database.url == "postgresql://file/db"


def test_unknown_key_names_field_and_file(tmp_path: Path) -> None:
    path = write(tmp_path / "g.json", json.dumps({"limits": {"max_chunk_per_document": 5}}))
    with pytest.raises(ConfigError) as error:
        load_config(path, env={})
    message = str(error.value)
    assert str(path) in message
    assert "limits.max_chunk_per_document: unknown key" in message


def test_unknown_top_level_section(tmp_path: Path) -> None:
    path = write(tmp_path / "g.json", '{"sorces": []}')
    with pytest.raises(ConfigError, match=r"sorces: unknown key"):
        load_config(path, env={})


def test_wrong_type_names_the_source(tmp_path: Path) -> None:
    raw = {"sources": [{"name": "notes", "roots": "~/Notes"}]}
    path = write(tmp_path / "g.json", json.dumps(raw))
    with pytest.raises(
        ConfigError, match=r"sources\[0:notes\]\.roots: Input should be a valid list"
    ):
        load_config(path, env={})


def test_invalid_json_gives_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path / "g.json", '{\n  "sources": [\n    {"name": "a",}\n  ]\n}\n')
    with pytest.raises(ConfigError, match=r"not valid JSON at line 3, column"):
        load_config(path, env={})


def test_top_level_array_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "g.json", "[]")
    with pytest.raises(ConfigError, match="top level must be a JSON object"):
        load_config(path, env={})


def test_binary_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "g.json"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")
    with pytest.raises(ConfigError, match="cannot read the file"):
        load_config(path, env={})


def test_missing_source_root_is_reported_when_checked(tmp_path: Path) -> None:
    raw = {"sources": [{"name": "notes", "roots": [str(tmp_path / "nowhere")]}]}
    path = write(tmp_path / "g.json", json.dumps(raw))
    load_config(path, env={})  # other commands still run while a volume is unmounted
    with pytest.raises(ConfigError) as error:
        load_config(path, env={}, check_roots=True)
    assert "sources[0:notes].roots[0]" in str(error.value)
    assert "does not exist" in str(error.value)


def test_mail_source_must_be_communication(tmp_path: Path) -> None:
    raw = {"sources": [{"name": "mail", "kind": "mail", "roots": ["/"]}]}
    path = write(tmp_path / "g.json", json.dumps(raw))
    with pytest.raises(ConfigError, match="corpus_class 'communication'"):
        load_config(path, env={})


def test_duplicate_source_names_and_bad_default_model(tmp_path: Path) -> None:
    raw = {
        "sources": [{"name": "a", "roots": ["/"]}, {"name": "a", "roots": ["/tmp"]}],
    }
    with pytest.raises(ConfigError, match="source names must be unique: a"):
        load_config(write(tmp_path / "g.json", json.dumps(raw)), env={})
    raw = {"embedding": {"default": "missing"}}
    with pytest.raises(ConfigError, match="default model 'missing'"):
        load_config(write(tmp_path / "h.json", json.dumps(raw)), env={})


def test_source_name_must_be_plain(tmp_path: Path) -> None:
    raw = {"sources": [{"name": "../etc", "roots": ["/"]}]}
    with pytest.raises(ConfigError, match=r"sources\[0:\.\./etc\]\.name"):
        load_config(write(tmp_path / "g.json", json.dumps(raw)), env={})


def test_every_error_is_listed_at_once(tmp_path: Path) -> None:
    raw = {"limits": {"max_chunks_per_document": -1}, "identity": {"self_name": 3}}
    with pytest.raises(ConfigError) as error:
        load_config(write(tmp_path / "g.json", json.dumps(raw)), env={})
    assert "limits.max_chunks_per_document" in str(error.value)
    assert "identity.self_name" in str(error.value)


def test_save_round_trips_and_is_private(tmp_path: Path) -> None:
    path = tmp_path / "g.json"
    config = load_config(path, env={})
    source = SourceConfig(name="notes", roots=[str(tmp_path)], exclude=["*.tmp"])
    save_config(config.model_copy(update={"sources": [source]}), path)
    assert path.stat().st_mode & 0o777 == 0o600
    again = load_config(path, env={})
    assert again.sources == [source]
    assert json.loads(path.read_text())["sources"][0]["roots"] == [str(tmp_path)]


def test_broken_file_never_half_applies(tmp_path: Path) -> None:
    path = write(tmp_path / "g.json", json.dumps({"sources": [], "limits": {"bogus": 1}}))
    with pytest.raises(ConfigError):
        load_config(path, env={})
    # Nothing was written back: the broken file is still exactly what the person wrote.
    assert json.loads(path.read_text()) == {"sources": [], "limits": {"bogus": 1}}


def test_search_fusion_settings(tmp_path: Path) -> None:
    raw = {"search": {"fusion": "convex", "normalization": "minmax", "vector_weight": 0.7}}
    config = load_config(write(tmp_path / "g.json", json.dumps(raw)), env={})
    assert config.search.leg_weights == pytest.approx((0.7, 0.3))
    raw = {"search": {"keyword_weight": 0.25}}
    config = load_config(write(tmp_path / "g.json", json.dumps(raw)), env={})
    assert config.search.leg_weights == pytest.approx((0.75, 0.25))
    assert load_config(tmp_path / "absent.json", env={}).search.leg_weights == (0.5, 0.5)


@pytest.mark.parametrize(
    ("search", "message"),
    [
        ({"fusion": "borda"}, r"search\.fusion: Input should be 'rrf' or 'convex'"),
        ({"normalization": "rank"}, r"search\.normalization: Input should be 'zscore' or"),
        ({"vector_weight": 1.5}, r"search\.vector_weight: Input should be less than or equal"),
        ({"keyword_weight": -0.1}, r"search\.keyword_weight: Input should be greater than"),
        (
            {"vector_weight": 0.6, "keyword_weight": 0.6},
            r"search: Value error, vector_weight \(0\.6\) and keyword_weight \(0\.6\) must add",
        ),
    ],
)
def test_bad_fusion_settings_name_the_field(tmp_path: Path, search: dict, message: str) -> None:
    path = write(tmp_path / "g.json", json.dumps({"search": search}))
    with pytest.raises(ConfigError, match=message):
        load_config(path, env={})


def test_embedding_input_is_named_when_wrong(tmp_path: Path) -> None:
    model = {"name": "m", "model": "m", "dimensions": 8, "input": "summary"}
    raw = {"embedding": {"default": "m", "models": [model]}}
    with pytest.raises(ConfigError, match=r"embedding\.models\[0:m\]\.input: Input should be"):
        load_config(write(tmp_path / "g.json", json.dumps(raw)), env={})


# Cron expressions and Dagster's verdict on each (dagster._utils.schedules.is_valid_cron_string
# in the pinned Dagster): the config must agree, or a cron it accepts stops the definitions
# loading. Written out, so the table also says what Garage accepts on its own.
CRON_VERDICTS = {
    "0 * * * *": True,
    "*/15 * * * *": True,
    "15 9 * * mon-fri": True,
    "0 0 1,15 * *": True,
    "0 22-2 * * *": True,  # wraps past midnight
    "0 0 L * *": True,
    "0 0 1-L/2 * *": True,
    "0 0 * * 1#2": True,
    "0 0 * * L5": True,
    "0 0 * * 6#1,L5": True,
    "0 0 ? * *": True,
    "59 23 31 12 7": True,
    "0 0 29 2 *": True,
    "0 0 30,31 2 *": True,
    " 0 * * * * ": True,
    "@hourly": True,
    "@midnight": True,
    "99 * * * *": False,
    "0 24 * * *": False,
    "0 0 0 * *": False,
    "0 0 * 13 *": False,
    "0 0 * * 8": False,
    "*/0 * * * *": False,
    "0 0 30 2 *": False,
    "0 0 31 feb *": False,
    "0 0 30 2/11 *": False,
    "0 0 * * 1#6": False,
    "0 0 * * 1#2,5": False,
    "0 0 * * L": False,
    "0 0 L/2 * *": False,
    "? * * * *": False,
    "0 0 15W * *": False,
    "0 0 * * * *": False,
    "0 0 * *": False,
    "1,,2 * * * *": False,
    "*/5/2 * * * *": False,
    "@reboot": False,
    "every hour": False,
}


@pytest.mark.parametrize(("cron", "runs"), sorted(CRON_VERDICTS.items()))
def test_the_config_reads_cron_as_dagster_does(tmp_path: Path, cron: str, runs: bool) -> None:
    from dagster._utils.schedules import is_valid_cron_string

    assert is_valid_cron_string(cron) is runs  # the table is Dagster's own verdict
    path = write(tmp_path / "g.json", json.dumps({"schedule": {"incremental_cron": cron}}))
    if runs:
        assert load_config(path, env={}).schedule.incremental_cron == cron.strip()
    else:
        with pytest.raises(ConfigError, match=r"schedule\.incremental_cron: .*not a cron"):
            load_config(path, env={})


def test_an_impossible_minute_is_refused_naming_the_field(tmp_path: Path) -> None:
    path = write(tmp_path / "g.json", json.dumps({"schedule": {"incremental_cron": "99 * * * *"}}))
    with pytest.raises(ConfigError) as error:
        load_config(path, env={})
    assert "schedule.incremental_cron" in str(error.value)
    assert "minute '99' is not within 0-59" in str(error.value)
    path.write_text(json.dumps({"schedule": {"incremental_cron": "30 6 * * 1-5"}}))
    assert load_config(path, env={}).schedule.incremental_cron == "30 6 * * 1-5"


def test_the_schedule_timezone_must_exist(tmp_path: Path) -> None:
    path = write(tmp_path / "g.json", json.dumps({"schedule": {"timezone": "Mars/Olympus"}}))
    with pytest.raises(ConfigError, match=r"schedule\.timezone: .*'Mars/Olympus' is not an IANA"):
        load_config(path, env={})
    path.write_text(json.dumps({"schedule": {"timezone": "Europe/Lisbon"}}))
    assert load_config(path, env={}).schedule.timezone == "Europe/Lisbon"
