"""The pages over HTTP against a real corpus: each answers with its security headers, hostile
text comes back escaped, reads are read-only, and the guard in front refuses what it refuses
for the Dagster UI."""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
import psycopg
import pytest

from garage.pages.reading import Pages
from tests.conftest import LlamaServers
from tests.pages.site import SEEDED, Site, slow_model_pages


def _get(site: Site, path: str, **params: str) -> httpx.Response:
    return httpx.get(site.url + path, params=params, timeout=60, trust_env=False)


def pages(site: Site) -> list[str]:
    return [
        "/search?q=" + SEEDED.replace(" ", "+"),
        "/search",
        "/ask",
        f"/document/{site.hostile_id}",
        f"/document/{site.mail_id}",
        "/facts",
        "/facts?text=torch",
        "/graph",
        f"/graph?v=Document:{site.hostile_id}&hops=2",
        "/graph?find=quartz",
        "/sources",
    ]


def test_every_page_answers_with_its_policy_and_no_raw_markup_from_the_index(site: Site) -> None:
    for path in pages(site):
        response = httpx.get(site.url + path, timeout=60, trust_env=False)
        assert response.status_code == 200, (path, response.text[-2000:])
        csp = response.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "default-src 'none'" in csp
        assert response.headers["x-content-type-options"] == "nosniff"
        body = response.text
        # Only our own script tags, and no markup the index holds.
        assert all(src == "/garage/static/ask.js" for src in
                   re.findall(r'<script src="([^"]+)"', body)), path  # fmt: skip
        assert "<script>" not in body and "onerror=alert" not in body.replace("onerror=alert", "")
        for hostile in ("<img src=x onerror", "<b onmouseover", "<script>alert"):
            assert hostile not in body, (path, hostile)
        assert not re.search(r"<(?:img|iframe|object|embed|link)\b[^>]*\bsrc=\"?https?:", body)


def test_hostile_text_is_shown_escaped(site: Site) -> None:
    body = _get(site, f"/document/{site.hostile_id}").text
    assert "&lt;script&gt;alert(&#x27;note&#x27;)&lt;/script&gt;" in body
    assert "/&quot;&gt;&lt;img src=x onerror=alert(1)&gt;.md</dd>" in body
    mail = _get(site, f"/document/{site.mail_id}").text
    assert "&lt;img src=x onerror=alert(3)&gt;" in mail
    facts = _get(site, "/facts", text="torch").text
    assert "&lt;b onmouseover=alert(2)&gt;torch&lt;/b&gt;" in facts


def test_search_marks_the_words_and_links_to_the_chunk(site: Site) -> None:
    body = _get(site, "/search", q=SEEDED, mode="keyword").text
    assert "<mark>quartz</mark>" in body.lower() or "<mark>Quartz</mark>" in body
    assert re.search(r"\d+ hits in \d+ ms \(keyword\)", body)
    link = re.search(rf'href="(/garage/document/{site.hostile_id}\?s=\d+&amp;e=\d+#chunk)"', body)
    assert link, body[-3000:]
    document = httpx.get(
        f"http://127.0.0.1:{site.port}" + link.group(1).replace("&amp;", "&"), trust_env=False
    ).text
    assert 'id="chunk"' in document and 'class="chunk"' in document


def test_a_search_without_an_embedding_server_says_it_is_keyword_only(site: Site) -> None:
    config = site.config.model_copy(deep=True)
    config.embedding.models[0].host = "http://127.0.0.1:9"
    from garage.pages.serve import serving
    from tests.servers import free_port

    port = free_port()
    with serving(config, site.database_url, port=port) as base:
        body = httpx.get(base + "/search", params={"q": SEEDED}, trust_env=False, timeout=60).text
    assert "Degraded: keyword-only" in body and "(keyword)" in body


def test_the_graph_page_draws_rings_and_links_each_vertex(site: Site) -> None:
    body = _get(site, "/graph", v=f"Document:{site.hostile_id}", hops="2").text
    assert body.count('class="ring"') >= 1 and '<svg class="graph"' in body
    assert re.search(r'<a class="vertex v-Document start" href="/garage/graph\?v=Document', body)
    assert re.search(r'<a class="vertex v-Author" href="/garage/graph\?v=Author%3A\d+&amp;hops=2"',
                     body)  # fmt: skip


def test_the_sources_page_links_each_source_to_its_dagster_partition(site: Site) -> None:
    body = _get(site, "/sources").text
    for name in ("docs", "notes", "mail"):
        assert f'href="/assets/documents?view=partitions&amp;partition={name}"' in body
    assert "complete, finished" in body and "pending embeddings" in body
    # Everything was embedded when the site was built.
    assert "0 waiting; nothing waiting" in body and "waiting; about" not in body


