"""From a file's summary and the binder's conclusions to graph entities and edges."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import NamedTuple, Protocol

from anchor_ls.index.model import (
    CALLS,
    CONTAINS,
    IMPORTS,
    INHERITS,
    MAIN_BLOCK,
    MAIN_TARGET,
    REFERENCES,
    TEST_REF,
    Edge,
    Entity,
    Span,
)
from anchor_ls.index.state import (
    BoundMethod,
    Class,
    External,
    FileFacts,
    Function,
    Module,
    ScopeValue,
    Value,
    pack_sites,
)
from anchor_ls.index.testcode import is_test_name, is_test_path
from anchor_ls.index.via import CONSTRUCTOR
from anchor_ls.syntax.summary import Body, Expr, FileSummary

# (path, scope idx) -> what that scope calls, with the call spans: for tests through helpers
CallsOf = Callable[[str, int], Iterable[tuple[Value, list[Span]]]]


class Outside(Protocol):
    """What the names the binder leaves outside are in the environment
    (anchor_ls.index.externals.Externals)."""

    def installed(self, dotted: str) -> bool: ...

    def target(self, dotted: str) -> str | None: ...

    def call_target(self, dotted: str) -> str | None: ...

    def is_class(self, ident: str) -> bool: ...


def scope_ids(summary: FileSummary) -> list[str]:
    """The entity id of every scope; redefinitions of one name share an id."""
    path = summary.path
    return [f"{path}:{s.qualname}" if s.qualname else path for s in summary.scopes]


def entities(summary: FileSummary, ids: list[str]) -> list[Entity]:
    """One entity per distinct id (ids: scope_ids, shared with the edges), located at its
    last definition, with the lines of the others."""
    path = summary.path
    by_id: dict[str, Entity] = {}
    for scope, ident in zip(summary.scopes, ids, strict=True):
        before = by_id.get(ident)
        earlier = () if before is None else (*before.earlier, (before.start_line, before.end_line))
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
            earlier,
        )
    for name, line, end_line, span in summary.constants:
        ident = f"{path}:{name}"
        by_id[ident] = Entity(ident, "constant", path, name, line, end_line, line, span)
    return list(by_id.values())


# The values that stand for a definition of the repository itself (an entity).
_DEFINITIONS = (Function, Class, BoundMethod)


def value_id(value: Value, binder_scopes: dict[str, list[str]]) -> str | None:
    if isinstance(value, _DEFINITIONS):
        ids = binder_scopes.get(value.path)
        return ids[value.idx] if ids is not None else None
    if isinstance(value, Module) and not value.path.endswith("/"):
        return value.path
    return None


class FileEdges(NamedTuple):
    """What one file's facts give the graph."""

    edges: set[Edge]
    sites: dict[Edge, list[Span]]  # the spans that make each edge
    via: dict[Edge, int]  # call edge -> its strongest via code (anchor_ls.index.via)
    # unresolved sites as text: a line `>qualname` ('' for the module), then its sites
    # as state.pack_sites writes them, a line each
    missed: str


class Inside(NamedTuple):
    """A file's edges that need nothing from outside the repository (inside_edges), to
    be finished by edges()."""

    edges: set[Edge]
    sites: dict[Edge, list[Span]]
    via: dict[Edge, int]


def edges(
    summary: FileSummary,
    facts: FileFacts,
    ids_of: dict[str, list[str]],
    calls_of: CallsOf,
    bodies: Callable[[], Sequence[Body]],
    outside: Outside | None = None,
    inside: Inside | None = None,
) -> FileEdges:
    """The edges whose source is an entity of this file, with the spans that make them
    (bodies: the file's scope bodies, read only when it has unresolved sites); with an
    environment (outside), also those to the definitions outside that it calls and
    inherits from, and its calls of packages not installed are unresolved. inside: what
    inside_edges gave for the file already (taken over, not copied)."""
    path = summary.path
    ids = ids_of[path]
    out, sites, via = (
        inside if inside is not None else inside_edges(summary, facts, ids_of, calls_of)
    )

    add = partial(_add, out, sites)

    not_installed: dict[int, list[int]] = {}
    if outside is not None:
        for idx, noted in facts.outside_sites.items():
            for site in noted:
                for name in site.names:
                    dst = outside.call_target(name)
                    if dst is None:
                        continue
                    edge = Edge(CALLS, ids[idx], dst)
                    add(edge, (site.span,))
                    how = CONSTRUCTOR if outside.is_class(dst) else site.via
                    if how and (edge not in via or how < via[edge]):
                        via[edge] = how
        for idx, bases in facts.outside_bases.items():
            for base in bases:
                dst = outside.target(base.dotted) if isinstance(base, External) else None
                if dst is not None:
                    out.add(Edge(INHERITS, ids[idx], dst))
        not_installed = missing_packages(facts, outside)
    by_entity: dict[str, list] = {}
    read: Sequence[Body] | None = None
    for idx in sorted(facts.counts):
        at = facts.missed_at(idx)
        if idx in not_installed:
            at = sorted((*at, *not_installed[idx]))
        if not at:
            continue
        read = read or bodies()
        calls = read[idx][0]
        found = by_entity.setdefault(summary.scopes[idx].qualname, [])
        found += [(called_name(calls[n].func), calls[n].span) for n in at]
    missed = "\n".join(
        f">{qualname}\n{pack_sites(sorted(found, key=lambda m: m[1]))}"
        for qualname, found in by_entity.items()
        if found
    )
    return FileEdges(out, sites, via, missed)


