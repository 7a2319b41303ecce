"""The quality gate: zero false positives on real prose and code, real machine text rejected."""

from __future__ import annotations

import os
from pathlib import Path

from garage.quality import assess, exceeds_chunk_cap
from tests.material import material

STDLIB = Path(os.__file__).parent


def docs() -> list[Path]:
    root = material("python3.11-doc") / "usr/share/doc/python3.11-doc/html/_sources"
    return sorted(root.rglob("*.rst.txt"))


def test_real_prose_is_never_rejected() -> None:
    files = docs()
    assert len(files) >= 400
    rejected = [p.name for p in files if not assess(p.read_text(errors="replace")).accepted]
    assert rejected == []


def test_prose_with_hex_and_bibliographies_passes() -> None:
    by_name = {p.name: p for p in docs()}
    # hashlib and uuid are full of hex digests; the bibliography and the changelog repeat.
    for name in ("hashlib.rst.txt", "uuid.rst.txt", "binascii.rst.txt", "bugs.rst.txt"):
        text = by_name[name].read_text()
        assert assess(text).accepted, name


def test_real_code_passes() -> None:
    files = sorted(STDLIB.glob("*.py"))
    rejected = [p.name for p in files if not assess(p.read_text(errors="replace")).accepted]
    assert rejected == []


def test_keys_test_vectors_and_logs_are_rejected() -> None:
    testsuite = material("libpython3.11-testsuite") / "usr/lib/python3.11/test"
    pems = sorted(testsuite.rglob("*.pem"))
    vectors = sorted((testsuite / "decimaltestdata").glob("*.decTest"))
    assert len(pems) > 10 and len(vectors) > 100
    for group in (pems, vectors):
        rejected = [p for p in group if not assess(p.read_text(errors="replace")).accepted]
        assert len(rejected) >= 0.9 * len(group)
    # A real log of this machine: Debian always keeps dpkg's.
    verdict = assess(Path("/var/log/dpkg.log").read_text(errors="replace"))
    assert not verdict.accepted and "timestamp" in (verdict.reason or "")
    assert "blob_density" in verdict.signals


def test_chunk_cap() -> None:
    assert exceeds_chunk_cap(2001, 2000) and not exceeds_chunk_cap(2000, 2000)
