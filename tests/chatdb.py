"""Build real Messages ``chat.db`` files: Apple's SQLite schema, with its quirks, for tests.

The tables and columns are those of macOS's ``~/Library/Messages/chat.db`` (``message``,
``handle``, ``chat``, ``chat_message_join``, ``chat_handle_join``, plus the attachment tables
that sit beside them), with the columns Garage reads and the ones around them that a real file
has. Dates are Apple-epoch (2001-01-01 UTC) nanoseconds, as macOS 10.13 and later write them, or
seconds, as earlier releases did. A message can keep its text only in ``attributedBody``, an
``NSAttributedString`` in Apple's typedstream format, written here by ``attributed_body`` the way
Messages writes it (and read back by the independent ``pytypedstream`` parser in the tests).
"""

from __future__ import annotations

import datetime as dt
import sqlite3
import struct
import uuid
from pathlib import Path

APPLE_EPOCH = dt.datetime(2001, 1, 1, tzinfo=dt.UTC)
CHAT_STYLE_GROUP, CHAT_STYLE_DIRECT = 43, 45

SCHEMA = """
CREATE TABLE _SqliteDatabaseProperties (key TEXT, value TEXT, UNIQUE(key));
CREATE TABLE handle (ROWID INTEGER PRIMARY KEY AUTOINCREMENT UNIQUE, id TEXT NOT NULL,
    country TEXT, service TEXT NOT NULL, uncanonicalized_id TEXT,
    person_centric_id TEXT, UNIQUE (id, service));
CREATE TABLE chat (ROWID INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT UNIQUE NOT NULL,
    style INTEGER, state INTEGER, account_id TEXT, properties BLOB, chat_identifier TEXT,
    service_name TEXT, room_name TEXT, account_login TEXT, is_archived INTEGER DEFAULT 0,
    last_addressed_handle TEXT, display_name TEXT, group_id TEXT, is_filtered INTEGER DEFAULT 0,
    successful_query INTEGER, engram_id TEXT, server_change_token TEXT,
    ck_sync_state INTEGER DEFAULT 0, original_group_id TEXT, last_read_message_timestamp
    INTEGER DEFAULT 0, cloudkit_record_id TEXT, last_addressed_sim_id TEXT,
    is_blackholed INTEGER DEFAULT 0, syndication_date INTEGER DEFAULT 0,
    syndication_type INTEGER DEFAULT 0, is_recovered INTEGER DEFAULT 0,
    is_deleting_incoming_messages INTEGER DEFAULT 0);
CREATE TABLE message (ROWID INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT UNIQUE NOT NULL,
    text TEXT, replace INTEGER DEFAULT 0, service_center TEXT, handle_id INTEGER DEFAULT 0,
    subject TEXT, country TEXT, attributedBody BLOB, version INTEGER DEFAULT 0,
    type INTEGER DEFAULT 0, service TEXT, account TEXT, account_guid TEXT,
    error INTEGER DEFAULT 0, date INTEGER, date_read INTEGER, date_delivered INTEGER,
    is_delivered INTEGER DEFAULT 0, is_finished INTEGER DEFAULT 0, is_emote INTEGER DEFAULT 0,
    is_from_me INTEGER DEFAULT 0, is_empty INTEGER DEFAULT 0, is_delayed INTEGER DEFAULT 0,
    is_auto_reply INTEGER DEFAULT 0, is_prepared INTEGER DEFAULT 0, is_read INTEGER DEFAULT 0,
    is_system_message INTEGER DEFAULT 0, is_sent INTEGER DEFAULT 0,
    has_dd_results INTEGER DEFAULT 0, is_service_message INTEGER DEFAULT 0,
    is_forward INTEGER DEFAULT 0, was_downgraded INTEGER DEFAULT 0,
    is_archive INTEGER DEFAULT 0, cache_has_attachments INTEGER DEFAULT 0,
    cache_roomnames TEXT, was_data_detected INTEGER DEFAULT 0,
    was_deduplicated INTEGER DEFAULT 0, is_audio_message INTEGER DEFAULT 0,
    is_played INTEGER DEFAULT 0, date_played INTEGER, item_type INTEGER DEFAULT 0,
    other_handle INTEGER DEFAULT 0, group_title TEXT, group_action_type INTEGER DEFAULT 0,
    share_status INTEGER DEFAULT 0, share_direction INTEGER DEFAULT 0,
    is_expirable INTEGER DEFAULT 0, expire_state INTEGER DEFAULT 0,
    message_action_type INTEGER DEFAULT 0, message_source INTEGER DEFAULT 0,
    associated_message_guid TEXT, associated_message_type INTEGER DEFAULT 0,
    balloon_bundle_id TEXT, payload_data BLOB, expressive_send_style_id TEXT,
    associated_message_range_location INTEGER DEFAULT 0,
    associated_message_range_length INTEGER DEFAULT 0, time_expressive_send_played INTEGER,
    message_summary_info BLOB, ck_sync_state INTEGER DEFAULT 0, ck_record_id TEXT,
    ck_record_change_tag TEXT, destination_caller_id TEXT, sr_ck_sync_state INTEGER DEFAULT 0,
    sr_ck_record_id TEXT, sr_ck_record_change_tag TEXT, is_corrupt INTEGER DEFAULT 0,
    reply_to_guid TEXT, sort_id INTEGER, is_spam INTEGER DEFAULT 0,
    has_unseen_mention INTEGER DEFAULT 0, thread_originator_guid TEXT,
    thread_originator_part TEXT, syndication_ranges TEXT, was_delivered_quietly INTEGER
    DEFAULT 0, did_notify_recipient INTEGER DEFAULT 0, synced_syndication_ranges TEXT,
    date_retracted INTEGER DEFAULT 0, date_edited INTEGER DEFAULT 0,
    was_detonated INTEGER DEFAULT 0, part_count INTEGER, is_stewie INTEGER DEFAULT 0,
    is_kt_verified INTEGER DEFAULT 0, is_sos INTEGER DEFAULT 0, is_critical INTEGER DEFAULT 0,
    bia_reference_id TEXT DEFAULT NULL, fallback_hash TEXT DEFAULT NULL);
CREATE TABLE chat_message_join (chat_id INTEGER REFERENCES chat (ROWID) ON DELETE CASCADE,
    message_id INTEGER REFERENCES message (ROWID) ON DELETE CASCADE,
    message_date INTEGER DEFAULT 0, PRIMARY KEY (chat_id, message_id));
CREATE TABLE chat_handle_join (chat_id INTEGER REFERENCES chat (ROWID) ON DELETE CASCADE,
    handle_id INTEGER REFERENCES handle (ROWID) ON DELETE CASCADE, UNIQUE(chat_id, handle_id));
CREATE TABLE attachment (ROWID INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT UNIQUE NOT NULL,
    created_date INTEGER DEFAULT 0, start_date INTEGER DEFAULT 0, filename TEXT, uti TEXT,
    mime_type TEXT, transfer_state INTEGER DEFAULT 0, is_outgoing INTEGER DEFAULT 0,
    user_info BLOB, transfer_name TEXT, total_bytes INTEGER DEFAULT 0);
CREATE TABLE message_attachment_join (message_id INTEGER REFERENCES message (ROWID)
    ON DELETE CASCADE, attachment_id INTEGER REFERENCES attachment (ROWID) ON DELETE CASCADE,
    UNIQUE(message_id, attachment_id));
CREATE INDEX chat_message_join_idx_message_date_id_chat_id
    ON chat_message_join(chat_id, message_date, message_id);
CREATE INDEX message_idx_handle ON message(handle_id, date);
"""

