"""The package map of docs/ARCHITECTURE.md, enforced over every import (function-level ones too): no
cycles between modules, and the layers only import downwards."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]  # the protolab package


def _module(path: Path) -> str:
    parts = ["protolab", *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(mod: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def graph() -> dict[str, set[str]]:
    modules = {_module(p): p for p in ROOT.rglob("*.py") if "tests" not in p.relative_to(ROOT).parts}
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for mod, path in modules.items():
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(mod, is_pkg, node)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for t in targets:
                while t and t not in modules:
                    t = t.rpartition(".")[0]
                if t and t != mod and t.startswith("protolab"):
                    edges[mod].add(t)
    return edges


def _package_edges(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """Edges between modules, a package's __init__ not counting as importing its own submodules."""
    return {m: {t for t in ts if not t.startswith(m + ".")} for m, ts in edges.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in edges:
        if v not in index:
            visit(v)
    return out


def test_no_module_imports_itself_back():
    assert cycles(_package_edges(graph())) == []


# what each layer must not import (docs/ARCHITECTURE.md)
LABS = ["protolab.lab.local", "protolab.lab.testbed", "protolab.lab.supervise"]  # the labs themselves
FORBIDDEN = {
    "protolab.model": ["protolab.spec", "protolab.lab", "protolab.orchestrator", "protolab.results",
                       "protolab.workloads", "protolab.topo"],
    "protolab.results": ["protolab.spec", "protolab.lab", "protolab.orchestrator", "protolab.topo",
                         "protolab.workloads", "protolab.monitor"],
    "protolab.workloads": ["protolab.orchestrator", "protolab.lab", "protolab.spec", "protolab.results"],
    "protolab.lab.linkstate": [*LABS, "protolab.orchestrator"],
    "protolab.lab.chaos": [*LABS, "protolab.orchestrator", "protolab.spec", "protolab.workloads"],
    "protolab.engine": ["protolab.lab", "protolab.monitor", "protolab.ownership", "protolab.cleanup"],
}  # fmt: skip
# a forbidden package's contract a layer may import: types only, it loads no implementation (test_lab_api)
CONTRACTS = {"protolab.workloads": ("protolab.lab.api",)}


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layers_import_only_downwards(layer):
    edges = graph()
    bad = sorted(
        f"{m} -> {t}"
        for m, ts in edges.items()
        if m == layer or m.startswith(layer + ".")
        for t in ts
        for f in FORBIDDEN[layer]
        if (t == f or t.startswith(f + ".")) and t not in CONTRACTS.get(layer, ())
    )
    assert bad == []


# model-level packages and the only protolab modules they may import (besides their own)
ONLY = {
    "protolab.spims": ["protolab.errors", "protolab.units"],
}


@pytest.mark.parametrize("layer", sorted(ONLY))
def test_model_level_packages_import_only_the_leaves_they_name(layer):
    def own(module: str) -> bool:
        return module == layer or module.startswith(layer + ".")

    bad = sorted(
        f"{m} -> {t}" for m, ts in graph().items() if own(m) for t in ts if not own(t) and t not in ONLY[layer]
    )
    assert bad == []


def test_the_checker_sees_a_cycle_and_a_function_level_import():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert "protolab.ownership" in graph()["protolab.monitor"]  # imported inside up(), found anyway
