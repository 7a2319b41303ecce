"""The machine's limit for an encoder: the cores' peak FP32 rate and the model's FLOPs.

Peak = cores × clock × FLOPs a core retires per cycle. A core with FMA retires two FMA
instructions a cycle on every x86 design that has them (Haswell on, Zen 1 on — Zen 1 splits
256-bit ones, which this does not model), each ``lanes`` wide and worth two FLOPs; without FMA
it retires one multiply and one add. The lanes come from the widest vector extension in
/proc/cpuinfo's flags, the clock from its ``cpu MHz`` (the clock the kernel sees, which on a
virtual machine is the host's base clock).

A BERT-style encoder of L layers, width h and feed-forward width f spends per layer, for a
sequence of n tokens, 2·n·(4h² + 2hf) FLOPs in its weight matmuls (Q, K, V, output and the two
feed-forward matrices) and 4·n²·h in attention (QKᵀ and the weighted sum of V). The token
embedding lookup, layer norms, softmax and pooling are left out: they are a few per cent.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Peak:
    cores: int
    mhz: float
    lanes: int
    vector: str
    fma: bool

    @property
    def flops_per_cycle(self) -> int:
        return self.lanes * 2 * 2 if self.fma else self.lanes * 2

    @property
    def flops(self) -> float:
        return self.cores * self.mhz * 1e6 * self.flops_per_cycle

    def explain(self) -> str:
        per_cycle = (
            f"2 FMA units x {self.lanes} FP32 lanes ({self.vector}) x 2 FLOPs"
            if self.fma
            else f"1 multiply + 1 add x {self.lanes} FP32 lanes ({self.vector})"
        )
        return (
            f"peak = {self.cores} cores x {self.mhz:.0f} MHz x {self.flops_per_cycle} FLOPs/cycle "
            f"[{per_cycle}] = {self.flops / 1e9:.1f} GFLOP/s"
        )


def machine_peak(cpuinfo: str | None = None, cores: int | None = None) -> Peak:
    text = cpuinfo if cpuinfo is not None else Path("/proc/cpuinfo").read_text()
    flags: set[str] = set()
    mhz = 0.0
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "flags" and not flags:
            flags = set(value.split())
        elif key == "cpu MHz" and not mhz:
            mhz = float(value)
    if "avx512f" in flags:
        lanes, vector = 16, "AVX-512"
    elif "avx2" in flags or "avx" in flags:
        lanes, vector = 8, "AVX2" if "avx2" in flags else "AVX"
    else:
        lanes, vector = 4, "SSE"
    return Peak(cores or os.cpu_count() or 1, mhz, lanes, vector, "fma" in flags)


@dataclass(frozen=True)
class Encoder:
    layers: int
    hidden: int
    feed_forward: int

    @classmethod
    def from_config(cls, config_json: Path) -> Encoder:
        """From a Hugging Face BERT config (the one the GGUF was converted from)."""
        config = json.loads(config_json.read_text())
        return cls(config["num_hidden_layers"], config["hidden_size"], config["intermediate_size"])

    def flops(self, tokens: int) -> float:
        """FLOPs to encode one sequence of ``tokens`` tokens."""
        h, f, n = self.hidden, self.feed_forward, tokens
        return self.layers * (2 * n * (4 * h * h + 2 * h * f) + 4 * n * n * h)

    def explain(self) -> str:
        h, f = self.hidden, self.feed_forward
        weights = 4 * h * h + 2 * h * f
        return (
            f"model FLOPs per sequence of n tokens = {self.layers} layers x "
            f"(2n x {weights:,} weight params + 4n^2 x {h} attention) "
            f"= {2 * self.layers * weights / 1e6:.1f} MFLOP/token + attention"
        )
