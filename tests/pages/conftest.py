"""One served corpus for every pages test (building it embeds and rebuilds the graph)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import LlamaServers
from tests.pages.site import Site, pages_site


@pytest.fixture(scope="session")
def site(
    pg_server_url: str, llama: LlamaServers, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Site]:
    with pages_site(pg_server_url, llama, tmp_path_factory.mktemp("pages")) as built:
        yield built
