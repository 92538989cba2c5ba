"""The repository graph: entities and typed edges, queried by every layer above.

The index changes its own graph (an edit changes only its file's part of it) and
publishes frozen copies of it for readers (`Index.snapshot()`): a copy shares every
file's part with the graph it was taken from, and the index copies a part before it
changes it, so a reader never waits for a change nor sees half of one.
"""

from __future__ import annotations

import zlib
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from anchor_ls.index.state import unpack_site
from anchor_ls.index.via import VIA_KINDS, via_name

# Relation kinds, in the order the graph JSON lists them.
CALLS = "calls"
INHERITS = "inherits"
IMPORTS = "imports"
CONTAINS = "contains"
STRUCTURAL_KINDS = (CALLS, INHERITS, IMPORTS, CONTAINS)
# A method -> the definition it overrides: the next one of its name in its class's MRO,
# in the repository or outside it.
OVERRIDES = "overrides"
# The dense tier and references (values, not calls), with DESIGN.md's targets.
REFERENCES = "references"  # function/module -> a function or class it uses as a value
ENV_VAR = "env_var"  # -> env:NAME
IO_DEP = "io_dep"  # -> io:file|network|db|subprocess
CONST_REF = "const_ref"  # -> another module's constant
CONFIG_USAGE = "config_usage"  # -> the setting's constant, else setting:NAME
TEST_REF = "test_ref"  # a test -> what it exercises, directly or through one helper
DENSE_KINDS = (CONFIG_USAGE, ENV_VAR, CONST_REF, IO_DEP, TEST_REF, REFERENCES)
# A module -> MAIN_TARGET, its sites the module's `if __name__ == "__main__":` blocks: the
# demo or script code that capped lists rank last (anchor_ls.tags.rank). Kept with the
# edges, so that a warm start and an edit carry it, but not listed by Graph.edges().
MAIN_BLOCK = "main_block"
MAIN_TARGET = "main:__main__"

ENTITY_KINDS = ("module", "class", "function", "method", "constant")
# Definitions outside the repository (installed packages, the standard library) that its
# code reaches: `ext:<defining module>.<qualified name>`, their path absolute. They are
# kept in the graph part of this prefix, as targets only (no edge starts at one).
EXTERNAL = "ext"
EXTERNAL_PREFIX = f"{EXTERNAL}:"

# A source span: 0-based (start_line, start_byte_col, end_line, end_byte_col),
# columns in UTF-8 bytes of the line, as tree-sitter reports them.
Span = tuple[int, int, int, int]


@dataclass(frozen=True, slots=True)
class Entity:
    """A module, class, function, method or module constant.

    `line`/`end_line` are 1-based and inclusive (the graph JSON's fields).
    `start_line` is the first decorator line (== line when undecorated): a tag
    block goes above it. `name_span` locates the defined name (0-based).
    `earlier` holds the (start_line, end_line) of the other definitions of a name
    defined more than once (both branches of an `if`, `@overload` stubs): the entity
    is located at its last one, and asking at any of them finds it.
    """

    id: str
    kind: str
    path: str
    name: str
    line: int
    end_line: int
    start_line: int
    name_span: Span
    earlier: tuple[tuple[int, int], ...] = ()

    @property
    def qualname(self) -> str:
        """The part of the id after `relpath:` ('' for a module)."""
        return self.id.partition(":")[2]

    @property
    def external(self) -> bool:
        """Defined outside the repository (an `ext:` id; path is absolute)."""
        return self.id.startswith(EXTERNAL_PREFIX)


class Edge(NamedTuple):
    """A typed edge; a named tuple: hashing and sorting at C speed (a warm start makes
    hundreds of thousands)."""

    kind: str
    src: str
    dst: str


def module_id(relpath: str) -> str:
    return relpath


def path_of(entity_id: str) -> str:
    """The relpath of the file that defines `entity_id`."""
    return entity_id.partition(":")[0]


