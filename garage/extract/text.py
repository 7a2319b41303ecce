"""Markdown (YAML frontmatter split off), plain text, and code verbatim."""

from __future__ import annotations

import re
from pathlib import Path

from garage.extract import Extraction, ExtractionError, ExtractorSpec

_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_H1 = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


def decode(path: Path, data: bytes) -> str:
    """Text from bytes, or ExtractionError for binary content behind a text extension."""
    if b"\x00" in data[:65536]:
        raise ExtractionError(path, "binary content (NUL bytes) in a text file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    text = data.decode("cp1252", errors="replace")
    controls = sum(1 for c in text[:65536] if ord(c) < 32 and c not in "\t\n\r\f")
    if controls > len(text[:65536]) * 0.05 or text.count("\ufffd") > len(text) * 0.05:
        raise ExtractionError(path, "binary content (not UTF-8 or Windows-1252 text)")
    return text


def extract(path: Path, data: bytes, spec: ExtractorSpec) -> Extraction:
    text = decode(path, data)
    if spec.name != "markdown":
        return Extraction(text, None, spec, {})
    return markdown(text, spec)


def markdown(text: str, spec: ExtractorSpec) -> Extraction:
    metadata: dict[str, object] = {}
    body = text
    match = _FRONTMATTER.match(text)
    if match:
        import yaml

        try:
            front = yaml.safe_load(match.group(1))
        except yaml.YAMLError as error:
            # Malformed frontmatter never costs the body: keep every byte of the note.
            metadata["frontmatter_error"] = str(error).splitlines()[0]
        else:
            if isinstance(front, dict):
                metadata["frontmatter"] = _jsonable(front)
                body = text[match.end() :]
            else:
                metadata["frontmatter_error"] = "frontmatter is not a mapping"
    front = metadata.get("frontmatter")
    title = front.get("title") if isinstance(front, dict) else None
    if not isinstance(title, str) or not title.strip():
        heading = _H1.search(body)
        title = heading.group(1).strip() if heading else None
    author = front.get("author") if isinstance(front, dict) else None
    return Extraction(body, title, spec, metadata, author if isinstance(author, str) else None)


def _jsonable(value: object) -> object:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)  # dates and the like
