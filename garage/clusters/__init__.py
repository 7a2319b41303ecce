"""Distilled facts: potential facts that state the same claim, linked to one row of
``distilled_facts`` (restatements within a document, groups across the corpus under the
guard, anchors from header facts, distillation by the local chat model)."""

from garage.clusters.report import ClusterReport
from garage.clusters.run import ClusterError, cluster_facts, clustering_model

__all__ = ["ClusterError", "ClusterReport", "cluster_facts", "clustering_model"]
