"""The typed model of ``~/.garage.json``.

Every section forbids unknown keys, so a typo (``"sorces"``) is an error naming the field rather
than a setting that silently does nothing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from garage.config.cron import CronError, check_cron
from garage.config.fact_prompts import FactPromptEntry, check_prompt_entries

SourceKind = Literal["files", "mail", "messages"]
CorpusClass = Literal["document", "code", "communication"]
Provider = Literal["ollama", "lmstudio", "llama_server"]
Modality = Literal["text", "image"]
Distance = Literal["cosine", "l2", "inner_product"]

# Source names become Dagster partition keys and appear in URIs and logs: keep them plain.
SOURCE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")

DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"
DEFAULT_LMSTUDIO_HOST = "http://127.0.0.1:1234"
DEFAULT_LLAMA_HOST = "http://127.0.0.1:8080"


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class DatabaseConfig(Section):
    # No URL means the embedded default: a private cluster under the data directory.
    url: str | None = None
    data_dir: str | None = None
    # Dagster's own storage (runs, events, schedules): a database of its own on the same server.
    dagster_database: str = Field(default="garage_dagster", pattern=r"^[a-z_][a-z0-9_]{0,62}$")


class SourceConfig(Section):
    name: str
    kind: SourceKind = "files"
    roots: list[str] = Field(min_length=1)
    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)
    # The walker's built-in exclusions (VCS internals, node_modules, caches, build output, …).
    default_excludes: bool = True
    corpus_class: CorpusClass = "document"
    # Who wrote what this source holds when nothing better is known (the last attribution rule).
    default_author: str | None = None
    enabled: bool = True

    @field_validator("name")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        if not SOURCE_NAME.match(value):
            raise ValueError(
                "must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
            )
        return value

    @model_validator(mode="after")
    def _kind_defaults(self) -> SourceConfig:
        # Mail and Messages hold communications whatever the user left as the default class;
        # the egress rule depends on that class, so it is not a matter of taste.
        if self.kind in ("mail", "messages") and self.corpus_class != "communication":
            raise ValueError(f"a {self.kind} source must have corpus_class 'communication'")
        return self

    def root_paths(self) -> list[Path]:
        return [Path(root).expanduser() for root in self.roots]


class EmbeddingModelConfig(Section):
    name: str
    provider: Provider = "llama_server"
    host: str | None = None  # None: the provider's host from the inference section
    model: str  # the id the server knows the model by
    dimensions: int = Field(gt=0, le=16000)
    modality: Modality = "text"
    distance: Distance = "cosine"
    binary_quantization: bool = False
    # What the model embeds for a chunk (garage/embed/inputs.py): "chunk", its text alone, or
    # "context", the document's title and the chunk's heading above it (a short chunk joined
    # with the next). Part of the model's signature: a change re-embeds its passages.
    input: Literal["chunk", "context"] = "chunk"


def _default_models() -> list[EmbeddingModelConfig]:
    # The architecture guide's two defaults, served by Ollama under these ids.
    return [
        EmbeddingModelConfig(name="bge-m3", provider="ollama", model="bge-m3", dimensions=1024),
        EmbeddingModelConfig(
            name="nomic-embed-text", provider="ollama", model="nomic-embed-text", dimensions=768
        ),
    ]


class EmbeddingConfig(Section):
    default: str = "bge-m3"
    models: list[EmbeddingModelConfig] = Field(default_factory=_default_models)
    batch_size: int = Field(default=64, gt=0, le=1024)
    # Tokens (estimated) per embedding request: what the server computes in one physical batch
    # (scripts/llama starts its embedding server with -ub 4096). A request of 64 dense chunks
    # can be 25k tokens and half a minute of work the server finishes even when Garage stopped.
    batch_tokens: int = Field(default=4096, ge=256, le=1_000_000)

    @model_validator(mode="after")
    def _default_is_registered(self) -> EmbeddingConfig:
        names = [m.name for m in self.models]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"model names must be unique: {', '.join(duplicates)}")
        if self.models and self.default not in names:
            raise ValueError(f"default model {self.default!r} is not among models {names}")
        return self


class InferenceConfig(Section):
    provider: Provider = "llama_server"
    model: str = ""
    ollama_host: str = DEFAULT_OLLAMA_HOST
    lmstudio_host: str = DEFAULT_LMSTUDIO_HOST
    llama_host: str = DEFAULT_LLAMA_HOST
    timeout_seconds: float = Field(default=120.0, gt=0)
    # The wall-clock limit of one generation (a streamed answer, an agent's turn): past it the
    # request is stopped and the server freed. A 1.5B model on 2 cores reads ~35 tokens/s.
    generation_seconds: float = Field(default=300.0, gt=0)
    # The context one request may fill, for servers that do not say (Ollama, LM Studio);
    # llama-server's own /props wins when it answers.
    context_tokens: int | None = Field(default=None, ge=256)

    def host_for(self, provider: Provider) -> str:
        return {
            "ollama": self.ollama_host,
            "lmstudio": self.lmstudio_host,
            "llama_server": self.llama_host,
        }[provider]


class FactsConfig(Section):
    provider: Provider = "llama_server"
    model: str = ""
    prompts: list[FactPromptEntry] = Field(default_factory=list)
    # Run the enabled prompts (stale-only) after each ingest of a source. Off by default:
    # extraction on a local model takes seconds per document.
    automatic: bool = False
    # LangExtract's chunk size: how many characters of a document one prompt carries.
    max_char_buffer: int = Field(default=1000, ge=100, le=20000)
    # Cap on one reply: a small model that loops stops here instead of running for minutes.
    # Under a JSON schema the reply ends by itself within max_extractions items; 2048 leaves
    # room for 16 long quotes, so a reply is not cut short (one that is keeps only the
    # extractions it completed, and is counted in cut_replies).
    max_tokens: int = Field(default=2048, ge=16, le=8192)
    # At most this many extractions per chunk under a JSON schema: with max_tokens, what keeps
    # a small model's reply finite and whole (a reply cut off at max_tokens keeps only the
    # extractions it completed, and is counted).
    max_extractions: int = Field(default=16, ge=1, le=100)
    # Documents with the model at once. llama-server writes the replies of its slots (-np)
    # together, in little more than the time of one; more than the server's slots only queue.
    parallel_documents: int = Field(default=2, ge=1, le=16)
    cluster_restate_threshold: float = Field(default=0.92, ge=0, le=1)
    cluster_seed_threshold: float = Field(default=0.88, ge=0, le=1)
    cluster_threshold: float = Field(default=0.85, ge=0, le=1)
    cluster_max_drift: float = Field(default=0.05, ge=0, le=1)
    cluster_tight_similarity: float = Field(default=0.95, ge=0, le=1)
    cluster_neighbors: int = Field(default=20, gt=0)
    cluster_attach_candidates: int = Field(default=5, gt=0)

    @field_validator("prompts")
    @classmethod
    def _prompts(cls, value: list[FactPromptEntry]) -> list[FactPromptEntry]:
        return check_prompt_entries(value)


class IdentityConfig(Section):
    self_name: str | None = None
    # The owner's addresses: they decide "authored" versus "received" for mail and chat.
    emails: list[str] = Field(default_factory=list)


class LimitsConfig(Section):
    materialize_max_files: int | None = Field(default=200, ge=0)
    materialize_max_bytes: int | None = Field(default=2 * 1024**3, ge=0)
    materialize_timeout_seconds: float = Field(default=120.0, gt=0)
    max_chunks_per_document: int = Field(default=2000, gt=0)
    max_file_bytes: int = Field(default=100 * 1024**2, gt=0)
    # Scanned PDF pages OCR'd per run, at seconds a page: a folder of scans is read over several
    # runs rather than holding one for hours. 0 turns the OCR of PDF pages off.
    ocr_max_pages_per_run: int = Field(default=200, ge=0)
    # A run that would delete more than this share of a source refuses without --force.
    deletion_guard_ratio: float = Field(default=0.25, ge=0, le=1)


class EgressConfig(Section):
    # Hosts beyond the configured model hosts that may receive requests. Communications still
    # go only to loopback, whatever is listed here.
    allowed_hosts: list[str] = Field(default_factory=list)


class ScheduleConfig(Section):
    # The incremental pass over every source. Hourly by default: the file-change sensor
    # already follows edits within its interval, so this pass is the safety net.
    incremental_cron: str = "0 * * * *"
    timezone: str = "UTC"
    enabled: bool = True
    # The file-change sensor, and how often it stats every source (a stat-only walk per tick).
    watch: bool = True
    watch_interval_seconds: int = Field(default=30, ge=5, le=86400)

    @field_validator("incremental_cron")
    @classmethod
    def _cron(cls, value: str) -> str:
        # Checked by Dagster's rules here, so `garage config validate` says what the schedule
        # would otherwise refuse only when the definitions load.
        try:
            return check_cron(value)
        except CronError as error:
            raise ValueError(
                f"{value!r} is not a cron expression Dagster can schedule ({error}); five "
                "fields, e.g. '0 * * * *'"
            ) from None

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str) -> str:
        # What Dagster loads an execution timezone with (it takes "utc" as UTC itself).
        try:
            ZoneInfo("UTC" if value == "utc" else value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"{value!r} is not an IANA time zone (e.g. 'Europe/Lisbon')") from None
        return value


# The convex combination's vector weight when neither weight is set (see SearchConfig.fusion).
DEFAULT_VECTOR_WEIGHT = 0.5


class SearchConfig(Section):
    # BM25 (k1 = 1.2, b = 0.75) is the default keyword ranking: on a judged collection
    # ts_rank_cd scored far below it, and fusing ts_rank_cd with dense vectors scored below
    # dense alone. ts_rank_cd stays selectable because the architecture guide names it.
    keyword_ranking: Literal["bm25", "ts_rank_cd"] = "bm25"
    bm25_k1: float = Field(default=1.2, ge=0, le=10)
    bm25_b: float = Field(default=0.75, ge=0, le=1)
    # A term in more chunks than this is common: BM25 reads its best postings and looks up
    # the rest for the candidates, instead of reading them all (garage/search/keyword.py).
    bm25_common_df: int = Field(default=20_000, ge=0)
    # How many candidates each engine hands to fusion.
    candidates: int = Field(default=200, gt=0, le=2000)
    # How hybrid search merges the legs (garage/search/fusion.py): "rrf", Reciprocal Rank
    # Fusion with k = rrf_k (the architecture guide's), or "convex", a weighted sum of each
    # leg's scores normalized over its own candidates ("zscore" or "minmax"). Convex, z-score,
    # equal weights: the best worst case across bench/quality.py's two collections, where RRF
    # fell below the dense leg alone on one (README, Search).
    fusion: Literal["rrf", "convex"] = "convex"
    rrf_k: int = Field(default=60, gt=0)
    normalization: Literal["zscore", "minmax"] = "zscore"
    # The convex combination's weight of each leg; they add up to 1. Set one, and the other
    # is the rest; set both, and they must add up to 1.
    vector_weight: float | None = Field(default=None, ge=0, le=1)
    keyword_weight: float | None = Field(default=None, ge=0, le=1)
    # A hit's excerpt: the chunk's text cut to this many characters at a word boundary.
    excerpt_chars: int = Field(default=1200, ge=80, le=20000)
    # How long a query may wait for its vector before search falls back to keyword only.
    embed_timeout_seconds: float = Field(default=10.0, gt=0)

    @model_validator(mode="after")
    def _weights_add_up(self) -> SearchConfig:
        if self.vector_weight is not None and self.keyword_weight is not None:
            total = self.vector_weight + self.keyword_weight
            if abs(total - 1) > 1e-9:
                raise ValueError(
                    f"vector_weight ({self.vector_weight}) and keyword_weight "
                    f"({self.keyword_weight}) must add up to 1, not {total:g}: fusion is a "
                    "convex combination (set one of them and the other is the rest)"
                )
        return self

    @property
    def leg_weights(self) -> tuple[float, float]:
        """(vector, keyword) weights of the convex combination."""
        if self.vector_weight is not None:
            return self.vector_weight, 1 - self.vector_weight
        if self.keyword_weight is not None:
            return 1 - self.keyword_weight, self.keyword_weight
        return DEFAULT_VECTOR_WEIGHT, 1 - DEFAULT_VECTOR_WEIGHT


class AskConfig(Section):
    """rag_ask and `garage ask` (garage.ask)."""

    # An excerpt shown to the model: the sentences of its chunk around the part that best
    # matches the question (garage.ask.focus), at most this many characters. The model reads
    # the prompt for most of the wait before its first word; the rest of a chunk is seldom to
    # the point.
    excerpt_chars: int = Field(default=500, ge=100, le=20000)
    # The model's probability, read from the server's token log-probabilities, that an
    # excerpt states the answer, at or above which it answers; below it the reply is
    # "Not in the excerpts.". 0.5 is the model's own greedy choice; a server that gives no
    # log-probabilities (Ollama) keeps that choice. 0.6: the best worst target on the tuning
    # half of bench/answers.py's paraphrase collection with Qwen2.5-Coder-1.5B (README, MCP).
    answer_threshold: float = Field(default=0.6, ge=0, le=1)
    # An answer is withdrawn ("Not in the excerpts.", with a note) when less than this share
    # of its own words — beyond the question's — is in the excerpts shown (garage.ask.support):
    # a small model near but not at the answer writes from memory or restates the question.
    # 0 turns the check off.
    min_support: float = Field(default=0.3, ge=0, le=1)
    # List in the prompt the question's rare words that no excerpt contains
    # (garage.ask.coverage): evidence that search found something near the question rather
    # than about it, but also of a question put in other words than the page's.
    name_missing_words: bool = False
    # Ask the model to copy the excerpt's words that state the answer before it answers
    # (garage.ask.quote), and with ``quote_check`` decline when they are in no excerpt it
    # named. Without the check the quote is only recorded (AskResult.quote_found).
    quote: bool = False
    quote_check: bool = True


class GarageConfig(Section):
    database: DatabaseConfig = Field(default_factory=DatabaseConfig)
    sources: list[SourceConfig] = Field(default_factory=list)
    embedding: EmbeddingConfig = Field(default_factory=EmbeddingConfig)
    inference: InferenceConfig = Field(default_factory=InferenceConfig)
    facts: FactsConfig = Field(default_factory=FactsConfig)
    identity: IdentityConfig = Field(default_factory=IdentityConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    egress: EgressConfig = Field(default_factory=EgressConfig)
    schedule: ScheduleConfig = Field(default_factory=ScheduleConfig)
    search: SearchConfig = Field(default_factory=SearchConfig)
    ask: AskConfig = Field(default_factory=AskConfig)

    @model_validator(mode="after")
    def _unique_sources(self) -> GarageConfig:
        names = [s.name for s in self.sources]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"source names must be unique: {', '.join(duplicates)}")
        return self

    def source(self, name: str) -> SourceConfig:
        for source in self.sources:
            if source.name == name:
                return source
        known = ", ".join(s.name for s in self.sources) or "none configured"
        raise KeyError(f"no source named {name!r} (sources: {known})")
