"""Level 1: restatements within one document.

A document's facts of one class are compared pair by pair. Those with the same normalized text,
or at least ``restate_threshold`` similar, point at the longest of them (``restates_fact_id``);
a quoted mail thread states each claim once per message, and only its representative takes
part in grouping across the corpus. The guard holds here too.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

from garage.clusters.guard import compatible
from garage.clusters.model import Node

_NOT_WORD = re.compile(r"[^\w]+")


def normalized(text: str) -> str:
    return " ".join(_NOT_WORD.sub(" ", text.lower()).split())


def restatements(nodes: Iterable[Node], threshold: float) -> dict[int, int | None]:
    """fact id → the id of the fact it restates, or None for a representative. Metadata facts
    take no part (they are linked by key)."""
    by_document: dict[tuple[int, str], list[Node]] = defaultdict(list)
    for node in nodes:
        if not node.is_metadata:
            by_document[(node.document_id, node.fact_class)].append(node)
    links: dict[int, int | None] = {}
    for group in by_document.values():
        # Longest first, so each group's first member is the one the others point at; ties go
        # to the earlier fact, so the answer does not depend on the order rows were read.
        group.sort(key=lambda n: (-len(n.text), n.fact_id))
        representatives: list[tuple[Node, str]] = []
        for node in group:
            text = normalized(node.text)
            for representative, rep_text in representatives:
                if not compatible(node.claim, representative.claim):
                    continue
                if text == rep_text or float(node.vector @ representative.vector) >= threshold:
                    links[node.fact_id] = representative.fact_id
                    break
            else:
                representatives.append((node, text))
                links[node.fact_id] = None
    return links
