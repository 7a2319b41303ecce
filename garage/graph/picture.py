"""A neighbourhood as a picture: Graphviz's ``twopi`` puts the start in the middle and each hop
on a ring around it, which is how the neighbourhood was found. Vertex kinds differ in shape
and colour; titles are wrapped so they stay readable."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import textwrap

from garage.graph.read import Neighbourhood, Vertex

# shape, fill colour per built-in vertex kind; configured labels get a colour from their name.
STYLES = {
    "Document": ("box", "#cfe2ff"),
    "Chunk": ("note", "#e9ecef"),
    "Author": ("ellipse", "#ffe5b4"),
    "PotentialFact": ("plaintext", "#ffffff"),
    "Fact": ("hexagon", "#d1e7dd"),
}
PALETTE = ("#f8d7da", "#e2d9f3", "#fff3cd", "#d2f4ea", "#cff4fc", "#fde2e4")
WRAP = 28
MAX_TITLE = 90


class PictureError(Exception):
    """Graphviz is missing or failed; the message says how to get it."""


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _style(label: str) -> tuple[str, str]:
    if label in STYLES:
        return STYLES[label]
    index = int(hashlib.sha256(label.encode()).hexdigest(), 16) % len(PALETTE)
    return "octagon", PALETTE[index]


def _caption(vertex: Vertex) -> str:
    title = vertex.title or ""
    if len(title) > MAX_TITLE:
        title = title[: MAX_TITLE - 1] + "…"
    lines = textwrap.wrap(title, WRAP) or [""]
    kind = vertex.label if vertex.id is None else f"{vertex.label} {vertex.id}"
    return "\n".join([kind, *lines])


def to_dot(hood: Neighbourhood) -> str:
    lines = [
        "digraph garage {",
        f"  graph [layout=twopi, root={_quote(hood.start.vid)}, ranksep=2.2, overlap=false,"
        ' splines=true, fontname="Helvetica"];',
        '  node [style="filled", fontname="Helvetica", fontsize=10, penwidth=0.8];',
        '  edge [fontname="Helvetica", fontsize=8, color="#6c757d", arrowsize=0.6];',
    ]
    for vertex in hood.vertices:
        shape, fill = _style(vertex.label)
        extra = ", penwidth=2.5" if vertex.vid == hood.start.vid else ""
        lines.append(
            f"  {_quote(vertex.vid)} [label={_quote(_caption(vertex))}, shape={shape},"
            f' fillcolor="{fill}"{extra}];'
        )
    for edge in hood.edges:
        lines.append(f"  {_quote(edge.start)} -> {_quote(edge.end)} [label={_quote(edge.label)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(dot: str, fmt: str = "svg") -> bytes:
    """The picture, drawn by ``twopi`` (Debian package graphviz)."""
    twopi = shutil.which("twopi")
    if twopi is None:
        raise PictureError(
            "Graphviz's twopi is not installed (Debian: apt-get install graphviz); "
            "--format dot prints the graph for another tool"
        )
    try:
        result = subprocess.run(
            [twopi, f"-T{fmt}"], input=dot.encode(), capture_output=True, timeout=120, check=False
        )
    except subprocess.TimeoutExpired:
        raise PictureError("twopi took more than two minutes; draw fewer hops") from None
    if result.returncode != 0:
        raise PictureError(f"twopi failed: {result.stderr.decode(errors='replace')[-500:]}")
    return result.stdout
