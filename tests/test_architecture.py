"""The package layout is the architecture (docs/architecture.md): each package imports only
the packages below it, no modules import each other in a circle, packages and modules stay
small, and the listing in docs/architecture.md is the code's own.

The import graph is read from the source (tests/architecture_graph.py), imports inside
functions included: a lazy import is still a dependency."""
from __future__ import annotations

import re

import pytest

import architecture_graph as graph

# package -> the packages it may import. The order of the rows is the layering, bottom up;
# `dpcalc` is the top-level __init__ (the lazily exported library API).
ALLOWED = {
    "errors": set(),
    "params": {"errors"},
    "numerics": {"params", "errors"},
    "models": {"numerics", "params", "errors"},
    "pld": {"numerics", "params", "errors"},
    "pipelines": {"models", "numerics", "params", "errors"},
    "pb": {"pld", "models", "numerics", "params", "errors"},
    "allocation": {"pb", "pld", "models", "numerics", "params", "errors"},
    "accountants": {"allocation", "pb", "pld", "models", "numerics", "params", "errors"},
    "calibration": {"accountants", "allocation", "pb", "pld", "models", "numerics", "params",
                    "errors"},
    "risk": {"calibration", "accountants", "allocation", "pb", "pld", "models", "numerics",
             "params", "errors"},
    "group": {"calibration", "accountants", "allocation", "pb", "pld", "models", "numerics",
              "params", "errors"},
    "training": {"calibration", "accountants", "allocation", "pb", "pipelines", "models",
                 "numerics", "params", "errors"},
    "dpsgd": {"pipelines", "models", "numerics", "params", "errors"},
    "audit": {"dpsgd", "params", "errors"},
    "cli": {"risk", "group", "calibration", "training", "accountants", "allocation", "pb", "pld",
            "pipelines",
            "models", "numerics", "audit", "dpsgd", "params", "errors", "dpcalc"},
    "__main__": {"cli"},
    "dpcalc": set(),
}
MAX_MODULES_PER_PACKAGE = 15
MAX_MODULE_LINES = 420
ARCHITECTURE = graph.ROOT / "docs" / "architecture.md"


@pytest.fixture(scope="module")
def imports():
    return graph.imports()


def test_every_package_imports_only_packages_below_it(imports):
    wrong = [f"{module} imports {target}" for module, targets in sorted(imports.items())
             for target in sorted(targets)
             if graph.package_of(target) != graph.package_of(module)
             and graph.package_of(target) not in ALLOWED[graph.package_of(module)]]
    assert not wrong, "imports against the layering:\n" + "\n".join(wrong)


def test_every_package_has_a_layer(imports):
    assert {graph.package_of(module) for module in imports} <= set(ALLOWED)


def test_the_layers_have_no_circle():
    """ALLOWED itself is a partial order: a circle there would permit one in the code."""
    assert graph.cycles({name: set(allowed) for name, allowed in ALLOWED.items()}) == []


def test_no_modules_import_each_other_in_a_circle(imports):
    assert graph.cycles(imports) == []


def test_the_checks_see_a_circle_and_a_layer_violation():
    """The checks themselves: a made-up graph with a circle and an upward import."""
    made_up = {"dpcalc.pld.a": {"dpcalc.pld.b"}, "dpcalc.pld.b": {"dpcalc.pld.a"},
               "dpcalc.models.c": {"dpcalc.pb.d"}, "dpcalc.pb.d": set()}
    assert graph.cycles(made_up) == [["dpcalc.pld.a", "dpcalc.pld.b"]]
    edges = graph.package_imports(made_up)
    assert "pb" in edges["models"] and "pb" not in ALLOWED["models"]


def test_packages_and_modules_stay_small():
    modules = graph.modules()
    counts = {}
    for name, path in modules.items():
        if path.name != "__init__.py":
            package = name.rpartition(".")[0]
            counts[package] = counts.get(package, 0) + 1
    crowded = {package: count for package, count in counts.items()
               if package != "dpcalc" and count > MAX_MODULES_PER_PACKAGE}
    assert not crowded
    long = {name: lines for name, path in modules.items()
            if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long


def test_every_package_says_what_it_holds_and_may_import():
    for path in sorted(graph.PACKAGE.rglob("__init__.py")):
        text = path.read_text(encoding="utf-8")
        assert text.startswith('"""'), f"{path} has no docstring"


def listing(width: int = 96) -> str:
    """The package listing docs/architecture.md carries: each package, what it imports,
    and its modules (wrapped at ``width``)."""
    import textwrap

    modules = graph.modules()
    edges = graph.package_imports(graph.imports(modules))
    packages = sorted({name.rpartition(".")[0] for name, path in modules.items()
                       if path.name != "__init__.py"} - {""})
    lines = []
    for package in packages:
        top = package.split(".")[1] if "." in package else "dpcalc"
        uses = sorted(edges.get(top, set()) - {top}) if package.count(".") == 1 else []
        names = [path.stem for name, path in modules.items()
                 if name.rpartition(".")[0] == package and path.name != "__init__.py"]
        header = f"{package.replace('.', '/')}/ ({len(names)})"
        if uses:
            header += f" imports {', '.join(uses)}"
        lines.append(header)
        lines.extend(textwrap.wrap(", ".join(names), width, initial_indent="    ",
                                   subsequent_indent="    "))
    return "\n".join(lines)


def test_architecture_doc_carries_the_current_listing():
    """docs/architecture.md's listing is regenerated by `python tests/test_architecture.py`."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    found = re.search(r"<!-- listing -->\n```text\n(.*?)\n```\n<!-- /listing -->", text, re.S)
    assert found, "docs/architecture.md lacks the generated listing block"
    assert found.group(1) == listing(), ("docs/architecture.md's listing is stale: run "
                                         "`python tests/test_architecture.py`")


if __name__ == "__main__":  # rewrite the listing in docs/architecture.md
    text = ARCHITECTURE.read_text(encoding="utf-8")
    block = f"<!-- listing -->\n```text\n{listing()}\n```\n<!-- /listing -->"
    text = re.sub(r"<!-- listing -->\n.*?<!-- /listing -->", lambda _: block, text, flags=re.S)
    ARCHITECTURE.write_text(text, encoding="utf-8")
    print(f"updated {ARCHITECTURE}")
