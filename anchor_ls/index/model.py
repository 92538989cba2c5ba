"""The repository graph: entities and typed edges, queried by every layer above.

The graph is mutable so that an edit to one file changes only that file's part
of it; readers take `Graph.lock` (re-entrant) while they look.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

# Relation kinds, in the order the graph JSON lists them.
CALLS = "calls"
INHERITS = "inherits"
IMPORTS = "imports"
CONTAINS = "contains"
STRUCTURAL_KINDS = (CALLS, INHERITS, IMPORTS, CONTAINS)
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


class Graph:
    """Entities by id plus forward and inverse adjacency per relation kind."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.lock = threading.RLock()
        self.entities: dict[str, Entity] = {}
        self._by_file: dict[str, dict[str, Entity]] = defaultdict(dict)
        # kind -> src -> its targets, and kind -> dst -> its sources: sorted tuples (a set
        # costs four times the memory, 40 MB on Django, and every query sorted it).
        self._out: dict[str, dict[str, tuple[str, ...]]] = defaultdict(dict)
        self._in: dict[str, dict[str, tuple[str, ...]]] = defaultdict(dict)
        # edge -> where in src's file it is made (call sites, references, reads).
        self._sites: dict[Edge, Sequence[Span]] = {}
        # relpath -> edges whose facts come from that file (its sources).
        self._file_edges: dict[str, tuple[Edge, ...]] = {}
        # relpath -> class id -> its inherits targets in the order its class statement
        # lists them (C3 reads that order), for the classes of that file with two or more.
        self._base_order: dict[str, dict[str, tuple[str, ...]]] = {}

    # ----- queries -------------------------------------------------------
    def entity(self, entity_id: str) -> Entity | None:
        return self.entities.get(entity_id)

    def out(self, kind: str, src: str) -> list[str]:
        """Targets of `kind` edges from `src`, sorted."""
        return list(self._out[kind].get(src, ()))

    def into(self, kind: str, dst: str) -> list[str]:
        """Sources of `kind` edges into `dst`, sorted."""
        return list(self._in[kind].get(dst, ()))

    def out_degree(self, kind: str, src: str) -> int:
        return len(self._out[kind].get(src, ()))

    def in_degree(self, kind: str, dst: str) -> int:
        return len(self._in[kind].get(dst, ()))

    def bases(self, cls: str) -> list[str]:
        """Targets of inherits edges from `cls`, in the order its class statement lists them."""
        order = self._base_order.get(path_of(cls))
        found = order.get(cls) if order else None
        return list(found) if found is not None else self.out(INHERITS, cls)

    def sites(self, src: str, dst: str, kind: str = CALLS) -> list[Span]:
        """Where in src's file the edge is made: its call sites, references or reads."""
        return list(self._sites.get(Edge(kind, src, dst), ()))

    def files(self) -> list[str]:
        return sorted(p for p, ents in self._by_file.items() if ents)

    def file_entities(self, relpath: str) -> list[Entity]:
        """Entities defined in one file, in source order (module first)."""
        ents = self._by_file.get(relpath, {})
        return sorted(ents.values(), key=lambda e: (e.line, e.kind != "module", e.id))

    def entity_at(self, relpath: str, line: int) -> Entity | None:
        """The innermost entity one of whose definitions (decorators included) holds
        0-based `line`.

        A definition as long as its file is inside the module, not the other way round.
        """
        best: Entity | None = None
        best_key = (0, False)
        for ent in self._by_file.get(relpath, {}).values():
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
        kinds = [kind] if kind else sorted(k for k in self._out if k != MAIN_BLOCK)
        for k in kinds:
            table = self._out.get(k, {})
            for src in sorted(table):
                for dst in table[src]:
                    yield Edge(k, src, dst)

    def edge_count(self, kind: str) -> int:
        return sum(len(d) for d in self._out.get(kind, {}).values())

    def to_json(self) -> dict:
        """The stable graph export of DESIGN.md, sorted for byte-identical output."""
        return {
            "root": self.root,
            "entities": [
                {"id": e.id, "kind": e.kind, "path": e.path, "line": e.line, "end_line": e.end_line}
                for e in sorted(self.entities.values(), key=lambda e: e.id)
            ],
            "edges": [{"kind": e.kind, "src": e.src, "dst": e.dst} for e in sorted(self.edges())],
        }

    # ----- mutation (used by anchor_ls.index only) -----------------------
    def replace_file_entities(self, relpath: str, entities: Iterable[Entity]) -> None:
        for old in self._by_file.pop(relpath, {}).values():
            self.entities.pop(old.id, None)
        table = self._by_file[relpath]
        for ent in entities:
            table[ent.id] = ent
            self.entities[ent.id] = ent

    def replace_file_edges(
        self,
        relpath: str,
        edges: Iterable[Edge],
        sites: dict[Edge, list[Span]],
        *,
        ordered: bool = False,
    ) -> None:
        """Swap the edges derived from one file's source for a new set (ordered: each
        list of spans is already sorted and without repeats, as a snapshot stores them)."""
        old = frozenset(self._file_edges.pop(relpath, ()))
        new = frozenset(edges)
        if new:
            self._file_edges[relpath] = tuple(new)
        gone = old - new
        self._relink(gone, new - old)
        for edge in gone:
            self._sites.pop(edge, None)
        self._put_sites(sites, ordered)

    def _put_sites(self, sites: dict[Edge, Sequence[Span]], ordered: bool) -> None:
        if ordered:
            self._sites.update(sites)
        else:
            for key, spans in sites.items():
                self._sites[key] = tuple(sorted(set(spans)))

    def load_edges(
        self,
        by_file: Iterable[tuple[str, Iterable[Edge], dict[Edge, Sequence[Span]]]],
        *,
        ordered: bool = False,
    ) -> None:
        """The edges of many files into a graph that has none yet (a build, a warm start):
        each adjacency list is sorted once, not rebuilt once per file that adds to it.
        ordered: as a snapshot stores them, each file's edges without repeats and its
        spans sorted."""
        out: dict[str, dict[str, list[str]]] = defaultdict(dict)
        inn: dict[str, dict[str, list[str]]] = defaultdict(dict)
        for relpath, edges, sites in by_file:
            new = tuple(edges) if ordered else tuple(frozenset(edges))
            if new:
                self._file_edges[relpath] = new
            for kind, src, dst in new:
                ends = out[kind].get(src)
                if ends is None:
                    out[kind][src] = [dst]
                else:
                    ends.append(dst)
                ends = inn[kind].get(dst)
                if ends is None:
                    inn[kind][dst] = [src]
                else:
                    ends.append(src)
            self._put_sites(sites, ordered)
        for table, grown in ((self._out, out), (self._in, inn)):
            for kind, lists in grown.items():
                adjacency = table[kind]
                for key, ends in lists.items():
                    adjacency[key] = (ends[0],) if len(ends) == 1 else tuple(sorted(set(ends)))

    def replace_file_bases(self, relpath: str, order: dict[str, tuple[str, ...]]) -> None:
        """Swap the declared order of the bases of one file's classes (those with two or
        more; the targets are those of their inherits edges)."""
        if order:
            self._base_order[relpath] = order
        else:
            self._base_order.pop(relpath, None)

    def file_bases(self, relpath: str) -> dict[str, tuple[str, ...]]:
        return self._base_order.get(relpath, {})

    def file_edges(self, relpath: str) -> frozenset[Edge]:
        return frozenset(self._file_edges.get(relpath, ()))

    def file_sites(self, relpath: str) -> dict[Edge, Sequence[Span]]:
        """Where each edge from relpath's file is made (sorted spans), for edges with any."""
        sites = self._sites
        return {e: found for e in self._file_edges.get(relpath, ()) if (found := sites.get(e))}

    def drop_file(self, relpath: str) -> None:
        self.replace_file_edges(relpath, (), {})
        self.replace_file_bases(relpath, {})
        self.replace_file_entities(relpath, ())
        self._by_file.pop(relpath, None)

    def _relink(self, gone: Iterable[Edge], added: Iterable[Edge]) -> None:
        """Apply removed and added edges to both adjacencies, each list rebuilt once."""
        changes: dict[tuple[bool, str, str], tuple[set[str], set[str]]] = {}
        for which, edges in ((0, gone), (1, added)):
            for kind, src, dst in edges:
                changes.setdefault((True, kind, src), (set(), set()))[which].add(dst)
                changes.setdefault((False, kind, dst), (set(), set()))[which].add(src)
        for (forward, kind, key), (removed, put) in changes.items():
            table = (self._out if forward else self._in)[kind]
            now = (set(table.get(key, ())) - removed) | put
            if now:
                table[key] = tuple(sorted(now))
            else:
                table.pop(key, None)
