"""Stage 5, attribute: who wrote a document, decided before it is stored.

``attribute_file`` is the guide's rule applied to one file (identity, git history, embedded
metadata, the sender of a mail, the source's default); it reads no database. The author's row
is found or created only inside the document's own transaction (``authors.AuthorCache``), so a
document that fails leaves no author behind.
"""

from __future__ import annotations

from typing import Any

from garage.attribute import Attribution, attribute
from garage.extract import Extraction
from garage.ingest.run import IngestRun
from garage.printable import printable
from garage.walk import WalkEntry


def attribute_file(run: IngestRun, entry: WalkEntry, extraction: Extraction) -> Attribution:
    """Who wrote the file, on the evidence the file and the source offer."""
    return attribute(
        entry.path,
        identity=run.identity,
        git=run.git,
        embedded_author=extraction.embedded_author,
        source_default=run.source.default_author,
        sender=extraction.sender,
        root=run.root_of(entry.path),
    )


def author_id(run: IngestRun, attribution: Attribution) -> int | None:
    """The credited author's row; call inside ``run.authors.transaction()``."""
    if not attribution.author:
        return None
    email = _credited_email(attribution.evidence)
    return run.authors.id_for(
        printable(attribution.author),
        printable(email) if email else email,
        attribution.relation == "authored" and run.identity.is_self(attribution.author, email),
    )


def _credited_email(evidence: dict[str, Any]) -> str | None:
    # The credited author's address (not necessarily the top committer's).
    email = evidence.get("email")
    return email if isinstance(email, str) and email else None
