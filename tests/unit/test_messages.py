"""Reading real chat.db files in Apple's schema: chats, orphans, dates, bodies, bad files."""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path

import pytest

from garage.extract import messages
from garage.extract.messages import MessagesError, apple_date, attributed_text, read_chat_database
from tests.chatdb import ChatDb, apple_time, attributed_body, old_schema_db


@pytest.fixture
def chatdb(tmp_path: Path) -> ChatDb:
    db = ChatDb(tmp_path / "chat.db")
    yield db  # type: ignore[misc]
    db.close()


def by_guid(result: messages.ChatDatabase) -> dict[str, messages.Chat]:
    return {chat.guid: chat for chat in result.chats}


def test_chats_messages_directions_and_orphans(chatdb: ChatDb) -> None:
    anne = chatdb.handle("+15550101")
    anne_sms = chatdb.handle("+15550101", service="SMS")
    bob = chatdb.handle("bob@example.org")
    carol = chatdb.handle("+15550303")
    dave = chatdb.handle("dave@example.org")
    direct, direct_guid = chatdb.chat([anne])
    sms, sms_guid = chatdb.chat([anne_sms], service="SMS")
    group, group_guid = chatdb.chat([anne, bob, carol], display_name="Harbour crew")
    chatdb.message("Are you at the harbour?", chat=direct, handle=anne)
    chatdb.message("On my way, ten minutes", chat=direct, handle=anne, from_me=True)
    chatdb.message("Ferry is late again", chat=group, handle=bob)
    chatdb.message("Typical", chat=group, handle=anne)
    chatdb.message("Saved it for you", chat=group, from_me=True)
    # Orphans: no chat_message_join row.
    chatdb.message("orphan from anne", chat=None, handle=anne)
    chatdb.message("orphan by SMS", chat=None, handle=anne_sms, service="SMS")
    chatdb.message("orphan with no handle", chat=None, handle=0)
    chatdb.message("orphan whose handle row is gone", chat=None, handle=999)
    chatdb.message("orphan from bob, who is only in the group", chat=None, handle=bob)
    chatdb.message("orphan from dave, in no chat at all", chat=None, handle=dave)
    # Not messages anyone wrote: a rename and a tapback.
    chatdb.message(None, chat=group, handle=bob, item_type=2)
    chatdb.message("Loved “Typical”", chat=group, handle=bob, reaction_to="ABC")

    result = read_chat_database(chatdb.path)
    chats = by_guid(result)
    assert set(chats) == {direct_guid, sms_guid, group_guid}
    one = chats[direct_guid]
    assert [m.text for m in one.messages] == [
        "Are you at the harbour?",
        "On my way, ten minutes",
        "orphan from anne",
    ]
    assert [m.is_from_me for m in one.messages] == [False, True, False]
    assert one.participants == ("+15550101",) and not one.is_group and one.orphans == 1
    assert [m.text for m in chats[sms_guid].messages] == ["orphan by SMS"]  # by service
    crew = chats[group_guid]
    assert crew.is_group and crew.title == "Harbour crew"
    assert [(m.text, m.address) for m in crew.messages] == [
        ("Ferry is late again", "bob@example.org"),
        ("Typical", "+15550101"),
        ("Saved it for you", None),
    ]
    assert crew.participants == ("+15550101", "bob@example.org", "+15550303")
    assert result.orphans_joined == 2
    assert result.skipped_no_handle == 2
    assert result.skipped_group_only == 1
    assert result.skipped_no_chat == 1
    assert "2 joined" in result.summary() and "2 skipped (no handle)" in result.summary()


def test_text_only_in_attributed_body(chatdb: ChatDb) -> None:
    anne = chatdb.handle("anne@example.org")
    chat, guid = chatdb.chat([anne])
    chatdb.message("Dinner at eight? 🍝 at the café", chat=chat, handle=anne, attributed=True)
    long_text = "A long one. " * 40  # a length past 127 bytes takes the 16-bit form
    chatdb.message(long_text, chat=chat, handle=anne, attributed=True)
    raw = sqlite3.connect(chatdb.path).execute("SELECT text FROM message").fetchall()
    assert raw == [(None,), (None,)]
    [thread] = read_chat_database(chatdb.path).chats
    texts = [m.text for m in thread.messages]
    assert texts == ["Dinner at eight? 🍝 at the café", long_text.strip()]


