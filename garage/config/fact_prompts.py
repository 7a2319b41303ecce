"""The shape of one ``facts.prompts`` entry, validated when the config loads.

An entry is a name, a description (the instructions), few-shot examples in LangExtract's shape
(a text and the extractions expected from it, each a class, the quoted text and optional
attributes), an optional scope and an enabled flag. Every field but the name may be left out:
an entry named ``default`` overrides the built-in default field by field, and any field it
leaves out keeps the built-in's (see ``garage.facts.prompts``). Unknown keys are errors, so a
typo names its entry and field instead of silently doing nothing.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

PROMPT_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
# Facts read from header fields with no model are stored under this prompt name.
METADATA_PROMPT = "metadata"


class _Strict(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )


class ExampleExtraction(_Strict):
    # "class" is a Python keyword, and LangExtract's own word for it: read it by alias.
    extraction_class: str = Field(alias="class", min_length=1, max_length=64)
    text: str = Field(min_length=1)
    attributes: dict[str, str | list[str]] = Field(default_factory=dict)


class PromptExample(_Strict):
    text: str = Field(min_length=1)
    extractions: list[ExampleExtraction] = Field(min_length=1)

    @model_validator(mode="after")
    def _quotes_are_in_the_text(self) -> PromptExample:
        # An example that quotes text its own passage does not hold teaches the model to
        # invent, and every such fact would then be dropped as ungrounded.
        for index, extraction in enumerate(self.extractions):
            if extraction.text not in self.text:
                raise ValueError(
                    f"extractions[{index}].text {extraction.text!r} does not occur in the "
                    "example's text; quote it exactly"
                )
        return self


CorpusClassName = Literal["document", "code", "communication"]


class PromptScope(_Strict):
    corpus_classes: list[CorpusClassName] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)


# The graph's own labels (garage.graph.project), which a configured label may not take, and
# the label an edge gets when its label attribute names none of its labels.
BUILTIN_VERTEX_LABELS = ("Document", "Chunk", "Author", "PotentialFact", "Fact")
BUILTIN_EDGE_LABELS = ("HAS_CHUNK", "WROTE", "RECEIVED", "STATES", "RESTATES", "SUPPORTS")
DEFAULT_EDGE_LABEL = "RELATED_TO"
# A plain identifier: AGE label names become table names, and reads name them as such.
GRAPH_LABEL = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,62}$")


def edge_label(value: str) -> str:
    """An attribute value as an edge label: upper-cased, spaces as ``_``."""
    return "_".join(value.strip().upper().split())


class GraphVertex(_Strict):
    """The distilled facts of ``class`` become vertices of ``label`` instead of Fact, titled by
    the representative's ``title`` attribute (its text when it has none)."""

    vertex_class: str = Field(alias="class", min_length=1, max_length=64)
    label: str
    title: str | None = Field(default=None, min_length=1, max_length=64)


class GraphEdge(_Strict):
    """Each potential fact of ``class`` becomes an edge between the distilled facts its
    ``source`` and ``target`` attributes name."""

    edge_class: str = Field(alias="class", min_length=1, max_length=64)
    source: str = Field(min_length=1, max_length=64)
    source_class: str = Field(min_length=1, max_length=64)
    target: str = Field(min_length=1, max_length=64)
    target_class: str = Field(min_length=1, max_length=64)
    label_attribute: str | None = Field(default=None, min_length=1, max_length=64)
    labels: list[str] = Field(default_factory=list, max_length=100)
    label: str = DEFAULT_EDGE_LABEL


class GraphBlock(_Strict):
    vertices: list[GraphVertex] = Field(default_factory=list, max_length=100)
    edges: list[GraphEdge] = Field(default_factory=list, max_length=100)


class FactPromptEntry(_Strict):
    name: str
    description: str | None = Field(default=None, min_length=1)
    examples: list[PromptExample] | None = Field(default=None, min_length=1)
    scope: PromptScope | None = None
    enabled: bool | None = None
    # How the projection draws this prompt's classes; not part of the prompt's hash, so a
    # change needs only `garage graph rebuild`.
    graph: GraphBlock | None = None

    @field_validator("name")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        if not PROMPT_NAME.match(value):
            raise ValueError(
                "must be 1-64 lower-case letters, digits, '_' or '-', starting with a letter "
                "or digit"
            )
        if value == METADATA_PROMPT:
            raise ValueError(f"{METADATA_PROMPT!r} is reserved for the facts read from headers")
        return value


def _check_label(where: str, label: str, *, builtin: tuple[str, ...]) -> None:
    if not GRAPH_LABEL.match(label):
        raise ValueError(
            f"{where}: {label!r} is not a plain label (a letter, then letters, digits or '_', "
            "at most 63)"
        )
    reserved = {b.lower(): b for b in (*BUILTIN_VERTEX_LABELS, *BUILTIN_EDGE_LABELS)}
    if label.lower() in reserved and label not in builtin:
        raise ValueError(f"{where}: {label!r} is the graph's built-in {reserved[label.lower()]}")


