"""Graph questions an agent asks, each answered by one JSON-able dict, sorted and capped.

Every answer is the same object for the MCP tool and the CLI's `--json`. A symbol is an
entity id or a suffix of one that ends at a name boundary (`Charge`, `models.py:Charge`,
`Repo.save`); one that matches several ids, or none, is a `QueryError` that lists the
candidates or the nearest names: an agent is never handed a guess.

Lists are ranked as tags are (anchor_ls.tags.rank): in each level production code first,
then demo code (marked `"demo": true`), then test code (`"test": true`), each by fan-in and
id, so `limit` cuts tests and demos first; impact lists the tests that reach what it found
apart from it.
"""

from __future__ import annotations

import difflib
import os
import re
import threading
import tokenize
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from anchor_ls.index import (
    CALLS,
    CONFIG_USAGE,
    CONST_REF,
    IMPORTS,
    INHERITS,
    REFERENCES,
    TEST_REF,
    Entity,
    Index,
)
from anchor_ls.index.model import (
    ENTITY_KINDS,
    EXTERNAL,
    EXTERNAL_PREFIX,
    OVERRIDES,
    Graph,
    path_of,
)
from anchor_ls.index.stats import edge_counts, graph_figures
from anchor_ls.index.testcode import is_test_name, is_test_path
from anchor_ls.syntax.source import UnreadableSource, decode_source
from anchor_ls.tags.apply import file_blocks
from anchor_ls.tags.policy import (
    DEFAULT_MAX_ITEMS,
    POLICIES,
    TOPO_FIELDS,
    PolicyError,
    ResolvedPolicy,
    block_fields,
    fields_for,
    implied_parent,
    is_external,
    resolve_policy,
    tags_file,
)
from anchor_ls.tags.rank import DEMO, ROLE_NAMES, TESTS, rank_key, role
from anchor_ls.tags.render import block_lines, field_line

MAX_SITES = 3  # call-site lines shown per caller or callee (the rest are counted)
MAX_CANDIDATES = 20  # ids listed by an ambiguity or unknown-symbol error
MAX_LISTED = 100  # entries of the answers that take no limit (hierarchy, related_tests)
OUTLINE_FIELD_ITEMS = 5  # ids per tag field in an outline
# Definitions an outline lists, the first in source order (the rest are counted). On
# Django 5.1.4 a file has 5 at the median (64 at p95, 529 at most) and one costs 48 tokens
# at the median, 100 at p95 (characters / 4 of the JSON): 35 lists 89% of its files whole
# and keeps every answer under 4,000 tokens (3,925 at most); the 529 whole were 36,000.
MAX_OUTLINE = 35
HELPER_DEPTH = 3  # test helpers followed from a test caller toward the tests
SIGNATURE_CHARS = 160
SOURCE_CHARS = 120
_BOUNDARY = ":./"
_SPLIT = re.compile(r"[:./]")
_OPENING = frozenset("([{")
_CLOSING = frozenset(")]}")
HEADER_LINES = 60  # lines a def or class header may span
_AT_LINE = re.compile(r"(.+\.pyi?)(?::\d+){1,2}")
# The relation of a caller or callee, by the edge that links it (a constant's: "read").
_RELATION = {CALLS: "call", REFERENCES: "reference"}
# The edge kind behind each relation impact reports (what ranks a module's demo blocks).
_EDGE_OF = {
    "calls": CALLS,
    "references": REFERENCES,
    "subclass": INHERITS,
    "override": CALLS,
    "imports": IMPORTS,
    "reads": CONST_REF,
}
# Fields an outline shows: the topology, both directions (tests are counted: their ids
# are long and many, and related_tests lists them).
OUTLINE_FIELDS = TOPO_FIELDS


class QueryError(Exception):
    """A request that cannot be answered: the message says why; `data` carries the
    candidates or nearest names an agent can retry with."""

    def __init__(self, message: str, **data: Any) -> None:
        super().__init__(message)
        self.data = data

    def as_dict(self) -> dict[str, Any]:
        return {"error": str(self), **self.data}


def _token(key: str) -> str:
    """The last name of a symbol: what the name table is keyed by (a module by its file name)."""
    if key.endswith(".py") or key.endswith(".pyi"):
        return key.rpartition("/")[2]
    return _SPLIT.split(key)[-1]


def without_line(path: str) -> str:
    """`pkg/m.py:12` and `pkg/m.py:12:5`, as grep, tracebacks and compilers print a place,
    name pkg/m.py (no id has a name that starts with a digit)."""
    found = _AT_LINE.fullmatch(path)
    return found.group(1) if found else path


