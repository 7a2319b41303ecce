"""Mail, Messages threads and pictures, ingested end to end into the real database."""

from __future__ import annotations

import io
import plistlib
import shutil
import sqlite3
from pathlib import Path

import psycopg
import pytest

from garage.extract import messages
from tests.chatdb import ChatDb
from tests.integration.ingest_helpers import make_config, rows, run_ingest
from tests.material import material
from tests.unit.test_image import camera_exif, encode, photo, text_image

COMMUNICATION = {"corpus_class": "communication"}
OWNER = {"self_name": "Matthew Miller", "emails": ["mattdm@mattdm.org"]}


def email_corpus() -> Path:
    return material("libpython3.11-testsuite") / "usr/lib/python3.11/test/test_email/data"


def fedora_posts() -> list[bytes]:
    folder = material("freediscovery") / "freediscovery/data/fedora-devel-list-2008-October"
    return [(folder / str(n)).read_bytes().rstrip(b"\n") + b"\n\n" for n in range(1, 6)]


def write_emlx(path: Path, message: bytes, flags: int) -> Path:
    plist = plistlib.dumps({"flags": flags, "date-received": 987809702})
    path.write_bytes(f"{len(message)}\n".encode() + message + plist)
    return path


@pytest.fixture
def mail_folder(tmp_path: Path) -> Path:
    root = tmp_path / "Mail"
    (root / "INBOX.mbox" / "Messages").mkdir(parents=True)
    for name in ("msg_07", "msg_10", "msg_25"):
        shutil.copy(email_corpus() / f"{name}.txt", root / f"{name}.eml")
    write_emlx(root / "INBOX.mbox" / "Messages" / "4711.emlx", fedora_posts()[2], flags=0b101)
    (root / "fedora-devel.mbox").write_bytes(b"".join(fedora_posts()[:4]))
    return root


def test_real_mail_ingests_with_headers_body_and_sender(
    migrated_db: str, mail_folder: Path
) -> None:
    config = make_config(
        mail_folder.parent,
        [
            {
                "name": "mail",
                "kind": "mail",
                "roots": [str(mail_folder)],
                "corpus_class": "communication",
            }
        ],
        identity=OWNER,
    )
    report = run_ingest(migrated_db, config, "mail")
    assert report.failed == 0 and report.completed
    docs = {
        uri.split("/Mail/", 1)[1]: (title, cls, attribution, signal, meta, content)
        for uri, title, cls, attribution, signal, meta, content in rows(
            migrated_db,
            "SELECT uri, title, corpus_class, attribution, attribution_signal, metadata, content"
            " FROM documents",
        )
    }
    assert len(docs) == 3 + 1 + 4
    title, cls, attribution, signal, meta, content = docs["msg_07.eml"]
    assert (title, cls, attribution, signal) == (
        "Here is your dingus fish", "communication", "received", "sender",
    )  # fmt: skip
    assert content.startswith("Subject: Here is your dingus fish\nFrom: Barry <barry@digicool.com>")
    assert "Attachments: dingusfish.gif" in content and "This is the dingus fish." in content
    # The mbox: one document per message, keyed by Message-ID; the owner's posts are authored.
    key = "fedora-devel.mbox#20081001022458.GA14186@jadzia.bu.edu"
    title, cls, attribution, signal, meta, content = docs[key]
    assert title == "tab completion less useful now, due to sbin in path"
    assert (attribution, signal, meta["part"]) == ("authored", "sender", key.split("#")[1])
    assert "From: Matthew Miller <mattdm@mattdm.org>" in content
    assert sum(1 for uri in docs if uri.startswith("fedora-devel.mbox#")) == 4
    emlx = docs["INBOX.mbox/Messages/4711.emlx"]
    assert emlx[2] == "received" and emlx[4]["emlx_flags"]["answered"] is True
    assert "NoBoundaryInMultipartDefect" in docs["msg_25.eml"][4]["defects"]
    [(authored_self,)] = rows(
        migrated_db, "SELECT is_self FROM authors WHERE email = 'mattdm@mattdm.org'"
    )
    assert authored_self is True


