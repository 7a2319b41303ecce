"""The Sources page's body: each source's counts, last run, failures and pending embeddings,
with a link to its partition in the Dagster UI."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from garage.pages.html import (
    Html,
    esc,
    link,
    tag,
    url,
    when,
)


def dagster_partition_url(source: str) -> str:
    """The source's partition of the ingest assets in the Dagster UI, served beside the pages,
    where Materialize runs it."""
    from urllib.parse import quote

    return f"/assets/documents?view=partitions&partition={quote(source, safe='')}"


def sources_page(
    sources: Sequence[Any],
    health: Mapping[str, Any],
    standing: Mapping[str, Sequence[Any]],
    stats: Any,
) -> Html:
    """``standing``: each source's ``garage.status.ModelStanding`` per model."""
    by_class = ", ".join(f"{k}: {v}" for k, v in stats.documents_by_class.items())
    models = ", ".join(
        f"{m.name}{' (default)' if m.is_default else ''}: {m.vectors} vectors"
        for m in stats.embedding_models
    )
    parts: list[str] = [
        tag("p", f"{stats.sources} sources, {stats.documents} documents ({by_class}), "
                 f"{stats.chunks} chunks, {stats.authors} authors", class_="took"),
        tag("p", f"Embedding models: {models or 'none registered'}", class_="took"),
    ]  # fmt: skip
    for s in sources:
        h = health[s.name]
        run = h.last_run
        if run is None:
            state = "never run"
        elif run.completed:
            state = f"complete, finished {when(run.finished_at)}"
        elif run.finished_at is None:
            state = f"running or interrupted, started {when(run.started_at)}"
        else:
            state = f"incomplete, finished {when(run.finished_at)}"
        why = (run.stop_reason or run.note) if run else None
        counts = (
            ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in run.counts.items() if v) if run
            else ""
        )  # fmt: skip
        embedding = (
            "".join(
                "<li>"
                + esc(f"{m.model}: {m.embedded} embedded, {m.pending} waiting; {m.estimate}")
                + "</li>"
                for m in standing.get(s.name, ())
            )
            or "<li>no embedding model registered</li>"
        )
        outcomes = "".join(
            "<li>" + tag("span", o.outcome, class_=f"outcome {o.outcome}") + " "
            + tag("code", o.uri) + " — " + esc(o.reason) + "</li>"
            for o in h.outcomes
        )  # fmt: skip
        more = sum(h.outcome_counts.values()) - len(h.outcomes)
        outcome_counts = ", ".join(f"{k} {v}" for k, v in sorted(h.outcome_counts.items()))
        parts.append(
            '<section class="source">'
            + tag("h2", s.name)
            + tag("p", f"{s.kind} · {s.corpus_class} · {', '.join(s.roots)}", class_="about")
            + '<dl class="meta">'
            + f"<dt>documents</dt><dd>{esc(s.documents)}</dd>"
            + f"<dt>chunks</dt><dd>{esc(s.chunks)}</dd>"
            + f"<dt>last run</dt><dd>{esc(state)}</dd>"
            + (f"<dt>stopped</dt><dd>{esc(why)}</dd>" if why else "")
            + (f"<dt>counts</dt><dd>{esc(counts)}</dd>" if counts else "")
            + f'<dt>pending embeddings</dt><dd><ul class="embedding">{embedding}</ul></dd>'
            + "</dl>"
            + '<p class="links">'
            + link(dagster_partition_url(s.name), "Materialize in Dagster")
            + " · "
            + link(url("/search", {"source": s.name}), "search it")
            + " · "
            + link(url("/facts", {"source": s.name}), "its facts")
            + "</p>"
            + (f"<details><summary>Files not indexed ({esc(outcome_counts)})</summary>"
               f'<ul class="outcomes">{outcomes}</ul>'
               + (tag("p", f"and {more} more", class_="note") if more > 0 else "")
               + "</details>" if h.outcomes else "")
            + "</section>"
        )  # fmt: skip
    if not sources:
        parts.append(tag("p", "No sources yet: `garage sources add NAME FOLDER`.", class_="none"))
    # Every piece above was built from escaped parts.
    return Html("".join(parts))
