"""Deletion safety: deciding that something is missing is the risk, not deleting it.

An unmounted volume, an emptied folder and a mass deletion look identical from a walk. Only a
walk that ran to exhaustion may decide at all (the caller checks ``completed``), and a run that
would delete more than a quarter of a source refuses unless forced.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class DeletionPlan:
    document_ids: list[int]
    known: int
    refused: bool
    reason: str | None


def plan_deletions(
    unseen: Mapping[str, int],
    total: int,
    *,
    protected_prefixes: Iterable[str] = (),
    ratio: float = 0.25,
) -> DeletionPlan:
    """Which of the documents a completed walk did not see (uri -> id) are gone, out of the
    source's ``total``, and whether deleting them is allowed."""
    prefixes = tuple(protected_prefixes)
    missing = [
        doc_id for uri, doc_id in unseen.items() if not (prefixes and uri.startswith(prefixes))
    ]
    if total and missing and len(missing) / total > ratio:
        reason = (
            f"refusing to delete {len(missing)} of {total} documents "
            f"({len(missing) / total:.0%}, more than {ratio:.0%}): is a folder unmounted or "
            "emptied? Run again with --force if they really are gone"
        )
        return DeletionPlan(missing, total, True, reason)
    return DeletionPlan(missing, total, False, None)