@pytest.mark.parametrize("bare_first", [True, False])
def test_one_author_per_address_whatever_name_the_header_gives(
    migrated_db: str, tmp_path: Path, bare_first: bool
) -> None:
    # Real mails from one sender: msg_44 says "From: barry@python.org", msg_10 "From: Barry
    # Warsaw <barry@python.org>". Walked in either order, one author, named.
    root = tmp_path / "mail"
    root.mkdir()
    first, second = ("msg_44", "msg_10") if bare_first else ("msg_10", "msg_44")
    shutil.copy(email_corpus() / f"{first}.txt", root / "1.eml")
    shutil.copy(email_corpus() / f"{second}.txt", root / "2.eml")
    config = make_config(
        tmp_path, [{"name": "mail", "kind": "mail", "roots": [str(root)], **COMMUNICATION}]
    )
    assert run_ingest(migrated_db, config, "mail").indexed == 2
    authors = rows(migrated_db, "SELECT id, name, email FROM authors")
    assert [(name, email) for _, name, email in authors] == [("Barry Warsaw", "barry@python.org")]
    assert rows(migrated_db, "SELECT DISTINCT author_id FROM documents") == [(authors[0][0],)]


def test_mbox_appends_and_expunges_touch_only_those_messages(
    migrated_db: str, tmp_path: Path
) -> None:
    root = tmp_path / "mail"
    root.mkdir()
    mbox = root / "list.mbox"
    posts = fedora_posts()
    mbox.write_bytes(b"".join(posts[:3]))
    config = make_config(
        tmp_path, [{"name": "mail", "kind": "mail", "roots": [str(root)], **COMMUNICATION}]
    )
    first = run_ingest(migrated_db, config, "mail")
    assert first.indexed == 3
    before = dict(rows(migrated_db, "SELECT uri, id FROM documents"))
    again = run_ingest(migrated_db, config, "mail")
    assert (again.stat_skipped, again.indexed) == (1, 0)

    mbox.write_bytes(b"".join(posts[:4]))  # a new message arrives
    grown = run_ingest(migrated_db, config, "mail")
    assert grown.indexed == 1 and grown.deleted == 0
    after = dict(rows(migrated_db, "SELECT uri, id FROM documents"))
    assert len(after) == 4 and all(after[uri] == doc_id for uri, doc_id in before.items())

    mbox.write_bytes(posts[0] + posts[2] + posts[3])  # one is expunged
    shrunk = run_ingest(migrated_db, config, "mail")
    assert shrunk.deleted == 1 and shrunk.indexed == 0
    remaining = {uri for (uri,) in rows(migrated_db, "SELECT uri FROM documents")}
    assert len(remaining) == 3
    assert not any("200809301938.44849.konrad" in uri for uri in remaining)


