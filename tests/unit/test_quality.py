"""The quality gate on real text: no real prose or code rejected, real machine text rejected."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from garage.quality import MIN_CHARS, QualityVerdict, assess, exceeds_chunk_cap
from tests.material import material

STDLIB = Path(os.__file__).parent

# Named documents that stress one signal each, among the 497 that must all pass.
STRESSED = {
    # hex digests, UUIDs, hex floats and addresses
    "library/hashlib.rst.txt", "library/binascii.rst.txt", "library/uuid.rst.txt",
    "library/secrets.rst.txt", "library/ipaddress.rst.txt", "tutorial/floatingpoint.rst.txt",
    # bibliography-like: lists of citations, licences, API entries that repeat one line shape
    "license.rst.txt", "bugs.rst.txt", "library/http.rst.txt",
    "library/asyncio-llapi-index.rst.txt", "library/asyncio-api-index.rst.txt",
    "whatsnew/index.rst.txt", "c-api/stable.rst.txt",
    "library/token.rst.txt", "reference/grammar.rst.txt", "library/audit_events.rst.txt",
    # long, ordinary prose and tutorials with code
    "tutorial/introduction.rst.txt", "tutorial/controlflow.rst.txt", "howto/logging.rst.txt",
    "library/stdtypes.rst.txt", "reference/datamodel.rst.txt", "faq/programming.rst.txt",
    "whatsnew/3.11.rst.txt", "library/datetime.rst.txt", "library/logging.rst.txt",
}  # fmt: skip


def verdict(path: Path) -> QualityVerdict:
    return assess(path.read_text(encoding="utf-8", errors="replace"))


@pytest.fixture(scope="module")
def docs() -> dict[str, Path]:
    root = material("python3.11-doc") / "usr/share/doc/python3.11-doc/html/_sources"
    return {p.relative_to(root).as_posix(): p for p in sorted(root.rglob("*.rst.txt"))}


@pytest.fixture(scope="module")
def testsuite() -> Path:
    return material("libpython3.11-testsuite") / "usr/lib/python3.11/test"


def test_no_real_prose_document_is_rejected(docs: dict[str, Path]) -> None:
    assert len(docs) == 497 and STRESSED <= set(docs)
    verdicts = {name: verdict(path) for name, path in docs.items()}
    assert {name: v.reason for name, v in verdicts.items() if not v.accepted} == {}
    judged = [name for name, v in verdicts.items() if v.signals["chars"] >= MIN_CHARS]
    assert len(judged) > 450  # nearly all were long enough to be judged at all


def test_stressed_prose_passes_although_one_signal_fires(docs: dict[str, Path]) -> None:
    hashlib = verdict(docs["library/hashlib.rst.txt"])
    assert hashlib.accepted and hashlib.signals["blob_density"] > 0.03  # hex is really there
    # An API reference repeats one line shape (list markers and table rows aside).
    number = verdict(docs["c-api/number.rst.txt"])
    assert number.accepted and number.signals["shape_repetition"] > 0.5  # repetition is there
    http = verdict(docs["library/http.rst.txt"])
    assert http.accepted and http.signals["numeric_ratio"] > 0.1


def test_real_python_source_passes() -> None:
    files = sorted(STDLIB.glob("*.py")) + sorted((STDLIB / "encodings").glob("*.py"))
    files += sorted((STDLIB / "email").glob("*.py")) + sorted((STDLIB / "json").glob("*.py"))
    assert len(files) > 250
    rejected = {p.name: v.reason for p in files if not (v := verdict(p)).accepted}
    assert rejected == {}
    # Generated tables inside real source are still source: stringprep.py is data-heavy.
    stringprep = verdict(STDLIB / "stringprep.py")
    assert stringprep.accepted and stringprep.signals["code_syntax"] > 0.6


def test_keys_and_certificates_are_rejected(testsuite: Path) -> None:
    pems = [p for p in sorted(testsuite.glob("*.pem")) if p.stat().st_size >= 2 * MIN_CHARS]
    assert len(pems) >= 20
    for path in pems:
        result = verdict(path)
        assert not result.accepted, path.name
        assert "hex/base64 density" in (result.reason or ""), (path.name, result.reason)


def test_decimal_test_tables_are_rejected(testsuite: Path) -> None:
    tables = sorted((testsuite / "decimaltestdata").glob("*.decTest"))
    cases = [p for p in tables if " -> " in p.read_text(encoding="utf-8")]  # not include lists
    rejected = [p.name for p in cases if not verdict(p).accepted]
    assert len(cases) >= 130 and len(rejected) >= 0.97 * len(cases)
    for name in ("add.decTest", "squareroot.decTest", "randoms.decTest", "ddCanonical.decTest"):
        result = verdict(testsuite / "decimaltestdata" / name)
        assert not result.accepted and "line-shape repetition" in (result.reason or ""), name


def test_vectors_token_streams_and_logs_are_rejected() -> None:
    data = material("gensim") / "gensim" / "test" / "test_data"
    glove = verdict(data / "test_glove.txt")
    assert not glove.accepted and (glove.reason or "").startswith("numeric data")
    stream = verdict(data / "head500.noblanks.cor")
    assert not stream.accepted and (stream.reason or "").startswith("token stream")
    dpkg = verdict(material("logs") / "dpkg.log")
    assert not dpkg.accepted and "timestamp-prefixed lines" in (dpkg.reason or "")
    assert dpkg.signals["timestamp_lines"] > 0.9


def test_mail_with_attachments_is_not_prose_but_plain_mail_is(testsuite: Path) -> None:
    # Raw MIME with a base64 attachment is rejected as text; the mail extractor will decode it.
    mail = testsuite / "test_email" / "data"
    assert not verdict(mail / "msg_07.txt").accepted
    assert all(verdict(mail / f"msg_{n:02d}.txt").accepted for n in (1, 2, 3, 4, 5, 6))


def test_short_and_empty_text_is_not_judged() -> None:
    for text in ("", "   \n", "Milk, eggs, 2 lemons.", "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6"):
        result = assess(text)
        assert result.accepted and result.reason is None
    assert set(assess("").signals) >= {"blob_density", "shape_repetition", "timestamp_lines"}


def test_every_signal_is_reported_as_a_float(docs: dict[str, Path]) -> None:
    result = verdict(docs["tutorial/introduction.rst.txt"])
    assert result.accepted and all(isinstance(v, float) for v in result.signals.values())
    assert 0.7 < result.signals["alpha_ratio"] < 1 and result.signals["sentence_punct"] > 0.1


def test_chunk_cap() -> None:
    assert exceeds_chunk_cap(2001, 2000) and not exceeds_chunk_cap(2000, 2000)
    assert not exceeds_chunk_cap(10**6, 0)  # no cap configured
