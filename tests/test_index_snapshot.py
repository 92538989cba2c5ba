"""Index.snapshot(): readers hold a frozen graph while the index changes on another thread."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pytest

from anchor_ls.index import CALLS, Graph, Index
from anchor_ls.index.model import FrozenGraphError

EXAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "example"
SERVICE = "pkg/service.py"
# a function calling into its own file and into pkg/pricing.py (whose part changes too)
ADDED = "\n\ndef audit(skus):\n    price_of(skus[0])\n    return checkout(skus, None)\n"
DEADLOCK_GUARD = 120.0  # seconds; only a hang reaches it


@pytest.fixture
def index(tmp_path: Path) -> Index:
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".anchor-ls", "__pycache__"))
    idx = Index(root, use_cache=False)
    idx.build()
    return idx


def dumped(graph: Graph) -> str:
    """Everything a reader can ask of a graph: entities, edges, their sites, base order."""
    sites = {f"{e.kind} {e.src} {e.dst}": graph.sites(e.src, e.dst, e.kind) for e in graph.edges()}
    bases = {rel: graph.file_bases(rel) for rel in graph.files()}
    return json.dumps([graph.to_json(), sites, bases], sort_keys=True)


def test_a_graph_held_before_an_edit_stays_as_it_was(index: Index) -> None:
    held = index.graph
    before = dumped(held)
    snapshot = index.snapshot()
    text = (index.root / SERVICE).read_text(encoding="utf-8") + ADDED
    index.update_file(SERVICE, text)
    assert dumped(held) == before
    assert dumped(snapshot.graph) == before
    assert "pkg/service.py:audit" in index.graph.entities
    assert "pkg/service.py:audit" not in held.entities
    assert "pkg/service.py:audit" in index.graph.into(CALLS, "pkg/pricing.py:price_of")
    assert "pkg/service.py:audit" not in held.into(CALLS, "pkg/pricing.py:price_of")
    assert dumped(index.graph) != before


def test_a_published_graph_refuses_to_change(index: Index) -> None:
    graph = index.snapshot().graph
    with pytest.raises(FrozenGraphError):
        graph.drop_file(SERVICE)
    assert graph.file_entities(SERVICE)


def test_generations_go_up_with_each_change_and_built_with_each_build(index: Index) -> None:
    first = index.snapshot()
    assert first.built == first.generation
    text = (index.root / SERVICE).read_text(encoding="utf-8") + ADDED
    index.update_file(SERVICE, text)
    edited = index.snapshot()
    assert edited.generation > first.generation
    assert edited.built == first.built  # an edit: not every file changed
    index.build()
    rebuilt = index.snapshot()
    assert rebuilt.generation > edited.generation
    assert rebuilt.built == rebuilt.generation
    other = Index(index.root, use_cache=False)
    assert other.snapshot().generation > rebuilt.generation  # a new index is later too


def test_a_reader_sees_the_whole_old_graph_while_a_rebuild_runs(index: Index) -> None:
    """The build stops in its progress callback (on the build's own thread, the index's
    lock held) until a reader on another thread has read the graph: the reader neither
    waits for the build nor sees any of it."""
    before = index.snapshot()
    expected = dumped(before.graph)
    (index.root / SERVICE).write_text(
        (index.root / SERVICE).read_text(encoding="utf-8") + ADDED, encoding="utf-8"
    )
    seen: list[tuple[int, str]] = []
    read = threading.Event()

    def reader() -> None:
        snapshot = index.snapshot()
        seen.append((snapshot.generation, dumped(snapshot.graph)))
        read.set()

    def progress(done: int, total: int, relpath: str) -> None:
        if not seen:
            thread = threading.Thread(target=reader)
            thread.start()
            assert read.wait(DEADLOCK_GUARD), "the reader waited for the build"
            thread.join()

    builder = threading.Thread(target=index.build, args=(progress,))
    builder.start()
    builder.join()
    assert seen == [(before.generation, expected)]
    after = index.snapshot()
    assert after.generation > before.generation
    assert "pkg/service.py:audit" in after.graph.entities
    assert "pkg/service.py:audit" not in before.graph.entities


def test_an_edge_made_at_one_span_or_at_several_answers_its_spans() -> None:
    """Most edges are made at one span, which the graph keeps without a tuple around it:
    every reader still gets the spans, sorted and without repeats, after a load, an edit
    and in a frozen copy."""
    from anchor_ls.index.model import Edge

    graph = Graph("/repo")
    once, twice = Edge(CALLS, "a.py:f", "b.py:g"), Edge(CALLS, "a.py:f", "b.py:h")
    spans = {once: [(1, 2, 1, 5)], twice: [(4, 0, 4, 3), (2, 0, 2, 3), (4, 0, 4, 3)]}
    graph.load_edges([("a.py", [once, twice], spans)])
    assert graph.sites("a.py:f", "b.py:g") == [(1, 2, 1, 5)]
    assert graph.sites("a.py:f", "b.py:h") == [(2, 0, 2, 3), (4, 0, 4, 3)]
    assert graph.file_sites("a.py") == {once: ((1, 2, 1, 5),), twice: ((2, 0, 2, 3), (4, 0, 4, 3))}
    frozen = graph.frozen()
    graph.replace_file_edges(
        "a.py", [once, twice], {once: [(7, 0, 7, 1), (6, 0, 6, 1)], twice: [(9, 0, 9, 1)]}
    )
    assert graph.file_sites("a.py") == {once: ((6, 0, 6, 1), (7, 0, 7, 1)), twice: ((9, 0, 9, 1),)}
    assert graph.sites("a.py:f", "b.py:h") == [(9, 0, 9, 1)]
    assert frozen.sites("a.py:f", "b.py:g") == [(1, 2, 1, 5)]
    assert graph.sites("a.py:f", "b.py:nothing") == []
