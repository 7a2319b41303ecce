"""``garage mcp-serve`` (the MCP server over streamable HTTP) and ``garage mcp install`` (a
client's config snippet for the stdio server, ``garage-mcp``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from garage.cli.common import GarageContext, user_errors


@click.command("mcp-serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True)
@click.option(
    "--token", envvar="GARAGE_MCP_TOKEN", show_envvar=True,
    help="Bearer token clients must send instead of the owner's (see `garage mcp token`); "
    "best given by the variable.",
)  # fmt: skip
@click.pass_obj
def mcp_serve_cmd(obj: GarageContext, host: str, port: int, token: str | None) -> None:
    """Serve the index to MCP clients over streamable HTTP at http://HOST:PORT/mcp.

    Every request must carry `Authorization: Bearer <token>`, on loopback too: the owner's
    token (`garage mcp token` prints it; `garage mcp install --http` puts it in a client's
    file). Read-only tools only: nothing a client calls changes the configuration.
    """
    from garage.db.runtime import Runtime
    from garage.loopback import TokenRequired
    from garage.mcp.http import MCP_PATH, check_binding, serve
    from garage.mcp.server import build_server

    try:
        check_binding(host, token or None)
    except TokenRequired as error:
        raise click.ClickException(str(error)) from None
    config = obj.config()
    source = "GARAGE_MCP_TOKEN or --token"
    if not token:
        token, source = _owner_token(config), str(_token_file(config))
    with user_errors():
        runtime = Runtime.from_config(config)
    shown = f"[{host}]" if ":" in host else host
    click.echo(
        f"MCP server on http://{shown}:{port}{MCP_PATH} (bearer token required: {source})",
        err=True,
    )
    serve(build_server(runtime), host=host, port=port, token=token)


def _token_file(config: Any) -> Path:
    from garage.config import data_dir
    from garage.tokens import MCP_TOKEN, token_path

    return token_path(data_dir(config), MCP_TOKEN)


def _owner_token(config: Any, *, rotate: bool = False) -> str:
    from garage.tokens import TokenFileError, owner_token

    try:
        return owner_token(_token_file(config), rotate=rotate)
    except (TokenFileError, OSError) as error:
        raise click.ClickException(str(error)) from None


@click.group("mcp")
def mcp_group() -> None:
    """Connect MCP clients to Garage."""


@mcp_group.command("token")
@click.option(
    "--rotate", is_flag=True, help="Make a new token; clients holding the old one get 401."
)
@click.option("--path", "path_only", is_flag=True, help="Print where the token is kept, not it.")
@click.pass_obj
def mcp_token(obj: GarageContext, rotate: bool, path_only: bool) -> None:
    """Print the bearer token `garage mcp-serve` asks for.

    Made on first use into an owner-only file under Garage's data folder (0600 in a 0700
    folder); another account on this machine cannot read it.
    """
    config = obj.config()
    token = _owner_token(config, rotate=rotate)
    click.echo(str(_token_file(config)) if path_only else token)


@mcp_group.command("install")
@click.option(
    "--client", "client_name", required=True,
    type=click.Choice(["claude-desktop", "cursor", "windsurf", "vscode", "claude-code"]),
    help="The MCP client to configure.",
)  # fmt: skip
@click.option(
    "--http", "over_http", is_flag=True,
    help="Reach `garage mcp-serve` over HTTP with the owner's token (not spawn garage-mcp).",
)  # fmt: skip
@click.option(
    "--url", default="http://127.0.0.1:8765/mcp", show_default=True,
    help="With --http: where `garage mcp-serve` listens.",
)  # fmt: skip
@click.option("--write", is_flag=True, help="Add it to the client's config file (asks first).")
@click.option("--yes", is_flag=True, help="With --write: do not ask.")
@click.pass_obj
def mcp_install(
    obj: GarageContext, client_name: str, over_http: bool, url: str, write: bool, yes: bool
) -> None:
    """Print the config snippet that makes CLIENT spawn garage-mcp with this config (or, with
    --http, reach `garage mcp-serve` with the owner's bearer token).

    With --write, merge it into the client's own file (other servers are kept, and the old
    file is saved as .bak), after asking. A file given the token is made owner-only.
    """
    from garage.mcp import install

    client = install.CLIENTS[client_name]
    env = dict(os.environ)
    target = client.path(Path.home())
    if over_http:
        try:
            entry = install.http_entry(client, url, _owner_token(obj.config()))
        except ValueError as error:
            raise click.ClickException(str(error)) from None
    else:
        entry = install.server_entry(client, obj.path, env)
        if not obj.path.exists():
            click.echo(f"note: {obj.path} does not exist yet; garage-mcp will need it", err=True)
        if env.get("GARAGE_DATABASE_URL"):
            click.echo(
                "note: GARAGE_DATABASE_URL is set here but not copied into the snippet; put "
                "database.url in the config file so garage-mcp finds the same database",
                err=True,
            )
    if not write:
        click.echo(json.dumps({client.key: {install.SERVER_NAME: entry}}, indent=2))
        click.echo(f"\nAdd this to {target} (or run again with --write).", err=True)
        return
    with user_errors():
        try:
            existing = target.read_text() if target.exists() else None
            text = install.merged(existing, client, entry, target)
        except (OSError, ValueError) as error:
            raise click.ClickException(str(error)) from None
    if not yes:
        click.echo(json.dumps({client.key: {install.SERVER_NAME: entry}}, indent=2))
        click.confirm(f"Add the {install.SERVER_NAME!r} server to {target}?", abort=True)
    try:
        backup = install.write(target, text, private=over_http)
    except OSError as error:
        raise click.ClickException(f"cannot write {target}: {error}") from None
    click.echo(f"wrote {target}" + (f" (previous file: {backup})" if backup else ""))
    click.echo(f"Restart {client.label} to load it.")
