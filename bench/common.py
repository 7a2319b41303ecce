"""What the benchmarks share: the one llama-server embedding model they register and the
scratch databases they measure in."""

from __future__ import annotations

import argparse
from typing import Any

from psycopg.conninfo import make_conninfo

from garage.config import GarageConfig


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--database-url", help="the server to make a scratch database on")
    parser.add_argument("--host", default="http://127.0.0.1:18080")
    parser.add_argument("--model", default="all-minilm-l6-v2")
    parser.add_argument("--dimensions", type=int, default=384)
    parser.add_argument(
        "--input",
        choices=("chunk", "context"),
        default=None,
        help="what the model embeds for a chunk (embedding.models[].input; default: its default)",
    )


def bench_config(args: argparse.Namespace, **sections: Any) -> GarageConfig:
    """A configuration whose only embedding model, ``bench``, is ``args.model`` on llama-server."""
    model = {
        "name": "bench",
        "provider": "llama_server",
        "host": args.host,
        "model": args.model,
        "dimensions": args.dimensions,
    }
    if getattr(args, "input", None):
        model["input"] = args.input
    return GarageConfig.model_validate(
        {"embedding": {"default": "bench", "models": [model]}, **sections}
    )


def with_database(url: str, name: str) -> str:
    """``url`` with its database swapped for ``name``."""
    return make_conninfo(url, dbname=name)