def _add(out: set[Edge], sites: dict[Edge, list[Span]], edge: Edge, spans: Iterable[Span]) -> None:
    out.add(edge)
    sites.setdefault(edge, []).extend(spans)


def inside_edges(
    summary: FileSummary, facts: FileFacts, ids_of: dict[str, list[str]], calls_of: CallsOf
) -> Inside:
    """What edges() finds of a file without the environment: the build finds it while
    the library outlines are still being read (index/prefetch.py)."""
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
    sites: dict[Edge, list[Span]] = {}

    add = partial(_add, out, sites)

    via: dict[Edge, int] = {}
    for (idx, _kind), targets in facts.calls.items():
        for target in targets:
            dst = value_id(target, ids_of)
            if dst is not None:
                edge = Edge(CALLS, ids[idx], dst)
                add(edge, facts.call_spans((idx, target)))
                how = facts.call_via((idx, target))
                if how and (edge not in via or how < via[edge]):
                    via[edge] = how
    for (idx, target), spans in facts.refs.items():
        dst = value_id(target, ids_of)
        if dst is not None and dst != ids[idx]:
            add(Edge(REFERENCES, ids[idx], dst), spans)
    for (idx, kind, dst), spans in facts.dense.items():
        add(Edge(kind, ids[idx], dst), spans)
    if summary.main_blocks:
        add(Edge(MAIN_BLOCK, path, MAIN_TARGET), summary.main_blocks)
    if is_test_path(path):
        for idx, scope in enumerate(summary.scopes):
            if scope.kind == "function" and is_test_name(scope.name):
                for dst, spans in _exercised(path, idx, calls_of, ids_of):
                    add(Edge(TEST_REF, ids[idx], dst), spans)
    return Inside(out, sites, via)


def missing_packages(facts: FileFacts, outside: Outside) -> dict[int, list[int]]:
    """scope idx -> the places in its calls of the sites counted outside that call only
    packages the environment does not have: unresolved, not outside (a site resolved in
    the repository stays resolved)."""
    out: dict[int, list[int]] = {}
    for idx, noted in facts.outside_sites.items():
        for site in noted:
            if not site.resolved and not any(outside.installed(name) for name in site.names):
                out.setdefault(idx, []).append(site.at)
    return out


def base_order(
    summary: FileSummary,
    facts: FileFacts,
    ids_of: dict[str, list[str]],
    outside: Outside | None = None,
) -> dict[str, tuple[str, ...]]:
    """The targets of each class's inherits edges in the order its class statement lists
    them (the binder's `class_bases`; with an environment, those outside too), for the
    classes with two or more: C3 needs it and the edges are a set."""
    ids = ids_of[summary.path]
    listed: dict[str, list[str]] = {}
    for idx in sorted(facts.bases):
        cls = ids[idx]
        bases = listed.setdefault(cls, [])
        declared = facts.bases[idx]
        if outside is not None and idx in facts.outside_bases:
            declared = facts.outside_bases[idx]
        for base in declared:
            if isinstance(base, External):
                dst = outside.target(base.dotted) if outside is not None else None
            else:
                dst = value_id(base, ids_of)
            if dst is not None and dst != cls and dst not in bases:
                bases.append(dst)
    return {cls: tuple(bases) for cls, bases in listed.items() if len(bases) > 1}


def _exercised(
    path: str, idx: int, calls_of: CallsOf, ids_of: dict[str, list[str]]
) -> Iterable[tuple[str, list[Span]]]:
    """What a test calls outside test code, directly or through one helper of test code
    (a fixture factory, an assertion helper): spans are the test's own call sites."""
    for target, spans in calls_of(path, idx):
        if not isinstance(target, _DEFINITIONS):
            continue
        if not is_test_path(target.path):
            dst = value_id(target, ids_of)
            if dst is not None:
                yield dst, spans
            continue
        if isinstance(target, Class) or is_test_name(_name(ids_of, target)):
            continue
        for inner, _inner_spans in calls_of(target.path, target.idx):
            if isinstance(inner, _DEFINITIONS) and not is_test_path(inner.path):
                dst = value_id(inner, ids_of)
                if dst is not None:
                    yield dst, spans


def _name(ids_of: dict[str, list[str]], value: ScopeValue) -> str:
    ids = ids_of.get(value.path)
    return ids[value.idx].rpartition(".")[2].rpartition(":")[2] if ids else ""


def called_name(func: Expr) -> str:
    """The name a call site calls (`f()`, `obj.f()`: f), or '' for any other callee."""
    if func[0] == "n":
        return func[1]
    return func[2] if func[0] == "a" else ""
