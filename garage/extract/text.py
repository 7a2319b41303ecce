"""Markdown (YAML frontmatter split off), plain text, and code, all kept verbatim.

Only line endings are normalised (CRLF and lone CR become LF): the chunkers split on "\\n", and
an old Mac file of bare CRs would otherwise be one enormous line. Indentation, tabs and trailing
spaces are kept exactly.
"""

from __future__ import annotations

import codecs
import datetime as dt
import re
from pathlib import Path

from garage.extract.types import Extraction, ExtractionError, ExtractorSpec

# Formats that are often misnamed as text, told apart by their first bytes.
_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"%PDF-", "a PDF"),
    (b"PK\x03\x04", "a zip archive"),
    (b"\x1f\x8b", "gzip data"),
    (b"\x7fELF", "an executable"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old Office document"),
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"bplist00", "a binary property list"),
)
_BOMS = (  # UTF-32 before UTF-16: its little-endian BOM starts with UTF-16's
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
# Control characters that never occur in text (tab, newlines, form feed and escape do).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f\x7f-\x9f]")
MAX_CONTROL = 0.01  # share of control characters above which the "text" is binary
_SAMPLE = 1 << 16

_FRONTMATTER = re.compile(r"\A---[ \t]*\n(.*?)^(?:---|\.\.\.)[ \t]*$\n?", re.DOTALL | re.MULTILINE)
_FENCE = re.compile(r"^[ \t]{0,3}(```|~~~)")
_ATX_H1 = re.compile(r"^[ \t]{0,3}#[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_SETEXT_H1 = re.compile(r"^[ \t]{0,3}=+[ \t]*$")
MAX_FRONTMATTER_NODES = 10_000  # YAML aliases can make a tiny block expand enormously


def decode(path: Path, data: bytes) -> tuple[str, str]:
    """The text and the encoding it was read with, or ExtractionError for binary content."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                text = data.decode(encoding)
            except UnicodeDecodeError as error:
                raise ExtractionError(path, f"not valid {encoding} text ({error.reason})") from None
            # A BOM says which encoding, not that the content is text: a NUL character is
            # binary in any encoding (and PostgreSQL cannot store one in text).
            if "\x00" in text:
                raise ExtractionError(
                    path, f"binary content (NUL characters in {encoding}), not text"
                )
            return _normalise(text), encoding
    for magic, what in _MAGIC:
        if data.startswith(magic):
            raise ExtractionError(path, f"binary content ({what}), not text")
    if b"\x00" in data:
        raise ExtractionError(path, "binary content (NUL bytes), not text")
    try:
        text, encoding = data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        # Not UTF-8: Windows-1252 is what old text files most often are; Latin-1 decodes any
        # byte, so the control-character check below decides whether it is text at all.
        try:
            text, encoding = data.decode("cp1252"), "cp1252"
        except UnicodeDecodeError:
            text, encoding = data.decode("latin-1"), "latin-1"
    sample = text[:_SAMPLE]
    if sample and len(_CONTROL.findall(sample)) > MAX_CONTROL * len(sample):
        raise ExtractionError(path, "binary content (mostly non-text bytes), not text")
    return _normalise(text), encoding


def _normalise(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def extract(path: Path, data: bytes, spec: ExtractorSpec) -> Extraction:
    text, encoding = decode(path, data)
    metadata: dict[str, object] = {"encoding": encoding, "lines": text.count("\n") + 1}
    if spec.name == "markdown":
        return markdown(text, spec, metadata)
    if spec.language:
        metadata["language"] = spec.language
    return Extraction(text, None, spec, metadata)


def markdown(text: str, spec: ExtractorSpec, metadata: dict[str, object]) -> Extraction:
    """Split YAML frontmatter off into metadata. Malformed frontmatter never costs the body:
    the whole text is kept as the body and the error is recorded."""
    body, front = text, None
    match = _FRONTMATTER.match(text)
    if match:
        import yaml

        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        try:
            front = yaml.load(match.group(1), Loader=loader)  # a safe loader
        except (yaml.YAMLError, ValueError, TypeError, RecursionError) as error:
            # ValueError too: "date: 2024-02-30" parses, then fails as a date.
            metadata["frontmatter_error"] = " ".join(str(error).split())[:300]
        else:
            if front is None or isinstance(front, dict):
                front = _jsonable(front or {}, [MAX_FRONTMATTER_NODES])
                metadata["frontmatter"] = front
                body = text[match.end() :]
            else:
                kind = type(front).__name__
                metadata["frontmatter_error"] = f"frontmatter is a {kind}, not a mapping"
                front = None
    elif text.startswith("---\n"):
        metadata["frontmatter_error"] = "frontmatter has no closing '---' line"
    title = _scalar(front.get("title")) if isinstance(front, dict) else None
    author = (
        _author(front.get("author") or front.get("authors")) if isinstance(front, dict) else None
    )
    if author:
        metadata["embedded_author_field"] = "frontmatter"
    return Extraction(body, title or first_h1(body), spec, metadata, author)


def first_h1(body: str) -> str | None:
    """The first level-1 heading (ATX ``# x`` or setext ``x`` over ``===``), outside code."""
    fenced = False
    previous = ""
    for line in body.splitlines():
        if _FENCE.match(line):
            fenced, previous = not fenced, ""
            continue
        if fenced:
            continue
        atx = _ATX_H1.match(line)
        if atx:
            return atx.group(1).strip() or None
        if previous.strip() and _SETEXT_H1.match(line) and not previous.startswith((" " * 4, "\t")):
            return previous.strip()
        previous = line
    return None


def _scalar(value: object) -> str | None:
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return str(value).strip() or None
    return None


def _author(value: object) -> str | None:
    if isinstance(value, list):  # authors: [Jane Doe, John Roe]: the first is the author
        value = next((v for v in value if isinstance(v, str) and v.strip()), None)
    if isinstance(value, dict):  # author: {name: Jane Doe, email: …}
        value = value.get("name")
    if not isinstance(value, str):
        return None
    return value.strip() or None


def _jsonable(value: object, budget: list[int], depth: int = 0) -> object:
    """Frontmatter as JSON: dates become ISO strings, anything else exotic its str(); bounded
    in nodes and depth so that a YAML alias bomb cannot blow up."""
    budget[0] -= 1
    if budget[0] < 0 or depth > 32:
        return None
    if isinstance(value, dict):
        return {str(k): _jsonable(v, budget, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_jsonable(v, budget, depth + 1) for v in value]
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else str(value)
    if isinstance(value, dt.date | dt.datetime | dt.time):
        return value.isoformat()
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    return str(value)
