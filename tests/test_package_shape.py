"""The package's shape: no import cycle between its modules, and runtime dependencies that
are each imported somewhere."""

from __future__ import annotations

import ast
import re
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "anchor_ls"


# Cycles another branch is removing (issue #22: binder.py <-> dense.py); emptied at merge.
def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imported_names(path: Path, name: str) -> list[tuple[str, ...]]:
    """What each import statement of the file names (at any depth, under TYPE_CHECKING
    too), relative imports made absolute: for `from m import x`, (m.x, m): the
    submodule x if there is one, else m."""
    is_package = path.name == "__init__.py"
    out: list[tuple[str, ...]] = []
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.Import):
            out.extend((alias.name,) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            out.extend((f"{module}.{alias.name}", module) for alias in node.names)
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of the package it imports (a package's __init__ for
    `import package`)."""
    found = modules()
    graph: dict[str, set[str]] = {}
    for name, path in found.items():
        named = (next((t for t in ts if t in found), None) for ts in imported_names(path, name))
        graph[name] = {t for t in named if t is not None and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def test_the_walker_sees_type_checking_imports_and_cycles_through_them() -> None:
    graph = import_graph()
    assert "anchor_ls.index.model" in graph["anchor_ls.index.repository"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle_between_modules() -> None:
    """A module imports only modules that do not import it back, directly or not,
    `if TYPE_CHECKING:` imports included: a cycle for types is still a cycle of the
    modules' meaning (one cannot be read, moved or tested without the other)."""
    assert cycles(import_graph()) == []


def normalized(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def test_every_runtime_dependency_is_imported() -> None:
    """pyproject.toml's runtime dependencies are what the code imports: an unused one is
    installed (and kept up to date) by every user for nothing."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {
        normalized(re.split(r"[<>=!~;\[ ]", spec, maxsplit=1)[0])
        for spec in project["dependencies"]
    }
    imported: set[str] = set()
    for name, path in modules().items():
        imported.update(ts[-1].partition(".")[0] for ts in imported_names(path, name))
    provided = {
        normalized(dist)
        for top, dists in packages_distributions().items()
        if top in imported
        for dist in dists
    }
    assert sorted(declared - provided) == []
