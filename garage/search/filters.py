"""Search filters as one SQL predicate, shared by both engines.

Each engine applies the filters before it takes its candidates, so a filtered search still
hands 200 matching chunks to the fusion rather than 200 chunks of which a few survive. The
predicate reads the aliases every leg joins: ``c`` (chunks), ``d`` (documents), ``s`` (sources)
and ``a`` (authors, left-joined).

Message chunks carry their direction and sender in ``chunks.metadata`` (``direction`` is
``sent`` or ``received``, ``sender`` a name or address). A chunk's date is its own
``metadata.date`` (a message's time), else its document's ``metadata.date``, else the file's
modification time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, time, timedelta
from typing import Any, get_args

from psycopg import sql

from garage.search.types import MAX_LIMIT, CorpusClass, Direction, Mode, SearchQuery

# Joined by every leg that filters, and by the statement that reads the hits.
FILTER_JOINS = sql.SQL(
    "JOIN documents d ON d.id = c.document_id"
    " JOIN sources s ON s.id = d.source_id"
    " LEFT JOIN authors a ON a.id = d.author_id"
)

CHUNK_DATE = sql.SQL(
    "coalesce(garage_try_timestamptz(c.metadata->>'date'),"
    " garage_try_timestamptz(d.metadata->>'date'),"
    " to_timestamp(d.mtime_ns / 1e9))"
)


class SearchError(ValueError):
    """A query that cannot run as asked; the message names the field and what is allowed."""


@dataclass(frozen=True)
class Filters:
    predicate: sql.Composable
    params: dict[str, Any] = field(default_factory=dict)
    active: bool = False


def validate(query: SearchQuery) -> None:
    """Refuse what no engine can answer, naming the field: front doors pass user input here."""
    if not isinstance(query.text, str) or not query.text.strip():
        raise SearchError("text: the query is empty")
    if len(query.text) > 10_000:
        raise SearchError("text: a query is at most 10,000 characters")
    if isinstance(query.limit, bool) or not isinstance(query.limit, int):
        raise SearchError("limit: must be a whole number")
    if not 1 <= query.limit <= MAX_LIMIT:
        raise SearchError(f"limit: must be between 1 and {MAX_LIMIT}, not {query.limit}")
    if query.mode not in get_args(Mode):
        raise SearchError(f"mode: {query.mode!r} is not one of {', '.join(get_args(Mode))}")
    for value in query.corpus_classes:
        if value not in get_args(CorpusClass):
            allowed = ", ".join(get_args(CorpusClass))
            raise SearchError(f"corpus_classes: {value!r} is not one of {allowed}")
    if query.direction is not None and query.direction not in get_args(Direction):
        raise SearchError(f"direction: {query.direction!r} is not 'sent' or 'received'")
    for name in ("sources", "authors"):
        values = getattr(query, name)
        if not all(isinstance(v, str) and v.strip() for v in values):
            raise SearchError(f"{name}: every value must be a non-empty string")
    if query.sender is not None and not query.sender.strip():
        raise SearchError("sender: must not be empty")
    for name in ("date_from", "date_to"):
        value = getattr(query, name)
        if value is not None and not isinstance(value, datetime):
            raise SearchError(f"{name}: must be a datetime")
    if query.date_from and query.date_to and _aware(query.date_from) > _aware(query.date_to):
        raise SearchError("date_from: is after date_to, so nothing can match")


def _aware(value: datetime) -> datetime:
    # A date without a zone means UTC, whatever the server's TimeZone says.
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _like_pattern(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def build(query: SearchQuery) -> Filters:
    """The predicate for ``query``'s filters (``true`` when it has none)."""
    parts: list[sql.Composable] = []
    params: dict[str, Any] = {}
    if query.sources:
        parts.append(sql.SQL("s.name = ANY(%(f_sources)s)"))
        params["f_sources"] = list(query.sources)
    if query.corpus_classes:
        parts.append(sql.SQL("d.corpus_class = ANY(%(f_classes)s)"))
        params["f_classes"] = list(query.corpus_classes)
    if query.authors:
        # A person is named by name or address, in any case.
        parts.append(
            sql.SQL("(lower(a.name) = ANY(%(f_authors)s) OR lower(a.email) = ANY(%(f_authors)s))")
        )
        params["f_authors"] = [a.strip().lower() for a in query.authors]
    if query.date_from is not None:
        parts.append(sql.SQL("{} >= %(f_date_from)s").format(CHUNK_DATE))
        params["f_date_from"] = _aware(query.date_from)
    if query.date_to is not None:
        parts.append(sql.SQL("{} <= %(f_date_to)s").format(CHUNK_DATE))
        params["f_date_to"] = _aware(query.date_to)
    if query.direction is not None:
        parts.append(sql.SQL("c.metadata->>'direction' = %(f_direction)s"))
        params["f_direction"] = query.direction
    if query.sender is not None:
        # A part of the name or address is enough: "alice" finds "Alice <alice@example.org>".
        parts.append(sql.SQL("c.metadata->>'sender' ILIKE %(f_sender)s"))
        params["f_sender"] = _like_pattern(query.sender.strip())
    if not parts:
        return Filters(sql.SQL("true"))
    return Filters(sql.SQL(" AND ").join(parts), params, active=True)


def parse_date(field: str, value: str | None, *, end_of_day: bool = False) -> datetime | None:
    """A date filter as a caller writes it: an ISO date or date-time (UTC when it names no
    zone); a bare date as the end of a range means the whole of that day. ``field`` names the
    argument in the error."""
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(f"{field}: {value!r} is not a date (YYYY-MM-DD or ISO 8601)") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    if len(value.strip()) == 10 and end_of_day:
        parsed = datetime.combine(parsed.date(), time.min, UTC) + timedelta(days=1, microseconds=-1)
    return parsed
