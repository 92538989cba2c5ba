"""The repository graph: entities and typed edges, queried by every layer above.

The graph is mutable so that an edit to one file changes only that file's part
of it; readers take `Graph.lock` (re-entrant) while they look.
"""

from __future__ import annotations

import threading
import zlib
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
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
# The dense tier and references (values, not calls), with DESIGN.md's targets.
REFERENCES = "references"  # function/module -> a function or class it uses as a value
ENV_VAR = "env_var"  # -> env:NAME
IO_DEP = "io_dep"  # -> io:file|network|db|subprocess
CONST_REF = "const_ref"  # -> another module's constant
CONFIG_USAGE = "config_usage"  # -> the setting's constant, else setting:NAME
TEST_REF = "test_ref"  # a test -> what it exercises, directly or through one helper
DENSE_KINDS = (CONFIG_USAGE, ENV_VAR, CONST_REF, IO_DEP, TEST_REF, REFERENCES)

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
    """

    id: str
    kind: str
    path: str
    name: str
    line: int
    end_line: int
    start_line: int
    name_span: Span

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
        # relpath -> a via code (anchor_ls.index.via) per edge of _file_edges[relpath], in
        # its order (0 for edges that are not calls): one byte an edge.
        self._file_via: dict[str, bytes] = {}
        # relpath -> its unresolved call sites as text (anchor_ls.index.facts.FileEdges),
        # deflated: read only for the questions about them, a third of the memory
        self._file_missed: dict[str, bytes] = {}
        self._missed_index: dict[str, tuple[str, ...]] | None = None  # _names_missed
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

    def via(self, src: str, dst: str) -> str | None:
        """How the binder found the call edge src -> dst (anchor_ls.index.via), or None."""
        edges = self._file_edges.get(path_of(src), ())
        try:
            at = edges.index(Edge(CALLS, src, dst))
        except ValueError:
            return None
        codes = self._file_via.get(path_of(src))
        return via_name(codes[at]) if codes else None

    def file_via_map(self, relpath: str) -> dict[Edge, int]:
        """The via code of each call edge from relpath's file."""
        codes = self._file_via.get(relpath)
        if not codes:
            return {}
        return {e: c for e, c in zip(self._file_edges[relpath], codes, strict=True) if c}

    def _names_missed(self) -> dict[str, tuple[str, ...]]:
        """name -> the files with unresolved sites calling it; built when first asked,
        dropped by any change (the sites themselves stay deflated: Django's as tuples
        would hold 12 MB)."""
        if self._missed_index is None:
            files: dict[str, list[str]] = defaultdict(list)
            for rel in sorted(self._file_missed):
                for name in {name for _src, name, _span in self.file_missed(rel) if name}:
                    files[name].append(rel)
            self._missed_index = {name: tuple(found) for name, found in files.items()}
        return self._missed_index

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
        return sum(len(self.file_missed(rel)) for rel in self._file_missed)

    def has_maybe_callers(self, name: str) -> bool:
        """Whether an unresolved site calls an attribute or a name `name` (cheap)."""
        return name in self._names_missed()

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
        packed = self._file_missed.get(relpath)
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
        return self._file_missed.get(relpath, b"")

    def files(self) -> list[str]:
        return sorted(p for p, ents in self._by_file.items() if ents)

    def file_entities(self, relpath: str) -> list[Entity]:
        """Entities defined in one file, in source order (module first)."""
        ents = self._by_file.get(relpath, {})
        return sorted(ents.values(), key=lambda e: (e.line, e.kind != "module", e.id))

    def entity_at(self, relpath: str, line: int) -> Entity | None:
        """The innermost entity whose lines (decorators included) hold 0-based `line`.

        A definition as long as its file is inside the module, not the other way round.
        """
        best: Entity | None = None
        best_key = (0, False)
        for ent in self._by_file.get(relpath, {}).values():
            if ent.start_line - 1 <= line <= ent.end_line - 1:
                key = (ent.end_line - ent.start_line, ent.kind == "module")
                if best is None or key < best_key:
                    best, best_key = ent, key
        return best

    def edges(self, kind: str | None = None) -> Iterator[Edge]:
        """All edges (of one kind), sorted by (kind, src, dst)."""
        kinds = [kind] if kind else sorted(self._out)
        for k in kinds:
            table = self._out.get(k, {})
            for src in sorted(table):
                for dst in table[src]:
                    yield Edge(k, src, dst)

    def edge_count(self, kind: str) -> int:
        return sum(len(d) for d in self._out.get(kind, {}).values())

    def to_json(self) -> dict:
        """The stable graph export of DESIGN.md, sorted for byte-identical output."""
        via: dict[Edge, int] = {}
        for rel in self._file_via:
            via.update(self.file_via_map(rel))
        missed: dict[str, int] = {}
        for rel in self._file_missed:
            missed.update(self._unresolved_by_entity(rel))

        def entity(e: Entity) -> dict:
            out = {"id": e.id, "kind": e.kind, "path": e.path, "line": e.line}
            out["end_line"] = e.end_line
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
        via: dict[Edge, int] | None = None,
        missed: str = "",
    ) -> None:
        """Swap the edges derived from one file's source for a new set (ordered: each
        list of spans is already sorted and without repeats, as a snapshot stores them),
        with how each call edge was found and the file's unresolved call sites."""
        old = frozenset(self._file_edges.pop(relpath, ()))
        new = frozenset(edges)
        self._file_via.pop(relpath, None)
        if new:
            stored = self._file_edges[relpath] = tuple(new)
            self._put_via(relpath, stored, via)
        self._put_missed(relpath, missed)
        gone = old - new
        self._relink(gone, new - old)
        for edge in gone:
            self._sites.pop(edge, None)
        self._put_sites(sites, ordered)

    def _put_via(
        self, relpath: str, stored: tuple[Edge, ...], via: dict[Edge, int] | bytes | None
    ) -> None:
        if isinstance(via, bytes):  # a snapshot's, in the order of its edges
            codes = via
        else:
            codes = bytes(via.get(e, 0) for e in stored) if via else b""
        if any(codes):
            self._file_via[relpath] = codes

    def _put_missed(self, relpath: str, missed: str | bytes) -> None:
        """missed: as FileEdges has it, or as file_missed_packed gave it."""
        self._missed_index = None
        if missed:
            packed = missed if isinstance(missed, bytes) else zlib.compress(missed.encode())
            self._file_missed[relpath] = packed
        else:
            self._file_missed.pop(relpath, None)

    def _put_sites(self, sites: dict[Edge, Sequence[Span]], ordered: bool) -> None:
        if ordered:
            self._sites.update(sites)
        else:
            for key, spans in sites.items():
                self._sites[key] = tuple(sorted(set(spans)))

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
        out: dict[str, dict[str, list[str]]] = defaultdict(dict)
        inn: dict[str, dict[str, list[str]]] = defaultdict(dict)
        for relpath, edges, sites, *more in by_file:
            new = tuple(edges) if ordered else tuple(frozenset(edges))
            if new:
                self._file_edges[relpath] = new
                self._put_via(relpath, new, more[0] if more else None)
            self._put_missed(relpath, more[1] if more else "")
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
