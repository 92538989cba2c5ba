"""Resolution rounds run in runs of the files, taken in turn by this process and a worker.

The binder memoizes values as it goes, and a value met again inside its own
evaluation (a cycle) is cut short there, so what a file resolves to can depend on
what was evaluated before it. Every run of every round therefore starts from the
same state (the argument facts of the rounds before, every cache empty), and the
runs are cut by a rule that sees only the round's files; whichever process takes
a run, here or in a worker, and whenever, the graph does not depend on how many
cores there are, and it is the same from run to run.

This process takes runs from the front, the worker from the back, each the next
one when it is done with the last: a core that the machine slows down (a shared
one) takes fewer, instead of leaving the other waiting at the end of a round.
"""

from __future__ import annotations

import ctypes
import gc
import pickle
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing.context import BaseContext
from pathlib import Path
from typing import Any

from anchor_ls.index.binder import Binder
from anchor_ls.index.cache import Cache
from anchor_ls.index.state import FileFacts
from anchor_ls.index.workers import background_initializer
from anchor_ls.syntax.summary import FileSummary

SHARES = 2  # processes: this one and a worker
# Where a round's runs end, as shares of its work: two large ones at the ends, two
# smaller ones in the middle, where the processes meet (where their speeds put them: on
# a shared machine one can run a quarter slower than the other). A process that finishes
# its last run waits at most for one of those (with two halves, this process waited
# 0.5-0.8 s of django/'s 1.5 s first round). Each run starts from empty caches: on
# django/ these four resolve 2.6% more values than two halves, twelve runs 8.7% more.
CUTS = (7 / 16, 1 / 2, 9 / 16)
FORGET_EVERY = 250  # files: what a run evaluated is the bulk of a build's peak memory
MIN_FILES = 64  # below this one run: a second process would cost more than it saves
# What a file costs before its first line, in lines: its bodies read, its facts sent and
# back (measured on django/, the stdlib and Django: about nothing next to its lines).
FILE_LINES = 10

# (relpath, facts, argument values the file passes)
Resolved = tuple[str, FileFacts, dict]
# What to resolve this round: relpath -> the scopes, or None for the whole file
Todo = dict[str, set[int] | None]
# Where a fresh interpreter finds the summaries: (cache folder, relpath -> hash, root name,
# source roots)
Origin = tuple[Path, dict[str, str], str, tuple[str, ...]]

_forked: Binder | None = None  # the parent's binder, inherited by forked workers
_worker: Binder | None = None  # a worker's binder: the parent's, kept up to date
_claims: Any = None  # a worker's end of the shared bounds of the runs left


def split(todo: Todo, summaries: Mapping[str, FileSummary]) -> list[Todo]:
    """todo (sorted) cut into runs of neighbours (they share caches) at the CUTS of its
    work, or kept whole when a second process would cost more than it saves."""
    if len(todo) < MIN_FILES:
        return [todo]
    weights = {rel: _lines(summaries[rel], scopes) + FILE_LINES for rel, scopes in todo.items()}
    total = sum(weights.values()) or 1
    ends = [total * cut for cut in CUTS]
    runs: list[Todo] = [{}]
    done = 0
    for rel, scopes in todo.items():
        if ends and done >= ends[0]:
            runs.append({})
            while ends and done >= ends[0]:  # a file larger than a run: one run for it
                ends.pop(0)
        runs[-1][rel] = scopes
        done += weights[rel]
    return runs


def _lines(summary: FileSummary, scopes: set[int] | None) -> int:
    """Lines of the scopes' own bodies (what nested scopes span is theirs)."""
    spans = [s.end_line - s.line + 1 for s in summary.scopes]
    for scope in summary.scopes[1:]:
        spans[scope.parent] -= scope.end_line - scope.line + 1
    chosen = range(len(spans)) if scopes is None else scopes
    return sum(max(1, spans[i]) for i in chosen)


def _claim(bounds: Any, from_back: bool) -> int | None:
    """The number of the next run a process takes, or None: this process takes them
    from the front, workers from the back, so that each resolves neighbours (they share
    caches) and they meet where their speeds put them. bounds: [first, end) of the runs
    nobody took. Without a lock (a process that dies holding one would stop the others):
    two processes that ask at the same instant can take one run both, which costs time,
    never a run or its facts."""
    first, end = bounds[0], bounds[1]
    if first >= end:
        return None
    if from_back:
        bounds[1] = end - 1
        return end - 1
    bounds[0] = first + 1
    return first


