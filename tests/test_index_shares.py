"""Resolution split across processes gives the graph one process gives.

Real code: a slice of this interpreter's standard library, resolved in one
process, with a forked worker (the CLI), with a spawned one (a process that runs
threads: the language server) and with a worker that dies mid-build.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sysconfig
import threading
from pathlib import Path

import pytest
from support.processes import children

from anchor_ls.index import Index, shares
from anchor_ls.index import workers as parse_workers
from anchor_ls.index.binder import Binder
from anchor_ls.index.state import Function
from anchor_ls.syntax.parse import summarize

pytestmark = pytest.mark.slow

STDLIB = Path(sysconfig.get_paths()["stdlib"])
PACKAGES = ["asyncio", "email", "json", "logging", "importlib", "unittest", "xml"]
EXCLUDE = sorted(
    [name for name in os.listdir(STDLIB) if name not in PACKAGES] + ["*/test/*", "*/tests/*"]
)


def build(cache: Path, workers: int, seen: set[int] | None = None) -> str:
    """The graph as JSON; seen collects the child processes alive while resolving."""

    def progress(done: int, total: int, _rel: str) -> None:
        if seen is not None and done > total // 2:  # the resolution half of the progress
            seen.update(children())

    index = Index(STDLIB, cache_dir=cache, exclude=EXCLUDE, workers=workers)
    index.build(progress)
    index.close()
    return json.dumps(index.graph.to_json(), sort_keys=True)


@pytest.fixture(scope="module")
def alone(tmp_path_factory: pytest.TempPathFactory) -> str:
    graph = build(tmp_path_factory.mktemp("alone"), workers=1)
    assert len(json.loads(graph)["edges"]) > 5000
    return graph


def test_the_slice_is_split(alone: str) -> None:
    files = {e["path"] for e in json.loads(alone)["entities"]}
    assert len(files) >= 2 * shares.MIN_FILES


def test_a_forked_worker_gives_the_same_graph(alone: str, tmp_path: Path) -> None:
    seen: set[int] = set()
    assert threading.active_count() == 1  # else the index would spawn, not fork
    assert build(tmp_path, workers=2, seen=seen) == alone
    assert seen, "no worker process was running while resolving"


def test_a_spawned_worker_gives_the_same_graph(
    alone: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parse_workers, "SERVED_MIN_FILES", 1)  # spawn even for this slice
    out: list[str] = []
    seen: set[int] = set()
    # Built from a second thread, as the server does: no fork in a threaded process.
    worker = threading.Thread(target=lambda: out.append(build(tmp_path, 2, seen)))
    worker.start()
    worker.join()
    assert out == [alone]
    assert seen, "no worker process was running while resolving"


def _dies(*_args: object) -> bytes:
    os._exit(3)


def test_a_worker_that_dies_costs_time_not_facts(
    alone: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shares, "_runs", _dies)
    assert build(tmp_path, workers=2) == alone


def test_a_run_both_processes_take_costs_time_not_facts(
    alone: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs are taken without a lock, so two processes can take the same one. Here they
    take every one: the worker from the shared bounds, which this process leaves alone."""
    here, mine = os.getpid(), iter(())
    claim, resolve, split = shares._claim, shares.Shares.resolve, shares.split

    def every_run(bounds: object, from_back: bool) -> int | None:
        return claim(bounds, from_back) if os.getpid() != here else next(mine, None)

    def a_round(self: shares.Shares, todo: dict, *args: object) -> list:
        nonlocal mine
        mine = iter(range(len(split(todo, self.binder.summaries))))
        return resolve(self, todo, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(shares, "_claim", every_run)
    monkeypatch.setattr(shares.Shares, "resolve", a_round)
    assert build(tmp_path, workers=2) == alone


SOURCES = {"a.py": b"def f():\n    g()\n\n\ndef g():\n    pass\n", "b.py": b"import a\na.f()\n"}
CALLS = {"a.py": {(1, "call"): {Function("a.py", 2)}}, "b.py": {(0, "call"): {Function("a.py", 1)}}}


def calls_of(resolved: list) -> dict[str, dict[tuple[int, str], set]]:
    return {rel: {k: set(v) for k, v in facts.calls.items()} for rel, facts, _c in resolved}


def small_binder() -> Binder:
    binder = Binder()
    binder.set_files({rel: summarize(rel, data) for rel, data in SOURCES.items()}, "repo")
    return binder


def test_a_worker_outlives_rounds_too_small_to_split() -> None:
    """Its share of a small round is empty, and it still learns the round's facts."""
    with shares.Shares(small_binder(), multiprocessing.get_context("fork"), None) as rounds:
        for _ in range(3):
            resolved = rounds.resolve(dict.fromkeys(sorted(SOURCES)), {})
            assert calls_of(resolved) == CALLS
            rounds.learn([("b.py", {})], set())
        assert rounds.pools[1] is not None, "the worker was dropped"


PASSING = {
    "a_use.py": b"from b_lib import Job, run, same\nrun(Job())\nsame(Job())\n",
    "b_lib.py": b"def run(job):\n    job.go()\n\n\nclass Job:\n    def go(self):\n        pass\n"
    b"\n\ndef same(x):\n    return x\n",
}


def test_a_worker_resolves_with_the_facts_it_was_taught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Round one passes a Job to run() and to same(). Before it learns that, the worker
    evaluates what the two return (same() returned nothing then); round two resolves
    run() again, in the worker (b_lib.py is the second share), which must know what job
    is by then."""
    monkeypatch.setattr(shares, "MIN_FILES", 1)
    here, resolve_run, split = os.getpid(), shares._resolve_run, shares.split
    taken = multiprocessing.get_context("fork").Semaphore(0)  # a run the worker took
    runs: list[int] = []  # how many runs each round was cut into

    def counted(todo: dict, summaries: dict) -> list:
        runs.append(len(cut := split(todo, summaries)))
        return cut

    def after_the_worker_took_one(binder: Binder, run: dict, previous: dict) -> list:
        """Runs go to whichever process asks first: in a round of two, this one waits
        until the worker (a fork, patched too) says it took the other."""
        if os.getpid() != here:
            taken.release()
        elif runs[-1] > 1:
            assert taken.acquire(timeout=120), "the worker took no run"
        return resolve_run(binder, run, previous)

    monkeypatch.setattr(shares, "split", counted)

    monkeypatch.setattr(shares, "_resolve_run", after_the_worker_took_one)
    binder = Binder()
    binder.set_files({rel: summarize(rel, data) for rel, data in PASSING.items()}, "repo")
    run, same = ("b_lib.py", 1), ("b_lib.py", 4)
    with shares.Shares(binder, multiprocessing.get_context("fork"), None) as rounds:
        first = rounds.resolve(dict.fromkeys(sorted(PASSING)), {})
        facts = {rel: file_facts for rel, file_facts, _c in first}
        passed = sorted((rel, contrib) for rel, _facts, contrib in first)
        before = dict(binder.param_facts)
        grown = set().union(*(binder.set_contribution(rel, c) for rel, c in passed))
        assert grown == {run, same}
        evaluated = rounds.learn(passed, grown)
        assert binder.results_changed(grown, before, evaluated) == ({same}, {}, set())
        todo = {"a_use.py": {0}, "b_lib.py": {1}}
        assert shares.split(todo, binder.summaries) == [{"a_use.py": {0}}, {"b_lib.py": {1}}]
        again = rounds.resolve(todo, facts)
        assert rounds.pools[1] is not None, "the worker was dropped: this process resolved"
    assert calls_of(again)["b_lib.py"][(1, "call")] == {Function("b_lib.py", 3)}


def test_a_worker_that_cannot_start_leaves_the_work_here(tmp_path: Path) -> None:
    """A spawned worker reads the summaries from the cache; this one finds none there
    (another process rebuilt it), so every share is resolved in this process."""
    origin = (tmp_path / "empty-cache", dict.fromkeys(SOURCES, "0"), "repo", ())
    assert shares._binder_from_cache(*origin) is None
    with shares.Shares(small_binder(), multiprocessing.get_context("spawn"), origin) as rounds:
        assert rounds.pools == [None] * shares.SHARES
        resolved = rounds.resolve(dict.fromkeys(sorted(SOURCES)), {})
    assert calls_of(resolved) == CALLS