def test_the_pages_say_what_waits_for_a_vector_and_the_time_left(
    migrated_db: str, llama: LlamaServers, tmp_path: Path
) -> None:
    """The Sources page gives each model's chunks waiting and the time left (or says the rate
    is unknown before a run was measured); the Search page says how many chunks its vector
    leg could not see."""
    from garage.embed import embed, register_models
    from garage.embed.backfill import pending_count
    from garage.embed.registry import find_model
    from garage.inference import EgressGuard, InferenceClient
    from garage.pages.serve import serving
    from tests.conftest import llama_config
    from tests.integration.ingest_helpers import run_ingest
    from tests.integration.search_helpers import tutorial
    from tests.servers import free_port

    docs = tutorial(tmp_path / "docs", ["appetite", "interpreter"])
    config = llama_config(
        llama,
        sources=[{"name": "docs", "roots": [str(docs)]}],
        search={"embed_timeout_seconds": 300},  # a busy embedding server must not degrade it
    )
    run_ingest(migrated_db, config, "docs")
    model = llama.embed_model
    with (
        psycopg.connect(migrated_db, autocommit=True) as conn,
        serving(config, migrated_db, port=free_port()) as base,
    ):
        register_models(conn, config)
        waiting = pending_count(conn, find_model(conn, model), "docs")
        before = httpx.get(base + "/sources", trust_env=False, timeout=60).text
        assert f"{model}: 0 embedded, {waiting} waiting; time left unknown" in before
        assert "rate unknown" in before

        with InferenceClient(EgressGuard.from_config(config)) as client:
            embed(conn, client, config, limit=4)
        waiting = pending_count(conn, find_model(conn, model), "docs")
        after = httpx.get(base + "/sources", trust_env=False, timeout=60).text
        assert re.search(
            rf"{model}: 4 embedded, {waiting} waiting; (about [\w ]+|under a minute) left at "
            r"[\d.]+ chunks/s \(measured over the last 1 run\)",
            after,
        ), after

        def search(**params: str) -> str:
            return httpx.get(base + "/search", params=params, trust_env=False, timeout=60).text

        hybrid = search(q="the interpreter")
        assert f"Partial: {waiting} chunks not yet embedded under {model}" in hybrid
        assert "Partial:" not in search(q="the interpreter", mode="keyword")

        with InferenceClient(EgressGuard.from_config(config)) as client:
            embed(conn, client, config)
        assert "Partial:" not in search(q="the interpreter")
        assert (
            f"{model}: {waiting + 4} embedded, 0 waiting; nothing waiting"
            in httpx.get(base + "/sources", trust_env=False, timeout=60).text
        )


def test_facts_page_shows_counts_and_the_distilled_fact_with_members(site: Site) -> None:
    body = _get(site, "/facts").text
    assert "3 facts in 2 documents" in body
    assert f"The {SEEDED} is in May." in body and "2 members" in body


def test_reads_are_read_only(site: Site) -> None:
    pages = Pages(site.config, site.database_url)
    with pages.reader() as conn:
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            conn.execute("DELETE FROM facts")
        timeout = conn.execute("SHOW statement_timeout").fetchone()
        assert timeout is not None and next(iter(timeout.values())) == "30s"


def test_the_guard_refuses_a_forged_host_and_another_sites_post(site: Site) -> None:
    forged = {"Host": f"attacker.example:{site.port}"}
    assert httpx.get(site.url + "/search", headers=forged, trust_env=False).status_code == 421
    other = {"Origin": "http://attacker.example"}
    response = httpx.post(site.url + "/ask", data={"q": "x"}, headers=other, trust_env=False)
    assert response.status_code == 403
    assert httpx.get(site.url + "/static/../app.py", trust_env=False).status_code == 404


def test_a_missing_document_is_a_page_not_a_crash(site: Site) -> None:
    response = _get(site, "/document/999999999")
    assert response.status_code == 400 and "no document with id" in response.text


def test_the_static_files_ship_in_the_package() -> None:
    folder = Path(__file__).resolve().parents[2] / "garage" / "pages" / "static"
    assert {p.name for p in folder.iterdir()} >= {"garage.css", "ask.js", "icon.svg"}


def test_an_index_without_a_graph_says_how_to_get_one(migrated_db: str, site: Site) -> None:
    from garage.pages.serve import serving
    from tests.servers import free_port

    with serving(site.config, migrated_db, port=free_port()) as base:
        body = httpx.get(base + "/graph", trust_env=False, timeout=60).text
        sources = httpx.get(base + "/sources", trust_env=False, timeout=60).text
    assert "No graph here" in body and "garage graph rebuild" in body and "scripts/pg-age" in body
    assert "No sources yet" in sources


def test_the_pages_listen_on_loopback_only(site: Site) -> None:
    from garage.pages.serve import serving

    for host in ("0.0.0.0", "192.168.1.20"):
        with pytest.raises(ValueError, match="loopback only"):
            with serving(site.config, site.database_url, host=host, port=1):
                pass


def test_leaving_a_whole_answer_before_it_comes_stops_the_model(site: Site) -> None:
    """Without JavaScript the answer comes whole in the POST's page; a browser that leaves
    closes the request, and the model's generation is stopped then, not when it ends."""
    import socket

    with slow_model_pages(site) as (_base, port, state):
        body = b"q=How+do+I+handle+an+exception%3F"
        browser = socket.create_connection(("127.0.0.1", port), timeout=60)
        browser.sendall(
            b"POST /garage/ask HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
            b"Content-Type: application/x-www-form-urlencoded\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (port, len(body), body)
        )
        deadline = time.monotonic() + 60
        while not any(path.endswith("/chat/completions") for path, _ in state.requests):
            assert time.monotonic() < deadline, "the model was never asked"
            time.sleep(0.05)
        time.sleep(0.5)
        browser.close()  # the browser leaves
        assert state.disconnected.wait(10), "the model kept generating"
