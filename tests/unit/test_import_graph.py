"""The library's import graph: no cycle, and no arrow into the Dagster layer.

Every module under ``garage/`` is parsed with ``ast`` (nothing is imported, so an import that
only happens inside a function counts as much as one at the top: both are a dependency). An
edge goes from a module to each ``garage`` module it names; ``from package import name`` names
the submodule when ``name`` is one, else the package. A cycle makes the layers impossible to
read one at a time; an import of ``garage_assets``, ``resources`` or ``sensors`` would tie the
library to Dagster, which only the layer above it may know."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "garage"
FORBIDDEN = ("garage_assets", "resources", "sensors", "dagster")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(LIBRARY.rglob("*.py"))}


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Every absolute module name ``path`` imports (relative imports resolved)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                found.add(submodule if submodule in modules else base)
    return found


def _graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(edges between library modules, every import of each module)."""
    modules = _modules()
    edges: dict[str, set[str]] = {}
    every: dict[str, set[str]] = {}
    for name, path in modules.items():
        imported = _imports(name, path, modules)
        every[name] = imported
        edges[name] = {target for target in imported if target in modules and target != name}
    return edges, every


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return components


def test_the_graph_is_read_from_every_module() -> None:
    edges, _ = _graph()
    assert "garage.ingest.pipeline" in edges
    assert "garage.config" in edges["garage.ingest.pipeline"]


def test_the_library_has_no_import_cycle() -> None:
    edges, _ = _graph()
    assert _cycles(edges) == []


def test_a_cycle_would_be_found() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(edges) == [["a", "b", "c"]]


def test_the_library_imports_nothing_of_the_dagster_layer() -> None:
    _, every = _graph()
    offending = {
        module: sorted(name for name in imported if name.split(".")[0] in FORBIDDEN)
        for module, imported in every.items()
    }
    assert {module: names for module, names in offending.items() if names} == {}