def _resolve_run(binder: Binder, run: Todo, previous: Mapping[str, FileFacts]) -> list[Resolved]:
    """One run, from empty caches (and again every FORGET_EVERY files of it)."""
    binder.forget_values()
    out = []
    for n, (rel, scopes) in enumerate(run.items(), 1):
        out.append((rel, *binder.resolve_file(rel, scopes, previous.get(rel))))
        if n % FORGET_EVERY == 0:
            binder.forget_values()
    # what it evaluated goes before the next run, or before a worker's results are loaded
    # on top of it (the build's peak)
    binder.forget_values()
    return out


class Shares:
    """This process and the workers take a round's runs in turn; runs a worker took but
    did not give back (no processes, no cache to start from, a crash) are resolved here
    after the others, from the same state."""

    def __init__(self, binder: Binder, context: BaseContext | None, origin: Origin | None):
        global _forked
        self.binder = binder
        binder.warm()
        binder.clear_caches()
        self.pools: list[ProcessPoolExecutor | None] = [None] * SHARES
        self._learning: list[Future | None] = [None] * SHARES
        self._claims: Any = (ctypes.c_int * 2)()
        fork = context is not None and context.get_start_method() == "fork"
        if context is None or SHARES == 1 or not (fork or origin is not None):
            return
        _forked = binder if fork else None
        try:
            self._claims = context.RawArray("i", 2)
            for i in range(1, SHARES):
                pool = ProcessPoolExecutor(
                    1,
                    mp_context=context,
                    initializer=_share_claims,
                    initargs=(self._claims, background_initializer(context)),
                )
                self.pools[i] = pool
                pool.submit(_start, None if fork else origin).result()
        except Exception:  # no processes here: this process resolves every run
            self.close()
            self._claims = (ctypes.c_int * 2)()
        finally:
            _forked = None

    def resolve(
        self,
        todo: Todo,
        facts: dict[str, FileFacts],
        on_file: Callable[[str], None] | None = None,
    ) -> list[Resolved]:
        """Resolve todo (sorted)."""
        runs = split(todo, self.binder.summaries)
        # the first run is this process's (it would take it first anyway), and nothing
        # of it is sent to the workers
        self._claims[0], self._claims[1] = 1, len(runs)
        futures: list[Future | None] = [None] * SHARES
        if len(runs) > 1:
            # a worker resolves the scopes of these alone, and this process puts what it
            # found in the file's facts (sent whole, they cost more than the work)
            partial = [
                rel
                for run in runs[1:]
                for rel, sc in run.items()
                if sc is not None and rel in facts
            ]
            # the scopes not resolved again keep passing what they passed, wherever the
            # file was resolved before: this process holds every file's (see adopt)
            known = self.binder.scope_contributions(
                [rel for rel in partial if self.binder.knows_scopes(rel)]
            )
            # pickled now: resolving a run here changes the values it holds
            job = pickle.dumps(([{}, *runs[1:]], partial, known), pickle.HIGHEST_PROTOCOL)
            for i in range(1, SHARES):
                if self._learnt(i) and (pool := self.pools[i]) is not None:
                    try:
                        futures[i] = pool.submit(_runs, job)
                    except Exception:
                        self._drop(i)
        done = {0: self._run_here(runs[0], facts, on_file)}
        while (n := _claim(self._claims, from_back=False)) is not None:
            done[n] = self._run_here(runs[n], facts, on_file)
        for i, future in enumerate(futures):
            for n, blob in self._result(i, future) or ():
                resolved, per_scope = pickle.loads(blob)
                self.binder.adopt(per_scope)
                done[n] = [_whole(facts, runs[n], *got) for got in resolved]
                if on_file:
                    for rel, *_ in resolved:
                        on_file(rel)
        for n, run in enumerate(runs):
            if n not in done:  # its worker died with it
                done[n] = self._run_here(run, facts, on_file)
        return [resolved for n in range(len(runs)) for resolved in done[n]]

    def _run_here(
        self, run: Todo, facts: dict[str, FileFacts], on_file: Callable[[str], None] | None
    ) -> list[Resolved]:
        out = _resolve_run(self.binder, run, facts)
        if on_file:
            for rel, *_ in out:
                on_file(rel)
        return out

    def learn(
        self, passed: list[tuple[str, dict]], fns: set[tuple[str, int]]
    ) -> Callable[[], dict | None]:
        """The workers learn the argument facts set since the last round (this process's
        binder has them already) while this process decides what to resolve again. The
        first one evaluates binder.results(fns) before, under the facts it still has:
        the other side of results_changed. Returns a getter of that (None if it failed)."""
        before: tuple[int, Future] | None = None
        for i in range(SHARES):
            if self._learnt(i) and (pool := self.pools[i]) is not None:
                try:
                    if before is None:
                        before = (i, pool.submit(_results, fns))
                    self._learning[i] = pool.submit(_learn, passed)
                except Exception:
                    self._drop(i)

        def evaluated() -> dict | None:
            blob = None if before is None else self._result(*before)
            return None if blob is None else pickle.loads(blob)

        return evaluated

    def _learnt(self, i: int) -> bool:
        """Whether worker i learnt what it was taught (else it is dropped)."""
        future, self._learning[i] = self._learning[i], None
        try:
            if future is not None:
                future.result()
        except Exception:
            self._drop(i)
        return self.pools[i] is not None

    def _result(self, i: int, future: Future | None) -> Any:
        """What worker i gave back, or None (it died: its runs are resolved here from
        now on)."""
        if future is None:
            return None
        try:
            return future.result()
        except Exception:
            self._drop(i)
            return None

    def _drop(self, i: int) -> None:
        pool, self.pools[i] = self.pools[i], None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        for i in range(len(self.pools)):
            pool, self.pools[i] = self.pools[i], None
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> Shares:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _whole(
    facts: dict[str, FileFacts], run: Todo, rel: str, found: FileFacts, passed: dict
) -> Resolved:
    """A file a worker resolved: what it found for the scopes it resolved alone, put in
    the file's facts."""
    scopes = run[rel]
    if scopes is None or rel not in facts:
        return rel, found, passed
    facts[rel].replace_scopes(scopes, found)
    return rel, facts[rel], passed


