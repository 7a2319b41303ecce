"""Garage's own pages: Search, Ask, Document, Facts, Graph and Sources, server-rendered HTML
over the same library functions as the CLI and the MCP tools, with no build step. ``garage up``
serves them at ``/garage/`` beside the Dagster UI, behind the same loopback guard.

- ``html``: escaping, links and the page shell (every indexed string goes through ``esc``);
- ``views``: each page's body from the library's results, pure functions;
- ``queries``: the few reads no CLI command makes (a source's last run and failures, pending
  embeddings, distilled facts with their members);
- ``app``: the ASGI app, a read-only connection per request, the streamed answer;
- ``static/``: the stylesheet and the one script (the streamed answer and its Stop button).
"""

from garage.pages.html import PREFIX

__all__ = ["PREFIX", "create_app"]


def create_app(config, database_url=None):  # type: ignore[no-untyped-def]
    """The pages' ASGI app (Starlette); imported on first use so the library stays light."""
    from garage.pages.app import create_app as build

    return build(config, database_url)
