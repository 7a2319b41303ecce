"""Judged collections in the usual TREC formats: a queries (topics) file and a qrels file.

Queries, one of:

- TREC topics: ``<top> <num> Number: 301 <title> … <desc> … </top>``; the title is the query.
- JSON lines, as BEIR ships them: ``{"_id": "1", "text": "…"}`` (also ``id``/``qid`` and
  ``query``).
- One query a line: its id, a tab or spaces, its text (MS MARCO's ``queries.tsv``, Terrier's
  single-line topics). A first line naming the columns (``qid``, ``query-id``, …) is skipped.

Qrels: ``QUERY_ID ITERATION DOCUMENT RELEVANCE`` per line (trec_eval's four columns), or
``QUERY_ID DOCUMENT RELEVANCE`` (BEIR's three, with or without its header line), separated by
tabs or spaces. Relevance is graded: 0 or less is not relevant.

A malformed line is an error naming the file and the line, never a query silently dropped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path


class CollectionError(ValueError):
    """A queries or qrels file that cannot be read as one; the message names file and line."""


@dataclass(frozen=True)
class Judgment:
    query_id: str
    document: str  # as the qrels file names it: a URI or a path
    gain: float
    line: int


_HEADER_IDS = {"qid", "query-id", "query_id", "queryid", "id", "_id", "topic"}
_TOPIC = re.compile(r"<top>(.*?)</top>", re.DOTALL | re.IGNORECASE)
_FIELD = re.compile(r"<(num|title|desc|narr)>", re.IGNORECASE)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CollectionError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise CollectionError(f"{path}: cannot read it as UTF-8 text ({error})") from None


def read_queries(path: Path) -> dict[str, str]:
    """Query id → query text, in file order."""
    text = _read(path)
    if re.search(r"<top>", text, re.IGNORECASE):
        queries = _trec_topics(path, text)
    elif text.lstrip().startswith("{"):
        queries = _json_lines(path, text)
    else:
        queries = _lines(path, text)
    if not queries:
        raise CollectionError(f"{path}: no queries in the file")
    return queries


def _add(path: Path, line: int, queries: dict[str, str], query_id: str, text: str) -> None:
    text = " ".join(text.split())
    if not query_id:
        raise CollectionError(f"{path}:{line}: a query without an id")
    if not text:
        raise CollectionError(f"{path}:{line}: query {query_id!r} has no text")
    if query_id in queries:
        raise CollectionError(f"{path}:{line}: query {query_id!r} appears twice")
    queries[query_id] = text


def _lines(path: Path, text: str) -> dict[str, str]:
    queries: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        parts = raw.strip().split("\t", 1) if "\t" in raw else raw.strip().split(None, 1)
        if len(parts) < 2:
            raise CollectionError(
                f"{path}:{number}: expected a query id and its text separated by a tab or "
                f"spaces, found {raw.strip()[:60]!r}"
            )
        if not queries and parts[0].strip().lower() in _HEADER_IDS:
            continue  # a header line naming the columns
        _add(path, number, queries, parts[0].strip(), parts[1])
    return queries


def _json_lines(path: Path, text: str) -> dict[str, str]:
    queries: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except json.JSONDecodeError as error:
            raise CollectionError(f"{path}:{number}: not a JSON object ({error.msg})") from None
        if not isinstance(record, dict):
            raise CollectionError(f"{path}:{number}: not a JSON object")
        query_id = next((record[k] for k in ("_id", "id", "qid") if k in record), None)
        query = next((record[k] for k in ("text", "query") if k in record), None)
        if query_id is None or not isinstance(query, str):
            raise CollectionError(
                f'{path}:{number}: a query needs an id ("_id", "id" or "qid") and a '
                'text ("text" or "query")'
            )
        _add(path, number, queries, str(query_id).strip(), query)
    return queries


def _trec_topics(path: Path, text: str) -> dict[str, str]:
    queries: dict[str, str] = {}
    for match in _TOPIC.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        fields: dict[str, str] = {}
        pieces = _FIELD.split(match.group(1))
        for name, value in zip(pieces[1::2], pieces[2::2], strict=True):
            fields[name.lower()] = value.strip()
        number = re.sub(r"^Number:\s*", "", fields.get("num", ""), flags=re.IGNORECASE)
        title = re.sub(r"^Topic:\s*", "", fields.get("title", ""), flags=re.IGNORECASE)
        if not number:
            raise CollectionError(f"{path}:{line}: a topic without a <num>")
        if not title:
            raise CollectionError(f"{path}:{line}: topic {number!r} has no <title>")
        _add(path, line, queries, number.split()[0], title)
    return queries


def read_qrels(path: Path) -> list[Judgment]:
    """Every judgment of the file, in file order; a query may judge a document once."""
    judgments: list[Judgment] = []
    seen: dict[tuple[str, str], int] = {}
    columns: int | None = None  # the first line decides; a file mixing the two is broken
    for number, raw in enumerate(_read(path).splitlines(), 1):
        fields = raw.split()
        if not fields:
            continue
        if columns is not None and len(fields) != columns and len(fields) in (3, 4):
            raise CollectionError(
                f"{path}:{number}: {len(fields)} fields, where the lines before have {columns}"
            )
        if len(fields) == 4:
            query_id, _, document, relevance = fields
        elif len(fields) == 3:
            query_id, document, relevance = fields
            if not judgments and query_id.lower() in _HEADER_IDS:
                continue  # BEIR's header: query-id corpus-id score
        else:
            raise CollectionError(
                f"{path}:{number}: expected 'QUERY_ID ITERATION DOCUMENT RELEVANCE' (or "
                f"'QUERY_ID DOCUMENT RELEVANCE'), found {len(fields)} fields"
            )
        try:
            gain = float(relevance)
        except ValueError:
            raise CollectionError(
                f"{path}:{number}: relevance {relevance!r} is not a number"
            ) from None
        if gain != gain or gain in (float("inf"), float("-inf")):
            raise CollectionError(f"{path}:{number}: relevance {relevance!r} is not a number")
        key = (query_id, document)
        if key in seen:
            raise CollectionError(
                f"{path}:{number}: query {query_id!r} judges {document!r} a second time "
                f"(first on line {seen[key]})"
            )
        seen[key] = number
        columns = len(fields)
        judgments.append(Judgment(query_id, document, gain, number))
    if not judgments:
        raise CollectionError(f"{path}: no judgments in the file")
    return judgments