def _spellings(key: str) -> list[str]:
    """The ids key may stand for when it is written as Python or pytest write a place:
    a pytest node id (`path.py::Class::test[param]`), or a dotted path (`pkg.mod.Class.f`:
    each split into a module, as a file or a package, and the names inside it)."""
    if "::" in key:
        path, _, names = key.partition("::")
        return [f"{path}:{names.partition('[')[0].replace('::', '.')}"]
    if any(c in key for c in ":/"):
        return []
    parts = key.split(".")
    found = []
    for cut in range(len(parts), 0, -1):
        module, names = "/".join(parts[:cut]), ".".join(parts[cut:])
        for path in (f"{module}.py", f"{module}/__init__.py"):
            found.append(f"{path}:{names}" if names else path)
    return found


_SKIPPED = frozenset(
    {
        tokenize.COMMENT,
        tokenize.NL,
        tokenize.NEWLINE,
        tokenize.INDENT,
        tokenize.DEDENT,
        tokenize.ENDMARKER,
    }
)


def _header(lines: list[str]) -> str | None:
    """The `def` or `class` header the lines start with, up to the colon that ends it, on
    one line and without its comments (a `#` in a string and a body after the colon are
    no end of it, as they were for a scan of the text); None when it does not tokenize."""
    source = iter([f"{line}\n" for line in lines])
    out: list[str] = []
    depth = 0
    last: tokenize.TokenInfo | None = None
    try:
        for tok in tokenize.generate_tokens(lambda: next(source, "")):
            if tok.type in _SKIPPED:
                continue
            if tok.type == tokenize.OP:
                if tok.string in _OPENING:
                    depth += 1
                elif tok.string in _CLOSING:
                    depth -= 1
                elif tok.string == ":" and depth == 0:
                    return "".join(out)
            apart = last is not None and last.end != tok.start
            if apart and last.string not in _OPENING and tok.string not in _CLOSING:
                out.append(" ")
            out.append(tok.string)
            last = tok
    except (tokenize.TokenError, SyntaxError):
        return None
    return None


def _import_name(ent: Entity) -> str | None:
    """The last name a module is imported by (`console` for rich/console.py, `rich` for
    rich/__init__.py); None for other definitions."""
    if ent.kind != "module":
        return None
    folder, _, name = ent.path.rpartition("/")
    stem = name.rpartition(".")[0]
    return folder.rpartition("/")[2] if stem == "__init__" and folder else stem


def _entity_token(ent: Entity) -> str:
    return ent.path.rpartition("/")[2] if ent.kind == "module" else ent.name


def _text_lines(data: bytes) -> list[str]:
    """A file's lines as the parser read them: in its declared codec, a CR alone or before
    LF a line end (the index's line numbers count those); split at \n alone, since
    splitlines() would also split at \f and other breaks Python does not count."""
    try:
        return decode_source(data).text.split("\n")
    except UnreadableSource:  # not indexed either: no line to quote
        return []


def _capped(items: list[Any], limit: int) -> tuple[list[Any], int]:
    if limit < 0:
        raise QueryError(f"limit must be 0 or more, not {limit}")
    if len(items) > limit:
        return items[:limit], len(items) - limit
    return items, 0


def _check_depth(depth: int) -> None:
    if depth < 1:
        raise QueryError(f"depth must be 1 or more, not {depth}")