class _Part:
    """What the graph holds of one file: its entities, the adjacency of the ids it
    defines (out of its sources, into its targets), where its edges are made, and the
    edges its source gives. Targets that are no definition (`env:HOME`) have a part of
    their prefix (`env`) holding only edges into them."""

    __slots__ = (
        "bases",
        "edges",
        "entities",
        "inn",
        "missed",
        "missed_names",
        "out",
        "sites",
        "via",
    )

    def __init__(self) -> None:
        self.entities: dict[str, Entity] = {}
        # kind -> src -> its targets, and kind -> dst -> its sources: sorted tuples (a set
        # costs four times the memory, 40 MB on Django, and every query sorted it).
        self.out: dict[str, dict[str, tuple[str, ...]]] = {}
        self.inn: dict[str, dict[str, tuple[str, ...]]] = {}
        # edge (its src of this file) -> where in this file it is made (call sites,
        # references, reads).
        self.sites: dict[Edge, Sequence[Span] | Span] = {}  # see _spans
        # the edges whose facts come from this file's source
        self.edges: tuple[Edge, ...] = ()
        # class id -> its inherits targets in the order its class statement lists them (C3
        # reads that order), for the classes of this file with two or more.
        self.bases: dict[str, tuple[str, ...]] = {}
        # a via code (anchor_ls.index.via) per edge of `edges`, in its order (0 for edges
        # that are not calls; empty when none is): one byte an edge
        self.via: bytes = b""
        # the unresolved call sites of this file's code as text (facts.FileEdges), deflated:
        # read only for the questions about them, a third of the memory
        self.missed: bytes = b""
        # the names those sites call, once asked (an edit asks which files call a name it
        # defines: a file's sites are read once, not at every edit)
        self.missed_names: frozenset[str] | None = None

    def copy(self) -> _Part:
        new = _Part()
        new.entities = dict(self.entities)
        new.out = {kind: dict(table) for kind, table in self.out.items()}
        new.inn = {kind: dict(table) for kind, table in self.inn.items()}
        new.sites = dict(self.sites)
        new.edges = self.edges
        new.bases = self.bases
        new.via = self.via
        new.missed = self.missed
        new.missed_names = self.missed_names
        return new


class _Entities(Mapping[str, Entity]):
    """Every entity of a graph by id, read from the parts of their files."""

    __slots__ = ("_parts",)

    def __init__(self, parts: dict[str, _Part]) -> None:
        self._parts = parts

    def get(self, key: str, default: Entity | None = None) -> Entity | None:  # type: ignore[override]
        part = self._parts.get(key.partition(":")[0])
        found = part.entities.get(key) if part is not None else None
        return default if found is None else found

    def __getitem__(self, key: str) -> Entity:
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def __iter__(self) -> Iterator[str]:
        for part in list(self._parts.values()):
            yield from part.entities

    def __len__(self) -> int:
        return sum(len(part.entities) for part in self._parts.values())

    def values(self) -> Iterator[Entity]:  # type: ignore[override]
        for part in list(self._parts.values()):
            yield from part.entities.values()

    def items(self) -> Iterator[tuple[str, Entity]]:  # type: ignore[override]
        for part in list(self._parts.values()):
            yield from part.entities.items()


class FrozenGraphError(RuntimeError):
    """A published graph was asked to change: readers share it."""


