"""The egress guard: the one place that decides where a request may go.

Every request the inference client makes passes ``EgressGuard.check`` before a connection is
opened. The rules (the privacy promise):

- the destination must be a configured model host (the inference hosts, each embedding model's
  host, and ``egress.allowed_hosts``); changing the config is the only way to widen the list;
- a request that carries a ``communication`` (mail, chat threads) goes only to a loopback host,
  whatever the allowlist says;
- cloud model ids (``gemini*``, ``gpt-*``, ``claude*``, …) are refused outright: Garage never
  routes to a cloud API, even through a local proxy that would forward them.

Loopback is garage.loopback's one meaning (``localhost``, 127.0.0.0/8, ``::1``), decided from
the URL alone, never from DNS: a name that resolves to loopback today may not tomorrow.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from garage.config import GarageConfig
from garage.inference.errors import EgressRefused
from garage.loopback import is_loopback_address

log = logging.getLogger(__name__)

COMMUNICATION = "communication"

# Model ids that name cloud APIs. Matched case-insensitively against the whole id and against
# its last path segment ("openai/gpt-4o" is still gpt-4o). GPT-OSS is an open-weight model that
# Ollama and LM Studio run locally ("gpt-oss:20b"), not a cloud API.
_CLOUD_MODEL = re.compile(
    r"^(gemini|gpt-(?!oss)|gpt4|chatgpt|o[134](-|$)|claude|text-embedding-(3|ada)|davinci|"
    r"command-r|mistral-(large|medium|small)-latest|grok)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Origin:
    scheme: str
    host: str  # lower-case, IPv6 without brackets
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


def origin_of(url: str) -> Origin:
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EgressRefused(f"{url!r} is not an http(s) URL with a host")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as error:
        raise EgressRefused(f"{url!r}: {error}") from None
    return Origin(parts.scheme, parts.hostname.lower().rstrip("."), port)


def is_loopback(url_or_host: str) -> bool:
    """Whether a model host's URL names this machine (a URL that is not http(s) with a host is
    refused, as the guard refuses it)."""
    return is_loopback_address(origin_of(url_or_host).host)


def is_cloud_model(model_id: str) -> bool:
    model_id = model_id.strip()
    return bool(_CLOUD_MODEL.match(model_id) or _CLOUD_MODEL.match(model_id.rsplit("/", 1)[-1]))


def configured_hosts(config: GarageConfig) -> list[str]:
    """Every host the config names as a model host, plus the explicit allowlist."""
    inference = config.inference
    hosts = [inference.ollama_host, inference.lmstudio_host, inference.llama_host]
    hosts += [model.host for model in config.embedding.models if model.host]
    hosts += list(config.egress.allowed_hosts)
    return hosts


class EgressGuard:
    def __init__(self, allowed_hosts: Iterable[str]):
        self._allowed = frozenset(origin_of(host) for host in allowed_hosts)

    @classmethod
    def from_config(cls, config: GarageConfig) -> EgressGuard:
        return cls(configured_hosts(config))

    @property
    def allowed(self) -> list[str]:
        return sorted(str(origin) for origin in self._allowed)

    def check(
        self, url: str, *, corpus_classes: Iterable[str] = (), model_id: str | None = None
    ) -> None:
        """Raise EgressRefused unless ``url`` may receive a request carrying these classes."""
        origin = origin_of(url)
        if model_id is not None and is_cloud_model(model_id):
            raise EgressRefused(
                f"model {model_id!r} names a cloud API; Garage only talks to local model servers"
            )
        if origin not in self._allowed:
            raise EgressRefused(
                f"{origin} is not a configured model host (allowed: "
                f"{', '.join(self.allowed) or 'none'}); add it to the inference hosts or "
                "egress.allowed_hosts in the config to allow it"
            )
        if COMMUNICATION in set(corpus_classes) and not is_loopback(url):
            raise EgressRefused(
                f"refusing to send a communication (mail or chat) to {origin}: communications "
                "only go to a model host on this machine (localhost, 127.0.0.0/8 or ::1)"
            )


def note_allowlist(guard: EgressGuard, state_file: Path) -> list[str]:
    """Log (at WARNING) hosts added to the allowlist since the last time it was noted, and
    remember the current list. Returns the added hosts."""
    try:
        before = set(json.loads(state_file.read_text()))
    except (OSError, ValueError):
        before = None
    current = guard.allowed
    added = [] if before is None else sorted(set(current) - before)
    if before is None:
        log.info("egress allowlist: %s", ", ".join(current))
    elif added:
        log.warning("egress allowlist widened by the config: %s", ", ".join(added))
    if before is None or set(current) != before:
        state_file.parent.mkdir(parents=True, exist_ok=True)
        state_file.write_text(json.dumps(current))
    return added
