"""The Facts page's body: the filters, counts per source and class, each fact with the text
around its span, and the distilled facts with their members."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from garage.pages.html import (
    Html,
    esc,
    join,
    link,
    tag,
    url,
)
from garage.pages.views import CLASSES, document_url, field, select, shown_path, text_input


def facts_form(params: Mapping[str, str], sources: Sequence[str], classes: Sequence[str],
               prompts: Sequence[str]) -> Html:  # fmt: skip
    def choices(values: Sequence[str], empty: str) -> list[tuple[str, str]]:
        return [("", empty), *((v, v) for v in values)]

    substring = " checked" if params.get("substring") else ""
    return Html(
        f'<form class="query" method="get" action="{url("/facts")}">'
        + text_input(
            "text",
            params.get("text"),
            type="search",
            autofocus="autofocus",
            aria_label="Words in the fact",
            placeholder="Words in the fact",
        )  # fmt: skip
        + '<button type="submit">Filter</button><div class="grid">'
        + '<label class="check"><input type="checkbox" name="substring" value="1"'
        + f"{substring}> substring</label>"
        + field(
            "source", select("source", choices(sources, "every source"), params.get("source", ""))
        )  # fmt: skip
        + field("class", select("class", choices(classes, "every class"), params.get("class", "")))
        + field("kind", select("corpus", CLASSES, params.get("corpus", "")))
        + field(
            "prompt", select("prompt", choices(prompts, "every prompt"), params.get("prompt", ""))
        )  # fmt: skip
        + field(
            "document",
            text_input("document", params.get("document"), inputmode="numeric", size="8"),
        )  # fmt: skip
        + "</div></form>"
    )


def fact_stats_table(stats: Any) -> Html:
    rows = join(
        Html(
            "<tr>"
            + tag("td", link(url("/facts", {"source": c.source}), c.source))
            + tag(
                "td", link(url("/facts", {"source": c.source, "class": c.fact_class}), c.fact_class)
            )  # fmt: skip
            + tag("td", c.facts, class_="n")
            + tag("td", c.documents, class_="n")
            + "</tr>"
        )
        for c in stats.by_source_and_class
    )
    prompts = ", ".join(f"{name}: {n}" for name, n in stats.by_prompt.items())
    return Html(
        tag(
            "p",
            f"{stats.facts} facts in {stats.documents_with_facts} documents"
            + (f" (by prompt: {prompts})" if prompts else ""),
            class_="took",
        )  # fmt: skip
        + "<details><summary>Counts per source and class</summary>"
        + '<table><thead><tr><th>source</th><th>class</th><th class="n">facts</th>'
        + f'<th class="n">documents</th></tr></thead><tbody>{rows}</tbody></table></details>'
    )


def fact_list(listing: Any, distilled: Mapping[int, int], params: Mapping[str, str],
              offset: int, limit: int) -> Html:  # fmt: skip
    items = []
    for f in listing.facts:
        group = distilled.get(f.fact_id)
        items.append(
            '<li class="fact">'
            + tag("span", f.fact_class, class_="class")
            + f' <span class="context">…{esc(f.before)}<mark class="fact">{esc(f.text)}</mark>'
            + f"{esc(f.after)}…</span>"
            + '<p class="about">'
            + link(
                document_url(f.document_id, f.start_offset, f.end_offset),
                f.title or shown_path(f.uri),
            )
            + esc(f" · {f.source} · {f.prompt_name} · {f.alignment}")
            + (
                " · " + link(url("/facts", {"distilled": group}), f"distilled #{group}")
                if group
                else ""
            )  # fmt: skip
            + "</p></li>"
        )
    if not listing.facts:
        items.append('<li class="none">No facts match.</li>')
    pager = []
    if offset > 0:
        pager.append(link(url("/facts", {**params, "offset": max(0, offset - limit)}),
                          "← earlier"))  # fmt: skip
    if offset + limit < listing.total:
        pager.append(link(url("/facts", {**params, "offset": offset + limit}), "later →"))
    shown = f"{listing.total} matching; {offset + 1}–{offset + len(listing.facts)} shown"
    return Html(
        tag("p", shown if listing.facts else "0 matching", class_="took")
        + '<ul class="factlist">' + "".join(items) + "</ul>"
        + f'<p class="pager">{join(pager, " · ")}</p>'
    )  # fmt: skip


def distilled_list(groups: Sequence[Any]) -> Html:
    if not groups:
        return Html("")
    items = []
    for g in groups:
        members = join(
            Html(
                "<li>"
                + tag("q", m.text)
                + " — "
                + link(
                    document_url(m.document_id, m.start_offset, m.end_offset),
                    m.title or shown_path(m.uri),
                )  # fmt: skip
                + "</li>"
            )
            for m in g.members
        )
        statement = g.statement or g.representative or ""
        items.append(
            f'<li class="distilled" id="distilled-{g.id}">'
            + link(url("/facts", {"distilled": g.id}), f"#{g.id}")
            + " "
            + tag("span", g.fact_class, class_="class")
            + " "
            + tag("strong", statement)
            + tag("span", f" {g.nodes} members · {g.status}", class_="about")
            + f"<ul>{members}</ul></li>"
        )
    return Html(f'<h2>Distilled facts</h2><ul class="distilledlist">{"".join(items)}</ul>')
