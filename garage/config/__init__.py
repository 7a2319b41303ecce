"""Loading, validating and saving Garage's one configuration file.

The file is ``~/.garage.json`` unless ``GARAGE_CONFIG`` names another. Environment variables
override the database URL and the model hosts (``GARAGE_DATABASE_URL``, ``GARAGE_OLLAMA_HOST``,
``GARAGE_LMSTUDIO_HOST``, ``GARAGE_LLAMA_HOST``). Loading is all or nothing: the whole file is
parsed and validated before anything uses it, so a broken config never half-applies.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from pydantic import ValidationError

from garage.config.model import (
    CorpusClass,
    EmbeddingModelConfig,
    GarageConfig,
    SourceConfig,
    SourceKind,
)

__all__ = [
    "ConfigError",
    "CorpusClass",
    "EmbeddingModelConfig",
    "GarageConfig",
    "SourceConfig",
    "SourceKind",
    "config_path",
    "dagster_home",
    "data_dir",
    "load_config",
    "save_config",
]

ENV_OVERRIDES = {
    "GARAGE_DATABASE_URL": ("database", "url"),
    "GARAGE_OLLAMA_HOST": ("inference", "ollama_host"),
    "GARAGE_LMSTUDIO_HOST": ("inference", "lmstudio_host"),
    "GARAGE_LLAMA_HOST": ("inference", "llama_host"),
}


class ConfigError(Exception):
    """A configuration problem a person can fix: names the file and the field."""


def config_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    return Path(env.get("GARAGE_CONFIG") or "~/.garage.json").expanduser()


def data_dir(config: GarageConfig, env: Mapping[str, str] | None = None) -> Path:
    """Where Garage keeps what it owns: the embedded cluster, the Dagster home, caches."""
    env = os.environ if env is None else env
    chosen = env.get("GARAGE_DATA_DIR") or config.database.data_dir
    if chosen:
        return Path(chosen).expanduser()
    base = env.get("XDG_DATA_HOME") or "~/.local/share"
    return Path(base).expanduser() / "garage"


def dagster_home(config: GarageConfig, env: Mapping[str, str] | None = None) -> Path:
    """The Dagster instance folder: ``DAGSTER_HOME`` when set, else one inside the data dir."""
    env = os.environ if env is None else env
    if env.get("DAGSTER_HOME"):
        return Path(env["DAGSTER_HOME"]).expanduser()
    return data_dir(config, env) / "dagster"


def _field_name(loc: tuple[object, ...], raw: object) -> str:
    """Render a pydantic location as a path a person can find, e.g. ``sources[1].roots``.

    A source's name is more useful than its index, so it is used when the raw file has one.
    """
    parts: list[str] = []
    node = raw
    for item in loc:
        if isinstance(item, int):
            label = f"[{item}]"
            if isinstance(node, list) and item < len(node):
                node = node[item]
                if isinstance(node, dict) and isinstance(node.get("name"), str):
                    label = f"[{item}:{node['name']}]"
            else:
                node = None
            parts.append(label)
        else:
            if isinstance(node, dict):
                node = node.get(item)
            else:
                node = None
            parts.append(("." if parts else "") + str(item))
    return "".join(parts) or "(top level)"


def _format_validation(path: Path, error: ValidationError, raw: object) -> str:
    lines = [f"{path}: invalid configuration"]
    for problem in error.errors():
        field = _field_name(tuple(problem["loc"]), raw)
        message = problem["msg"]
        if problem["type"] == "extra_forbidden":
            message = "unknown key"
        lines.append(f"  {field}: {message}")
    return "\n".join(lines)


def parse_config(raw: object, *, path: Path, env: Mapping[str, str] | None = None) -> GarageConfig:
    """Validate an already-decoded config document, apply environment overrides."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a JSON object")
    env = os.environ if env is None else env
    merged = json.loads(json.dumps(raw))  # a deep copy: overrides never touch the caller's dict
    for variable, (section, key) in ENV_OVERRIDES.items():
        value = env.get(variable)
        if value:
            target = merged.setdefault(section, {})
            if not isinstance(target, dict):
                break  # validation below reports the malformed section
            target[key] = value
    try:
        return GarageConfig.model_validate(merged)
    except ValidationError as error:
        raise ConfigError(_format_validation(path, error, merged)) from None


def load_config(
    path: Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    check_roots: bool = False,
) -> GarageConfig:
    """Load the configuration; a missing file is the empty default.

    ``check_roots`` also requires every enabled source's roots to exist — what ``config
    validate`` and ``sources add`` ask for. Ingest checks its own source's roots itself, so an
    unmounted volume stops only that source rather than every command.
    """
    path = config_path(env) if path is None else path
    if path.exists():
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise ConfigError(f"{path}: cannot read the file ({error})") from None
        try:
            raw = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as error:
            raise ConfigError(
                f"{path}: not valid JSON at line {error.lineno}, column {error.colno}: {error.msg}"
            ) from None
    else:
        raw = {}
    config = parse_config(raw, path=path, env=env)
    if check_roots:
        check_source_roots(config, path)
    return config


def check_source_roots(config: GarageConfig, path: Path) -> None:
    problems = []
    for index, source in enumerate(config.sources):
        if not source.enabled:
            continue
        for root_index, root in enumerate(source.root_paths()):
            if not root.exists():
                problems.append(
                    f"  sources[{index}:{source.name}].roots[{root_index}]: {root} does not exist"
                )
    if problems:
        raise ConfigError("\n".join([f"{path}: invalid configuration", *problems]))


def save_config(config: GarageConfig, path: Path | None = None) -> Path:
    """Write the config atomically: a crash leaves either the old file or the new one."""
    path = config_path() if path is None else path
    path.parent.mkdir(parents=True, exist_ok=True)
    document = config.model_dump(mode="json", exclude_defaults=True)
    # Sources are what a person edits most: always keep the list visible.
    document["sources"] = [
        source.model_dump(mode="json", exclude_defaults=True) | {"roots": source.roots}
        for source in config.sources
    ]
    fd, tmp = tempfile.mkstemp(prefix=".garage-", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=2)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o600)  # it names private folders
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