def test_bad_mail_is_an_outcome_and_the_rest_goes_on(migrated_db: str, tmp_path: Path) -> None:
    root = tmp_path / "mail"
    root.mkdir()
    good = (email_corpus() / "msg_07.txt").read_bytes()
    write_emlx(root / "1.emlx", good, flags=1)
    config = make_config(
        tmp_path, [{"name": "mail", "kind": "mail", "roots": [str(root)], **COMMUNICATION}]
    )
    assert run_ingest(migrated_db, config, "mail").indexed == 1
    # The same file truncated mid-copy, and new files with problems of their own.
    whole = (root / "1.emlx").read_bytes()
    (root / "1.emlx").write_bytes(whole[: len(whole) // 2])
    (root / "2.emlx").write_bytes(f"{len(good) - 50}\n".encode() + good + b"<?xml")
    shutil.copy(email_corpus() / "msg_19.txt", root / "3.eml")  # no headers at all
    odd = (email_corpus() / "msg_01.txt").read_bytes().replace(b"us-ascii", b"x-martian-7")
    (root / "4.eml").write_bytes(odd)
    shutil.copy(email_corpus() / "msg_10.txt", root / "5.eml")
    report = run_ingest(migrated_db, config, "mail")
    assert report.failed == 3 and report.indexed == 2
    errors = "\n".join(report.errors)
    assert "1.emlx: truncated .emlx" in errors
    assert "2.emlx: wrong byte count" in errors
    assert "3.eml: not an RFC 822 message" in errors
    # The truncated file's earlier document is kept; the unknown charset is indexed and said.
    titles = {t: m for t, m in rows(migrated_db, "SELECT title, metadata FROM documents")}
    assert "Here is your dingus fish" in titles
    assert "x-martian-7" in titles["This is a test message"]["charset_fallback"]
    outcomes = rows(migrated_db, "SELECT uri, reason FROM ingest_outcomes ORDER BY uri")
    assert [Path(u).name for u, _ in outcomes] == ["1.emlx", "2.emlx", "3.eml"]


# -- Messages ---------------------------------------------------------------------------------


def build_chat_db(path: Path) -> tuple[ChatDb, dict[str, int]]:
    db = ChatDb(path)
    anne = db.handle("+15550101")
    bob = db.handle("bob@example.org")
    carol = db.handle("+15550303")
    direct, _ = db.chat([anne])
    crew, _ = db.chat([anne, bob, carol], display_name="Harbour crew")
    db.message("Are you at the harbour?", chat=direct, handle=anne)
    db.message("On my way, ten minutes", chat=direct, handle=anne, from_me=True)
    db.message("The ferry timetable changed for the winter", chat=direct, handle=anne,
               attributed=True)  # fmt: skip
    db.message("Ferry is late again", chat=crew, handle=bob)
    db.message("Typical", chat=crew, handle=carol)
    db.message("Saved you a seat", chat=crew, from_me=True)
    db.message("orphan: see you at the lighthouse", chat=None, handle=anne)
    db.message("orphan with no handle", chat=None, handle=0)
    db.message("orphan from bob, only in the group", chat=None, handle=bob)
    return db, {"direct": direct, "crew": crew, "anne": anne, "bob": bob}


def messages_config(tmp_path: Path, root: Path):  # type: ignore[no-untyped-def]
    return make_config(
        tmp_path,
        [{"name": "chats", "kind": "messages", "roots": [str(root)],
          "corpus_class": "communication"}],
        identity={"self_name": "Jane Doe", "emails": ["jane@example.org"]},
    )  # fmt: skip


def test_chat_db_one_document_per_chat_one_chunk_per_message(
    migrated_db: str, tmp_path: Path
) -> None:
    folder = tmp_path / "Messages"
    folder.mkdir()
    db, ids = build_chat_db(folder / "chat.db")
    config = messages_config(tmp_path, folder)  # the folder holding chat.db
    report = run_ingest(migrated_db, config, "chats")
    assert (report.indexed, report.chunks_new, report.completed) == (2, 7, True)
    docs = rows(
        migrated_db,
        "SELECT d.uri, d.title, d.corpus_class, d.metadata, count(c.id), d.id FROM documents d"
        " JOIN chunks c ON c.document_id = d.id GROUP BY d.id ORDER BY d.id",
    )
    database = folder / "chat.db"
    [(crew_guid,)] = db.conn.execute("SELECT guid FROM chat WHERE ROWID = ?", (ids["crew"],))
    assert crew_guid.startswith("iMessage;+;chat")
    assert [d[0] for d in docs] == [
        f"{database}#iMessage;-;+15550101",
        f"{database}#{crew_guid}",
    ]
    direct, crew = docs
    assert direct[2] == crew[2] == "communication"
    assert (direct[4], crew[4]) == (4, 3)  # the orphan joined the one-to-one chat
    assert direct[3]["orphans_joined"] == 1 and crew[1] == "Harbour crew" and crew[3]["is_group"]
    chunks = rows(
        migrated_db,
        "SELECT text, chunker, metadata->>'direction', metadata->>'sender' FROM chunks"
        " WHERE document_id = %s ORDER BY ord",
        direct[5],
    )
    assert chunks == [
        ("+15550101: Are you at the harbour?", "message", "received", "+15550101"),
        ("Jane Doe: On my way, ten minutes", "message", "sent", "Jane Doe"),
        ("+15550101: The ferry timetable changed for the winter", "message", "received",
         "+15550101"),
        ("+15550101: orphan: see you at the lighthouse", "message", "received", "+15550101"),
    ]  # fmt: skip
    [(note,)] = rows(migrated_db, "SELECT note FROM ingest_runs")
    assert "1 joined" in note and "1 skipped (no handle)" in note
    assert "1 skipped (address has only group chats)" in note

    # Nothing changed: nothing written.
    same = run_ingest(migrated_db, config, "chats")
    assert (same.indexed, same.unchanged, same.chunks_new) == (0, 2, 0)
    # One new message: exactly one new chunk, every other chunk keeps its row.
    before = {i for (i,) in rows(migrated_db, "SELECT id FROM chunks")}
    db.message("Boarding now", chat=ids["direct"], handle=ids["anne"])
    grown = run_ingest(migrated_db, config, "chats")
    assert (grown.indexed, grown.chunks_new, grown.chunks_kept, grown.chunks_deleted) == (
        1, 1, 4, 0,
    )  # fmt: skip
    after = {i for (i,) in rows(migrated_db, "SELECT id FROM chunks")}
    assert before < after and len(after - before) == 1
    db.close()


def test_bad_chat_db_fails_clearly_and_keeps_what_was_stored(
    migrated_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "chat.db"
    db, ids = build_chat_db(path)
    other = tmp_path / "old" / "chat.db"
    other.parent.mkdir()
    other_db, _ = build_chat_db(other)
    other_db.close()
    config = messages_config(tmp_path, path).model_copy()
    source = config.sources[0].model_copy(update={"roots": [str(path), str(other)]})
    config = config.model_copy(update={"sources": [source]})
    assert run_ingest(migrated_db, config, "chats").indexed == 4
    stored = rows(migrated_db, "SELECT count(*) FROM chunks")[0][0]

    # Locked by Messages mid-write: that database fails, the other is read, nothing is lost.
    monkeypatch.setattr(messages, "LOCK_TIMEOUT_SECONDS", 0.3)
    db.message("Written while locked", chat=ids["direct"], handle=ids["anne"])
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        locked = run_ingest(migrated_db, config, "chats")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert locked.failed == 1 and not locked.completed and locked.deleted == 0
    assert "locked by another program" in locked.errors[0] and str(path) in locked.errors[0]
    assert rows(migrated_db, "SELECT count(*) FROM chunks")[0][0] == stored

    # Corrupt, then of an older schema: clear outcomes, and still nothing deleted.
    db.close()
    data = path.read_bytes()
    path.write_bytes(b"garbage!" * 512 + data[4096:])
    corrupt = run_ingest(migrated_db, config, "chats")
    assert corrupt.failed == 1 and corrupt.deleted == 0
    assert str(path) in corrupt.errors[0]
    path.unlink()
    conn = sqlite3.connect(path)
    conn.executescript("CREATE TABLE message (ROWID INTEGER PRIMARY KEY, address TEXT);")
    conn.close()
    old = run_ingest(migrated_db, config, "chats")
    assert old.failed == 1 and "older schema" in old.errors[0]
    assert rows(migrated_db, "SELECT count(*) FROM documents")[0][0] == 4


# -- Pictures ---------------------------------------------------------------------------------


def test_screenshot_is_found_by_a_word_in_it_and_a_photo_by_its_name(
    migrated_db: str, tmp_path: Path
) -> None:
    root = tmp_path / "Pictures"
    root.mkdir()
    (root / "Screenshot 2024-05-01 at 10.00.00.png").write_bytes(encode(text_image(), "PNG"))
    (root / "IMG_0042.JPG").write_bytes(encode(photo(), "JPEG", exif=camera_exif()))
    (root / "broken.png").write_bytes(encode(text_image(), "PNG")[:300])
    config = make_config(tmp_path, [{"name": "pics", "roots": [str(root)]}])
    report = run_ingest(migrated_db, config, "pics")
    assert (report.indexed, report.failed) == (2, 1)
    assert "broken.png: not a readable image" in report.errors[0]

    def search(query: str) -> list[tuple[str, str, str]]:
        return rows(
            migrated_db,
            "SELECT d.title, c.chunker, c.modality FROM chunks c JOIN documents d"
            " ON d.id = c.document_id WHERE c.tsv @@ plainto_tsquery('english', %s)"
            " ORDER BY c.ord",
            query,
        )

    hits = search("lighthouse")
    assert ("Screenshot 2024-05-01 at 10.00.00", "recursive:1000/100", "text") in hits
    assert ("Screenshot 2024-05-01 at 10.00.00", "image", "image") in hits
    assert search("IMG_0042.JPG") == [("IMG_0042", "image", "image")]
    assert search("Canon") == [("IMG_0042", "image", "image")]
    [(content, meta)] = rows(
        migrated_db, "SELECT content, metadata FROM documents WHERE title = 'IMG_0042'"
    )
    assert content.startswith("IMG_0042.JPG\nTaken 2023-08-14T18:19:44")
    assert meta["camera"] == "Canon EOS 5D Mark III"
    # Unchanged pictures are not read (or OCR'd) again.
    again = run_ingest(migrated_db, config, "pics")
    assert (again.stat_skipped, again.indexed) == (3, 0)


def test_text_models_never_embed_pictures(migrated_db: str, tmp_path: Path, llama) -> None:  # type: ignore[no-untyped-def]
    from garage.embed import embed
    from garage.inference import EgressGuard, InferenceClient
    from tests.conftest import llama_config

    root = tmp_path / "Pictures"
    root.mkdir()
    (root / "IMG_0042.JPG").write_bytes(encode(photo(), "JPEG", exif=camera_exif()))
    (root / "scan.png").write_bytes(encode(text_image(), "PNG"))
    config = llama_config(llama, sources=[{"name": "pics", "roots": [str(root)]}])
    run_ingest(migrated_db, config, "pics")
    with (
        psycopg.connect(migrated_db, autocommit=True) as conn,
        InferenceClient(EgressGuard.from_config(config)) as client,
    ):
        [report] = embed(conn, client, config)
    assert report.skipped_modality == 1 and report.vectors_written >= 1
    assert any("no image embedding model is configured" in note for note in report.notes)
    [(embedded_images,)] = rows(
        migrated_db,
        "SELECT count(*) FROM emb_all_minilm_l6_v2 e JOIN chunks c ON c.id = e.chunk_id"
        " WHERE c.modality = 'image'",
    )
    assert embedded_images == 0


def test_an_image_model_is_accepted_and_says_it_cannot_run_here(
    migrated_db: str, tmp_path: Path, llama
) -> None:  # type: ignore[no-untyped-def]
    from garage.config import GarageConfig
    from garage.embed import embed
    from garage.embed.registry import registered_models
    from garage.inference import EgressGuard, InferenceClient
    from tests.conftest import llama_config

    root = tmp_path / "Pictures"
    root.mkdir()
    (root / "IMG_0042.JPG").write_bytes(encode(photo(), "JPEG", exif=camera_exif()))
    raw = llama_config(llama, sources=[{"name": "pics", "roots": [str(root)]}]).model_dump(
        mode="json"
    )
    raw["embedding"]["models"].append(
        {
            "name": "clip-vit-b32",
            "provider": "llama_server",
            "host": llama.embed_url,
            "model": "clip-vit-b32",
            "dimensions": 512,
            "modality": "image",
        }
    )
    config = GarageConfig.model_validate(raw)
    run_ingest(migrated_db, config, "pics")
    with (
        psycopg.connect(migrated_db, autocommit=True) as conn,
        InferenceClient(EgressGuard.from_config(config)) as client,
    ):
        reports = {r.model: r for r in embed(conn, client, config)}
        registered = {m.name: m.modality for m in registered_models(conn)}
    assert registered["clip-vit-b32"] == "image"
    image = reports["clip-vit-b32"]
    assert (image.pending, image.vectors_written) == (1, 0)
    assert any("no image embedding runs on this platform" in note for note in image.notes)
    # The text model still skips the picture, and no table holds a vector for it.
    assert reports[llama.embed_model].skipped_modality == 1
    assert rows(migrated_db, "SELECT count(*) FROM emb_clip_vit_b32") == [(0,)]


def test_heic_photo_from_a_phone(migrated_db: str, tmp_path: Path) -> None:
    import pillow_heif

    pillow_heif.register_heif_opener()
    root = tmp_path / "DCIM"
    root.mkdir()
    buffer = io.BytesIO()
    text_image().save(buffer, "HEIF", quality=95)
    (root / "IMG_1001.HEIC").write_bytes(buffer.getvalue())
    config = make_config(tmp_path, [{"name": "phone", "roots": [str(root)]}])
    assert run_ingest(migrated_db, config, "phone").indexed == 1
    [(content,)] = rows(migrated_db, "SELECT content FROM documents")
    assert "lighthouse" in content.lower()


def test_cli_adds_and_ingests_a_messages_source(
    isolated_env: Path, migrated_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from click.testing import CliRunner

    from garage.cli import cli

    monkeypatch.setenv("GARAGE_DATABASE_URL", migrated_db)
    db, _ = build_chat_db(isolated_env / "chat.db")
    db.close()
    runner = CliRunner()
    added = runner.invoke(cli, ["sources", "add", "chats", str(db.path), "--kind", "messages"])
    assert added.exit_code == 0, added.output
    limited = runner.invoke(cli, ["ingest", "chats", "--limit", "1", "--json"])
    assert limited.exit_code == 0, limited.output
    [report] = json.loads(limited.output)
    assert (report["indexed"], report["completed"]) == (1, False)
    result = runner.invoke(cli, ["ingest", "chats", "--json"])
    assert result.exit_code == 0, result.output
    [report] = json.loads(result.output)
    assert (report["seen"], report["indexed"], report["unchanged"]) == (2, 1, 1)
    assert report["chunks_new"] == 3 and report["completed"]


def test_chat_db_participants_become_metadata_facts(migrated_db: str, tmp_path: Path) -> None:
    """A thread's participants are facts with no model, each grounded at the first line they
    wrote; one who never wrote has nothing to ground in and is dropped, not invented."""
    from garage.facts import enrich_facts

    folder = tmp_path / "Messages"
    folder.mkdir()
    db, _ = build_chat_db(folder / "chat.db")
    config = messages_config(tmp_path, folder)
    run_ingest(migrated_db, config, "chats")
    with psycopg.connect(migrated_db, autocommit=True) as conn:
        report = enrich_facts(conn, config, prompt_names=["metadata"])
    assert report.failed == 0 and report.requests == 0  # metadata facts ask no model
    facts = rows(
        migrated_db,
        "SELECT d.title, f.fact_class, f.text, f.key,"
        " substr(d.content, f.start_offset + 1, f.end_offset - f.start_offset)"
        " FROM facts f JOIN documents d ON d.id = f.document_id ORDER BY d.id, f.ord",
    )
    assert all(text == span for *_, text, _, span in facts)
    by_title: dict[str, list[tuple[str, str, str]]] = {}
    for title, fact_class, text, key, _ in facts:
        by_title.setdefault(title, []).append((fact_class, text, key))
    direct, crew = by_title["+15550101"], by_title["Harbour crew"]
    assert [(c, t) for c, t, _ in direct] == [("participant", "+15550101")]
    # Anne is in the group but never wrote there (her orphan joined the one-to-one chat).
    assert [(c, t) for c, t, _ in crew] == [
        ("participant", "bob@example.org"),
        ("participant", "+15550303"),
    ]
    assert report.dropped_ungrounded >= 1
    # A person with an authors row (the one-to-one chat's peer) is keyed on it, anyone else on
    # their address: the keys the distilled facts anchor on.
    [(anne,)] = rows(migrated_db, "SELECT id FROM authors WHERE name = '+15550101'")
    assert direct[0][2] == f"author:{anne}"
    assert [k for _, _, k in crew] == ["address:bob@example.org", "address:+15550303"]
    db.close()
