"""Which definition each method overrides: the next one of its name in its class's MRO.

Read off the graph (classes, their bases in declared order, methods by id), with the
classes outside the repository that an environment resolves (anchor_ls.index.externals):
`APIView.dispatch` overrides `ext:django.views.generic.base.View.dispatch`. Only the
first definition along the MRO is an edge; what that one overrides in turn is its own
edge (or, outside the repository, nobody's business here).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from anchor_ls.index.model import EXTERNAL, INHERITS, OVERRIDES, Edge, Graph, path_of
from anchor_ls.index.mro import Linearization, mro_of


class OutsideClasses(Protocol):
    """External classes: their bases and what their own bodies define
    (anchor_ls.index.externals.Externals)."""

    def bases(self, ident: str) -> tuple[str, ...]: ...

    def member(self, ident: str, name: str) -> str | None: ...


def overrides_by_file(
    graph: Graph, outside: OutsideClasses | None, files: Iterable[str] | None = None
) -> dict[str, frozenset[Edge]]:
    """relpath -> the overrides edges of its methods (files without any left out), for
    every file or for those given."""
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
            cls = graph.entity(owner)
            if cls is None or cls.kind != "class":
                continue
            for klass in list(mro_of(owner, bases_of, known, set()))[1:]:
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


def _defined_in(graph: Graph, outside: OutsideClasses | None, cls: str, name: str) -> str | None:
    if path_of(cls) == EXTERNAL:
        return outside.member(cls, name) if outside is not None else None
    method = graph.entity(f"{cls}.{name}")
    return method.id if method is not None and method.kind == "method" else None


def below(graph: Graph, files: Iterable[str]) -> set[str]:
    """The files whose methods' overrides may change when files change: theirs, and those
    of every class below one of theirs (a subclass, at any depth)."""
    todo = [e.id for rel in files for e in graph.file_entities(rel) if e.kind == "class"]
    seen = set(todo)
    while todo:
        for sub in graph.into(INHERITS, todo.pop()):
            if sub not in seen:
                seen.add(sub)
                todo.append(sub)
    return set(files) | {path_of(cls) for cls in seen}
