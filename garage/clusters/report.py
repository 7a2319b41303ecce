"""What one clustering run did: its counts, the line `garage cluster-facts` prints, and the
metadata the distilled_facts asset shows."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class ClusterReport:
    mode: str = ""
    model: str = ""
    facts: int = 0  # potential facts with a vector under the clustering model
    metadata_facts: int = 0
    documents_compared: int = 0
    restatements: int = 0
    representatives: int = 0
    new_representatives: int = 0
    distilled_facts: int = 0
    anchors: int = 0
    groups_of_several: int = 0
    groups_new: int = 0
    groups_kept: int = 0
    groups_deleted: int = 0
    groups_recentred: int = 0
    anchored: int = 0  # inferred facts that joined an anchor
    attached: int = 0  # new representatives that joined an existing group
    stood_alone: int = 0
    tight: int = 0
    confirmed: int = 0
    dissolved: int = 0
    withheld_egress: int = 0  # groups with a communication the non-loopback model never saw
    pending: int = 0  # waiting for a model (none configured, or it failed)
    model_requests: int = 0
    links_changed: int = 0
    other_model_vectors: int = 0
    seconds: float = 0.0
    stopped: str | None = None
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        line = (
            f"{self.mode} run under {self.model}: {self.facts} facts "
            f"({self.restatements} restatements) -> {self.distilled_facts} distilled facts "
            f"({self.groups_of_several} of several, {self.anchors} anchors); "
            f"{self.groups_new} new, {self.groups_kept} kept, {self.groups_deleted} deleted, "
            f"{self.groups_recentred} re-centred; {self.anchored} anchored, {self.attached} "
            f"attached, {self.stood_alone} alone; {self.tight} tight, {self.confirmed} "
            f"confirmed, {self.dissolved} dissolved, {self.pending} pending "
            f"({self.seconds:.1f} s)"
        )
        if self.withheld_egress:
            line += (
                f"; {self.withheld_egress} groups holding mail or chats were not sent to a "
                "model host off this machine, and dissolved"
            )
        return line + "".join(f"; {note}" for note in self.notes)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
