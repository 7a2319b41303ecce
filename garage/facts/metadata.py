"""Metadata facts: what a mail's header fields and a Messages thread's participants state, with
no model.

A mail's sender, each recipient and its subject (without ``Re:``/``Fwd:``), and each participant
of a thread, become potential facts grounded in the document's own text — the header block
the mail extractor writes (``From: …``), or a thread's ``<address>: <message>`` lines. They are
the anchors the distillation groups other facts around, so each records its class and a key:
a person is ``author:<id>`` when an ``authors`` row has their address (the owner's row for one
of ``identity.emails``), else ``address:<address>``; a subject is ``subject:<its text,
lower-cased>``. A value that cannot be found in the text is dropped and counted, like any
ungrounded fact.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import Any

import psycopg

from garage.facts.grounding import GroundedFact

METADATA_VERSION = 1
# Stands in for a prompt's hash: a change to how metadata facts are read makes them stale.
METADATA_SHA256 = hashlib.sha256(f"garage-metadata-facts:{METADATA_VERSION}".encode()).hexdigest()
METADATA_MODEL = "metadata"

# Reply and forward markers, repeated and in the common languages' forms ("Re: Fwd: AW:").
_SUBJECT_PREFIX = re.compile(r"^(\s*(re|fwd?|fw|aw|sv|wg|tr|rif)\s*(\[\d+\])?\s*:\s*)+", re.I)


def subject_without_prefixes(subject: str) -> str:
    return _SUBJECT_PREFIX.sub("", subject).strip()


def is_mail(metadata: dict[str, Any]) -> bool:
    return "message_id" in metadata and "from" in metadata


def is_thread(metadata: dict[str, Any]) -> bool:
    return "chat_guid" in metadata and "participants" in metadata


class PersonKeys:
    """Keys people by their ``authors`` row where one matches their address."""

    def __init__(self, conn: psycopg.Connection[Any], self_emails: Iterable[str] = ()):
        self.conn = conn
        self.self_emails = {e.strip().lower() for e in self_emails}
        self._cache: dict[str, str] = {}

    def key(self, address: str) -> str:
        address = address.strip().lower()
        if address not in self._cache:
            self._cache[address] = self._lookup(address)
        return self._cache[address]

    def _lookup(self, address: str) -> str:
        if address in self.self_emails:
            row = self.conn.execute(
                "SELECT id FROM authors WHERE is_self ORDER BY id LIMIT 1"
            ).fetchone()
        else:
            # Phone numbers are stored as a name with no email (the Messages importer's way).
            row = self.conn.execute(
                "SELECT id FROM authors WHERE lower(email) = %s OR (email IS NULL AND name = %s)"
                " ORDER BY is_self DESC, id LIMIT 1",
                (address, address),
            ).fetchone()
        if row is not None:
            author_id = row["id"] if isinstance(row, dict) else row[0]
            return f"author:{author_id}"
        return f"address:{address}"


def _header_lines(content: str) -> dict[str, tuple[int, int]]:
    """Each header line of the block a mail's content starts with: label → (start, end) of
    its value."""
    lines: dict[str, tuple[int, int]] = {}
    offset = 0
    for line in content.split("\n"):
        if not line.strip():
            break
        label, colon, _ = line.partition(": ")
        if colon and label.lower() not in lines:
            start = offset + len(label) + 2
            lines[label.lower()] = (start, offset + len(line))
        offset += len(line) + 1
    return lines


def _find(content: str, needle: str, start: int, end: int) -> tuple[int, int] | None:
    if not needle:
        return None
    match = re.compile(re.escape(needle), re.I).search(content, start, end)
    return (match.start(), match.end()) if match else None


def _person_span(
    content: str, name: str | None, address: str | None, start: int, end: int
) -> tuple[int, int] | None:
    """Where the person is written in a header value: ``Name <address>`` when both are there
    next to each other, else the address, else the name."""
    found = _find(content, address or "", start, end)
    if found is not None and name:
        before = content[start : found[0]].rstrip("<").rstrip().rstrip('"')
        if before.lower().endswith(name.lower()):
            left = start + len(before) - len(name)
            if left > start and content[left - 1] == '"':
                left -= 1
            right = found[1] + 1 if content[found[1] : found[1] + 1] == ">" else found[1]
            return left, right
        return found
    if found is not None:
        return found
    return _find(content, name or "", start, end)


def _person_fact(
    content: str,
    fact_class: str,
    person: dict[str, Any],
    value: tuple[int, int],
    keys: PersonKeys,
) -> GroundedFact | None:
    name, address = person.get("name"), person.get("email")
    span = _person_span(content, name, address, *value)
    if span is None:
        return None
    attributes = {k: v for k, v in (("name", name), ("email", address)) if v}
    key = keys.key(address) if address else f"name:{(name or '').strip().lower()}"
    return GroundedFact(
        fact_class, content[span[0] : span[1]], span[0], span[1], "metadata", attributes, key
    )


def mail_facts(
    content: str, metadata: dict[str, Any], keys: PersonKeys
) -> tuple[list[GroundedFact], int]:
    headers = _header_lines(content)
    facts: list[GroundedFact] = []
    dropped = 0
    sender = metadata.get("from") or {}
    if isinstance(sender, dict) and (sender.get("name") or sender.get("email")):
        value = headers.get("from")
        fact = _person_fact(content, "sender", sender, value, keys) if value else None
        if fact is None:
            dropped += 1
        else:
            facts.append(fact)
    for field in ("to", "cc"):
        value = headers.get(field)
        for person in metadata.get(field) or []:
            if not isinstance(person, dict):
                continue
            fact = _person_fact(content, "recipient", person, value, keys) if value else None
            if fact is None:
                dropped += 1
            else:
                facts.append(fact)
    subject = metadata.get("subject")
    if isinstance(subject, str) and subject_without_prefixes(subject):
        value = headers.get("subject")
        bare = subject_without_prefixes(subject)
        span = _find(content, bare, *value) if value else None
        if span is None:
            dropped += 1
        else:
            text = content[span[0] : span[1]]
            key = "subject:" + " ".join(text.lower().split())
            facts.append(GroundedFact("subject", text, span[0], span[1], "metadata", {}, key))
    return facts, dropped


def thread_facts(
    content: str, metadata: dict[str, Any], keys: PersonKeys
) -> tuple[list[GroundedFact], int]:
    """Each participant, at the first message line they sent (``<address>: …``)."""
    facts: list[GroundedFact] = []
    dropped = 0
    for participant in metadata.get("participants") or []:
        if not isinstance(participant, str) or not participant:
            continue
        match = re.compile(rf"(?m)^{re.escape(participant)}(?=: )").search(content)
        if match is None:
            dropped += 1  # they never wrote in the thread: nothing to ground them in
            continue
        facts.append(
            GroundedFact(
                "participant",
                content[match.start() : match.end()],
                match.start(),
                match.end(),
                "metadata",
                {"address": participant},
                keys.key(participant),
            )
        )
    return facts, dropped


def metadata_facts(
    content: str, metadata: dict[str, Any], keys: PersonKeys
) -> tuple[list[GroundedFact], int]:
    if is_mail(metadata):
        return mail_facts(content, metadata, keys)
    if is_thread(metadata):
        return thread_facts(content, metadata, keys)
    return [], 0