def test_attributed_body_decoders_agree() -> None:
    import typedstream

    blob = attributed_body("Grüße aus Köln")
    archived = typedstream.unarchive_from_data(blob)
    assert archived.contents[0].value.value == "Grüße aus Köln"  # the independent parser
    assert attributed_text(blob) == "Grüße aus Köln"
    assert messages._scan_string(blob) == "Grüße aus Köln"  # the fallback
    damaged = blob[:-6]  # cut inside the attribute dictionary: the parser gives up
    assert attributed_text(damaged) == "Grüße aus Köln"


def test_dates_in_seconds_and_nanoseconds(tmp_path: Path) -> None:
    when = dt.datetime(2016, 3, 9, 14, 30, 15, tzinfo=dt.UTC)
    assert apple_date(apple_time(when, nanoseconds=False)) == when
    assert apple_date(apple_time(when)) == when
    assert apple_date(0) is None and apple_date(None) is None
    for nanoseconds in (False, True):
        db = ChatDb(tmp_path / f"chat-{nanoseconds}.db", nanoseconds=nanoseconds)
        anne = db.handle("anne@example.org")
        chat, _ = db.chat([anne])
        db.message("hello", chat=chat, handle=anne, when=when)
        db.close()
        [thread] = read_chat_database(db.path).chats
        assert thread.messages[0].date == when


def test_messages_still_in_the_write_ahead_log_are_read(tmp_path: Path) -> None:
    db = ChatDb(tmp_path / "chat.db")
    db.conn.execute("PRAGMA journal_mode=WAL")
    db.conn.execute("PRAGMA wal_autocheckpoint=0")
    anne = db.handle("anne@example.org")
    chat, _ = db.chat([anne])
    db.message("only in the WAL so far", chat=chat, handle=anne)
    assert (tmp_path / "chat.db-wal").stat().st_size > 0
    [thread] = read_chat_database(db.path).chats  # while Messages still has it open
    assert [m.text for m in thread.messages] == ["only in the WAL so far"]
    db.close()


def test_an_older_schema_is_named(tmp_path: Path) -> None:
    path = old_schema_db(tmp_path / "chat.db")
    with pytest.raises(MessagesError, match=r"chat\.db: no table 'handle'.*older schema"):
        read_chat_database(path)
    conn = sqlite3.connect(tmp_path / "partial.db")
    conn.executescript(
        "CREATE TABLE message (ROWID INTEGER PRIMARY KEY, guid TEXT, text TEXT, date INTEGER);"
        "CREATE TABLE handle (ROWID INTEGER PRIMARY KEY, id TEXT);"
        "CREATE TABLE chat (ROWID INTEGER PRIMARY KEY, guid TEXT);"
        "CREATE TABLE chat_message_join (chat_id INTEGER, message_id INTEGER);"
        "CREATE TABLE chat_handle_join (chat_id INTEGER, handle_id INTEGER);"
    )
    conn.close()
    with pytest.raises(MessagesError, match=r"'message' lacks handle_id, is_from_me"):
        read_chat_database(tmp_path / "partial.db")


def test_corrupt_and_missing_files(chatdb: ChatDb, tmp_path: Path) -> None:
    anne = chatdb.handle("anne@example.org")
    chat, _ = chatdb.chat([anne])
    chatdb.message("hello", chat=chat, handle=anne)
    chatdb.close()
    data = chatdb.path.read_bytes()
    torn = tmp_path / "torn.db"
    torn.write_bytes(data[:100] + b"\xff" * 2000 + data[2100:])
    with pytest.raises(MessagesError, match=r"torn\.db: (corrupt|not a readable|cannot)"):
        read_chat_database(torn)
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database, just some text " * 100)
    with pytest.raises(MessagesError, match=r"garbage\.db: "):
        read_chat_database(garbage)
    with pytest.raises(MessagesError, match="no such file"):
        read_chat_database(tmp_path / "absent.db")


def test_a_locked_database_is_a_clear_outcome(
    chatdb: ChatDb, monkeypatch: pytest.MonkeyPatch
) -> None:
    anne = chatdb.handle("anne@example.org")
    chat, _ = chatdb.chat([anne])
    chatdb.message("hello", chat=chat, handle=anne)
    monkeypatch.setattr(messages, "LOCK_TIMEOUT_SECONDS", 0.3)
    # Another program holds an exclusive lock (a rollback-journal write in progress).
    holder = sqlite3.connect(chatdb.path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(MessagesError, match=r"chat\.db: locked by another program"):
            read_chat_database(chatdb.path)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    # Once released, the same file reads.
    [thread] = read_chat_database(chatdb.path).chats
    assert thread.messages[0].text == "hello"
