"""Which definition each method overrides: the next one of its name in its class's MRO.

Read off the graph (classes, their bases in declared order, methods by id), with the
classes outside the repository that an environment resolves (anchor_ls.index.externals):
`APIView.dispatch` overrides `ext:django.views.generic.base.View.dispatch`. Only the
first definition along the MRO is an edge; what that one overrides in turn is its own
edge (or, outside the repository, nobody's business here).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Protocol

from anchor_ls.index.model import EXTERNAL, INHERITS, OVERRIDES, Edge, Graph, path_of
from anchor_ls.index.mro import Linearization, mro_of


class OutsideClasses(Protocol):
    """External classes: their bases and what their own bodies define
    (anchor_ls.index.externals.Externals)."""

    def bases(self, ident: str) -> tuple[str, ...]: ...

    def member(self, ident: str, name: str) -> str | None: ...


class MethodNames:
    """How many methods of the repository have each name, kept file by file: a method
    whose name no other class defines, in a class with nothing outside above it,
    overrides nothing, and its MRO is not walked (a chain of 600 classes, each with a
    method of its own, walked 180,000 classes)."""

    def __init__(self) -> None:
        self._by_file: dict[str, Counter[str]] = {}
        self.total: Counter[str] = Counter()
        # The repository's classes below one outside it, found when a lone name first asks
        # (10-20 ms on Django) and kept until inherits edges move.
        self.below_outside: set[str] | None = None

    def refresh(self, graph: Graph, files: Iterable[str]) -> None:
        """Count again the methods of files (changed, or gone)."""
        for rel in files:
            new = Counter(e.name for e in graph.file_entities(rel) if e.kind == "method")
            old = self._by_file.pop(rel, None)
            if old:
                self.total.subtract(old)
            if new:
                self._by_file[rel] = new
                self.total.update(new)


def overrides_by_file(
    graph: Graph,
    outside: OutsideClasses | None,
    names: MethodNames,
    files: Iterable[str] | None = None,
) -> dict[str, frozenset[Edge]]:
    """relpath -> the overrides edges of its methods (files without any left out), for
    every file or for those given (names: counted for the graph as it is)."""
    known: dict[str, Linearization[str]] = {}

    def bases_of(cls: str) -> Sequence[str]:
        if path_of(cls) == EXTERNAL:
            return outside.bases(cls) if outside is not None else ()
        return graph.bases(cls)

    out: dict[str, frozenset[Edge]] = {}
    for rel in graph.files() if files is None else sorted(files):
        found: set[Edge] = set()
        for ent in graph.file_entities(rel):
            if ent.kind != "method":
                continue
            owner, _, name = ent.id.rpartition(".")
            if names.total[name] <= 1:
                if names.below_outside is None:
                    names.below_outside = _below_outside(graph)
                if owner not in names.below_outside:
                    continue
            cls = graph.entity(owner)
            if cls is None or cls.kind != "class":
                continue
            mro = iter(mro_of(owner, bases_of, known, set()))
            next(mro, None)
            for klass in mro:
                if klass == owner:  # a cycle of bases repeats its class: nothing beyond
                    break
                target = _defined_in(graph, outside, klass, name)
                if target is not None:
                    if target != ent.id:
                        found.add(Edge(OVERRIDES, ent.id, target))
                    break
        if found:
            out[rel] = frozenset(found)
    return out


def _below_outside(graph: Graph) -> set[str]:
    """The repository's classes with a class outside it among their ancestors."""
    return _below(
        graph,
        [
            sub
            for ident in graph.external_targets()
            for sub in graph.into(INHERITS, ident)
            if path_of(sub) != EXTERNAL
        ],
    )


def _below(graph: Graph, classes: list[str]) -> set[str]:
    """classes and every class below one of them (a subclass, at any depth)."""
    todo = list(classes)
    seen = set(todo)
    while todo:
        for sub in graph.into(INHERITS, todo.pop()):
            if sub not in seen:
                seen.add(sub)
                todo.append(sub)
    return seen


def _defined_in(graph: Graph, outside: OutsideClasses | None, cls: str, name: str) -> str | None:
    if path_of(cls) == EXTERNAL:
        return outside.member(cls, name) if outside is not None else None
    method = graph.entity(f"{cls}.{name}")
    return method.id if method is not None and method.kind == "method" else None


def below(graph: Graph, files: Iterable[str]) -> set[str]:
    """The files whose methods' overrides may change when files change: theirs, and those
    of every class below one of theirs (a subclass, at any depth)."""
    changed = set(files)
    seen = _below(
        graph, [e.id for rel in changed for e in graph.file_entities(rel) if e.kind == "class"]
    )
    return changed | {path_of(cls) for cls in seen}
