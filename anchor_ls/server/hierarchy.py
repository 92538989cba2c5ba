"""Call hierarchy and type hierarchy over the index.

The call hierarchy shows calls and, after them, references: a function used as a
value (passed as a callback, stored, registered by a decorator) is reached from
where it is used just as a called one is. A reference's item says so in its detail
and carries the relation in its data; its ranges are the reference sites.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from anchor_ls.index import CALLS, CONTAINS, INHERITS, Entity, Graph
from anchor_ls.index.model import REFERENCES
from anchor_ls.server.fields import sites
from anchor_ls.server.folders import Folder
from anchor_ls.server.locations import Locator
from anchor_ls.tags.policy import is_external

# Relations the call hierarchy follows, in the order its lists group them.
CALL_RELATIONS = (CALLS, REFERENCES)

SYMBOL_KINDS = {
    "module": types.SymbolKind.Module,
    "class": types.SymbolKind.Class,
    "function": types.SymbolKind.Function,
    "method": types.SymbolKind.Method,
    "constant": types.SymbolKind.Constant,
}


def _inside(span: tuple[int, int, int, int], line: int, col: int) -> bool:
    sl, sc, el, ec = span
    return (sl, sc) <= (line, col) <= (el, ec)


def callee_at(graph: Graph, enclosing: Entity, line: int, col: int) -> Entity | None:
    """What a call or reference under the cursor resolves to (the innermost one wins)."""
    best: tuple[int, int, str] | None = None
    for kind in CALL_RELATIONS:
        for dst in graph.out(kind, enclosing.id):
            for span in sites(graph, kind, enclosing.id, dst):
                if _inside(span, line, col):
                    size = (span[2] - span[0], span[3] - span[1] if span[0] == span[2] else 0)
                    if best is None or size < best[:2]:
                        best = (*size, dst)
    return graph.entity(best[2]) if best else None


def call_target(graph: Graph, relpath: str, line: int, col: int) -> Entity | None:
    """A call under the cursor names its callee; anywhere else, the enclosing definition."""
    enclosing = graph.entity_at(relpath, line)
    if enclosing is None:
        return None
    return callee_at(graph, enclosing, line, col) or enclosing


def class_target(graph: Graph, relpath: str, line: int, col: int) -> Entity | None:
    """The class under the cursor: a class being called, else the enclosing class."""
    entity = graph.entity_at(relpath, line)
    if entity is None:
        return None
    called = callee_at(graph, entity, line, col)
    if called is not None and called.kind == "class":
        return called
    while entity is not None and entity.kind != "class":
        parents = graph.into(CONTAINS, entity.id)
        entity = graph.entity(parents[0]) if parents else None
    return entity


def _item_fields(entity: Entity, where: Locator) -> dict[str, Any]:
    return {
        "name": entity.name or entity.path,
        "kind": SYMBOL_KINDS.get(entity.kind, types.SymbolKind.Object),
        "uri": where.uri(entity.path),
        "range": where.full_range(entity),
        "selection_range": where.range(entity.path, entity.name_span),
        "detail": entity.id,
        # A library's definition lies in no workspace folder: its item names the folder
        # whose graph reached it, for the next request (its subtypes, its callers).
        "data": {"id": entity.id, "folder": where.folder.root_uri}
        if is_external(entity.id)
        else {"id": entity.id},
    }


def call_item(
    entity: Entity, where: Locator, via: str = CALLS, call_via: str | None = None
) -> types.CallHierarchyItem:
    """An item; `via` REFERENCES marks one reached by a reference rather than a call;
    call_via, how the binder found the call (anchor_ls.index.via), is in its data
    (the detail stays the id: clients and scripts read it as one)."""
    fields = _item_fields(entity, where)
    if via != CALLS:
        fields["detail"] = f"{entity.id} (reference)"
        fields["data"] = {**fields["data"], "via": via}
    elif call_via:
        fields["data"] = {**fields["data"], "call_via": call_via}
    return types.CallHierarchyItem(**fields)


def type_item(entity: Entity, where: Locator) -> types.TypeHierarchyItem:
    return types.TypeHierarchyItem(**_item_fields(entity, where))


def item_entity(graph: Graph, relpath: str, item: Any) -> Entity | None:
    """The entity an item stands for: by its data, else by where its name is."""
    data = getattr(item, "data", None)
    if isinstance(data, dict) and isinstance(data.get("id"), str):
        found = graph.entity(data["id"])
        if found is not None:
            return found
    start = item.selection_range.start
    entity = graph.entity_at(relpath, start.line)
    return entity if entity is not None and entity.name_span[0] == start.line else None


def call_links(
    folder: Folder, entity: Entity, encoding: str, incoming: bool
) -> list[types.CallHierarchyIncomingCall] | list[types.CallHierarchyOutgoingCall]:
    """Callers (incoming) or callees, then what references entity or what it references,
    each with the ranges in the source's file where the call or reference is made."""
    graph = folder.graph
    assert graph is not None
    where = Locator(folder, encoding)
    found: list[Any] = []
    for kind in CALL_RELATIONS:
        ids = graph.into(kind, entity.id) if incoming else graph.out(kind, entity.id)
        for other_id in ids:
            other = graph.entity(other_id)
            if other is None:
                continue
            src = other if incoming else entity
            spans = sites(graph, kind, src.id, entity.id if incoming else other_id)
            ranges = [where.range(src.path, span) for span in spans]
            dst = entity.id if incoming else other_id
            how = graph.via(src.id, dst) if kind == CALLS else None
            item = call_item(other, where, kind, how)
            found.append(
                types.CallHierarchyIncomingCall(from_=item, from_ranges=ranges)
                if incoming
                else types.CallHierarchyOutgoingCall(to=item, from_ranges=ranges)
            )
    return found


def related_types(
    folder: Folder, entity: Entity, encoding: str, supertypes: bool
) -> list[types.TypeHierarchyItem]:
    graph = folder.graph
    assert graph is not None
    where = Locator(folder, encoding)
    ids = graph.out(INHERITS, entity.id) if supertypes else graph.into(INHERITS, entity.id)
    found = (graph.entity(i) for i in ids)
    return [type_item(e, where) for e in found if e is not None]