def check_graph_blocks(entries: list[FactPromptEntry]) -> None:
    """Across every prompt: labels are plain identifiers and never a built-in one; a class is
    drawn once (one vertex label or one edge entry, which then holds in every prompt) and a
    label names one class. Each rule is checked over every block at once, so the verdict does
    not depend on the order of the prompts."""
    vertices: list[tuple[str, GraphVertex]] = []
    edges: list[tuple[str, GraphEdge]] = []
    for index, entry in enumerate(entries):
        if entry.graph is None:
            continue
        prefix = f"[{index}:{entry.name}].graph"
        vertices += [(f"{prefix}.vertices[{v}]", x) for v, x in enumerate(entry.graph.vertices)]
        edges += [(f"{prefix}.edges[{e}]", x) for e, x in enumerate(entry.graph.edges)]
    class_of = _vertex_classes(vertices)
    _drawn_once(vertices, edges)
    _edge_labels(edges, class_of)


def _vertex_classes(vertices: list[tuple[str, GraphVertex]]) -> dict[str, tuple[str, str]]:
    """Vertex labels, each of one class: label -> (class, where)."""
    class_of: dict[str, tuple[str, str]] = {}
    for where, vertex in vertices:
        at = f"{where}.label"
        _check_label(at, vertex.label, builtin=())
        known = class_of.setdefault(vertex.label, (vertex.vertex_class, at))
        if known[0] != vertex.vertex_class:
            raise ValueError(
                f"{at}: label {vertex.label!r} already names class {known[0]!r} ({known[1]}); "
                "a label names one class"
            )
    return class_of


def _drawn_once(
    vertices: list[tuple[str, GraphVertex]], edges: list[tuple[str, GraphEdge]]
) -> None:
    """The projection draws a class by the one entry it finds: a second would be ignored
    without a word, so it is refused, naming both places. Vertices are looked at first, so a
    class drawn as both is named at its edge whichever prompt comes first."""
    vertex_at: dict[str, tuple[str, GraphVertex]] = {}
    for where, vertex in vertices:
        earlier = vertex_at.setdefault(vertex.vertex_class, (where, vertex))
        if earlier[0] != where:
            raise ValueError(
                f"{where}.label: class {vertex.vertex_class!r} already has the label "
                f"{earlier[1].label!r} ({earlier[0]}); a class takes one label, drawn once for "
                "every prompt"
            )
    edge_at: dict[str, str] = {}
    for where, edge in edges:
        if edge.edge_class in vertex_at:
            raise ValueError(
                f"{where}.class: class {edge.edge_class!r} is drawn as the vertex label "
                f"{vertex_at[edge.edge_class][1].label!r} ({vertex_at[edge.edge_class][0]}); a "
                "class is a vertex or an edge"
            )
        earlier_edge = edge_at.setdefault(edge.edge_class, where)
        if earlier_edge != where:
            raise ValueError(
                f"{where}.class: class {edge.edge_class!r} is already drawn as an edge "
                f"({earlier_edge}); a class is drawn once for every prompt"
            )


def _edge_labels(edges: list[tuple[str, GraphEdge]], class_of: dict[str, tuple[str, str]]) -> None:
    """Edge labels, once every vertex label is known: each names one edge class (the fallback
    label, RELATED_TO unless set, is shared), and none is a vertex label."""
    edge_class_of: dict[str, tuple[str, str]] = {}
    for where, edge in edges:
        if edge.labels and edge.label_attribute is None:
            raise ValueError(f"{where}.label_attribute: required when labels are listed")
        _check_label(f"{where}.label", edge.label, builtin=())
        if edge.label in class_of:
            raise ValueError(f"{where}.label: {edge.label!r} is already a vertex label")
        for n, value in enumerate(edge.labels):
            label, at = edge_label(value), f"{where}.labels[{n}]"
            _check_label(at, label, builtin=())
            if label in class_of:
                raise ValueError(f"{at}: {label!r} is already a vertex label")
            known = edge_class_of.setdefault(label, (edge.edge_class, at))
            if known[0] != edge.edge_class:
                raise ValueError(
                    f"{at}: label {label!r} already names class {known[0]!r} ({known[1]}); a "
                    "label names one class"
                )


def check_prompt_entries(entries: list[FactPromptEntry]) -> list[FactPromptEntry]:
    """Names are unique, an entry other than ``default`` says what to ask (it has no built-in
    to fall back on), and the graph blocks agree with each other."""
    check_graph_blocks(entries)
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        if entry.name in seen:
            raise ValueError(f"[{index}:{entry.name}]: a second prompt with this name")
        seen.add(entry.name)
        if entry.name != "default":
            for field in ("description", "examples"):
                if getattr(entry, field) is None:
                    raise ValueError(
                        f"[{index}:{entry.name}].{field}: required for a prompt that is not "
                        "the built-in default"
                    )
    return entries
