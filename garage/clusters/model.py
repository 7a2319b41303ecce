"""The records clustering works on: nodes (representative facts with their vectors), groups,
and the settings that decide them (``facts.cluster_*``)."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field

import numpy as np

from garage.clusters.guard import Claim, read_claim
from garage.config import GarageConfig

Vector = np.ndarray


def unit(vector: Vector) -> Vector:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


@dataclass(frozen=True)
class Settings:
    restate_threshold: float = 0.92
    seed_threshold: float = 0.88
    threshold: float = 0.85
    max_drift: float = 0.05
    tight_similarity: float = 0.95
    neighbors: int = 20
    attach_candidates: int = 5

    @classmethod
    def from_config(cls, config: GarageConfig) -> Settings:
        facts = config.facts
        return cls(
            restate_threshold=facts.cluster_restate_threshold,
            seed_threshold=facts.cluster_seed_threshold,
            threshold=facts.cluster_threshold,
            max_drift=facts.cluster_max_drift,
            tight_similarity=facts.cluster_tight_similarity,
            neighbors=facts.cluster_neighbors,
            attach_candidates=facts.cluster_attach_candidates,
        )

    def sha256(self, model: str) -> str:
        """What a run's grouping depends on: a change to any of it makes the next run full.
        (The tight similarity only decides what the model is asked, not the grouping.)"""
        grouping = asdict(self) | {"model": model}
        grouping.pop("tight_similarity")
        return hashlib.sha256(json.dumps(grouping, sort_keys=True).encode()).hexdigest()


@dataclass
class Node:
    """A potential fact with a vector under the clustering model."""

    fact_id: int
    document_id: int
    fact_class: str
    text: str
    vector: Vector  # normalized
    communication: bool = False
    key: str | None = None  # metadata facts only
    claim: Claim = field(init=False)

    def __post_init__(self) -> None:
        self.claim = read_claim(self.text)

    @property
    def is_metadata(self) -> bool:
        return self.key is not None


@dataclass
class Group:
    """A distilled fact in the making. An anchor's centroid is its seed and never moves."""

    fact_class: str
    seed: Vector
    members: list[Node] = field(default_factory=list)
    id: int | None = None
    anchor_key: str | None = None
    status: str = "pending"
    statement: str | None = None
    members_sha256_stored: str = ""  # what the row said when it was loaded
    status_stored: tuple[str, str | None] | None = None  # (status, statement) as loaded
    total: Vector = field(init=False)

    def __post_init__(self) -> None:
        self.total = np.zeros_like(self.seed)
        for member in self.members:
            self.total = self.total + member.vector

    @property
    def claim(self) -> Claim | None:
        """What a candidate must agree with: the representative's claim (every member of a
        grown group has the same one; an anchor's is its first fact's)."""
        representative = self.representative
        return representative.claim if representative is not None else None

    @property
    def centroid(self) -> Vector:
        if self.anchor_key is not None or not self.members:
            return self.seed
        return unit(self.total)

    def centroid_with(self, node: Node) -> Vector:
        if self.anchor_key is not None:
            return self.seed
        return unit(self.total + node.vector)

    def add(self, node: Node) -> None:
        self.members.append(node)
        self.total = self.total + node.vector

    @property
    def members_sha256(self) -> str:
        ids = ",".join(str(i) for i in sorted(m.fact_id for m in self.members))
        return hashlib.sha256(ids.encode()).hexdigest()

    @property
    def representative(self) -> Node | None:
        if not self.members:
            return None
        if self.anchor_key is not None:
            keyed = [m for m in self.members if m.key is not None] or self.members
            return min(keyed, key=lambda m: m.fact_id)  # its first metadata fact
        return max(self.members, key=lambda m: (len(m.text), -m.fact_id))

    @property
    def unchanged(self) -> bool:
        """Nothing to write: the stored row already says all this (same nodes, same verdict)."""
        return (
            self.id is not None
            and self.members_sha256 == self.members_sha256_stored
            and (self.status, self.statement) == self.status_stored
        )

    @property
    def has_communication(self) -> bool:
        return any(m.communication for m in self.members)

    def stats(self) -> tuple[float, float, float]:
        """spread (mean distance of nodes to the centroid), radius (the farthest's), drift
        (the centroid's distance from the seed): cosine distances."""
        if not self.members:
            return 0.0, 0.0, 0.0
        centroid = self.centroid
        distances = [1.0 - float(m.vector @ centroid) for m in self.members]
        drift = 1.0 - float(centroid @ self.seed)
        return (
            max(0.0, sum(distances) / len(distances)),
            max(0.0, max(distances)),
            max(0.0, drift),
        )

    def is_tight(self, tight_similarity: float) -> bool:
        """The farthest node is closer to the centroid than nodes all ``tight_similarity``
        alike would be: n unit vectors pairwise at cosine s sit at sqrt((1 + (n-1)s) / n)
        from their mean's direction."""
        n = len(self.members)
        if n <= 1:
            return True
        bound = math.sqrt((1 + (n - 1) * tight_similarity) / n)
        centroid = self.centroid
        return min(float(m.vector @ centroid) for m in self.members) >= bound - 1e-6