# The 2011-era schema (before chat and handle tables), for the "older schema" case.
OLD_SCHEMA = """
CREATE TABLE message (ROWID INTEGER PRIMARY KEY AUTOINCREMENT, address TEXT, date INTEGER,
    text TEXT, flags INTEGER, replace INTEGER, svc_center TEXT, group_id INTEGER,
    association_id INTEGER, height INTEGER, UIFlags INTEGER, version INTEGER, subject TEXT,
    country TEXT, headers BLOB, recipients BLOB, read INTEGER);
CREATE TABLE msg_group (ROWID INTEGER PRIMARY KEY AUTOINCREMENT, type INTEGER,
    newest_message INTEGER, unread_count INTEGER, hash INTEGER);
"""


def apple_time(when: dt.datetime, *, nanoseconds: bool = True) -> int:
    seconds = (when - APPLE_EPOCH).total_seconds()
    return int(seconds * 1_000_000_000) if nanoseconds else int(seconds)


# -- typedstream -------------------------------------------------------------------------------


class _TypedStream:
    """A writer for the subset of NeXTSTEP typedstreams an attributedBody uses: objects,
    classes with superclasses, shared strings, C strings and integers, with both reference
    tables (shared strings; objects, classes and C strings) numbered as Apple numbers them."""

    NEW, NIL, END = 0x84, 0x85, 0x86
    FIRST_REFERENCE = -110

    def __init__(self) -> None:
        self.out = bytearray(b"\x04\x0bstreamtyped\x81\xe8\x03")  # v4, little-endian, 1000
        self.strings: dict[bytes, int] = {}
        self.objects = 0
        self.classes: dict[str, int] = {}
        self.cstrings: dict[bytes, int] = {}

    def integer(self, value: int) -> None:
        if -111 < value < 128:
            self.out += struct.pack("<b", value)
        elif -(1 << 15) <= value < 1 << 15:
            self.out += b"\x81" + struct.pack("<h", value)
        else:
            self.out += b"\x82" + struct.pack("<i", value)

    def reference(self, number: int) -> None:
        self.integer(number + self.FIRST_REFERENCE)

    def shared_string(self, value: bytes) -> None:
        if value in self.strings:
            self.reference(self.strings[value])
            return
        self.strings[value] = len(self.strings)
        self.out.append(self.NEW)
        self.integer(len(value))
        self.out += value

    def c_string(self, value: bytes) -> None:
        if value in self.cstrings:
            self.reference(self.cstrings[value])
            return
        self.cstrings[value] = self._entry()
        self.out.append(self.NEW)
        self.shared_string(value)

    def _entry(self) -> int:
        number = self.objects
        self.objects += 1
        return number

    def klass(self, chain: list[tuple[str, int]]) -> None:
        for name, version in chain:
            if name in self.classes:
                self.reference(self.classes[name])
                return
            self.classes[name] = self._entry()
            self.out.append(self.NEW)
            self.shared_string(name.encode())
            self.integer(version)
        self.out.append(self.NIL)

    def begin(self, chain: list[tuple[str, int]]) -> None:
        self._entry()
        self.out.append(self.NEW)
        self.klass(chain)

    def end(self) -> None:
        self.out.append(self.END)

    def group(self, encoding: bytes) -> None:
        self.shared_string(encoding)

    def nsstring(self, text: str) -> None:
        self.begin([("NSString", 1), ("NSObject", 0)])
        self.group(b"+")
        data = text.encode("utf-8")
        self.integer(len(data))
        self.out += data
        self.end()

    def nsnumber(self, value: int) -> None:
        self.begin([("NSNumber", 0), ("NSValue", 0), ("NSObject", 0)])
        self.group(b"*")
        self.c_string(b"i")
        self.group(b"i")
        self.integer(value)
        self.end()


