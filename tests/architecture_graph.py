"""The import graph of the dpcalc package, read from the source (no module is imported):
which module imports which (at the top or inside a function), and which package each
module belongs to. Used by tests/test_architecture.py and docs/architecture.md's listing."""
from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "dpcalc"


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, pathlib.Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _resolve(name: str, known: dict) -> str | None:
    """The dpcalc module ``name`` refers to (a module, or the package holding a name)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imports(known: dict | None = None) -> dict[str, set[str]]:
    """module -> the dpcalc modules it imports anywhere in its source."""
    known = modules() if known is None else known
    graph = {}
    for name, path in known.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{alias.name}" for alias in node.names]
            for target in targets:
                if target.split(".")[0] == "dpcalc":
                    resolved = _resolve(target, known)
                    if resolved is not None and resolved != name:
                        found.add(resolved)
        graph[name] = found
    return graph


def package_of(module: str) -> str:
    """The layer a module belongs to: its sub-package of dpcalc (cli with all of cli's
    sub-packages), or the top-level module's own name."""
    parts = module.split(".")
    if len(parts) == 1:
        return "dpcalc"
    return parts[1]


def package_imports(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for module, targets in graph.items():
        source = package_of(module)
        for target in targets:
            if package_of(target) != source:
                edges.setdefault(source, set()).add(package_of(target))
    return edges


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
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
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found
