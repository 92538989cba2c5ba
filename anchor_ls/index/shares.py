"""Resolution rounds split in shares of the files, one per core.

The binder memoizes values as it goes, and a value met again inside its own
evaluation (a cycle) is cut short there, so what a file resolves to can depend on
what was evaluated before it. Every share of every round therefore starts from
the same state (the argument facts of the rounds before, every cache empty), and
the shares are cut by a rule that sees only the round's files; whether a share
runs in a worker or here after the others, the graph does not depend on how many
cores there are, and it is the same from run to run.
"""

from __future__ import annotations

import gc
import pickle
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing.context import BaseContext
from pathlib import Path

from anchor_ls.index.binder import Binder
from anchor_ls.index.cache import Cache
from anchor_ls.index.state import FileFacts
from anchor_ls.syntax.summary import FileSummary

SHARES = 2
FORGET_EVERY = 250  # files: what a share evaluated is the bulk of a build's peak memory
MIN_FILES = 64  # below this one share: a second process would cost more than it saves
# What a file costs before its first line, in lines: its bodies read, its facts sent and
# back. A later round resolves a few scopes of each file; split by lines alone, the share
# of many small test files took Django's worker 40% longer than this process its share.
FILE_LINES = 150

# (relpath, facts, argument values the file passes)
Resolved = tuple[str, FileFacts, dict]
# What to resolve this round: relpath -> the scopes, or None for the whole file
Todo = dict[str, set[int] | None]
# Where a fresh interpreter finds the summaries: (cache folder, relpath -> hash, root name)
Origin = tuple[Path, dict[str, str], str]

_forked: Binder | None = None  # the parent's binder, inherited by forked workers
_worker: Binder | None = None  # a worker's binder: the parent's, kept up to date


def split(todo: Todo, summaries: Mapping[str, FileSummary]) -> list[Todo]:
    """todo (sorted) cut into SHARES runs of about equal work (neighbours share caches),
    or kept whole when a second process would cost more than it saves."""
    if len(todo) < MIN_FILES:
        return [todo]
    weights = {rel: _lines(summaries[rel], scopes) + FILE_LINES for rel, scopes in todo.items()}
    total = sum(weights.values()) or 1
    shares: list[Todo] = [{}]
    done = 0
    for rel, scopes in todo.items():
        if len(shares) < SHARES and done >= total * len(shares) / SHARES:
            shares.append({})
        shares[-1][rel] = scopes
        done += weights[rel]
    return shares


def _lines(summary: FileSummary, scopes: set[int] | None) -> int:
    """Lines of the scopes' own bodies (what nested scopes span is theirs)."""
    spans = [s.end_line - s.line + 1 for s in summary.scopes]
    for scope in summary.scopes[1:]:
        spans[scope.parent] -= scope.end_line - scope.line + 1
    chosen = range(len(spans)) if scopes is None else scopes
    return sum(max(1, spans[i]) for i in chosen)


class Shares:
    """The first share of a round is resolved in this process, each other one in a
    worker; a share whose worker cannot run (no processes, no cache to start from, a
    crash) is resolved here after the others, from the same state."""

    def __init__(self, binder: Binder, context: BaseContext | None, origin: Origin | None):
        global _forked
        self.binder = binder
        binder.warm()
        binder.clear_caches()
        self.pools: list[ProcessPoolExecutor | None] = [None] * SHARES
        self._learning: list[Future | None] = [None] * SHARES
        fork = context is not None and context.get_start_method() == "fork"
        if context is None or SHARES == 1 or not (fork or origin is not None):
            return
        _forked = binder if fork else None
        try:
            for i in range(1, SHARES):
                pool = ProcessPoolExecutor(1, mp_context=context)
                self.pools[i] = pool
                pool.submit(_start, None if fork else origin).result()
        except Exception:  # no processes here: this process resolves every share
            self.close()
        finally:
            _forked = None

    def resolve(
        self,
        todo: Todo,
        facts: dict[str, FileFacts],
        on_file: Callable[[str], None] | None = None,
    ) -> list[Resolved]:
        """Resolve todo (sorted)."""
        parts = split(todo, self.binder.summaries)
        futures: list[Future | None] = [None] * SHARES
        for i, part in enumerate(parts):
            if not self._learnt(i) or (pool := self.pools[i]) is None:
                continue
            partial = [rel for rel, sc in part.items() if sc is not None]
            previous = {rel: facts[rel] for rel in partial}
            # the scopes not resolved again keep passing what they passed, wherever the
            # file was resolved before: this process holds every file's (see adopt)
            known = self.binder.scope_contributions(
                [rel for rel in partial if self.binder.knows_scopes(rel)]
            )
            try:
                futures[i] = pool.submit(_round, part, previous, known)
            except Exception:
                self._drop(i)
        out: list[Resolved] = []
        for i, part in enumerate(parts):
            got = self._result(i, futures[i])
            if got is None:
                for n, (rel, scopes) in enumerate(part.items(), 1):
                    out.append((rel, *self.binder.resolve_file(rel, scopes, facts.get(rel))))
                    if on_file:
                        on_file(rel)
                    if n % FORGET_EVERY == 0:
                        self.binder.forget_values()
                # the next share starts from empty caches, and the workers' results are
                # not loaded on top of what this one evaluated (the build's peak)
                self.binder.forget_values()
                continue
            resolved_there, per_scope = got
            self.binder.adopt(per_scope)
            out.extend(resolved_there)
            if on_file:
                for rel, *_ in resolved_there:
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
        return lambda: None if before is None else self._result(*before)

    def _learnt(self, i: int) -> bool:
        """Whether worker i learnt what it was taught (else it is dropped)."""
        future, self._learning[i] = self._learning[i], None
        try:
            if future is not None:
                future.result()
        except Exception:
            self._drop(i)
        return self.pools[i] is not None

    def _result(self, i: int, future: Future | None) -> tuple | None:
        if future is None:
            return None
        try:
            return pickle.loads(future.result())
        except Exception:  # the worker died: its share is resolved here from now on
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


def _round(
    todo: Todo,
    previous: dict[str, FileFacts],
    known: dict[str, dict[int, dict]],
) -> bytes:
    binder = _worker
    assert binder is not None
    binder.forget_values()
    binder.adopt(known)
    out = []
    for n, (rel, scopes) in enumerate(todo.items(), 1):
        out.append((rel, *binder.resolve_file(rel, scopes, previous.get(rel))))
        if n % FORGET_EVERY == 0:
            binder.forget_values()
    per_scope = binder.scope_contributions(todo)
    return pickle.dumps((out, per_scope), protocol=pickle.HIGHEST_PROTOCOL)


def _binder_from_cache(folder: Path, hashes: dict[str, str], root_name: str) -> Binder | None:
    """The parent's binder as it stood before the first round: same summaries, tables."""
    cache = Cache(folder)
    try:
        blobs = cache.summaries(hashes)
    finally:
        cache.close()
    if len(blobs) != len(hashes):
        return None
    binder = Binder()
    binder.set_files({rel: pickle.loads(blob) for rel, blob in blobs.items()}, root_name)
    binder.warm()
    binder.clear_caches()
    return binder