def _share_claims(bounds: Any, then: Callable[[], None] | None) -> None:
    """A worker's initializer: the bounds of the runs left, shared by the processes; then
    what starts any worker of its kind (workers.background_initializer)."""
    global _claims
    _claims = bounds
    if then is not None:
        then()


def _start(origin: Origin | None) -> None:
    """In a worker: take the parent's binder (forked) or build the same one (spawned)."""
    global _worker
    gc.disable()  # short-lived: the binder's tables are acyclic and freed on exit
    _worker = _forked if origin is None else _binder_from_cache(*origin)
    if _worker is None:
        raise RuntimeError("no binder to start from")


def _results(fns: set[tuple[str, int]]) -> bytes:
    binder = _worker
    assert binder is not None
    return pickle.dumps(binder.results(fns), protocol=pickle.HIGHEST_PROTOCOL)


def _learn(passed: list[tuple[str, dict]]) -> None:
    binder = _worker
    assert binder is not None
    for rel, contrib in passed:
        binder.set_contribution(rel, contrib)


def _runs(job: bytes) -> list[tuple[int, bytes]]:
    """In a worker: take runs until none is left. Each is pickled as soon as it is done,
    so that only the last one's pickling stands between the round and its end."""
    binder = _worker
    assert binder is not None
    runs, partial, known = pickle.loads(job)
    binder.adopt(known)
    previous = {rel: FileFacts() for rel in partial}
    done = []
    while (n := _claim(_claims, from_back=True)) is not None:
        resolved = _resolve_run(binder, runs[n], previous)
        per_scope = binder.scope_contributions([rel for rel, *_ in resolved])
        done.append((n, pickle.dumps((resolved, per_scope), protocol=pickle.HIGHEST_PROTOCOL)))
    return done


def _binder_from_cache(
    folder: Path, hashes: dict[str, str], root_name: str, roots: tuple[str, ...]
) -> Binder | None:
    """The parent's binder as it stood before the first round: same summaries, tables."""
    cache = Cache(folder)
    try:
        blobs = cache.summaries(hashes)
    finally:
        cache.close()
    if len(blobs) != len(hashes):
        return None
    binder = Binder()
    binder.set_files({rel: pickle.loads(blob) for rel, blob in blobs.items()}, root_name, roots)
    binder.warm()
    binder.clear_caches()
    return binder
