"""From a file's summary and the binder's conclusions to graph entities and edges."""

from __future__ import annotations

from anchor_ls.index.binder import FileFacts, Value
from anchor_ls.index.model import CALLS, CONTAINS, IMPORTS, INHERITS, Edge, Entity, Span
from anchor_ls.syntax.summary import FileSummary


def scope_ids(summary: FileSummary) -> list[str]:
    """The entity id of every scope; redefinitions of one name share an id."""
    path = summary.path
    return [f"{path}:{s.qualname}" if s.qualname else path for s in summary.scopes]


def entities(summary: FileSummary) -> list[Entity]:
    """One entity per distinct id, located at its last definition."""
    path = summary.path
    ids = scope_ids(summary)
    by_id: dict[str, Entity] = {}
    for scope, ident in zip(summary.scopes, ids, strict=True):
        if scope.kind == "module":
            kind = "module"
        elif scope.kind == "class":
            kind = "class"
        elif summary.scopes[scope.parent].kind == "class" and scope.kind == "function":
            kind = "method"
        else:
            kind = "function"
        by_id[ident] = Entity(
            ident,
            kind,
            path,
            scope.name or path.rsplit("/", 1)[-1],
            scope.line,
            scope.end_line,
            scope.start_line,
            scope.name_span,
        )
    return list(by_id.values())


def value_id(value: Value, binder_scopes: dict[str, list[str]]) -> str | None:
    kind = value[0]
    if kind in ("f", "c", "b"):
        ids = binder_scopes.get(value[1])
        return ids[value[2]] if ids is not None else None
    if kind == "m" and not value[1].endswith("/"):
        return value[1]
    return None


def edges(
    summary: FileSummary, facts: FileFacts, ids_of: dict[str, list[str]]
) -> tuple[set[Edge], dict[tuple[str, str], list[Span]]]:
    """The edges whose source is an entity of this file, with call-site spans."""
    path = summary.path
    ids = ids_of[path]
    out: set[Edge] = set()
    for idx, scope in enumerate(summary.scopes):
        if scope.parent >= 0 and ids[scope.parent] != ids[idx]:
            out.add(Edge(CONTAINS, ids[scope.parent], ids[idx]))
    for idx, bases in facts.bases.items():
        for base in bases:
            dst = value_id(base, ids_of)
            if dst is not None and dst != ids[idx]:
                out.add(Edge(INHERITS, ids[idx], dst))
    for target in facts.imports:
        if target != path:
            out.add(Edge(IMPORTS, path, target))
    sites: dict[tuple[str, str], list[Span]] = {}
    for (idx, _kind), targets in facts.calls.items():
        src = ids[idx]
        for target in targets:
            dst = value_id(target, ids_of)
            if dst is None:
                continue
            out.add(Edge(CALLS, src, dst))
            spans = facts.sites.get((idx, target), ())
            sites.setdefault((src, dst), []).extend(spans)
    return out, sites
