"""The Apache AGE graph ``garage``: the projection of the tables, its reads, and a picture."""

from garage.graph.age import GraphUnavailable, has_age
from garage.graph.project import GraphReport, GraphSchema, rebuild_graph
from garage.graph.read import (
    Edge,
    LabelCount,
    Neighbourhood,
    Vertex,
    find_vertices,
    graph_labels,
    neighbourhood,
)

__all__ = [
    "Edge",
    "GraphReport",
    "GraphSchema",
    "GraphUnavailable",
    "LabelCount",
    "Neighbourhood",
    "Vertex",
    "find_vertices",
    "graph_labels",
    "has_age",
    "neighbourhood",
    "rebuild_graph",
]