class Queries:
    """The queries over one Index. `changed()` drops what was derived from the graph (the
    name table, the auto policy, source lines) after the index took an edit."""

    def __init__(self, index: Index, *, max_items: int = DEFAULT_MAX_ITEMS) -> None:
        self.index = index
        self.max_items = max_items
        self._names: dict[str, list[str]] | None = None
        self._lowered: list[tuple[str, str]] | None = None
        self._auto: tuple[ResolvedPolicy, float] | None = None
        self._lines: OrderedDict[str, list[str]] = OrderedDict()
        self._pins = threading.local()

    @property
    def graph(self) -> Graph:
        """The graph this thread's query pinned (see _pinned), else the index's latest."""
        pinned: Graph | None = getattr(self._pins, "graph", None)
        return pinned if pinned is not None else self.index.graph

    @contextmanager
    def _pinned(self, graph: Graph) -> Iterator[None]:
        """Every read of self.graph on this thread inside the block is of graph: a query
        reads one snapshot, its helpers included, while the index takes an edit."""
        outer = getattr(self._pins, "graph", None)
        self._pins.graph = graph
        try:
            yield
        finally:
            self._pins.graph = outer

    def changed(self) -> None:
        self._names = None
        self._lowered = None
        self._auto = None
        self._lines.clear()

    # ----- symbols ------------------------------------------------------------
    def _name_table(self) -> dict[str, list[str]]:
        if self._names is None:
            table: dict[str, list[str]] = {}
            for ent in self.graph.entities.values():
                table.setdefault(_entity_token(ent), []).append(ent.id)
            for ids in table.values():
                ids.sort()
            self._names = table
        return self._names

    def _suffix_matches(self, key: str) -> list[str]:
        found = []
        for ident in self._name_table().get(_token(key), ()):
            if ident == key or (
                ident.endswith(key) and ident[len(ident) - len(key) - 1] in _BOUNDARY
            ):
                found.append(ident)
        return found

    def nearest(self, key: str) -> list[str]:
        """Ids whose last name is close to key's (difflib), for an unknown symbol."""
        table = self._name_table()
        token = _token(key)
        # a ratio of 0.6 needs lengths within 3:7 of each other: the rest are never compared
        size = len(token)
        near = [n for n in table if 3 * size <= 7 * len(n) and 3 * len(n) <= 7 * size]
        names = difflib.get_close_matches(token, near, n=5, cutoff=0.6)
        found = sorted({i for name in names for i in table[name]})
        if not found:  # a misspelt qualified name: the closest ids themselves
            lowered = key.lower()
            found = [i for _, i in self._lowered_ids() if _token(key).lower() in i.lower()]
            found = difflib.get_close_matches(lowered, found, n=5, cutoff=0.0) if found else []
        return sorted(found)[:MAX_CANDIDATES]

    def resolve(self, symbol: str) -> Entity:
        """The entity `symbol` names: an id, or the one id it is a suffix of."""
        if not isinstance(symbol, str) or not symbol.strip():
            raise QueryError("symbol must be a non-empty string (an id or a suffix of one)")
        key = symbol.strip()
        graph = self.graph
        found = graph.entity(key)
        if found is not None:
            return found
        bare = key.lstrip(":./")  # `.save`, `:Charge`: the mark of a short link
        matches = self._suffix_matches(bare) if bare else []
        if not matches:  # `pkg.mod.Class.method`, `tests/test_x.py::TestX::test_y[1]`
            found = {i for alt in _spellings(key) for i in self._suffix_matches(alt)}
            matches = sorted(found)
        if not matches and (inherited := self._inherited(key)) is not None:
            return inherited
        if len(matches) == 1:
            ent = graph.entity(matches[0])
            assert ent is not None
            return ent
        if matches:
            shown, more = _capped(matches, MAX_CANDIDATES)
            raise QueryError(
                f"{symbol!r} is ambiguous: {len(matches)} definitions match; "
                "ask again with one of these ids",
                candidates=shown,
                more=more,
            )
        raise QueryError(
            f"no definition matches {symbol!r}",
            nearest=self.nearest(key),
        )

    def _inherited(self, key: str) -> Entity | None:
        """`Class.name` for a name Class does not define: the definition its MRO finds
        (`Flask.route` is Scaffold.route, as Python looks it up), else None."""
        owner, dot, name = key.rpartition(".")
        if not dot or not owner or not name or ":" in name or "/" in name:
            return None
        try:
            cls = self.resolve(owner)
        except QueryError:
            return None
        if cls.kind != "class":
            return None
        for klass in self.index.mro(cls.id)[1:]:
            found = self.graph.entity(f"{klass}.{name}")
            if found is not None:
                return found
        return None

    def _lowered_ids(self) -> list[tuple[str, str]]:
        if self._lowered is None:
            self._lowered = sorted((i.lower(), i) for i in self.graph.entities)
        return self._lowered

    def find_symbol(self, query: str, kind: str | None = None, limit: int = 20) -> dict[str, Any]:
        """Definitions matching `query`: exact (id, qualified name or name), then id
        suffix, then substring (case-sensitive before case-insensitive); ties as
        `_tie_key` orders them, so `limit` keeps the library's own definitions."""
        if not isinstance(query, str) or not query.strip():
            raise QueryError("query must be a non-empty string")
        if kind is not None and kind not in ENTITY_KINDS:
            raise QueryError(f"unknown kind {kind!r}; one of {', '.join(ENTITY_KINDS)}")
        q = query.strip()
        low = q.lower()
        # the `ext:` of a library's id is a mark, no part of its name, unless asked for
        mark = 0 if low.startswith(EXTERNAL_PREFIX) else len(EXTERNAL_PREFIX)
        graph = self.graph
        with self._pinned(graph):
            ranked: list[tuple[int, tuple, str]] = []
            for lowered, ident in self._lowered_ids():
                cut = mark if ident.startswith(EXTERNAL_PREFIX) else 0
                named = ident[cut:]
                if low not in lowered[cut:]:
                    continue
                ent = graph.entities.get(ident)
                if ent is None or (kind is not None and ent.kind != kind):
                    continue
                if q in (ident, ent.qualname, ent.name) or q == _import_name(ent):
                    rank = 0
                elif ident.endswith(q):
                    rank = 1
                elif q in named:
                    rank = 2
                else:
                    rank = 3
                ranked.append((rank, self._tie_key(ent), ident))
            ranked.sort()
            shown, more = _capped(ranked, limit)
            matches = []
            for rank, _tie, ident in shown:
                ent = graph.entities[ident]
                item = self._marked(ent)
                item["match"] = ("exact", "suffix", "substring", "substring (any case)")[rank]
                item["signature"] = self.signature(ent)
                matches.append(item)
        return {"query": q, "kind": kind, "matches": matches, "total": len(ranked), "omitted": more}

    def _tie_key(self, ent: Entity) -> tuple[int, int, int, int, str]:
        """The order of find_symbol's matches of one kind: the repository's production
        code, then its demo code, then tests, then library definitions; then the
        shallowest and shortest qualified name (`save` before `Model.save` before
        `Store.Inner.save`: a module before what it holds); then the path nearest the
        root, and the path itself."""
        place = len(ROLE_NAMES) if is_external(ent.id) else role(self.graph, ent.id)
        qualname = ent.qualname
        return (place, qualname.count("."), len(qualname), ent.path.count("/"), ent.path)

    # ----- source text --------------------------------------------------------
    def _source_lines(self, relpath: str) -> list[str]:
        lines = self._lines.get(relpath)
        if lines is None:
            lines = _text_lines(self.index.source(relpath) or b"")
            self._lines[relpath] = lines
            if len(self._lines) > 256:
                self._lines.popitem(last=False)
        else:
            self._lines.move_to_end(relpath)
        return lines

    def source_line(self, relpath: str, line: int) -> str:
        """Line `line` (1-based) of a file as indexed, stripped and shortened."""
        lines = self._source_lines(relpath)
        text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
        return text if len(text) <= SOURCE_CHARS else text[: SOURCE_CHARS - 1] + "…"

    def signature(self, ent: Entity) -> str:
        """A definition's header on one line (`def f(a, b) -> int`, `class C(Base)`)."""
        if ent.kind == "module":
            return f"module {ent.path}"
        lines = self._source_lines(ent.path)
        first = lines[ent.line - 1].strip() if 0 < ent.line <= len(lines) else ""
        if ent.kind == "constant":
            header = first
        else:
            header = _header(lines[ent.line - 1 : ent.line + HEADER_LINES]) or first
        return header if len(header) <= SIGNATURE_CHARS else header[: SIGNATURE_CHARS - 1] + "…"

    def _brief(self, ent: Entity) -> dict[str, Any]:
        """id, kind, path and line; a library's definition has its absolute path and
        `"external": true`."""
        brief = {"id": ent.id, "kind": ent.kind, "path": ent.path, "line": ent.line}
        if is_external(ent.id):
            brief["external"] = True
        return brief

    def _sites(self, kind: str, src: str, dst: str) -> dict[str, Any]:
        spans = self.graph.sites(src, dst, kind)
        lines = sorted({span[0] + 1 for span in spans})
        path = path_of(src)
        shown = [{"path": path, "line": n, "text": self.source_line(path, n)} for n in lines]
        out: dict[str, Any] = {"sites": shown[:MAX_SITES]}
        if len(shown) > MAX_SITES:
            out["more_sites"] = len(shown) - MAX_SITES
            out["more_lines"] = lines[MAX_SITES:]  # the text is left out, not the place
        return out

    # ----- callers and callees ------------------------------------------------
    def callers(
        self, symbol: str, depth: int = 1, limit: int = 50, maybe: bool = False
    ) -> dict[str, Any]:
        """Who calls `symbol` (or uses it as a value: relation "reference"), level by level;
        `possible`: how many unresolved call sites call a name like symbol's, and with
        maybe those sites themselves (after the real callers), as `maybe`."""
        answer = self._neighbours(symbol, depth, limit, incoming=True)
        with self._pinned(self.graph):
            sites = self._maybe_sites(self.resolve(symbol))
            answer["possible"] = len(sites)
            if maybe:
                answer["maybe"] = [
                    {"id": src, "path": path_of(src), "line": span[0] + 1}
                    | {"text": self.source_line(path_of(src), span[0] + 1)}
                    for src, span in sites[:limit]
                ]
                if len(sites) > limit:
                    answer["maybe_omitted"] = len(sites) - limit
        return answer

    def _maybe_sites(self, ent: Entity) -> list[tuple[str, tuple[int, int, int, int]]]:
        """The unresolved call sites that call a name or attribute ent's name: who may
        call it through a value the binder could not follow."""
        if ent.kind not in ("function", "method", "class"):
            return []
        return self.graph.maybe_callers(ent.name)

    def callees(self, symbol: str, depth: int = 1, limit: int = 50) -> dict[str, Any]:
        """What `symbol` calls (or uses as a value), level by level."""
        return self._neighbours(symbol, depth, limit, incoming=False)

    def _neighbour_kinds(self, ident: str, incoming: bool) -> tuple[str, ...]:
        """The edges followed from ident: calls and uses as a value; into a constant, the
        reads of it (directly, or as a setting of the settings module)."""
        ent = self.graph.entity(ident) if incoming else None
        if ent is not None and ent.kind == "constant":
            return (CONST_REF, CONFIG_USAGE)
        return (CALLS, REFERENCES)

    def _neighbours(self, symbol: str, depth: int, limit: int, incoming: bool) -> dict[str, Any]:
        """Level by level, each level in rank order (what `limit` keeps first)."""
        _check_depth(depth)
        graph = self.graph
        with self._pinned(graph):
            root = self.resolve(symbol)
            step = graph.into if incoming else graph.out
            seen = {root.id}
            frontier = [root.id]
            found: list[tuple[int, tuple[int, int, str], str, str]] = []  # depth, rank, kind, via
            for level in range(1, depth + 1):
                reached: dict[str, tuple[str, str]] = {}
                for via in frontier:
                    for kind in self._neighbour_kinds(via, incoming):
                        for other in step(kind, via):
                            if other in seen:
                                continue
                            known = reached.get(other)  # a call wins, then the first via
                            rank = (kind != CALLS, via)
                            if known is None or rank < (known[0] != CALLS, known[1]):
                                reached[other] = (kind, via)
                seen.update(reached)
                found.extend(
                    sorted(
                        (level, rank_key(graph, i, k, v, incoming), k, v)
                        for i, (k, v) in reached.items()
                    )
                )
                frontier = sorted(reached)
                if not frontier:
                    break
            shown, more = _capped(found, limit)
            levels: dict[int, list[dict[str, Any]]] = {}
            for level, (role, _fan_in, ident), kind, via in shown:
                ent = graph.entity(ident)
                if ent is None:
                    continue
                item = self._brief(ent)
                item["relation"] = _RELATION.get(kind, "read")
                if role == TESTS:
                    item["test"] = True
                elif role == DEMO:
                    item["demo"] = True
                if level > 1:
                    item["via"] = via
                src, dst = (ident, via) if incoming else (via, ident)
                if kind == CALLS and (how := graph.via(src, dst)):
                    item["call_via"] = how  # how the binder found the call (index.via)
                item.update(self._sites(kind, src, dst))
                levels.setdefault(level, []).append(item)
        return {
            "symbol": root.id,
            "kind": root.kind,
            "path": root.path,
            "line": root.line,
            "depth": depth,
            "levels": [{"depth": d, "items": items} for d, items in sorted(levels.items())],
            "total": len(found),
            "in_tests": sum(1 for entry in found if entry[1][0] == TESTS),
            "in_demo": sum(1 for entry in found if entry[1][0] == DEMO),
            "omitted": more,
        }

    # ----- impact ------------------------------------------------------------
    def _dependents(self, ent: Entity) -> Iterable[tuple[str, str]]:
        """(relation, id) of what depends on ent one step away."""
        graph = self.graph
        for other in graph.into(CALLS, ent.id):
            yield "calls", other
        for other in graph.into(REFERENCES, ent.id):
            yield "references", other
        if ent.kind == "class":
            for other in graph.into(INHERITS, ent.id):
                yield "subclass", other
        elif ent.kind == "method":
            for other in self._overrides(ent):
                yield "override", other
        elif ent.kind == "module":
            for other in graph.into(IMPORTS, ent.id):
                yield "imports", other
        elif ent.kind == "constant":  # read directly, or as a setting of the settings module
            for kind in (CONST_REF, CONFIG_USAGE):
                for other in graph.into(kind, ent.id):
                    yield "reads", other

    def impact(self, symbol: str, depth: int = 3, limit: int = 100) -> dict[str, Any]:
        """What can break if `symbol` changes: transitive callers and users, subclasses,
        overriding methods, importers of a module, readers of a constant, each level in
        rank order; then the tests that reach any of them."""
        _check_depth(depth)
        graph = self.graph
        with self._pinned(graph):
            root = self.resolve(symbol)
            side = is_test_path(root.path)
            distance = {root.id: 0}
            found: list[tuple[int, str, str, str]] = []
            tests: set[str] = set()
            frontier = [root.id]
            for level in range(1, depth + 1):
                reached: dict[str, tuple[str, str]] = {}
                for via in frontier:
                    ent = graph.entity(via)
                    if ent is None:
                        continue
                    for relation, other in self._dependents(ent):
                        if other in distance:
                            continue
                        if not side and is_test_path(path_of(other)):
                            tests.add(other)
                            continue
                        if other not in reached or (via, relation) < reached[other][::-1]:
                            reached[other] = (relation, via)
                for ident in reached:
                    distance[ident] = level
                found.extend(
                    (level, i, r, v)
                    for i, (r, v) in sorted(
                        reached.items(),
                        key=lambda kv: rank_key(graph, kv[0], _EDGE_OF[kv[1][0]], kv[1][1]),
                    )
                )
                frontier = sorted(reached)
                if not frontier:
                    break
            for ident in distance:
                tests.update(self._test_sources(ident))
            shown, more = _capped(found, limit)
            items = []
            for level, ident, relation, via in shown:
                ent = graph.entity(ident)
                if ent is None:
                    continue
                item = self._brief(ent)
                item.update(distance=level, relation=relation, via=via)
                items.append(item)
            test_items, tests_more = _capped(self._test_items(sorted(tests)), limit)
        return {
            "symbol": root.id,
            "kind": root.kind,
            "depth": depth,
            "affected": items,
            "total": len(found),
            "omitted": more,
            "tests": test_items,
            "tests_total": len(tests),
            "tests_omitted": tests_more,
        }

    def _test_sources(self, ident: str) -> set[str]:
        """Test code that exercises ident directly (its test_ref edges, its test callers
        and users, the tests that read it when it is a constant)."""
        graph = self.graph
        found = set(graph.into(TEST_REF, ident))
        for kind in (CALLS, REFERENCES, CONST_REF, CONFIG_USAGE):
            found.update(i for i in graph.into(kind, ident) if is_test_path(path_of(i)))
        found.discard(ident)
        return found

    def _test_items(self, ids: list[str]) -> list[dict[str, Any]]:
        items = []
        for ident in ids:
            ent = self.graph.entity(ident)
            if ent is not None:
                items.append({"id": ent.id, "path": ent.path, "line": ent.line})
        return items

    # ----- hierarchy ----------------------------------------------------------
    def _class_of(self, method: Entity) -> Entity | None:
        parent = implied_parent(method.id)
        found = self.graph.entity(parent) if parent else None
        return found if found is not None and found.kind == "class" else None

    def _subclasses(self, cls: str) -> list[tuple[int, str]]:
        """Every subclass of cls (transitive) with its distance, sorted."""
        graph = self.graph
        distance = {cls: 0}
        frontier = [cls]
        level = 0
        while frontier:
            level += 1
            reached = sorted({s for c in frontier for s in graph.into(INHERITS, c)} - set(distance))
            for s in reached:
                distance[s] = level
            frontier = reached
        return sorted((d, s) for s, d in distance.items() if s != cls)

    def _bases(self, cls: str) -> list[str]:
        """The MRO of cls after itself, then the bases outside the repository that it and
        those classes name (libraries' classes: the first step out, no MRO of their own)."""
        chain = self.index.mro(cls)[1:]
        found = dict.fromkeys(chain)
        for klass in [cls, *chain]:
            for base in self.graph.out(INHERITS, klass):
                if is_external(base):
                    found.setdefault(base)
        return list(found)

    def _overrides(self, method: Entity) -> list[str]:
        cls = self._class_of(method)
        if cls is None:
            return []
        found = []
        for _, sub in self._subclasses(cls.id):
            candidate = f"{sub}.{method.name}"
            if self.graph.entity(candidate) is not None:
                found.append(candidate)
        return sorted(found)

    def _by_role(self, items: Iterable[tuple[int, str]]) -> list[tuple[int, str]]:
        """(distance, id) pairs with the repository's own code first, then demo code, then
        tests (what MAX_LISTED cuts first), each by distance and id."""
        return sorted(items, key=lambda item: (role(self.graph, item[1]), *item))

    def _marked(self, ent: Entity) -> dict[str, Any]:
        """_brief, marked `"test": true` or `"demo": true` as callers' items are."""
        brief = self._brief(ent)
        found = role(self.graph, ent.id)
        if found == TESTS:
            brief["test"] = True
        elif found == DEMO:
            brief["demo"] = True
        return brief

    def hierarchy(self, symbol: str) -> dict[str, Any]:
        """A class's bases (MRO order) and subclasses; a method's overridden definitions
        (nearest first) and its overrides; subclasses and overrides list the repository's
        own code first, then demo code, then tests (marked as callers marks them)."""
        graph = self.graph
        with self._pinned(graph):
            ent = self.resolve(symbol)
            if ent.kind == "class":
                bases = [self._brief(e) for i in self._bases(ent.id) if (e := graph.entity(i))]
                subs = []
                for level, ident in self._by_role(self._subclasses(ent.id)):
                    sub = graph.entity(ident)
                    if sub is not None:
                        subs.append({**self._marked(sub), "distance": level})
                shown, more = _capped(subs, MAX_LISTED)
                return {
                    "symbol": ent.id,
                    "kind": "class",
                    "mro": bases,
                    "subclasses": shown,
                    "subclasses_total": len(subs),
                    "omitted": more,
                    "note": "bases outside the repository (external) come after the "
                    "repository's, the first step out only",
                }
            if ent.kind != "method" or self._class_of(ent) is None:
                raise QueryError(
                    f"{ent.id} is a {ent.kind}: hierarchy takes a class or a method",
                    symbol=ent.id,
                )
            cls = self._class_of(ent)
            assert cls is not None
            overridden = []
            named = [f"{klass}.{ent.name}" for klass in self._bases(cls.id)]
            for ident in dict.fromkeys([*named, *graph.out(OVERRIDES, ent.id)]):
                found = graph.entity(ident)
                if found is not None:
                    overridden.append(self._brief(found))
            overrides = [
                self._marked(e)
                for _, i in self._by_role((0, i) for i in self._overrides(ent))
                if (e := graph.entity(i))
            ]
            shown, more = _capped(overrides, MAX_LISTED)
            return {
                "symbol": ent.id,
                "kind": "method",
                "class": cls.id,
                "overridden": overridden,
                "overrides": shown,
                "overrides_total": len(overrides),
                "omitted": more,
            }

    # ----- files and tags -----------------------------------------------------
    def _inside(self, path: str) -> str:
        """path (relative to the root, or absolute; a `:line` or `:line:column` after a
        file's name is dropped) relative to the root, "." for the root; refused outside."""
        if not isinstance(path, str) or not path.strip():
            raise QueryError("path must be a non-empty string")
        root = self.index.root
        full = os.path.normpath(os.path.join(root, without_line(path.strip())))
        if full == os.path.normpath(root):
            return "."
        rel = self.index.relpath(full)
        if rel is None or rel.startswith("../"):
            raise QueryError(f"{path!r} is outside the repository ({root}); refused")
        return rel

    def relpath(self, path: str) -> str:
        """A repository path (relative to its root, or absolute inside it) as indexed;
        paths outside the repository are refused, a folder lists its files to choose from."""
        rel = self._inside(path)
        if not self.graph.file_entities(rel):
            problem = self.index.problems.get(rel)
            if problem is not None:
                raise QueryError(f"{rel}: not indexed: {problem.kind}: {problem.message}")
            if os.path.isdir(os.path.join(self.index.root, rel)):
                prefix = "" if rel == "." else f"{rel}/"
                inside = [f for f in self.graph.files() if f.startswith(prefix)]
                shown, more = _capped(inside, MAX_CANDIDATES)
                raise QueryError(
                    f"{rel} is a folder, not a file: ask again with one of its Python files",
                    candidates=shown,
                    more=more,
                )
            names = difflib.get_close_matches(rel, self.graph.files(), n=5, cutoff=0.5)
            raise QueryError(f"{rel}: no indexed Python file there", nearest=sorted(names))
        return rel

    def auto_policy(self) -> tuple[ResolvedPolicy, float]:
        if self._auto is None:
            mean, _hubs = graph_figures(self.graph)
            self._auto = (resolve_policy("auto", mean, self.max_items), mean)
        return self._auto

    def policy(self, name: str | None) -> ResolvedPolicy:
        if name is None or name.strip().lower() == "auto":
            return self.auto_policy()[0]
        try:
            return resolve_policy(name, 0.0, self.max_items)
        except PolicyError as err:
            raise QueryError(f"{err}", policies=list(POLICIES)) from err

    def outline(self, path: str) -> dict[str, Any]:
        """The definitions of one file, the first MAX_OUTLINE in source order (`more`
        counts the rest), with header, lines, tag fields in short form and how many tests
        exercise each."""
        graph = self.graph
        base = resolve_policy("topo", 0.0, OUTLINE_FIELD_ITEMS)
        policy = replace(base, fields=OUTLINE_FIELDS)
        with self._pinned(graph):
            rel = self.relpath(path)
            in_tests = is_test_path(rel)
            definitions = graph.file_entities(rel)
            shown, more = _capped(definitions, MAX_OUTLINE)
            items = []
            for ent in shown:
                item: dict[str, Any] = {
                    "name": ent.qualname or ent.path,
                    "kind": ent.kind,
                    "line": ent.line,
                    "end_line": ent.end_line,
                }
                if ent.kind != "module":
                    item["signature"] = self.signature(ent)
                fields = {
                    tag.name: field_line(tag, ent).partition(": ")[2]
                    for tag in fields_for(graph, ent.id, policy)
                }
                if fields:
                    item["fields"] = fields
                if not in_tests and (tests := len(self._test_sources(ent.id))):
                    item["tests"] = tests
                items.append(item)
            problem = self.index.problems.get(rel)
        answer: dict[str, Any] = {
            "path": rel,
            "test_code": in_tests,
            "definitions": items,
            "more": more,
        }
        if more:
            answer["note"] = (
                f"{more} more definitions from line {definitions[MAX_OUTLINE].line} on are "
                "left out: read the file from there, or ask find_symbol for one by name"
            )
        if problem is not None:
            answer["problem"] = f"{problem.kind}: {problem.message}"
        return answer

    def tags(self, target: str, policy: str | None = None) -> dict[str, Any]:
        """The CodeAnchor block text the materializer writes for a definition, or for
        every definition of a file (unindented; `line` is the definition's first line)."""
        if not isinstance(target, str) or not target.strip():
            raise QueryError("target must be a symbol or a path")
        resolved = self.policy(policy)
        graph = self.graph
        with self._pinned(graph):
            rel = self._as_file(target.strip())
            shown = {"name": resolved.name, "max_items": resolved.max_items}
            if rel is not None:
                blocks, _names = file_blocks(graph, rel, resolved)
                by_line = {}
                for key, lines in blocks.items():
                    ent = graph.entity(lines[0].partition("CodeAnchor ")[2])
                    line = ent.start_line if ent is not None and ent.kind != "module" else 1
                    by_line[(line, key)] = "\n".join(lines)
                out = [{"line": k[0], "text": t} for k, t in sorted(by_line.items())]
                answer: dict[str, Any] = {"path": rel, "policy": shown, "blocks": out}
                if not tags_file(rel, resolved):
                    answer["note"] = "test code carries no blocks under this policy"
                return answer
            ent = self.resolve(target)
            external = is_external(ent.id)
            tagged = not external and tags_file(ent.path, resolved)
            fields = block_fields(graph, ent.id, resolved) if tagged else []
            text = "\n".join(block_lines(ent, fields)) if fields else ""
            answer = {"symbol": ent.id, "policy": shown, "line": ent.start_line, "text": text}
            if not text:
                answer["note"] = (
                    "outside the repository: tag writes no block there"
                    if external
                    else "test code carries no blocks under this policy"
                    if not tagged
                    else "no block: nothing to list under this policy"
                )
            return answer

    def _as_file(self, target: str) -> str | None:
        """The relpath a target names when it is a path (a module id is one)."""
        target = without_line(target)
        if ":" in target or not (target.endswith((".py", ".pyi")) or "/" in target):
            return None
        rel = self._inside(target)
        if self.graph.file_entities(rel) or os.path.isdir(os.path.join(self.index.root, rel)):
            return self.relpath(target)  # a folder: refused with its files
        module = self.resolve(target)  # a module by a suffix of its path (`store.py`)
        return module.path if module.kind == "module" else self.relpath(target)

    # ----- tests and figures --------------------------------------------------
    def related_tests(self, symbol: str) -> dict[str, Any]:
        """Tests that exercise `symbol`: directly, or through test helpers (test code
        that is not itself a test) up to HELPER_DEPTH helpers away."""
        graph = self.graph
        with self._pinned(graph):
            ent = self.resolve(symbol)
            via: dict[str, str | None] = {i: None for i in self._test_sources(ent.id)}
            frontier = sorted(i for i in via if not self._is_test(i))
            for _ in range(HELPER_DEPTH):
                reached: dict[str, str] = {}
                for helper in frontier:
                    for kind in (CALLS, REFERENCES, TEST_REF):
                        for other in graph.into(kind, helper):
                            if other in via or not is_test_path(path_of(other)):
                                continue
                            if other not in reached or helper < reached[other]:
                                reached[other] = helper
                via.update(reached)
                frontier = sorted(i for i in reached if not self._is_test(i))
            items = []
            for ident in sorted(via):
                found = graph.entity(ident)
                if found is None:
                    continue
                item: dict[str, Any] = {
                    "id": found.id,
                    "path": found.path,
                    "line": found.line,
                    "role": "test" if self._is_test(ident) else "helper",
                }
                if via[ident] is not None:
                    item["via"] = via[ident]
                items.append(item)
            shown, more = _capped(items, MAX_LISTED)
        return {"symbol": ent.id, "tests": shown, "total": len(items), "omitted": more}

    def _is_test(self, ident: str) -> bool:
        """A test function or method, a Test* class, or a test module (the body pytest runs)."""
        ent = self.graph.entity(ident)
        if ent is None:
            return False
        if ent.kind == "module":
            return True
        if ent.kind == "class":
            return ent.name.startswith("Test")
        return is_test_name(ent.name)

    def stats(self, updated: str | None = None) -> dict[str, Any]:
        """Size of the index, the policy auto picks, and when the index was last checked
        against the disk (None: never since the build)."""
        graph = self.graph
        with self._pinned(graph):
            resolved, mean = self.auto_policy()
            reached = len(graph.file_entities(EXTERNAL))
            problems: dict[str, int] = {}
            for problem in self.index.problems.values():
                problems[problem.kind] = problems.get(problem.kind, 0) + 1
            return {
                "root": str(self.index.root),
                "files": len(graph.files()),
                "entities": len(graph.entities) - reached,  # the repository's, as index prints
                "external_entities": reached,
                "edges": edge_counts(graph),
                "mean_out_degree": round(mean, 3),
                "policy": {
                    "name": resolved.name,
                    "max_items": resolved.max_items,
                    "reason": resolved.reason,
                },
                "problems": dict(sorted(problems.items())),
                "updated": updated,
            }
