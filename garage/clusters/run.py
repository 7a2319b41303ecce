"""``garage cluster-facts``: link every potential fact to one distilled fact.

Level 1 within documents, anchors, then across the corpus — a full run (``--full``, the first
run, or a changed model or grouping setting) or an incremental one — then distillation, then
the groups, their vectors and the facts' links are written in one transaction.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import psycopg

from garage.clusters import distill, level1, store
from garage.clusters.anchors import AnchorIndex, anchor_groups
from garage.clusters.grow import Attacher, full_groups
from garage.clusters.model import Group, Node, Settings, unit
from garage.clusters.report import ClusterReport
from garage.config import GarageConfig
from garage.embed.distilled import refresh_other_vectors
from garage.embed.registry import RegisteredModel, register_models
from garage.inference import InferenceError, LocalChatModel
from garage.locks import CORPUS, Waiting, writing
from garage.stopping import StopSignal

# (stage, how many items just finished); stages: "level 1", "grouping", "distill".
Progress = Callable[[str, int], None]


class ClusterError(Exception):
    """Clustering cannot run as configured; the message says what to change."""


def clustering_model(conn: psycopg.Connection[Any], config: GarageConfig) -> RegisteredModel:
    models = register_models(conn, config)
    chosen = next((m for m in models if m.is_default and m.modality == "text"), None)
    if chosen is None:
        raise ClusterError(
            f"the default embedding model {config.embedding.default!r} is not a text model; "
            "facts are clustered by the default model's vectors"
        )
    if chosen.binary_quantization:
        raise ClusterError(
            f"the default embedding model {chosen.name!r} is binary-quantized, so it cannot be "
            "the clustering model: its sign bits do not give the similarities grouping needs"
        )
    return chosen


def cluster_facts(
    conn: psycopg.Connection[Any],
    config: GarageConfig,
    *,
    full: bool = False,
    chat: LocalChatModel | None = None,
    progress: Progress | None = None,
    stop: StopSignal | None = None,
    waiting: Waiting | None = None,
) -> ClusterReport:
    """Group the potential facts; ``conn`` must be in autocommit mode. Groups span sources,
    so the run holds the corpus-wide writer lock (one cluster-facts or graph rebuild at a
    time)."""
    with writing(conn, CORPUS, "cluster-facts", waiting or Waiting(stop=stop)):
        return _cluster_facts(conn, config, full, chat, progress, stop)


def _cluster_facts(
    conn: psycopg.Connection[Any],
    config: GarageConfig,
    full: bool,
    chat: LocalChatModel | None,
    progress: Progress | None,
    stop: StopSignal | None,
) -> ClusterReport:
    started = time.monotonic()
    model = clustering_model(conn, config)
    settings = Settings.from_config(config)
    digest = settings.sha256(model.name)
    last = store.last_run(conn)
    changed = last is not None and (last.model, last.settings_sha256) != (model.name, digest)
    mode = "full" if full or last is None or changed else "incremental"
    report = ClusterReport(mode=mode, model=model.name)
    if changed and not full:
        report.notes.append("the clustering model or a grouping setting changed: a full run")
    run_id = store.start_run(conn, mode, model.name, digest)

    nodes, stored_links = store.load_nodes(conn, model)
    by_id = {n.fact_id: n for n in nodes}
    report.facts = len(nodes)
    report.metadata_facts = sum(n.is_metadata for n in nodes)

    # Level 1: the documents to compare again, then every inferred fact's restates link.
    inferred = [n for n in nodes if not n.is_metadata]
    if mode == "full":
        documents = {n.document_id for n in inferred}
    else:
        documents = {
            n.document_id
            for n in inferred
            if stored_links[n.fact_id].grouped_under != model.name
            # It restates a fact that lost its vector or its own link: compare again.
            or (
                stored_links[n.fact_id].restates is not None
                and stored_links[n.fact_id].restates not in by_id
            )
        }
    restates: dict[int, int | None] = {
        n.fact_id: stored_links[n.fact_id].restates for n in inferred
    }
    restates.update(
        level1.restatements((n for n in inferred if n.document_id in documents),
                            settings.restate_threshold)
    )  # fmt: skip
    report.documents_compared = len(documents)
    if progress is not None:
        progress("level 1", len(inferred))
    representatives = [n for n in inferred if restates[n.fact_id] is None]
    report.representatives = len(representatives)
    report.restatements = len(inferred) - len(representatives)

    existing = [g for g in store.load_groups(conn, model)]
    if mode == "full":
        groups, deleted = _full(nodes, representatives, existing, settings, model, report, progress)
    else:
        groups, deleted = _incremental(
            nodes, representatives, existing, stored_links, settings, model, report, progress
        )

    groups = _distill(groups, settings, chat, report, progress, stop)

    links: dict[int, tuple[int | None, Group | None]] = {}
    group_of: dict[int, Group] = {}
    for group in groups:
        for member in group.members:
            group_of[member.fact_id] = group
    for node in nodes:
        target = restates.get(node.fact_id)
        links[node.fact_id] = (target, group_of.get(target if target is not None else node.fact_id))
    report.links_changed = store.save(conn, model, groups, deleted, links, stored_links)
    for other in register_models(conn, config):
        if other.name != model.name and other.modality == "text":
            report.other_model_vectors += refresh_other_vectors(conn, other)

    report.distilled_facts = len(groups)
    report.anchors = sum(g.anchor_key is not None for g in groups)
    report.groups_of_several = sum(len(g.members) > 1 for g in groups)
    report.pending = sum(g.status == "pending" for g in groups)
    report.groups_deleted = len(deleted)
    report.seconds = time.monotonic() - started
    store.finish_run(conn, run_id, report.as_dict())
    return report


def _seed_of(stored: store.StoredGroup, members: list[Node]) -> Any:
    if stored.seed is not None:
        return stored.seed
    return members[0].vector  # made under another model: start again from its first node


def _full(
    nodes: list[Node],
    representatives: list[Node],
    existing: list[store.StoredGroup],
    settings: Settings,
    model: RegisteredModel,
    report: ClusterReport,
    progress: Progress | None,
) -> tuple[list[Group], list[int]]:
    stored_anchors = {
        s.anchor_key: Group(s.fact_class, s.seed if s.seed is not None else nodes[0].vector,
                            id=s.id, anchor_key=s.anchor_key, status="anchor",
                            members_sha256_stored=s.members_sha256)
        for s in existing
        if s.anchor_key is not None and s.seed is not None
    }  # fmt: skip
    # An anchor made under another model has no seed here: anchor_groups gives it its first
    # fact's vector in this model, and the row is kept by its key below.
    ids_by_key = {s.anchor_key: s.id for s in existing if s.anchor_key is not None}
    anchors = anchor_groups((n for n in nodes if n.is_metadata), stored_anchors)
    for anchor in anchors:
        anchor.id = ids_by_key.get(anchor.anchor_key or "")
    index = AnchorIndex(anchors, model.dimensions)
    rest = []
    for node in representatives:
        if index.join(node, settings.threshold) is not None:
            report.anchored += 1
        else:
            rest.append(node)
    grown = full_groups(rest, settings, (lambda n: progress("grouping", n)) if progress else None)
    # A group found again with the same members keeps its row (and a confirmation of them).
    by_members = {s.members_sha256: s for s in existing if s.anchor_key is None}
    for group in grown:
        old = by_members.pop(group.members_sha256, None)
        if old is not None:
            group.id = old.id
            group.members_sha256_stored = old.members_sha256
            group.status, group.statement = old.status, old.statement
            group.status_stored = (old.status, old.statement)
            report.groups_kept += 1
        else:
            report.groups_new += 1
    kept = {g.id for g in [*anchors, *grown] if g.id is not None}
    deleted = [s.id for s in existing if s.id not in kept]
    return [*anchors, *grown], deleted


def _incremental(
    nodes: list[Node],
    representatives: list[Node],
    existing: list[store.StoredGroup],
    stored_links: dict[int, store.Links],
    settings: Settings,
    model: RegisteredModel,
    report: ClusterReport,
    progress: Progress | None,
) -> tuple[list[Group], list[int]]:
    # Who stays where: a representative that already was one, in a group that still exists.
    members: dict[int, list[Node]] = {s.id: [] for s in existing}
    new: list[Node] = []
    for node in representatives:
        links = stored_links[node.fact_id]
        if links.restates is None and links.distilled in members:
            members[links.distilled].append(node)
        else:
            new.append(node)
    report.new_representatives = len(new)
    groups: list[Group] = []
    deleted: list[int] = []
    anchors_by_key: dict[str, Group] = {}
    for stored in existing:
        if stored.anchor_key is not None:
            anchors_by_key[stored.anchor_key] = Group(
                stored.fact_class,
                stored.seed if stored.seed is not None else nodes[0].vector,
                id=stored.id,
                anchor_key=stored.anchor_key,
                status="anchor",
                members_sha256_stored=stored.members_sha256,
            )
    anchors = anchor_groups((n for n in nodes if n.is_metadata), anchors_by_key)
    live_keys = {a.anchor_key for a in anchors}
    for anchor in anchors:
        if anchor.id is not None:
            for node in members.get(anchor.id, []):
                anchor.add(node)  # inferred facts that joined it earlier stay
    for stored in existing:
        if stored.anchor_key is not None:
            if stored.anchor_key not in live_keys:
                deleted.append(stored.id)  # its last metadata fact is gone
                new += members[stored.id]
            continue
        kept = members[stored.id]
        if not kept:
            deleted.append(stored.id)  # every node left it
            continue
        group = Group(stored.fact_class, _seed_of(stored, kept), kept, id=stored.id,
                      status=stored.status, statement=stored.statement,
                      members_sha256_stored=stored.members_sha256,
                      status_stored=(stored.status, stored.statement))  # fmt: skip
        if group.members_sha256 != stored.members_sha256:
            report.groups_recentred += 1  # its centroid is the mean of those that stayed
        groups.append(group)
    index = AnchorIndex(anchors, model.dimensions)
    attacher = Attacher(groups, settings, model.dimensions)
    known = {id(g) for g in groups}
    new.sort(key=lambda n: n.fact_id)
    for node in new:
        if index.join(node, settings.threshold) is not None:
            report.anchored += 1
            continue
        group, joined = attacher.attach(node)
        if joined:
            report.attached += 1
        else:
            report.stood_alone += 1
        if id(group) not in known:
            known.add(id(group))
            groups.append(group)
            report.groups_new += 1
    if progress is not None:
        progress("grouping", len(new))
    report.groups_kept = sum(1 for g in groups if g.id is not None)
    return [*anchors, *groups], deleted


def _distill(
    groups: list[Group],
    settings: Settings,
    chat: LocalChatModel | None,
    report: ClusterReport,
    progress: Progress | None,
    stop: StopSignal | None,
) -> list[Group]:
    result: list[Group] = []
    model_failed = False
    for group in groups:
        if group.anchor_key is not None:
            result.append(group)
            continue
        unchanged = group.members_sha256 == group.members_sha256_stored
        if len(group.members) == 1:
            group.status, group.statement = "single", None
        elif unchanged and group.status == "confirmed":
            pass  # the model confirmed exactly these members before
        elif group.is_tight(settings.tight_similarity):
            group.status, group.statement = "tight", None
            report.tight += 1
        elif chat is None or model_failed or (stop is not None and stop.requested):
            group.status, group.statement = "pending", None
        else:
            try:
                verdict = distill.ask(chat, group)
            except InferenceError as error:
                model_failed = True
                report.notes.append(f"the chat model failed, groups left pending: {error}")
                group.status, group.statement = "pending", None
                result.append(group)
                continue
            report.model_requests += int(verdict.asked)
            if progress is not None:
                progress("distill", 1)
            if verdict.confirmed:
                group.status, group.statement = "confirmed", verdict.statement
                report.confirmed += 1
            else:
                if verdict.reason == "egress":
                    report.withheld_egress += 1
                report.dissolved += 1
                result += _dissolve(group)
                continue
        result.append(group)
    if chat is None and any(g.status == "pending" for g in result):
        report.notes.append(
            "no chat model is configured (inference.model or facts.model): groups that are not "
            "tight stay pending"
        )
    return result


def _dissolve(group: Group) -> list[Group]:
    """Each node stands alone, except that nodes with the same normalized text stay together
    (the model said no to the group, not to "python" being "python" in two documents: level 1's
    rule for one document, applied to what is left). The group's row goes to the part holding
    its representative."""
    representative = group.representative
    by_text: dict[str, list[Node]] = {}
    for member in sorted(group.members, key=lambda m: m.fact_id):
        by_text.setdefault(level1.normalized(member.text) or str(member.fact_id), []).append(member)
    parts = []
    for members in by_text.values():
        seed = unit(np.stack([m.vector for m in members]).sum(axis=0))
        part = Group(members[0].fact_class, seed, list(members))
        part.status = "single" if len(members) == 1 else "tight"
        if any(m is representative for m in members):
            part.id = group.id
        parts.append(part)
    return parts
