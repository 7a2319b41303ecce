"""``garage enrich-facts`` and ``garage facts``: extracting potential facts, and reading them."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict

import click

from garage.cli.common import (
    GarageContext,
    ProgressBars,
    echo_json,
    no_wait_option,
    user_errors,
    waiting,
)
from garage.db import connect, resolve_url
from garage.db.migrate import ensure_migrated


@contextmanager
def facts_errors() -> Iterator[None]:
    from garage.facts import FactsError
    from garage.inference import InferenceError

    try:
        yield
    except (FactsError, InferenceError, ValueError) as error:
        raise click.ClickException(str(error)) from None


@click.command("enrich-facts")
@click.argument("source", required=False)
@click.option(
    "--prompt",
    "prompts",
    multiple=True,
    help="Run only this prompt (repeatable; a disabled one too; 'metadata' for header facts).",
)
@click.option("--stale-only", is_flag=True, help="Skip a prompt whose last run is current.")
@click.option("--model", help="The chat model id (default facts.model, else inference.model).")
@click.option(
    "--provider",
    type=click.Choice(["llama_server", "ollama", "lmstudio"]),
    help="Its server (default facts.provider, else inference.provider).",
)
@click.option("--limit", type=click.IntRange(min=1), help="Work on at most N documents.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@no_wait_option
@click.pass_obj
def enrich_facts_cmd(
    obj: GarageContext,
    source: str | None,
    prompts: tuple[str, ...],
    stale_only: bool,
    model: str | None,
    provider: str | None,
    limit: int | None,
    as_json: bool,
    no_wait: bool,
) -> None:
    """Extract span-grounded potential facts from the stored documents (of SOURCE, default all).

    Every enabled prompt in facts.prompts (and the built-in default) runs over each document
    it applies to, on the local chat model; mail and chat threads also get the facts their
    headers state. A fact that cannot be located in the document is dropped. Not part of
    ingest: run it when you want facts, then `garage embed` gives them vectors.
    """
    from garage.config import data_dir
    from garage.facts import enrich_facts
    from garage.inference import EgressGuard, InferenceClient
    from garage.inference.egress import note_allowlist
    from garage.stopping import stop_on_sigterm

    config = obj.config()
    if source is not None:
        try:
            config.source(source)
        except KeyError as error:
            raise click.ClickException(str(error.args[0])) from None
    with user_errors(), facts_errors(), stop_on_sigterm() as stop:
        url = resolve_url(config)
        ensure_migrated(url)
        guard = EgressGuard.from_config(config)
        note_allowlist(guard, data_dir(config) / "egress-allowlist.json")
        client = InferenceClient(guard, timeout=config.inference.timeout_seconds)
        with (
            connect(url, autocommit=True) as conn,
            client,
            ProgressBars(" documents", quiet=as_json) as bars,
        ):
            report = enrich_facts(
                conn,
                config,
                client=client,
                source=source,
                prompt_names=prompts,
                stale_only=stale_only,
                model=model,
                provider=provider,
                limit=limit,
                progress=bars.of("facts"),
                stop=stop,
                waiting=waiting(no_wait, stop),
            )
    if as_json:
        echo_json(asdict(report) | {"chars_per_second": report.chars_per_second})
    else:
        click.echo(report.summary())
        for line in report.errors[:20]:
            click.echo(f"  {line}", err=True)
    if stop.requested:
        sys.exit(143)


@click.group("facts")
def facts_group() -> None:
    """Stored potential facts, and the prompts that extract them."""


@facts_group.command("list")
@click.argument("text", required=False)
@click.option("--substring", is_flag=True, help="Match TEXT as a substring, not full-text.")
@click.option("--source", "sources", multiple=True, help="Only this source (repeatable).")
@click.option("--document", "document_id", type=int, help="Only this document id.")
@click.option("--class", "classes", multiple=True, help="Only this fact class (repeatable).")
@click.option(
    "--corpus-class",
    "corpus_classes",
    multiple=True,
    type=click.Choice(["document", "code", "communication"]),
    help="Only documents of this class (repeatable).",
)
@click.option("--prompt", "prompts", multiple=True, help="Only from this prompt (repeatable).")
@click.option("--limit", type=click.IntRange(1, 500), default=50, show_default=True)
@click.option("--offset", type=click.IntRange(min=0), default=0)
@click.option(
    "--context",
    "context_chars",
    type=click.IntRange(0, 2000),
    default=80,
    show_default=True,
    help="Characters of document text shown on each side of the span.",
)
@click.option("--evidence", is_flag=True, help="Print each fact's span with its offsets.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def facts_list(
    obj: GarageContext,
    text: str | None,
    substring: bool,
    sources: tuple[str, ...],
    document_id: int | None,
    classes: tuple[str, ...],
    corpus_classes: tuple[str, ...],
    prompts: tuple[str, ...],
    limit: int,
    offset: int,
    context_chars: int,
    evidence: bool,
    as_json: bool,
) -> None:
    """Facts matching TEXT (full-text; --substring for a part of a word) and the filters."""
    from garage.facts.browse import FactQuery, list_facts

    config = obj.config()
    query = FactQuery(
        text=text,
        substring=substring,
        sources=sources,
        document_id=document_id,
        classes=classes,
        corpus_classes=corpus_classes,
        prompts=prompts,
        limit=limit,
        offset=offset,
        context_chars=context_chars,
    )
    with user_errors(), facts_errors():
        url = resolve_url(config)
        ensure_migrated(url)
        with connect(url) as conn:
            result = list_facts(conn, query)
    if as_json:
        echo_json(result)
        return
    for fact in result.facts:
        where = fact.title or fact.uri
        click.echo(f"#{fact.fact_id} [{fact.fact_class}] {fact.text}")
        click.echo(f"    {fact.source}: {where} (document {fact.document_id}, {fact.prompt_name})")
        if evidence:
            click.echo(f"    span {fact.start_offset}-{fact.end_offset}: {fact.text!r}")
        if context_chars:
            around = f"…{fact.before}[{fact.text}]{fact.after}…".replace("\n", " ")
            click.echo(f"    {around}")
    click.echo(f"{len(result.facts)} of {result.total} facts", err=True)


@facts_group.command("stats")
@click.option("--source", "sources", multiple=True, help="Only this source (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def facts_stats(obj: GarageContext, sources: tuple[str, ...], as_json: bool) -> None:
    """How many facts each source holds, per class and per prompt."""
    from garage.facts.browse import fact_stats

    config = obj.config()
    with user_errors(), facts_errors():
        url = resolve_url(config)
        ensure_migrated(url)
        with connect(url) as conn:
            stats = fact_stats(conn, sources)
    if as_json:
        echo_json(stats)
        return
    click.echo(f"{stats.facts} facts in {stats.documents_with_facts} documents")
    for count in stats.by_source_and_class:
        click.echo(
            f"  {count.source}  {count.fact_class}: {count.facts} facts in "
            f"{count.documents} documents"
        )
    for prompt, n in stats.by_prompt.items():
        click.echo(f"  prompt {prompt}: {n}")


@facts_group.group("prompts")
def prompts_group() -> None:
    """The effective fact prompts: the built-in default merged with facts.prompts."""


@prompts_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def prompts_list(obj: GarageContext, as_json: bool) -> None:
    """Every effective prompt, in the order enrich-facts runs them."""
    from garage.facts import effective_prompts

    prompts = effective_prompts(obj.config())
    if as_json:
        echo_json([p.as_json() for p in prompts])
        return
    for prompt in prompts:
        state = "enabled" if prompt.enabled else "disabled"
        origin = "built-in" if prompt.builtin else "config"
        scope = ", ".join([*prompt.corpus_classes, *prompt.sources]) or "every document"
        click.echo(
            f"{prompt.name} ({origin}, {state}; {scope}; classes {', '.join(prompt.classes)}; "
            f"sha256 {prompt.sha256[:12]})"
        )


@prompts_group.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def prompts_show(obj: GarageContext, name: str, as_json: bool) -> None:
    """One effective prompt: its description, examples, scope and hash."""
    from garage.facts import effective_prompts

    prompts = {p.name: p for p in effective_prompts(obj.config())}
    if name not in prompts:
        raise click.ClickException(f"no fact prompt named {name!r} (prompts: {', '.join(prompts)})")
    data = prompts[name].as_json()
    if as_json:
        echo_json(data)
        return
    click.echo(f"name: {data['name']} ({'built-in' if data['builtin'] else 'config'})")
    click.echo(f"enabled: {data['enabled']}")
    click.echo(f"scope: {data['scope']}")
    click.echo(f"sha256: {data['sha256']}")
    click.echo("description:")
    click.echo(f"  {data['description']}")
    for index, example in enumerate(data["examples"]):
        click.echo(f"example {index + 1}: {example['text']}")
        for extraction in example["extractions"]:
            attributes = extraction.get("attributes")
            suffix = f" {attributes}" if attributes else ""
            click.echo(f"  - {extraction['class']}: {extraction['text']!r}{suffix}")