def attributed_body(text: str) -> bytes:
    """``text`` as Messages archives it: an NSAttributedString whose one run carries the
    message-part attribute, in a little-endian typedstream."""
    stream = _TypedStream()
    stream.group(b"@")
    stream.begin([("NSAttributedString", 0), ("NSObject", 0)])
    stream.group(b"@")
    stream.nsstring(text)
    stream.group(b"iI")
    stream.integer(1)
    stream.integer(len(text.encode("utf-16-le")) // 2)  # NSString lengths count UTF-16 units
    stream.group(b"@")
    stream.begin([("NSDictionary", 0), ("NSObject", 0)])
    stream.group(b"i")
    stream.integer(1)
    stream.group(b"@")
    stream.nsstring("__kIMMessagePartAttributeName")
    stream.group(b"@")
    stream.nsnumber(0)
    stream.end()
    stream.end()
    return bytes(stream.out)


# -- the database ------------------------------------------------------------------------------


class ChatDb:
    """A chat.db under construction. ``nanoseconds=False`` writes dates as seconds."""

    def __init__(self, path: Path, *, nanoseconds: bool = True):
        self.path = path
        self.nanoseconds = nanoseconds
        self.conn = sqlite3.connect(path)
        self.conn.executescript(SCHEMA)
        self.conn.execute(
            "INSERT INTO _SqliteDatabaseProperties VALUES ('_ClientVersion', '17000')"
        )
        self.clock = dt.datetime(2024, 5, 1, 9, 0, tzinfo=dt.UTC)
        self.conn.commit()

    def handle(self, address: str, service: str = "iMessage") -> int:
        cur = self.conn.execute(
            "INSERT INTO handle (id, country, service, uncanonicalized_id, person_centric_id)"
            " VALUES (?, 'us', ?, ?, NULL)",
            (address, service, address),
        )
        self.conn.commit()
        return int(cur.lastrowid or 0)

    def chat(
        self,
        handles: list[int],
        *,
        display_name: str | None = None,
        service: str = "iMessage",
        group: bool | None = None,
    ) -> tuple[int, str]:
        group = len(handles) > 1 if group is None else group
        if group:
            identifier = f"chat{uuid.uuid4().int % 10**18}"
            guid = f"{service};+;{identifier}"
        else:
            [handle] = handles
            identifier = self.conn.execute(
                "SELECT id FROM handle WHERE ROWID = ?", (handle,)
            ).fetchone()[0]
            guid = f"{service};-;{identifier}"
        cur = self.conn.execute(
            "INSERT INTO chat (guid, style, state, account_id, chat_identifier, service_name,"
            " room_name, account_login, display_name, group_id) VALUES"
            " (?, ?, 3, ?, ?, ?, ?, 'E:owner@example.org', ?, ?)",
            (
                guid,
                CHAT_STYLE_GROUP if group else CHAT_STYLE_DIRECT,
                str(uuid.uuid4()).upper(),
                identifier,
                service,
                identifier if group else None,
                display_name or "",
                str(uuid.uuid4()).upper(),
            ),
        )
        chat_id = int(cur.lastrowid or 0)
        self.conn.executemany(
            "INSERT INTO chat_handle_join (chat_id, handle_id) VALUES (?, ?)",
            [(chat_id, h) for h in handles],
        )
        self.conn.commit()
        return chat_id, guid

    def message(
        self,
        text: str | None,
        *,
        chat: int | None,
        handle: int = 0,
        from_me: bool = False,
        attributed: bool = False,
        when: dt.datetime | None = None,
        service: str = "iMessage",
        item_type: int = 0,
        reaction_to: str | None = None,
    ) -> str:
        """Add a message (to ``chat``, or to no chat: an orphan). ``attributed`` stores the text
        only in attributedBody, with ``text`` NULL, as recent macOS releases do."""
        if when is None:
            self.clock += dt.timedelta(minutes=7)
            when = self.clock
        date = apple_time(when, nanoseconds=self.nanoseconds)
        guid = str(uuid.uuid4()).upper()
        cur = self.conn.execute(
            "INSERT INTO message (guid, text, handle_id, service, account, account_guid, date,"
            " date_read, date_delivered, is_delivered, is_finished, is_from_me, is_sent,"
            " is_read, attributedBody, item_type, associated_message_guid,"
            " associated_message_type, part_count)"
            " VALUES (?, ?, ?, ?, 'E:owner@example.org', ?, ?, ?, ?, 1, 1, ?, ?, 1, ?, ?, ?, ?, 1)",
            (
                guid,
                None if attributed else text,
                handle,
                service,
                str(uuid.uuid4()).upper(),
                date,
                date,
                date,
                int(from_me),
                int(from_me),
                attributed_body(text) if text is not None else None,
                item_type,
                f"p:0/{reaction_to}" if reaction_to else None,
                2000 if reaction_to else 0,
            ),
        )
        message_id = int(cur.lastrowid or 0)
        if chat is not None:
            self.conn.execute(
                "INSERT INTO chat_message_join (chat_id, message_id, message_date)"
                " VALUES (?, ?, ?)",
                (chat, message_id, date),
            )
        self.conn.commit()
        return guid

    def close(self) -> None:
        self.conn.close()


def old_schema_db(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(OLD_SCHEMA)
    conn.execute(
        "INSERT INTO message (address, date, text, flags) VALUES ('+15550001', 300000000,"
        " 'from the old days', 2)"
    )
    conn.commit()
    conn.close()
    return path
