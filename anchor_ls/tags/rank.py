"""The order of every list a cap cuts: inlay hints, code lenses, materialized tags and the
agent's answers all rank with `rank_key`, so the entries a cap keeps are the same everywhere.

Sorted by id, a cap kept what sorts first: module ids sort before their definitions, so
the `if __name__ == "__main__":` demo blocks of rich's modules took 6 of the 8 CALLED_BY
slots of `Console.print` and hid `Console.rule`, `Live.refresh` and `RichHandler.emit`.
The order is total and a function of the graph alone (the same under any hash seed, and
the same when `check` renders a block again):

1. Role: production code, then demo code, then test code. Demo code shows a library in
   use rather than being part of it: files under example(s)/, doc(s)/, demo(s)/,
   tutorial(s)/ and sample(s)/ folders,
   definitions inside a module's `if __name__ == "__main__":` block, and a module whose
   edge is made only inside such blocks (its module-level code is the caller).
2. Fan-in, most first: how many definitions call the entry (a module: how many import
   it). A caller that many others call is on more paths through the code, so a change to
   the entity reaches more of the program through it, and it is the name a reader most
   likely knows already; a leaf script or a one-off helper is least telling. The graph
   keeps each adjacency list as a tuple, made once per build and per edited file, so
   fan-in is a `len()`: ranking walks nothing per request.
3. The id, so that ties are broken and the order is total.
"""

from __future__ import annotations

from collections.abc import Iterable

from anchor_ls.index.model import CALLS, IMPORTS, MAIN_BLOCK, MAIN_TARGET, Graph, Span
from anchor_ls.index.testcode import is_demo_path, is_test_path

PRODUCTION, DEMO, TESTS = 0, 1, 2
ROLE_NAMES = ("production", "demo", "test")

RankKey = tuple[int, int, str]


def _inside(blocks: list[Span], row: int, last_row: int) -> bool:
    return any(b[0] <= row and last_row <= b[2] for b in blocks)


def role(graph: Graph, entry: str, kind: str = CALLS, other: str = "", src: bool = True) -> int:
    """PRODUCTION, DEMO or TESTS for `entry`, listed in a field of `other` whose edges are
    of `kind`; `src`: entry is the edge's source (inverse fields: CALLED_BY...)."""
    path, sep, _ = entry.partition(":")
    if is_test_path(path):
        return TESTS
    if is_demo_path(path):
        return DEMO
    blocks = graph.sites(path, MAIN_TARGET, MAIN_BLOCK)
    if not blocks:
        return PRODUCTION
    if sep:  # a definition: demo when defined in a __main__ block
        ent = graph.entity(entry)
        inside = ent is not None and _inside(blocks, ent.start_line - 1, ent.end_line - 1)
        return DEMO if inside else PRODUCTION
    if not src or not other:
        return PRODUCTION
    spans = graph.sites(entry, other, kind)  # module-level code: where it makes the edge
    if spans and all(_inside(blocks, s[0], s[2]) for s in spans):
        return DEMO
    return PRODUCTION


def fan_in(graph: Graph, entry: str) -> int:
    """How many call entry; how many import it, for a module."""
    if ":" in entry:
        return graph.in_degree(CALLS, entry)
    return graph.in_degree(IMPORTS, entry)


def rank_key(
    graph: Graph, entry: str, kind: str = CALLS, other: str = "", src: bool = True
) -> RankKey:
    """(role, minus fan-in, id): sort by it, ascending, to put what matters first."""
    return (role(graph, entry, kind, other, src), -fan_in(graph, entry), entry)


def ranked(
    graph: Graph, ids: Iterable[str], kind: str = CALLS, other: str = "", src: bool = True
) -> list[str]:
    """ids in rank order (see the module docstring): what a cap keeps comes first."""
    ids = list(ids)
    if len(ids) < 2:
        return ids
    return sorted(ids, key=lambda i: rank_key(graph, i, kind, other, src))
