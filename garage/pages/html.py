"""HTML for Garage's pages, built as strings: every piece of indexed text goes through
``esc`` (or a helper that calls it) before it is put in a page, so a mail body holding
``<script>``, a file name holding ``"><img onerror=…>`` or a fact quoting HTML is shown as
text. No template engine: the pages are few and small, and one escaping rule is easy to check.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

PREFIX = "/garage"
PAGES = (
    ("search", "Search"),
    ("ask", "Ask"),
    ("facts", "Facts"),
    ("graph", "Graph"),
    ("sources", "Sources"),
)
# No inline script or style, nothing from another origin; forms post only here.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    # Not no-referrer: under it Chromium sends `Origin: null` with a form's POST, which the
    # guard rightly refuses as another site's. Nothing links off the origin anyway.
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
    # What a person searched for or read is nobody's cache's business.
    "cache-control": "no-store",
}


class Html(str):
    """Markup already escaped: ``esc`` passes it through unchanged."""


def esc(value: object) -> Html:
    if isinstance(value, Html):
        return value
    return Html(html.escape("" if value is None else str(value), quote=True))


def join(parts: Iterable[object], sep: str = "") -> Html:
    return Html(sep.join(esc(part) for part in parts))


def url(path: str, params: Mapping[str, object] | None = None, fragment: str = "") -> str:
    """A link to one of the pages, with its query string (values dropped when empty)."""
    query = {
        k: str(v) for k, v in (params or {}).items() if v is not None and v is not False and v != ""
    }
    text = PREFIX + path + ("?" + urlencode(query) if query else "")
    return text + (f"#{fragment}" if fragment else "")


def link(href: str, text: object, **attributes: object) -> Html:
    return tag("a", text, href=href, **attributes)


def tag(name: str, body: object = "", **attributes: object) -> Html:
    extra = "".join(
        f' {key.rstrip("_").replace("_", "-")}="{esc(value)}"'
        for key, value in attributes.items()
        if value is not None and value is not False
    )
    return Html(f"<{name}{extra}>{esc(body)}</{name}>")


def page(title: str, active: str, body: object, *, scripts: Sequence[str] = ()) -> Html:
    """A whole page: the navigation, the body, the stylesheet and any of our own scripts."""
    nav = join(
        tag("a", label, href=url(f"/{slug}"), aria_current="page" if slug == active else None)
        for slug, label in PAGES
    )
    script_tags = join(
        Html(f'<script src="{esc(PREFIX)}/static/{esc(name)}" defer></script>') for name in scripts
    )
    return Html(
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} · Garage</title>"
        f'<link rel="stylesheet" href="{PREFIX}/static/garage.css">'
        f'<link rel="icon" href="{PREFIX}/static/icon.svg" type="image/svg+xml">'
        f"{script_tags}</head><body>"
        '<a class="skip" href="#main">Skip to content</a>'
        f'<header><a class="brand" href="{PREFIX}/search">Garage</a><nav>{nav}</nav>'
        '<a class="dagster" href="/">Dagster</a></header>'
        f'<main id="main">{esc(body)}</main></body></html>'
    )


def words_of(query: str) -> list[str]:
    """The words of a query worth marking in an excerpt (two letters or more)."""
    return sorted({w.lower() for w in re.findall(r"\w{2,}", query)}, key=len, reverse=True)


def marked(text: str, words: Sequence[str]) -> Html:
    """``text`` escaped, with each of ``words`` (case-insensitive, at word starts) in <mark>."""
    if not words:
        return esc(text)
    pattern = re.compile(r"\b(" + "|".join(re.escape(w) for w in words) + r")", re.IGNORECASE)
    out: list[str] = []
    last = 0
    for match in pattern.finditer(text):
        out.append(esc(text[last : match.start()]))
        out.append(f"<mark>{esc(match.group(0))}</mark>")
        last = match.end()
    out.append(esc(text[last:]))
    return Html("".join(out))


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    kind: str  # "chunk" (the part a link pointed at) or "fact"
    title: str = ""  # a tooltip: the fact's class
    anchor: str = ""  # an id for the span's first piece, for a link to scroll to


def spans_marked(text: str, spans: Sequence[Span], offset: int = 0) -> Html:
    """``text`` (which starts at character ``offset`` of its document) escaped, with the
    spans marked. Spans may overlap (a fact inside the pointed-at chunk), so the text is cut
    at every span boundary and each piece gets the classes of the spans covering it: never a
    tag closed across another."""
    cuts = {0, len(text)}
    local = []
    for span in spans:
        start, end = max(span.start - offset, 0), min(span.end - offset, len(text))
        if start < end:
            local.append((start, end, span))
            cuts |= {start, end}
    points = sorted(cuts)
    out: list[str] = []
    anchored: set[str] = set()
    for start, end in zip(points, points[1:], strict=False):
        covering = [s for (a, b, s) in local if a <= start and end <= b]
        piece = esc(text[start:end])
        for span in covering:
            if span.anchor and span.anchor not in anchored:
                anchored.add(span.anchor)
                out.append(f'<span id="{esc(span.anchor)}" class="anchor"></span>')
        facts = [s for s in covering if s.kind == "fact"]
        if facts:
            title = "; ".join(dict.fromkeys(s.title for s in facts if s.title))
            piece = Html(f'<mark class="fact" title="{esc(title)}">{piece}</mark>')
        if any(s.kind == "chunk" for s in covering):
            piece = Html(f'<span class="chunk">{piece}</span>')
        out.append(piece)
    return Html("".join(out))


def when(value: object) -> str:
    """A date or time as people read it: ISO to the minute, UTC."""
    if value is None:
        return ""
    text = value.isoformat() if hasattr(value, "isoformat") else str(value)
    return text[:16].replace("T", " ")


def options(values: Iterable[tuple[str, str]], chosen: object) -> Html:
    return join(
        Html(
            f'<option value="{esc(value)}"{" selected" if str(value) == str(chosen) else ""}>'
            f"{esc(label)}</option>"
        )
        for value, label in values
    )
