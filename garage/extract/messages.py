"""Read a Messages ``chat.db``: every chat with its messages, in Apple's own schema.

The user's live database is never held: it is copied with SQLite's online backup API from a
read-only connection (one short read transaction; in WAL mode writers are not blocked), and
everything is read from the copy. A file whose directory does not let a read-only connection
open its WAL index is copied as files instead (``chat.db`` and ``chat.db-wal``).

What is read, and the quirks handled:
- dates are Apple-epoch (2001-01-01 UTC), in seconds before macOS 10.13 and nanoseconds since;
- recent releases leave ``text`` NULL and keep the text in ``attributedBody``, an
  NSAttributedString in a typedstream: decoded with ``pytypedstream``, with a byte-level scan as
  the fallback for blobs it rejects;
- messages that no ``chat_message_join`` row names (older macOS and iCloud sync leave many)
  join the one-to-one chat for their sender's address; one with no handle, or whose address has
  only group chats (or no chat at all), is skipped and counted;
- system rows (group renames, member changes: ``item_type`` ≠ 0) and tapbacks (reactions,
  ``associated_message_type`` 2000–3999) are not messages anyone wrote, and are left out, as are
  messages with no text at all (an attachment alone).

A file that is locked, corrupt, or of a schema without these tables is a ``MessagesError``
naming the file and the problem.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

MESSAGES_DATABASE = "chat.db"
APPLE_EPOCH = dt.datetime(2001, 1, 1, tzinfo=dt.UTC)
LOCK_TIMEOUT_SECONDS = 5.0  # how long to wait for a writer's lock before giving up this run
_NANOSECOND_DATES = 10**11  # past this an Apple date is in nanoseconds (1e11 s is year 5170)
_OBJECT_REPLACEMENT = "\ufffc"  # where an attachment sits in a message's text
CHAT_STYLE_GROUP = 43

# The tables and columns without which the file is not a chat.db Garage can read.
_REQUIRED = {
    "message": {"ROWID", "guid", "text", "handle_id", "date", "is_from_me"},
    "handle": {"ROWID", "id"},
    "chat": {"ROWID", "guid"},
    "chat_message_join": {"chat_id", "message_id"},
    "chat_handle_join": {"chat_id", "handle_id"},
}


class MessagesError(Exception):
    """The database cannot be read; ``str()`` names the file and why."""

    def __init__(self, path: Path, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


@dataclass(frozen=True)
class ChatMessage:
    rowid: int
    guid: str
    text: str
    date: dt.datetime | None
    is_from_me: bool
    address: str | None  # the handle's address: the sender, or in a one-to-one chat the peer
    service: str | None


@dataclass(frozen=True)
class Chat:
    rowid: int
    guid: str
    title: str
    participants: tuple[str, ...]
    is_group: bool
    service: str | None
    messages: tuple[ChatMessage, ...]
    orphans: int  # messages joined to this chat by their sender's address


@dataclass
class ChatDatabase:
    path: Path
    chats: list[Chat] = field(default_factory=list)
    orphans_joined: int = 0
    skipped_no_handle: int = 0
    skipped_group_only: int = 0
    skipped_no_chat: int = 0
    skipped_no_text: int = 0

    def summary(self) -> str:
        return (
            f"{self.path}: {len(self.chats)} chats, "
            f"{sum(len(c.messages) for c in self.chats)} messages; orphans: "
            f"{self.orphans_joined} joined to their sender's chat, {self.skipped_no_handle} "
            f"skipped (no handle), {self.skipped_group_only} skipped (address has only group "
            f"chats), {self.skipped_no_chat} skipped (address has no chat); "
            f"{self.skipped_no_text} without text"
        )


def database_path(root: Path) -> Path:
    """A Messages root is the database file or the folder holding ``chat.db``."""
    return root / MESSAGES_DATABASE if root.is_dir() else root


def apple_date(value: int | float | None) -> dt.datetime | None:
    if not value:
        return None
    seconds = value / 1e9 if abs(value) > _NANOSECOND_DATES else float(value)
    try:
        return APPLE_EPOCH + dt.timedelta(seconds=seconds)
    except OverflowError:
        return None


def read_chat_database(path: Path) -> ChatDatabase:
    """Every chat of the database at ``path`` with its messages, oldest first."""
    if not path.is_file():
        raise MessagesError(path, "no such file")
    with _snapshot(path) as conn:
        _check_schema(conn, path)
        try:
            return _read(conn, path)
        except sqlite3.DatabaseError as error:
            raise MessagesError(path, f"corrupt database ({error})") from None


# -- the copy ---------------------------------------------------------------------------------


@contextmanager
def _snapshot(path: Path) -> Iterator[sqlite3.Connection]:
    with tempfile.TemporaryDirectory(prefix="garage-chatdb-") as tmp:
        copy = Path(tmp) / MESSAGES_DATABASE
        _copy(path, copy)
        conn = sqlite3.connect(copy)
        try:
            yield conn
        finally:
            conn.close()


def _copy(path: Path, copy: Path) -> None:
    uri = f"{path.resolve().as_uri()}?mode=ro"
    try:
        source = sqlite3.connect(uri, uri=True, timeout=LOCK_TIMEOUT_SECONDS)
    except sqlite3.Error as error:
        raise MessagesError(path, f"cannot open ({error})") from None
    try:
        # Take the read lock first, under the busy timeout: Python's backup() would wait for
        # a writer's lock forever. With it held, the copy sees one consistent state.
        source.execute("BEGIN")
        source.execute("SELECT count(*) FROM sqlite_master").fetchone()
        target = sqlite3.connect(copy)
        try:
            source.backup(target)
        finally:
            target.close()
    except sqlite3.OperationalError as error:
        message = str(error)
        if "locked" in message or "busy" in message:
            raise MessagesError(
                path,
                f"locked by another program for over {LOCK_TIMEOUT_SECONDS:g}s ({message}); "
                "nothing was changed, the next run tries again",
            ) from None
        if "unable to open" in message or "readonly" in message:
            # A WAL database in a folder a read-only connection cannot index: copy the files.
            _copy_files(path, copy)
            return
        raise MessagesError(path, f"cannot read ({message})") from None
    except sqlite3.DatabaseError as error:
        raise MessagesError(path, f"corrupt database ({error})") from None
    finally:
        source.close()


def _copy_files(path: Path, copy: Path) -> None:
    for suffix in ("", "-wal"):
        if os.path.exists(f"{path}{suffix}"):
            shutil.copyfile(f"{path}{suffix}", f"{copy}{suffix}")


def _check_schema(conn: sqlite3.Connection, path: Path) -> None:
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    except sqlite3.DatabaseError as error:
        raise MessagesError(path, f"not a readable SQLite database ({error})") from None
    absent = [table for table in _REQUIRED if table not in tables]
    if absent:
        raise MessagesError(
            path,
            f"no table {absent[0]!r}: not a Messages database, or one of an older schema "
            "Garage does not read (before macOS 10.7)",
        )
    for table, needed in _REQUIRED.items():
        columns = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")} | {"ROWID"}
        missing = needed - columns
        if missing:
            raise MessagesError(
                path,
                f"table {table!r} lacks {', '.join(sorted(missing))}: an older or newer "
                "Messages schema Garage does not read",
            )


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


# -- the reading --------------------------------------------------------------------------------


def _read(conn: sqlite3.Connection, path: Path) -> ChatDatabase:
    result = ChatDatabase(path)
    chat_columns = _columns(conn, "chat")
    message_columns = _columns(conn, "message")

    addresses = {rowid: address for rowid, address in conn.execute("SELECT ROWID, id FROM handle")}
    members: dict[int, list[str]] = {}
    for chat_id, handle_id in conn.execute("SELECT chat_id, handle_id FROM chat_handle_join"):
        if handle_id in addresses:
            members.setdefault(chat_id, []).append(addresses[handle_id])

    optional = [c for c in ("style", "display_name", "chat_identifier", "service_name")]
    chat_rows = conn.execute(
        "SELECT ROWID, guid, "
        + ", ".join(c if c in chat_columns else "NULL" for c in optional)
        + " FROM chat ORDER BY ROWID"
    ).fetchall()
    chats: dict[int, dict[str, object]] = {}
    direct_by_address: dict[str, list[int]] = {}
    group_addresses: set[str] = set()
    for rowid, guid, style, display_name, identifier, service in chat_rows:
        people = tuple(dict.fromkeys(members.get(rowid, [])))
        is_group = style == CHAT_STYLE_GROUP if style is not None else len(people) > 1
        chats[rowid] = {
            "guid": guid,
            "title": display_name or (", ".join(people) if people else identifier or guid),
            "participants": people,
            "is_group": is_group,
            "service": service,
            "messages": [],
            "orphans": 0,
        }
        for address in people:
            if is_group:
                group_addresses.add(address)
            else:
                direct_by_address.setdefault(address, []).append(rowid)

    def column(name: str, default: str = "NULL") -> str:
        return f"m.{name}" if name in message_columns else default

    rows = conn.execute(
        "SELECT m.ROWID, m.guid, m.text, "
        + column("attributedBody")
        + ", m.handle_id, m.date, m.is_from_me, "
        + column("service")
        + ", "
        + column("item_type", "0")
        + ", "
        + column("associated_message_type", "0")
        + ", (SELECT group_concat(j.chat_id) FROM chat_message_join j"
        "     WHERE j.message_id = m.ROWID)"
        " FROM message m ORDER BY m.date, m.ROWID"
    )
    for rowid, guid, text, body, handle_id, date, from_me, service, item, assoc, joined in rows:
        if item or (assoc and 2000 <= assoc < 4000):
            continue
        content = _message_text(text, body)
        if not content:
            result.skipped_no_text += 1
            continue
        handle_address = addresses.get(handle_id) if handle_id else None
        message = ChatMessage(
            rowid, guid, content, apple_date(date), bool(from_me), handle_address, service
        )
        if joined:
            for chat_id in {int(c) for c in str(joined).split(",")}:
                if chat_id in chats:
                    chats[chat_id]["messages"].append(message)  # type: ignore[attr-defined]
            continue
        # An orphan: the one-to-one chat for its address, if there is one.
        if handle_address is None:
            result.skipped_no_handle += 1
            continue
        direct = direct_by_address.get(handle_address)
        if not direct:
            if handle_address in group_addresses:
                result.skipped_group_only += 1
            else:
                result.skipped_no_chat += 1
            continue
        # Several one-to-one chats (iMessage and SMS): the one on the message's service.
        target = next((c for c in direct if chats[c]["service"] == service), direct[0])
        chats[target]["messages"].append(message)  # type: ignore[attr-defined]
        chats[target]["orphans"] += 1  # type: ignore[operator]
        result.orphans_joined += 1

    for rowid, chat in chats.items():
        messages = chat["messages"]
        if not messages:
            continue
        result.chats.append(
            Chat(
                rowid=rowid,
                guid=str(chat["guid"]),
                title=str(chat["title"]),
                participants=chat["participants"],  # type: ignore[arg-type]
                is_group=bool(chat["is_group"]),
                service=chat["service"],  # type: ignore[arg-type]
                messages=tuple(messages),  # type: ignore[arg-type]
                orphans=int(chat["orphans"]),  # type: ignore[call-overload]
            )
        )
    return result


def _message_text(text: str | None, body: bytes | None) -> str:
    if not text and body:
        text = attributed_text(body)
    if not text:
        return ""
    return str(text).replace(_OBJECT_REPLACEMENT, "").strip()


def attributed_text(blob: bytes) -> str | None:
    """The string of an archived NSAttributedString (Messages' ``attributedBody``)."""
    try:
        from typedstream import unarchive_from_data

        found = _first_string(unarchive_from_data(bytes(blob)))
    except Exception:  # pytypedstream rejects some real blobs: scan the bytes instead
        found = None
    return found if found is not None else _scan_string(bytes(blob))


def _first_string(value: object, depth: int = 0) -> str | None:
    if depth > 8:
        return None
    text = getattr(value, "value", None)
    if isinstance(text, str) and type(value).__name__ in ("NSString", "NSMutableString"):
        return text
    for item in getattr(value, "contents", None) or []:
        for inner in getattr(item, "values", None) or [getattr(item, "value", None)]:
            found = _first_string(inner, depth + 1)
            if found is not None:
                return found
    return None


def _scan_string(blob: bytes) -> str | None:
    """The bytes after the first NSString's ``+`` type tag: its length, then UTF-8."""
    start = blob.find(b"NSString")
    if start < 0:
        return None
    plus = blob.find(b"\x01+", start)
    if plus < 0:
        return None
    at = plus + 2
    if at >= len(blob):
        return None
    length = blob[at]
    at += 1
    if length == 0x81:  # a 16-bit length follows
        length = int.from_bytes(blob[at : at + 2], "little")
        at += 2
    elif length == 0x82:
        length = int.from_bytes(blob[at : at + 4], "little")
        at += 4
    return blob[at : at + length].decode("utf-8", "replace") or None
