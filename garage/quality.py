"""Stage 4, the quality gate: the content-based backstop against text no person wrote.

A personal corpus is full of logs, dumps, keys and generated data; path rules catch most of it,
this catches the rest from structure alone: line-shape repetition, timestamp prefixes,
hex/base64 density and the alphabetic ratio. Any single signal has false positives — a
bibliography repeats, a cryptography paper contains hex — so rejection needs either two
corroborating signals or one decisive one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TIMESTAMP = re.compile(
    r"^\s*[\[(]?(?:\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}"  # ISO 8601
    r"|[A-Z][a-z]{2} +\d{1,2} \d{2}:\d{2}:\d{2}"  # syslog
    r"|\d{2}:\d{2}:\d{2}[.,]\d+"  # clock with fractions
    r"|\d{10}(?:\.\d+)?\b)"  # epoch seconds
)
_BLOB = re.compile(r"(?:[0-9a-fA-F]{2}[:\s]?){12,}|[0-9a-fA-F]{24,}|[A-Za-z0-9+/=_-]{40,}")
# Generated test vectors and dumps number their records: "addx001 add 1 1 -> 2".
_NUMBERED = re.compile(r"^\s*[A-Za-z_]+\d{2,}\b")
_SHAPE_WORD = re.compile(r"[^\W\d_]+")
_SHAPE_NUM = re.compile(r"\d+")

MIN_LINES = 8  # below this, structure says little


@dataclass(frozen=True)
class QualityVerdict:
    accepted: bool
    reason: str | None
    signals: dict[str, float]


def _shape(line: str) -> str:
    return _SHAPE_WORD.sub("a", _SHAPE_NUM.sub("0", line.strip()))[:24]


def signals(text: str) -> dict[str, float]:
    lines = [line for line in text.splitlines() if line.strip()]
    sample = lines[:5000]
    visible = [c for c in text[:500_000] if not c.isspace()]
    letters = sum(1 for c in visible if c.isalpha())
    blob_chars = sum(len(m.group(0)) for m in _BLOB.finditer(text[:500_000]))
    shapes = [_shape(line) for line in sample]
    repeated = 1 - len(set(shapes)) / len(shapes) if shapes else 0.0
    stamped = sum(1 for line in sample if _TIMESTAMP.match(line)) / len(sample) if sample else 0.0
    return {
        "lines": float(len(lines)),
        "alpha_ratio": letters / len(visible) if visible else 0.0,
        "blob_density": blob_chars / len(visible) if visible else 0.0,
        "shape_repetition": repeated,
        "timestamp_ratio": stamped,
        "numbered_records": (
            sum(1 for line in sample if _NUMBERED.match(line)) / len(sample) if sample else 0.0
        ),
    }


def assess(text: str) -> QualityVerdict:
    s = signals(text)
    if not text.strip():
        return QualityVerdict(True, None, s)  # no text at all is the caller's "no text" case
    if s["lines"] < MIN_LINES and s["alpha_ratio"] >= 0.2:
        return QualityVerdict(True, None, s)
    decisive = []
    if s["blob_density"] >= 0.5:
        decisive.append(f"hex/base64 density {s['blob_density']:.2f}")
    if s["alpha_ratio"] < 0.2:
        decisive.append(f"alphabetic ratio {s['alpha_ratio']:.2f}")
    if s["timestamp_ratio"] >= 0.8 and s["lines"] >= 20:
        decisive.append(f"timestamp prefixes on {s['timestamp_ratio']:.0%} of lines")
    if s["numbered_records"] >= 0.5:
        decisive.append(f"numbered records on {s['numbered_records']:.0%} of lines")
    if decisive:
        return QualityVerdict(False, "machine text: " + decisive[0], s)
    weak = []
    if s["shape_repetition"] >= 0.85:
        weak.append(f"line-shape repetition {s['shape_repetition']:.2f}")
    if s["timestamp_ratio"] >= 0.3:
        weak.append(f"timestamp prefixes on {s['timestamp_ratio']:.0%} of lines")
    if s["blob_density"] >= 0.2:
        weak.append(f"hex/base64 density {s['blob_density']:.2f}")
    if s["numbered_records"] >= 0.3:
        weak.append(f"numbered records on {s['numbered_records']:.0%} of lines")
    if s["alpha_ratio"] < 0.45:
        weak.append(f"alphabetic ratio {s['alpha_ratio']:.2f}")
    if len(weak) >= 2:
        return QualityVerdict(False, "machine text: " + " and ".join(weak), s)
    return QualityVerdict(True, None, s)


def exceeds_chunk_cap(n_chunks: int, max_chunks_per_document: int) -> bool:
    """The final backstop: no single document may dominate the index."""
    return n_chunks > max_chunks_per_document
