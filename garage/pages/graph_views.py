"""The Graph page's body: labels with counts, a title search for the starting vertex, and its
neighbourhood drawn server-side as one ring per hop (SVG, so it needs no script)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from garage.pages.html import (
    Html,
    esc,
    join,
    link,
    tag,
    url,
)
from garage.pages.views import document_url, field, select, text_input


@dataclass(frozen=True)
class Placed:
    vertex: Any
    x: float
    y: float


SIZE = 800
LABEL_CHARS = 28


def vertex_ref(vertex: Any) -> str:
    return f"{vertex.label}:{vertex.id}" if vertex.id is not None else vertex.vid


def vertex_name(vertex: Any) -> str:
    title = vertex.title or vertex.properties.get("name") or vertex_ref(vertex)
    return str(title)


def rings(hood: Any) -> list[Placed]:
    """One ring per hop around the start, each ring's vertices spread evenly round it, a
    little turned from the ring inside so that spokes do not line up."""
    by_ring: dict[int, list[Any]] = {}
    for vertex in hood.vertices:
        by_ring.setdefault(vertex.ring, []).append(vertex)
    centre = SIZE / 2
    step = (SIZE / 2 - 60) / max(1, max(by_ring) if by_ring else 1)
    placed: list[Placed] = []
    for ring, members in sorted(by_ring.items()):
        if ring == 0:
            placed.extend(Placed(v, centre, centre) for v in members)
            continue
        members = sorted(members, key=lambda v: (v.label, vertex_name(v)))
        for i, vertex in enumerate(members):
            angle = 2 * math.pi * i / len(members) + ring * 0.37 - math.pi / 2
            placed.append(
                Placed(
                    vertex,
                    centre + step * ring * math.cos(angle),
                    centre + step * ring * math.sin(angle),
                )  # fmt: skip
            )
    return placed


def _css_class(label: str) -> str:
    return "v-" + re.sub(r"[^A-Za-z0-9_]", "", label)


def graph_svg(hood: Any) -> Html:
    placed = rings(hood)
    where = {p.vertex.vid: p for p in placed}
    lines = []
    for edge in hood.edges:
        a, b = where.get(edge.start), where.get(edge.end)
        if a and b:
            lines.append(
                f'<line x1="{a.x:.1f}" y1="{a.y:.1f}" x2="{b.x:.1f}" y2="{b.y:.1f}">'
                f"<title>{esc(edge.label)}</title></line>"
            )
    circles = [
        f'<circle class="ring" cx="{SIZE / 2}" cy="{SIZE / 2}" r="{r:.1f}"/>'
        for r in sorted({math.hypot(p.x - SIZE / 2, p.y - SIZE / 2) for p in placed} - {0.0})
    ]
    crowded = len(placed) > 40
    nodes = []
    for p in placed:
        v = p.vertex
        start = v.vid == hood.start.vid
        name = vertex_name(v)
        short = name if len(name) <= LABEL_CHARS else name[: LABEL_CHARS - 1] + "…"
        label = "" if crowded and v.ring > 1 else (
            f'<text x="{p.x:.1f}" y="{p.y + 22:.1f}">{esc(short)}</text>'
        )  # fmt: skip
        href = url("/graph", {"v": vertex_ref(v), "hops": hood.hops})
        nodes.append(
            f'<a class="vertex {_css_class(v.label)}{" start" if start else ""}"'
            f' href="{esc(href)}" data-vid="{esc(v.vid)}">'
            f"<title>{esc(v.label)}: {esc(name)}</title>"
            f'<circle cx="{p.x:.1f}" cy="{p.y:.1f}" r="{14 if start else 9}"/>{label}</a>'
        )
    return Html(
        f'<svg class="graph" viewBox="0 0 {SIZE} {SIZE}" role="img"'
        f' aria-label="{esc(len(placed))} vertices around {esc(vertex_name(hood.start))}">'
        f'<g class="rings">{"".join(circles)}</g><g class="edges">{"".join(lines)}</g>'
        f'<g class="vertices">{"".join(nodes)}</g></svg>'
    )


def graph_form(params: Mapping[str, str], labels: Sequence[Any]) -> Html:
    chips = join(
        link(
            url(
                "/graph",
                {
                    "find": params.get("find"),
                    "label": lab.label,
                    "v": params.get("v"),
                    "hops": params.get("hops"),
                },
            ),
            f"{lab.label} {lab.count}",
            class_="chip" + (" on" if params.get("label") == lab.label else ""),
        )  # fmt: skip
        if lab.kind == "vertex"
        else tag("span", f"{lab.label} {lab.count}", class_="chip edge")
        for lab in labels
    )
    hops = params.get("hops", "1")
    return Html(
        f'<p class="labels">{chips}</p>'
        f'<form class="query" method="get" action="{url("/graph")}">'
        + text_input("find", params.get("find"), type="search", autofocus="autofocus",
                     aria_label="Find a vertex by title", placeholder="Find a title, name or fact")
        + (Html(f'<input type="hidden" name="label" value="{esc(params["label"])}">')
           if params.get("label") else "")
        + (Html(f'<input type="hidden" name="v" value="{esc(params["v"])}">')
           if params.get("v") else "")
        + field("hops", select("hops", [(str(n), str(n)) for n in range(1, 5)], hops))
        + '<button type="submit">Go</button></form>'
    )  # fmt: skip


def found_vertices(vertices: Sequence[Any], hops: int) -> Html:
    if not vertices:
        return tag("p", "No vertex has that in its title.", class_="none")
    return Html(
        '<ul class="found">'
        + "".join(
            "<li>"
            + link(url("/graph", {"v": vertex_ref(v), "hops": hops}), vertex_name(v))
            + tag("span", f" {v.label}", class_="about")
            + "</li>"
            for v in vertices
        )
        + "</ul>"
    )


def neighbourhood_view(hood: Any) -> Html:
    start = hood.start
    by_ring: dict[int, list[Any]] = {}
    for v in hood.vertices:
        by_ring.setdefault(v.ring, []).append(v)
    listing = []
    for ring, members in sorted(by_ring.items()):
        if ring == 0:
            continue
        entries = "".join(
            "<li>" + link(url("/graph", {"v": vertex_ref(v), "hops": hood.hops}), vertex_name(v))
            + tag("span", f" {v.label}", class_="about") + "</li>"
            for v in sorted(members, key=lambda v: (v.label, vertex_name(v)))
        )  # fmt: skip
        listing.append(f"<h3>{ring} hop{'s' if ring > 1 else ''}</h3><ul>{entries}</ul>")
    doc_link = ""
    if start.label == "Document" and start.id is not None:
        doc_link = tag("p", link(document_url(start.id), "Open the document"), class_="links")
    truncated = tag("p", "Cut at 500 vertices.", class_="note") if hood.truncated else ""
    return Html(
        '<h2 id="start">'
        + esc(f"{start.label}: {vertex_name(start)}")
        + "</h2>"
        + tag("p", f"{len(hood.vertices)} vertices and {len(hood.edges)} edges within "
                   f"{hood.hops} hop{'s' if hood.hops > 1 else ''}", class_="took")  # fmt: skip
        + Html(doc_link)
        + truncated
        + graph_svg(hood)
        + '<div class="ringlist">' + "".join(listing) + "</div>"
    )  # fmt: skip
