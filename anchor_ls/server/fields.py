"""How the editor shows each tag field (the graph meaning is the tag layer's FIELD_SPECS)."""

from __future__ import annotations

from dataclasses import dataclass

from anchor_ls.index import Graph
from anchor_ls.tags.policy import FIELD_SPECS


@dataclass(frozen=True, slots=True)
class FieldLook:
    symbol: str  # prefix in inlay hints
    one: str  # lens noun, singular
    many: str  # lens noun, plural


LOOKS: dict[str, FieldLook] = {
    "CALLED_BY": FieldLook("←", "caller", "callers"),
    "CALLS": FieldLook("→", "callee", "callees"),
    "BASE": FieldLook("▲", "base", "bases"),
    "DERIVED": FieldLook("▼", "subclass", "subclasses"),
    "IMPORTS": FieldLook("imports", "import", "imports"),
    "IMPORTED_BY": FieldLook("imported by", "importer", "importers"),
    "CHILDREN": FieldLook("contains", "member", "members"),
    "PARENT": FieldLook("in", "parent", "parents"),
    "TEST_REF": FieldLook("tested by", "test", "tests"),
    "REFERENCED_BY": FieldLook("used by", "reference", "references"),
}


def look(field: str) -> FieldLook:
    known = LOOKS.get(field)
    if known is not None:
        return known
    noun = field.lower().replace("_", " ")
    return FieldLook(f"{noun}:", noun, noun)


def related(graph: Graph, field: str, entity_id: str) -> list[str]:
    """Every id on the other end of a field, uncapped (sorted)."""
    spec = FIELD_SPECS.get(field)
    if spec is None:
        return []
    return graph.out(spec.kind, entity_id) if spec.forward else graph.into(spec.kind, entity_id)


def degree(graph: Graph, field: str, entity_id: str) -> int:
    spec = FIELD_SPECS.get(field)
    if spec is None:
        return 0
    if spec.forward:
        return graph.out_degree(spec.kind, entity_id)
    return graph.in_degree(spec.kind, entity_id)


def short_name(entry: str) -> str:
    """What a hint shows for an id: the qualified name, or the relpath of a module."""
    path, sep, qualname = entry.partition(":")
    return qualname if sep and qualname else path