class Graph:
    """Entities by id plus forward and inverse adjacency per relation kind, in one part
    per file; `frozen()` is a copy that shares them."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._parts: dict[str, _Part] = {}
        # the parts this graph may change in place (None: frozen, it changes nothing);
        # every other part is shared with a frozen copy and copied before a change
        self._owned: set[str] | None = set()
        self.entities: Mapping[str, Entity] = _Entities(self._parts)
        # name -> the files with unresolved sites calling it (_names_missed), built when
        # first asked; a change of this graph drops it
        self._missed_index: dict[str, tuple[str, ...]] | None = None

    def frozen(self) -> Graph:
        """A copy that never changes, for readers; the cost of a dict per graph, not of
        the graph (later changes of this one copy the part of a file they change first)."""
        if self._owned is None:
            return self
        copy = Graph(self.root)
        copy._parts.update(self._parts)
        copy._owned = None
        self._owned = set()
        return copy

    @property
    def is_frozen(self) -> bool:
        return self._owned is None

    @property
    def changed(self) -> bool:
        """Whether this graph changed since its last frozen() copy."""
        return bool(self._owned)

    def _part(self, relpath: str) -> _Part:
        """relpath's part, to change: this graph's own."""
        owned = self._owned
        if owned is None:
            raise FrozenGraphError("a published graph never changes")
        if relpath in owned:
            return self._parts[relpath]
        old = self._parts.get(relpath)
        part = old.copy() if old is not None else _Part()
        self._parts[relpath] = part
        owned.add(relpath)
        return part

    # ----- queries -------------------------------------------------------
    def entity(self, entity_id: str) -> Entity | None:
        part = self._parts.get(entity_id.partition(":")[0])
        return part.entities.get(entity_id) if part is not None else None

    def _adjacent(self, forward: bool, kind: str, key: str) -> tuple[str, ...]:
        part = self._parts.get(key.partition(":")[0])
        if part is None:
            return ()
        table = (part.out if forward else part.inn).get(kind)
        return table.get(key, ()) if table is not None else ()

    def out(self, kind: str, src: str) -> list[str]:
        """Targets of `kind` edges from `src`, sorted."""
        return list(self._adjacent(True, kind, src))

    def into(self, kind: str, dst: str) -> list[str]:
        """Sources of `kind` edges into `dst`, sorted."""
        return list(self._adjacent(False, kind, dst))

    def out_degree(self, kind: str, src: str) -> int:
        return len(self._adjacent(True, kind, src))

    def in_degree(self, kind: str, dst: str) -> int:
        return len(self._adjacent(False, kind, dst))

    def bases(self, cls: str) -> list[str]:
        """Targets of inherits edges from `cls`, in the order its class statement lists them."""
        part = self._parts.get(path_of(cls))
        found = part.bases.get(cls) if part is not None else None
        return list(found) if found is not None else self.out(INHERITS, cls)

    def sites(self, src: str, dst: str, kind: str = CALLS) -> list[Span]:
        """Where in src's file the edge is made: its call sites, references or reads."""
        part = self._parts.get(path_of(src))
        return list(_spans(part.sites.get(Edge(kind, src, dst), ()))) if part is not None else []

    def via(self, src: str, dst: str) -> str | None:
        """How the binder found the call edge src -> dst (anchor_ls.index.via), or None."""
        part = self._parts.get(path_of(src))
        if part is None or not part.via:
            return None
        try:
            at = part.edges.index(Edge(CALLS, src, dst))
        except ValueError:
            return None
        return via_name(part.via[at])

    def file_via_map(self, relpath: str) -> dict[Edge, int]:
        """The via code of each call edge from relpath's file."""
        part = self._parts.get(relpath)
        if part is None or not part.via:
            return {}
        return {e: c for e, c in zip(part.edges, part.via, strict=True) if c}

    def _names_missed(self) -> dict[str, tuple[str, ...]]:
        """name -> the files with unresolved sites calling it; built when first asked,
        dropped by any change (the sites themselves stay deflated: Django's as tuples
        would hold 12 MB)."""
        if self._missed_index is None:
            files: dict[str, list[str]] = defaultdict(list)
            for rel in sorted(r for r, part in self._parts.items() if part.missed):
                for name in self._missed_names(rel):
                    files[name].append(rel)
            self._missed_index = {name: tuple(found) for name, found in files.items()}
        return self._missed_index

    def read_missed_names(self) -> None:
        """Read every file's called names now (files_missing wants them at the first edit
        that defines a name: Django's take 0.1 s, better spent when a file is opened)."""
        for rel in [r for r, part in self._parts.items() if part.missed]:
            self._missed_names(rel)

    def _missed_names(self, relpath: str) -> frozenset[str]:
        part = self._parts[relpath]
        if part.missed_names is None:
            found = (name for _src, name, _span in self.file_missed(relpath) if name)
            part.missed_names = frozenset(found)
        return part.missed_names

    def _unresolved_by_entity(self, relpath: str) -> dict[str, int]:
        counts: dict[str, int] = {}
        for src, _name, _span in self.file_missed(relpath):
            counts[src] = counts.get(src, 0) + 1
        return counts

    def unresolved(self, entity_id: str) -> int:
        """How many call sites of entity_id's own code the binder could resolve neither to
        the repository nor to anything known outside it."""
        return self._unresolved_by_entity(path_of(entity_id)).get(entity_id, 0)

    def unresolved_total(self) -> int:
        return sum(len(self.file_missed(rel)) for rel, part in self._parts.items() if part.missed)

    def has_maybe_callers(self, name: str) -> bool:
        """Whether an unresolved site calls an attribute or a name `name` (cheap)."""
        return name in self._names_missed()

    def files_missing(self, name: str) -> list[str]:
        """The files with unresolved sites that call an attribute or a name `name` (each
        file's names kept with its part: the index of every name is made again after each
        change, this is not)."""
        parts = self._parts
        return sorted(r for r in parts if parts[r].missed and name in self._missed_names(r))

    def maybe_callers(self, name: str) -> list[tuple[str, Span]]:
        """Unresolved sites that call an attribute or a name `name`: (caller id, span),
        by file and position."""
        return [
            (src, span)
            for rel in self._names_missed().get(name, ())
            for src, called, span in self.file_missed(rel)
            if called == name
        ]

    def file_missed(self, relpath: str) -> list[tuple[str, str, Span]]:
        """The unresolved call sites of relpath's code: (entity id, name called or '',
        span), by entity and position."""
        part = self._parts.get(relpath)
        packed = part.missed if part is not None else b""
        text = zlib.decompress(packed).decode() if packed else ""
        out: list[tuple[str, str, Span]] = []
        src = relpath
        for line in text.split("\n") if text else ():
            if line[:1] == ">":
                src = f"{relpath}:{line[1:]}" if len(line) > 1 else relpath
                continue
            out.append((src, *unpack_site(line)))
        return out

    def file_missed_packed(self, relpath: str) -> bytes:
        """file_missed as stored (deflated text), for a snapshot."""
        part = self._parts.get(relpath)
        return part.missed if part is not None else b""

    def files(self) -> list[str]:
        """The repository's files with entities (the part of external entities is none)."""
        return sorted(p for p, part in self._parts.items() if part.entities and p != EXTERNAL)

    def external_targets(self) -> set[str]:
        """The ext ids some edge of the repository leads to."""
        part = self._parts.get(EXTERNAL)
        return {dst for table in part.inn.values() for dst in table} if part is not None else set()

    def file_entities(self, relpath: str) -> list[Entity]:
        """Entities defined in one file, in source order (module first)."""
        part = self._parts.get(relpath)
        ents = part.entities if part is not None else {}
        return sorted(ents.values(), key=lambda e: (e.line, e.kind != "module", e.id))

    def entity_at(self, relpath: str, line: int) -> Entity | None:
        """The innermost entity one of whose definitions (decorators included) holds
        0-based `line`.

        A definition as long as its file is inside the module, not the other way round.
        """
        best: Entity | None = None
        best_key = (0, False)
        part = self._parts.get(relpath)
        for ent in part.entities.values() if part is not None else ():
            for start, end in ((ent.start_line, ent.end_line), *ent.earlier):
                if start - 1 <= line <= end - 1:
                    key = (end - start, ent.kind == "module")
                    if best is None or key < best_key:
                        best, best_key = ent, key
        return best

    def edges(self, kind: str | None = None) -> Iterator[Edge]:
        """All edges (of one kind), sorted by (kind, src, dst). main_block edges only when
        asked for by kind: they mark where a module's demo code is, they join no two
        definitions (and the graph export leaves them out)."""
        parts = list(self._parts.values())
        kinds = [kind] if kind else sorted({k for part in parts for k in part.out} - {MAIN_BLOCK})
        for k in kinds:
            table: dict[str, tuple[str, ...]] = {}
            for part in parts:
                table.update(part.out.get(k, {}))
            for src in sorted(table):
                for dst in table[src]:
                    yield Edge(k, src, dst)

    def edge_count(self, kind: str) -> int:
        return sum(
            len(ends) for part in self._parts.values() for ends in part.out.get(kind, {}).values()
        )

    def to_json(self) -> dict:
        """The stable graph export of DESIGN.md, sorted for byte-identical output."""
        via: dict[Edge, int] = {}
        missed: dict[str, int] = {}
        for rel, part in self._parts.items():
            if part.via:
                via.update(self.file_via_map(rel))
            if part.missed:
                missed.update(self._unresolved_by_entity(rel))

        def entity(e: Entity) -> dict:
            out = {"id": e.id, "kind": e.kind, "path": e.path, "line": e.line}
            out["end_line"] = e.end_line
            if e.external:
                out["external"] = True
            if e.id in missed:
                out["unresolved"] = missed[e.id]
            return out

        def edge(e: Edge) -> dict:
            out = {"kind": e.kind, "src": e.src, "dst": e.dst}
            if e in via:
                out["via"] = VIA_KINDS[via[e] - 1]
            return out

        return {
            "root": self.root,
            "entities": [entity(e) for e in sorted(self.entities.values(), key=lambda e: e.id)],
            "edges": [edge(e) for e in sorted(self.edges())],
        }

    # ----- mutation (used by anchor_ls.index only) -----------------------
    def replace_file_entities(self, relpath: str, entities: Iterable[Entity]) -> None:
        table = self._part(relpath).entities
        table.clear()
        for ent in entities:
            table[ent.id] = ent

    def replace_file_edges(
        self,
        relpath: str,
        edges: Iterable[Edge],
        sites: dict[Edge, list[Span]],
        *,
        ordered: bool = False,
        via: dict[Edge, int] | None = None,
        missed: str = "",
    ) -> None:
        """Swap the edges derived from one file's source for a new set (ordered: each
        list of spans is already sorted and without repeats, as a snapshot stores them),
        with how each call edge was found and the file's unresolved call sites."""
        part = self._part(relpath)
        old = frozenset(part.edges)
        new = frozenset(edges)
        part.edges = tuple(new)
        part.via = b""
        if new:
            self._put_via(part, part.edges, via)
        self._put_missed(part, missed)
        gone = old - new
        self._relink(gone, new - old)
        for edge in gone:
            if edge not in sites:
                self._part(path_of(edge.src)).sites.pop(edge, None)
        self._put_sites(sites, ordered)

    @staticmethod
    def _put_via(
        part: _Part, stored: tuple[Edge, ...], via: dict[Edge, int] | bytes | None
    ) -> None:
        if isinstance(via, bytes):  # a snapshot's, in the order of its edges
            codes = via
        else:
            codes = bytes(via.get(e, 0) for e in stored) if via else b""
        part.via = codes if any(codes) else b""

    def _put_missed(self, part: _Part, missed: str | bytes) -> None:
        """missed: as FileEdges has it, or as file_missed_packed gave it."""
        self._missed_index = None
        part.missed_names = None
        if missed:
            part.missed = missed if isinstance(missed, bytes) else zlib.compress(missed.encode())
        else:
            part.missed = b""

    def _put_sites(self, sites: dict[Edge, Sequence[Span]], ordered: bool) -> None:
        for key, spans in sites.items():
            held = spans if ordered else tuple(sorted(set(spans)))
            self._part(path_of(key[1])).sites[key] = held[0] if len(held) == 1 else held

    def load_edges(
        self,
        by_file: Iterable[tuple],
        *,
        ordered: bool = False,
    ) -> None:
        """The edges of many files into a graph that has none yet (a build, a warm start):
        each adjacency list is sorted once, not rebuilt once per file that adds to it.
        Each file: (relpath, edges, sites[, via, missed]) as replace_file_edges takes them.
        ordered: as a snapshot stores them, each file's edges without repeats and its
        spans sorted (and via a byte per edge in their order)."""
        # key -> its one end, or a list of them: most keys have one (a list each, all held
        # until every tuple was made, was 2.4 MB of Django's cold peak)
        out: dict[str, dict[str, str | list[str]]] = defaultdict(dict)
        inn: dict[str, dict[str, str | list[str]]] = defaultdict(dict)
        for relpath, edges, sites, *more in by_file:
            new = tuple(edges) if ordered else tuple(frozenset(edges))
            if new:
                part = self._part(relpath)
                part.edges = new
                self._put_via(part, new, more[0] if more else None)
            if more and more[1]:
                self._put_missed(self._part(relpath), more[1])
            for kind, src, dst in new:
                _add_end(out[kind], src, dst)
                _add_end(inn[kind], dst, src)
            self._put_sites(sites, ordered)
        for forward, grown in ((True, out), (False, inn)):
            for kind, ends_of in grown.items():
                for key in list(ends_of):
                    ends = ends_of.pop(key)  # freed as its tuple is made
                    part = self._part(key.partition(":")[0])
                    adjacency = (part.out if forward else part.inn).setdefault(kind, {})
                    adjacency[key] = (ends,) if type(ends) is str else tuple(sorted(set(ends)))

    def replace_file_bases(self, relpath: str, order: dict[str, tuple[str, ...]]) -> None:
        """Swap the declared order of the bases of one file's classes (those with two or
        more; the targets are those of their inherits edges)."""
        part = self._parts.get(relpath)
        if order or (part is not None and part.bases):
            self._part(relpath).bases = order

    def file_bases(self, relpath: str) -> dict[str, tuple[str, ...]]:
        part = self._parts.get(relpath)
        return part.bases if part is not None else {}

    def file_edges(self, relpath: str) -> frozenset[Edge]:
        part = self._parts.get(relpath)
        return frozenset(part.edges) if part is not None else frozenset()

    def file_sites(self, relpath: str) -> dict[Edge, Sequence[Span]]:
        """Where each edge from relpath's file is made (sorted spans), for edges with any."""
        part = self._parts.get(relpath)
        if part is None:
            return {}
        parts = self._parts
        out: dict[Edge, Sequence[Span]] = {}
        for edge in part.edges:
            src_part = parts.get(path_of(edge.src))
            found = _spans(src_part.sites.get(edge, ())) if src_part is not None else None
            if found:
                out[edge] = found
        return out

    def drop_file(self, relpath: str) -> None:
        self.replace_file_edges(relpath, (), {})
        self.replace_file_bases(relpath, {})
        self.replace_file_entities(relpath, ())

    def _relink(self, gone: Iterable[Edge], added: Iterable[Edge]) -> None:
        """Apply removed and added edges to both adjacencies, each list rebuilt once."""
        changes: dict[tuple[bool, str, str], tuple[set[str], set[str]]] = {}
        for which, edges in ((0, gone), (1, added)):
            for kind, src, dst in edges:
                changes.setdefault((True, kind, src), (set(), set()))[which].add(dst)
                changes.setdefault((False, kind, dst), (set(), set()))[which].add(src)
        for (forward, kind, key), (removed, put) in changes.items():
            part = self._part(key.partition(":")[0])
            table = (part.out if forward else part.inn).setdefault(kind, {})
            now = (set(table.get(key, ())) - removed) | put
            if now:
                table[key] = tuple(sorted(now))
            else:
                table.pop(key, None)


def _spans(held: Sequence[Span] | Span) -> Sequence[Span]:
    """A part's sites entry as its spans: an edge made at one span keeps the span itself
    (most are; a tuple around each was 4 MB of Django's graph)."""
    return (held,) if held and type(held[0]) is int else held  # type: ignore[return-value]


def _add_end(table: dict[str, str | list[str]], key: str, end: str) -> None:
    found = table.get(key)
    if found is None:
        table[key] = end
    elif type(found) is str:
        table[key] = [found, end]
    else:
        found.append(end)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A frozen graph and the generation it was published as (later ones are higher, for
    any index of the process); `built` is the generation of the build it comes from: when
    that moves, the graph was put together anew and any file may have changed."""

    graph: Graph
    generation: int
    built: int
