"""What the cache keeps of a build, and the graph read back from it at a warm start.

Pickled file by file, as the cache writes them: one pickle of everything keeps a memo
entry for each of its millions of objects until it is done (measured: 110 MB more at
Django's peak), and all the parts at once were its peak still (23 MB).
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from anchor_ls import __version__
from anchor_ls.index.model import EXTERNAL, Edge, Entity, Graph
from anchor_ls.index.state import FileFacts

# cache part names: a prefix, then the relpath
GRAPH, FACTS, PASSED = "graph\0", "facts\0", "passed\0"


def dump(data: object) -> bytes:
    return pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)


def astuple_entity(e: Entity) -> tuple:
    return (
        *(e.id, e.kind, e.path, e.name, e.line, e.end_line, e.start_line, e.name_span),
        e.earlier,  # the lines of its other definitions: asking there finds it too
    )


def unpickled(rows: Iterable[tuple[str, memoryview]], prefix: str) -> dict[str, Any]:
    return {name.removeprefix(prefix): pickle.loads(blob) for name, blob in rows}


def fingerprint(
    exclude: tuple[str, ...],
    max_file_bytes: int,
    roots: tuple[str, ...],
    hashes: dict[str, str],
    environment: str = "",
) -> str:
    """What a stored build is valid for: this version, these settings and source roots,
    this Python environment (its identity: other libraries, other conclusions), these
    files."""
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{__version__}\0{exclude}\0{max_file_bytes}".encode())
    if environment:
        h.update(f"\0environment\0{environment}".encode())
    if roots:  # absent without nested roots: such a repository's caches stay valid
        h.update(f"\0roots\0{roots}".encode("utf-8", "surrogateescape"))
    for rel in sorted(hashes):
        h.update(f"\0{rel}\0{hashes[rel]}".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def cache_rows(
    graph: Graph,
    paths: list[str],
    facts: dict[str, FileFacts],
    passed: Callable[[], dict[str, Any]],
) -> Iterator[tuple[str, bytes]]:
    """The rows the cache stores of a build: each file's part of the graph (read at every
    warm start), then its resolution facts and the argument values it passes (read only
    when a file changes; passed() is asked once the others are written)."""
    for rel in paths:
        edges = sorted(graph.file_edges(rel))
        made = graph.file_sites(rel)
        sites = [made.get(e, ()) for e in edges]  # each edge's spans, in the edges' order
        entities = [astuple_entity(e) for e in graph.file_entities(rel)]
        bases = graph.file_bases(rel)
        codes = graph.file_via_map(rel)
        via = bytes(codes.get(e, 0) for e in edges)
        missed = graph.file_missed_packed(rel)
        part = (entities, [tuple(e) for e in edges], sites, bases, via, missed)
        yield GRAPH + rel, dump(part)
    for rel, file_facts in sorted(facts.items()):
        yield FACTS + rel, dump(file_facts)
    for rel, per_scope in sorted(passed().items()):
        yield PASSED + rel, dump(per_scope)


def restore_graph(
    root: str, paths: list[str], parts: Mapping[str, memoryview], external: Iterable[tuple] = ()
) -> Graph | None:
    """The graph cache_rows stored for paths, with the external entities (as
    astuple_entity gives them); None when a part is missing or damaged.

    Each file's part is a pickle of its own, with its own copy of every id its edges
    lead to in other files: the ids are made one string each again (an entity's, or the
    first met), and sites are keyed by the edges themselves (both held twice, Django's
    warm start held 30 MB more graph than its cold build)."""
    graph = Graph(root)
    try:
        files = {rel: pickle.loads(parts[GRAPH + rel]) for rel in paths}
    except Exception:  # parts missing or damaged: build afresh
        return None
    one: dict[str, str] = {}
    outside = [Entity(*e) for e in external]
    for ent in outside:
        one[ent.id] = ent.id
    graph.replace_file_entities(EXTERNAL, outside)
    for rel, (entities, _edges, _sites, bases, _via, _missed) in files.items():
        made = [Entity(*e) for e in entities]
        for ent in made:
            one[ent.id] = ent.id
        graph.replace_file_entities(rel, made)
        graph.replace_file_bases(rel, bases)
    graph.load_edges((_file_edges(rel, *files.pop(rel), one) for rel in paths), ordered=True)
    return graph


def _file_edges(
    rel: str,
    _entities: list,
    edges: list[tuple[str, str, str]],
    sites: list[tuple],
    _bases: dict,
    via: bytes,
    missed: bytes,
    one: dict[str, str],
) -> tuple:
    """One file's edges as load_edges takes them, each id the one string of it (tuple.__new__
    makes the hundreds of thousands of edges at half the cost of their constructor)."""
    make, same = tuple.__new__, one.setdefault
    made = [make(Edge, (kind, same(src, src), same(dst, dst))) for kind, src, dst in edges]
    return rel, made, {e: spans for e, spans in zip(made, sites, strict=True) if spans}, via, missed
