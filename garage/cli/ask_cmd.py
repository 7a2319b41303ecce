"""``garage ask``: a cited answer from the local model, the CLI front door to rag_ask and
rag_agent."""

from __future__ import annotations

import sys
from dataclasses import asdict

import click

from garage.cli.common import GarageContext, echo_json, user_errors


@click.command("ask")
@click.argument("question", nargs=-1, required=True)
@click.option("--agent", is_flag=True, help="Let the model search and read the index itself.")
@click.option(
    "--limit", type=click.IntRange(1, 20), default=6, show_default=True,
    help="Excerpts to answer from (without --agent).",
)  # fmt: skip
@click.option("--source", "sources", multiple=True, help="Only this source (repeatable).")
@click.option(
    "--class", "classes", multiple=True,
    type=click.Choice(["document", "code", "communication"]),
    help="Only this corpus class (repeatable; without --agent).",
)  # fmt: skip
@click.option(
    "--max-steps", type=click.IntRange(1, 20), default=6, show_default=True,
    help="With --agent: most tool calls the model may make.",
)  # fmt: skip
@click.option(
    "--no-search-first", is_flag=True,
    help="With --agent: do not search before the model's first reply.",
)  # fmt: skip
@click.option(
    "--max-tokens", type=click.IntRange(1, 4096), default=400, show_default=True,
    help="Longest answer (each reply, with --agent), in tokens.",
)  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the whole result as JSON.")
@click.pass_obj
def ask_cmd(
    obj: GarageContext,
    question: tuple[str, ...],
    agent: bool,
    limit: int,
    sources: tuple[str, ...],
    classes: tuple[str, ...],
    max_steps: int,
    no_search_first: bool,
    max_tokens: int,
    as_json: bool,
) -> None:
    """Answer QUESTION from the index with the local chat model, citing what it used.

    The answer is printed as the model writes it, then the excerpts it cites; --json prints
    one object at the end instead. Retrieval is the same as `garage search`; nothing leaves
    this machine except to the configured local model host, and mail and chats only ever go
    to a model on this machine.
    """
    from garage.ask import AskResult, ask, chat_model
    from garage.ask.agent import Agent, AgentResult
    from garage.db.runtime import Runtime
    from garage.inference import InferenceError
    from garage.search import SearchError

    config = obj.config()
    text = " ".join(question)
    streamed = False

    def show(piece: str) -> None:
        nonlocal streamed
        streamed = True
        click.echo(piece, nl=False)
        sys.stdout.flush()

    def report(progress: float, total: float | None, message: str) -> None:
        click.echo(f"  {message}", err=True)

    with user_errors():
        runtime = Runtime.from_config(config)
        try:
            with chat_model(config) as model:
                if agent:
                    result: AskResult | AgentResult = Agent.for_model(
                        runtime, model, reply_tokens=max_tokens
                    ).run(
                        text, max_steps=max_steps, search_first=not no_search_first,
                        on_progress=None if as_json else report,
                    )  # fmt: skip
                else:
                    with runtime.reader() as conn:
                        result = ask(
                            conn, config, text, limit=limit, sources=sources,
                            corpus_classes=classes, model=model, answer_tokens=max_tokens,
                            on_text=None if as_json else show,
                        )  # fmt: skip
        except (InferenceError, SearchError, ValueError) as error:
            if streamed:
                click.echo()
            raise click.ClickException(str(error)) from None
    if as_json:
        echo_json(asdict(result))
        return
    # Streamed already; a result with nothing streamed (no excerpts, a server that ignored
    # `stream`) is printed whole.
    click.echo("" if streamed else result.answer)
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    if isinstance(result, AgentResult):
        # Its steps were reported as they happened.
        lines = [f"[doc {c.document_id}] {c.title or c.uri} ({c.uri})" for c in result.citations]
    else:
        # The excerpts the answer cites; all of them when it cites none.
        cited = set(result.cited) or {c.number for c in result.citations}
        lines = [
            f"[{c.number}] {c.title or c.uri} ({c.uri})"
            for c in result.citations
            if c.number in cited
        ]
    if lines:
        click.echo("\nSources:")
        for line in lines:
            click.echo(f"  {line}")
