"""How the editor shows each tag field; what a field holds is the tag layer's business."""

from __future__ import annotations

from dataclasses import dataclass, replace

from anchor_ls.index import CALLS, Graph, Span
from anchor_ls.index.model import REFERENCES, path_of
from anchor_ls.index.testcode import is_test_path
from anchor_ls.tags.policy import (
    DENSE_FIELDS,
    FIELD_SPECS,
    TOPO_FIELDS,
    ResolvedPolicy,
    fields_for,
    is_external,
    other_side,
)

TOPO_SET = frozenset(TOPO_FIELDS)


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
    "OVERRIDES": FieldLook("overrides", "overridden definition", "overridden definitions"),
    "OVERRIDDEN_BY": FieldLook("overridden by", "override", "overrides"),
    "CALLS_EXTERNAL": FieldLook("→ lib", "library call", "library calls"),
    "IMPORTS": FieldLook("imports", "import", "imports"),
    "IMPORTED_BY": FieldLook("imported by", "importer", "importers"),
    "CHILDREN": FieldLook("contains", "member", "members"),
    "PARENT": FieldLook("in", "parent", "parents"),
    "TEST_REF": FieldLook("tested by", "test", "tests"),
    "REFERENCED_BY": FieldLook("used by", "reference", "references"),
    "CONFIG_USAGE": FieldLook("settings", "setting", "settings"),
    "ENV_VAR": FieldLook("env", "environment variable", "environment variables"),
    "CONST_REF": FieldLook("constants", "constant", "constants"),
    "IO_DEP": FieldLook("io", "I/O dependency", "I/O dependencies"),
}
# Inverse fields whose locations are where the other side makes the edge (its sites),
# by the edge kinds that may carry them; other fields locate the related definitions.
SITE_KINDS: dict[str, tuple[str, ...]] = {
    "CALLED_BY": (CALLS,),
    "TEST_REF": (CALLS, FIELD_SPECS["TEST_REF"].kind),
    "REFERENCED_BY": (REFERENCES,),
}


def across_tests(graph: Graph, field: str, entity_id: str) -> tuple[list[str], str]:
    """The related ids the field leaves across the test boundary, and what views call
    them (`7 callers · 33 tests`; in test code, `· 2 outside tests`)."""
    ids = other_side(graph, field, entity_id)
    if is_test_path(path_of(entity_id)):
        return ids, "outside tests"
    return ids, "test" if len(ids) == 1 else "tests"


def look(field: str) -> FieldLook:
    known = LOOKS.get(field)
    if known is not None:
        return known
    noun = field.lower().replace("_", " ")
    return FieldLook(f"{noun}:", noun, noun)


def related(graph: Graph, policy: ResolvedPolicy, field: str, entity_id: str) -> list[str]:
    """Every id in one field of an entity, uncapped, by the tag layer's rules.

    The tag layer decides what a field holds (test callers are TEST_REF, not CALLED_BY,
    an implied PARENT is left out...), so tooltips and lens counts ask it, with the cap off
    and only that field, and show what hints and materialized tags show.
    """
    if field not in FIELD_SPECS:
        return []
    found = fields_for(graph, entity_id, replace(policy, fields=(field,), max_items=0))
    return list(found[0].entries) if found else []


def shown_fields(policy: ResolvedPolicy, wanted: tuple[str, ...]) -> tuple[str, ...]:
    """The fields a view shows: those of `wanted` the policy has, and any dense field asked
    for by name (no policy but dense has them), in tag block order."""
    return tuple(
        f for f in DENSE_FIELDS if f in wanted and (f in policy.fields or f not in TOPO_SET)
    )


def sites(graph: Graph, kind: str, src: str, dst: str) -> list[Span]:
    """Where in src's file the edge is made (call sites, references, reads)."""
    return graph.sites(src, dst, kind)


def short_name(entry: str, graph: Graph | None = None) -> str:
    """What a hint or lens shows for an id: the qualified name, or the relpath of a module.
    A definition outside the repository (`ext:django.views.generic.base.View.dispatch`)
    shows as its class and name (`View.dispatch`), with the graph to tell a method."""
    path, sep, qualname = entry.partition(":")
    if not (sep and qualname):
        return path
    if not is_external(entry):
        return qualname
    target = graph.entity(entry) if graph is not None else None
    parts = qualname.split(".")
    keep = 2 if target is not None and target.kind == "method" else 1
    return ".".join(parts[-keep:])
