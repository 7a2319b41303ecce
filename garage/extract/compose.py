"""A mail message as a document, whatever file it came from: an RFC 822 message (``mail.py``)
or an Outlook ``.msg`` (``msg.py``) becomes the same header block, body and metadata.

Both readers build on this, and ``mail.py`` hands Outlook's bytes to ``msg.py``: with the shared
part here, neither reader imports the other to compose.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MailMessage:
    """One parsed message, ready to become a document."""

    text: str
    title: str | None
    metadata: dict[str, object]
    sender: tuple[str | None, str | None]  # (display name, address)
    message_id: str | None


def compose(
    *,
    headers: dict[str, str],
    sender: tuple[str | None, str | None],
    to: list[dict[str, str | None]],
    cc: list[dict[str, str | None]],
    date: str | None,
    body: str,
    attachments: list[str],
    message_id: str | None,
    extra: dict[str, object],
) -> MailMessage:
    """A message as a document: the header block, a blank line and the body, with the same
    metadata whatever the file it came from (RFC 822 or an Outlook ``.msg``).

    ``headers`` holds the display values of subject, from, to, cc and date."""
    lines = [
        f"{label}: {value}"
        for label, value in (
            ("Subject", headers.get("subject", "")),
            ("From", headers.get("from", "")),
            ("To", headers.get("to", "")),
            ("Cc", headers.get("cc", "")),
            ("Date", headers.get("date", "")),
            ("Attachments", ", ".join(attachments)),
        )
        if value
    ]
    text = "\n".join(lines) + ("\n\n" + body if body else "") + "\n"
    subject = headers.get("subject") or None
    metadata: dict[str, object] = {
        "message_id": message_id,
        "subject": subject,
        "from": address_dict(sender),
        "to": to,
        "cc": cc,
        "date": date,
        "attachments": attachments,
    }
    return MailMessage(text, subject, metadata | extra, sender, message_id)


def address_dict(pair: tuple[str | None, str | None]) -> dict[str, str | None]:
    return {"name": pair[0], "email": pair[1]}
