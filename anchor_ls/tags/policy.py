"""Which tag fields an entity carries, under which policy, capped how (the CodeAnchor study's rule).

Every field is ranked (anchor_ls.tags.rank: production before demo and test code, then by
fan-in, then by id) before `cap` cuts it, so hints, lenses and blocks keep the same entries.

`fields_for` is what the editor's inlay hints and lenses show; `block_fields`, what a
materialized block writes, is the same minus forward links to hubs. Both cost O(degree)
per field.

Rules that keep tags about what a reader cannot already see:
- Containment the ids already say is left out: PARENT when it is the entity id's own
  prefix (`pkg/m.py:A` for `pkg/m.py:A.run`), CHILDREN whose id extends the entity's
  (the methods that follow a class; the header of each names its class).
- A constructor call is one fact: calling a class C is also an edge to the `__init__`
  C's MRO finds, so CALLS leaves out `C.__init__` when it lists `C`, and CALLED_BY of
  `C.__init__` leaves out the callers that call `C` (the class's block lists them);
  what remains there are explicit calls (`super().__init__`, subclasses without one).
- Calls between test code and the code under test are not CALLS/CALLED_BY but
  TEST_REF ("tests that exercise me", a dense field, as in the study), so a helper
  called from hundreds of tests does not list them in every policy. For the same
  reason the code under test leaves test code out of IMPORTED_BY and DERIVED (test
  code still lists what it imports and derives from).
  Test code: files under a test/tests/testing folder, test_*.py, *_test.py,
  tests.py and conftest.py.
- Definitions outside the repository (`ext:` ids: installed packages, the standard
  library) are the first step out, never a block of their own. BASE and OVERRIDES list
  them in every policy (inv keeps those two fields for them alone: nothing else can
  show that link; inv has no OVERRIDDEN_BY, see INV_FIELDS); calls into them are not
  CALLS but the dense CALLS_EXTERNAL.

And two that keep materialized text small, where the study measured its cost (input
tokens) and the hub problem (a hub's name repeated in many blocks eclipses the rest in
keyword search):
- `block_fields`: CALLS leaves out hubs, callees with more than `hub_callers` callers.
- `tags_file`: test code carries no blocks unless the policy asks for them (`tests`);
  the code under test still lists its tests under TEST_REF (dense).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, replace

from anchor_ls.index.model import (
    CALLS,
    CONTAINS,
    EXTERNAL_PREFIX,
    IMPORTS,
    INHERITS,
    OVERRIDES,
    Graph,
    path_of,
)
from anchor_ls.index.testcode import is_test_path
from anchor_ls.tags.rank import ranked

DEFAULT_MAX_ITEMS = 8
# A callee with more callers than this is a hub: left out of materialized CALLS. The
# study counts a node with degree over 10 as a hub (anchor_ls.index.stats.HUB_DEGREE).
HUB_CALLERS = 10
POLICIES = ("auto", "topo", "inv", "dense")

# The study's thresholds on mean call out-degree (section 6: a simple two-stage policy).
AUTO_TOPO_BELOW = 5.0
AUTO_INV_ABOVE = 8.0


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """A tag field: the edges of `kind`, read forward (out of the entity) or inverse."""

    name: str
    kind: str
    forward: bool


# Field order inside a block: calls, inheritance, imports, containment, then the dense fields.
FIELD_SPECS: dict[str, FieldSpec] = {
    spec.name: spec
    for spec in (
        FieldSpec("CALLS", CALLS, True),
        FieldSpec("CALLED_BY", CALLS, False),
        # definitions whose unresolved call sites call this one's name (index: maybe_callers)
        FieldSpec("MAYBE_CALLED_BY", CALLS, False),
        FieldSpec("BASE", INHERITS, True),
        FieldSpec("DERIVED", INHERITS, False),
        # a method -> the definition it overrides (the nearest in the MRO, in the repository
        # or outside it), and back
        FieldSpec("OVERRIDES", OVERRIDES, True),
        FieldSpec("OVERRIDDEN_BY", OVERRIDES, False),
        FieldSpec("IMPORTS", IMPORTS, True),
        FieldSpec("IMPORTED_BY", IMPORTS, False),
        FieldSpec("PARENT", CONTAINS, False),
        FieldSpec("CHILDREN", CONTAINS, True),
        # calls that leave the repository (`ext:` targets): dense only, CALLS keeps the rest
        FieldSpec("CALLS_EXTERNAL", CALLS, True),
        FieldSpec("CONFIG_USAGE", "config_usage", True),
        FieldSpec("ENV_VAR", "env_var", True),
        FieldSpec("CONST_REF", "const_ref", True),
        FieldSpec("IO_DEP", "io_dep", True),
        FieldSpec("TEST_REF", "test_ref", False),
        FieldSpec("REFERENCED_BY", "references", False),
    )
}

TOPO_FIELDS = (
    "CALLS",
    "CALLED_BY",
    "BASE",
    "DERIVED",
    "OVERRIDES",
    "OVERRIDDEN_BY",
    "IMPORTS",
    "IMPORTED_BY",
    "PARENT",
    "CHILDREN",
)
# inv keeps BASE and OVERRIDES for their targets outside the repository alone: a library's
# class carries no block, so no DERIVED or OVERRIDDEN_BY can show the link from its side.
# OVERRIDDEN_BY is left out: a base method's overrides are in its class's subclasses
# (DERIVED), and listing them took Django's inv tags from 7.3 % to 8.2 % of the source.
INV_FIELDS = ("CALLED_BY", "BASE", "DERIVED", "OVERRIDES", "IMPORTED_BY", "PARENT")
EXTERNAL_ONLY: dict[str, frozenset[str]] = {"inv": frozenset({"BASE", "OVERRIDES"})}
DENSE_ONLY_FIELDS = (
    "CALLS_EXTERNAL",
    "CONFIG_USAGE",
    "ENV_VAR",
    "CONST_REF",
    "IO_DEP",
    "TEST_REF",
    "REFERENCED_BY",
)
DENSE_FIELDS = TOPO_FIELDS + DENSE_ONLY_FIELDS
DENSE_EDGE_KINDS = tuple(FIELD_SPECS[name].kind for name in DENSE_ONLY_FIELDS)

_FIELDS_OF = {"topo": TOPO_FIELDS, "inv": INV_FIELDS, "dense": DENSE_FIELDS}


@dataclass(frozen=True, slots=True)
class ResolvedPolicy:
    """A concrete policy: `name` is topo, inv or dense (auto is resolved away).

    `max_items` caps every field (0: no cap); `reason` says why, for the CLI and logs.
    `cross_file`: list only entities of other files (what reading this file cannot show);
    a definition whose relations all stay in its file then carries no block.
    `tests`: materialize blocks in test code too. `hub_callers`: materialized CALLS
    leave out callees with more callers than this (0: keep them). `maybe`: the fields
    include MAYBE_CALLED_BY (after CALLED_BY, or in its place under a policy without it).
    """

    name: str
    fields: tuple[str, ...]
    max_items: int
    reason: str
    cross_file: bool = False
    tests: bool = False
    hub_callers: int = HUB_CALLERS
    maybe: bool = False


@dataclass(frozen=True, slots=True)
class TagField:
    """One rendered field: the first `entries` (ranked ids) and how many more were cut."""

    name: str
    entries: tuple[str, ...]
    more: int


class PolicyError(ValueError):
    """An unknown policy name or a negative cap."""


def resolve_policy(
    name: str,
    mean_out_degree: float,
    max_items: int,
    *,
    cross_file: bool = False,
    tests: bool = False,
    maybe: bool = False,
) -> ResolvedPolicy:
    """Turn a requested policy (auto included) into the fields and cap to use.

    auto follows the study: mean call out-degree under 5 gives topo, over 8 gives inv
    (hub-heavy repositories), in between topo with a tighter cap (half, at least 3).
    maybe adds MAYBE_CALLED_BY right after CALLED_BY.
    """
    policy = _resolve(name, mean_out_degree, max_items)
    if maybe:
        fields = list(policy.fields)
        at = fields.index("CALLED_BY") + 1 if "CALLED_BY" in fields else len(fields)
        fields.insert(at, "MAYBE_CALLED_BY")
        reason = policy.reason + "; possible callers too"
        policy = replace(policy, fields=tuple(fields), maybe=True, reason=reason)
    if cross_file:
        policy = replace(policy, cross_file=True, reason=policy.reason + "; cross-file links only")
    if tests:
        policy = replace(policy, tests=True, reason=policy.reason + "; test code tagged too")
    return policy


def _resolve(name: str, mean_out_degree: float, max_items: int) -> ResolvedPolicy:
    if max_items < 0:
        raise PolicyError(f"max items must be 0 (no cap) or more, not {max_items}")
    name = name.strip().lower()
    if name in _FIELDS_OF:
        cap = f"at most {max_items} per field" if max_items else "no cap"
        return ResolvedPolicy(name, _FIELDS_OF[name], max_items, f"{name} requested, {cap}")
    if name != "auto":
        raise PolicyError(f"unknown tag policy {name!r}; choose one of {', '.join(POLICIES)}")
    degree = f"mean call out-degree {mean_out_degree:.2f}"
    if mean_out_degree < AUTO_TOPO_BELOW:
        return ResolvedPolicy(
            "topo", TOPO_FIELDS, max_items, f"auto: {degree} < {AUTO_TOPO_BELOW:g}: topo"
        )
    if mean_out_degree > AUTO_INV_ABOVE:
        return ResolvedPolicy(
            "inv", INV_FIELDS, max_items, f"auto: {degree} > {AUTO_INV_ABOVE:g}: inv"
        )
    tighter = max(3, max_items // 2) if max_items else DEFAULT_MAX_ITEMS // 2
    if max_items:
        tighter = min(tighter, max_items)
    return ResolvedPolicy(
        "topo",
        TOPO_FIELDS,
        tighter,
        f"auto: {degree} between {AUTO_TOPO_BELOW:g} and {AUTO_INV_ABOVE:g}: "
        f"topo capped at {tighter}",
    )


def cap(ids: list[str], max_items: int) -> tuple[tuple[str, ...], int]:
    """The first max_items of ranked ids, and the count cut off (0: keep all)."""
    if max_items and len(ids) > max_items:
        return tuple(ids[:max_items]), len(ids) - max_items
    return tuple(ids), 0


def implied_parent(entity_id: str) -> str | None:
    """The parent an id names by itself: `pkg/m.py:A` for `pkg/m.py:A.run`, `pkg/m.py` for f."""
    path, sep, qualname = entity_id.partition(":")
    if not sep:
        return None
    head, dot, _ = qualname.rpartition(".")
    return f"{path}:{head}" if dot else path


_INIT = ".__init__"


def is_external(entity_id: str) -> bool:
    """Defined outside the repository: an installed package or the standard library."""
    return entity_id.startswith(EXTERNAL_PREFIX)


def _on_side(ids: list[str], in_tests: bool) -> list[str]:
    """The sorted ids defined in test code (in_tests) or outside it.

    Ids sort by their file, so one file's ids are a run: the test check is made once per
    run (a helper of the test base classes has thousands of callers in a few hundred files).
    """
    kept: list[str] = []
    at, end = 0, len(ids)
    while at < end:
        path, sep, _ = ids[at].partition(":")
        # every id from "path:" up to "path;" (the next character) starts with "path:"
        upto = bisect_left(ids, path + ";", at) if sep else at + 1
        if is_test_path(path) == in_tests:
            kept.extend(ids[at:upto])
        at = upto
    return kept


def _maybe_callers(graph: Graph, entity_id: str, in_tests: bool) -> list[str]:
    """The definitions (on the entity's side of the test boundary) with an unresolved call
    site calling its name, other than itself and its callers."""
    entity = graph.entity(entity_id)
    if entity is None or entity.kind not in ("function", "method", "class"):
        return []
    sites = graph.maybe_callers(entity.name)
    if not sites:
        return []
    known = {entity_id, *graph.into(CALLS, entity_id)}
    return _on_side(sorted({src for src, _span in sites} - known), in_tests)


# Inverse fields of the code under test that leave test code out, as CALLED_BY does.
_TEST_SIDE = ("IMPORTED_BY", "DERIVED", "OVERRIDDEN_BY")


def _related(graph: Graph, name: str, entity_id: str, in_tests: bool) -> list[str]:
    if name == "MAYBE_CALLED_BY":
        return _maybe_callers(graph, entity_id, in_tests)
    spec = FIELD_SPECS[name]
    degree = graph.out_degree if spec.forward else graph.in_degree
    if not degree(spec.kind, entity_id) and (name != "TEST_REF" or in_tests):
        return []  # most definitions have nothing in most fields: the hot path of hints
    if name == "TEST_REF":
        ids = set(graph.into(spec.kind, entity_id))
        if not in_tests:
            ids.update(_on_side(graph.into(CALLS, entity_id), True))
        return sorted(ids)
    ids = graph.out(spec.kind, entity_id) if spec.forward else graph.into(spec.kind, entity_id)
    if name == "CALLS_EXTERNAL":
        return [i for i in ids if is_external(i)]
    if spec.kind == CALLS:
        if spec.forward:
            ids = [i for i in ids if not is_external(i)]
        ids = _on_side(ids, in_tests)
        if spec.forward:
            listed = set(ids)
            ids = [i for i in ids if not (i.endswith(_INIT) and i[: -len(_INIT)] in listed)]
        elif entity_id.endswith(_INIT):
            builders = set(graph.into(CALLS, entity_id[: -len(_INIT)]))
            ids = [i for i in ids if i not in builders]
    elif name in _TEST_SIDE and not in_tests:
        ids = _on_side(ids, False)
    elif name == "PARENT":
        implied = implied_parent(entity_id)
        ids = [i for i in ids if i != implied]
    elif name == "CHILDREN":
        ids = [i for i in ids if implied_parent(i) != entity_id]
    return ids


_HUB_FIELDS = ("CALLS", "CALLS_EXTERNAL")  # materialized blocks leave their hubs out


def _is_hub(graph: Graph, callee: str, in_tests: bool, limit: int) -> bool:
    """More than `limit` callers on the caller's side of the test boundary (what it would list)."""
    if graph.in_degree(CALLS, callee) <= limit:
        return False
    same_side = 0
    for caller in graph.into(CALLS, callee):
        if is_test_path(path_of(caller)) == in_tests:
            same_side += 1
            if same_side > limit:
                return True
    return False


def _fields(
    graph: Graph, entity_id: str, policy: ResolvedPolicy, without_hubs: bool
) -> list[TagField]:
    path = path_of(entity_id)
    in_tests = is_test_path(path)
    found: list[TagField] = []
    external_only = EXTERNAL_ONLY.get(policy.name, frozenset())
    for name in policy.fields:
        ids = _related(graph, name, entity_id, in_tests)
        if name in external_only:
            ids = [i for i in ids if is_external(i)]
        if policy.cross_file:
            ids = [i for i in ids if path_of(i) != path]
        if without_hubs and name in _HUB_FIELDS and policy.hub_callers:
            ids = [i for i in ids if not _is_hub(graph, i, in_tests, policy.hub_callers)]
        if not ids:
            continue
        spec = FIELD_SPECS[name]
        entries, more = cap(
            ranked(graph, ids, spec.kind, entity_id, not spec.forward), policy.max_items
        )
        found.append(TagField(name, entries, more))
    return found


def fields_for(graph: Graph, entity_id: str, policy: ResolvedPolicy) -> list[TagField]:
    """The non-empty fields of one entity, in the policy's order, entries ranked and capped.

    What the editor shows. Callers pass a snapshot's graph (frozen: a consistent view).
    """
    return _fields(graph, entity_id, policy, without_hubs=False)


def block_fields(graph: Graph, entity_id: str, policy: ResolvedPolicy) -> list[TagField]:
    """The fields a materialized block writes: fields_for without forward links to hubs."""
    return _fields(graph, entity_id, policy, without_hubs=True)


def tags_file(relpath: str, policy: ResolvedPolicy) -> bool:
    """Whether materialized tags go into this file: test code only when the policy asks."""
    return policy.tests or not is_test_path(relpath)


def other_side(graph: Graph, name: str, entity_id: str) -> list[str]:
    """The related ids a field leaves out because they are across the test boundary (test
    callers of production code are its TEST_REF, not its CALLED_BY): what a view counts
    next to the field's own, so that the two add up to every caller."""
    spec = FIELD_SPECS.get(name)
    if spec is None:
        return []
    in_tests = is_test_path(path_of(entity_id))
    if name == "CALLS_EXTERNAL" or (
        spec.kind != CALLS and not (name in _TEST_SIDE and not in_tests)
    ):
        return []
    ids = graph.out(spec.kind, entity_id) if spec.forward else graph.into(spec.kind, entity_id)
    if spec.forward:
        ids = [i for i in ids if not is_external(i)]
    return _on_side(ids, not in_tests)
