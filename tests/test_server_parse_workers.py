"""Parse workers in a process that runs threads (the language server's situation).

They run at a lower priority there: the server's own threads answer an editor.

Forking a threaded process can leave the child waiting forever on a lock another
thread held, so there the index starts its workers from a fork server. The graph
must be the same as when everything is parsed in one process.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import threading
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from support.processes import children
from support.repos import FILES, write_repo

from anchor_ls.index import Index
from anchor_ls.index.workers import BACKGROUND_NICE, background_initializer
from anchor_ls.syspath import start_children_safe


def build(root: Path, workers: int) -> tuple[str, list[tuple[str, str]]]:
    index = Index(root, use_cache=False, workers=workers)
    index.build()
    problems = sorted((p.path, p.kind) for p in index.problems.values())
    return json.dumps(index.graph.to_json(), sort_keys=True), problems


def test_workers_of_a_threaded_process_give_the_same_graph(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write_repo(root)
    alone = build(root, workers=1)
    seen: set[int] = set()
    stop = threading.Event()

    def watch() -> None:  # a thread, as the server has, that sees the workers come and go
        while not stop.wait(0.01):
            seen.update(children())

    before = children()
    other = threading.Thread(target=watch, daemon=True)
    other.start()
    try:
        parallel = build(root, workers=2)
    finally:
        stop.set()
        other.join()
    assert seen - before, "no worker process was started"
    assert parallel == alone
    graph = json.loads(alone[0])
    assert len([e for e in graph["entities"] if e["kind"] == "class"]) == FILES + 1
    assert ("pkg/broken.py", "syntax") in alone[1]


def test_workers_started_beside_threads_run_at_a_lower_priority() -> None:
    """A language server's readers (and its glimpses) get a core before its build's
    workers; a forked worker (the CLI's) keeps its parent's priority."""
    context = multiprocessing.get_context("spawn")
    start_children_safe()
    with ProcessPoolExecutor(
        1, mp_context=context, initializer=background_initializer(context)
    ) as pool:
        assert pool.submit(os.nice, 0).result() == min(19, os.nice(0) + BACKGROUND_NICE)
    assert background_initializer(multiprocessing.get_context("fork")) is None
