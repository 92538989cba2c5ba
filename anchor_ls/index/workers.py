"""Parse workers and the cyclic garbage collector around a build: how the files are
parsed by more than one process, and why the collector waits meanwhile."""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from multiprocessing.context import BaseContext

from anchor_ls.index.files import Problem
from anchor_ls.syntax.parse import summarize
from anchor_ls.syntax.source import UnreadableSource
from anchor_ls.syntax.summary import FileSummary, pack_bodies
from anchor_ls.syspath import start_children_safe

PARALLEL_MIN_FILES = 64
SERVED_MIN_FILES = 200  # spawning workers (about a second) is worth it from about here
# The niceness of workers started beside other threads (see background): CFS gives a
# nice-10 process a tenth of the time of a nice-0 one it competes with
BACKGROUND_NICE = 10


def summarize_many(
    jobs: list[tuple[str, bytes, int]],
    workers: int,
    *,
    packed: bool = True,
) -> Iterator[tuple[str, bytes | FileSummary | Problem]]:
    """Summaries of jobs (relpath, bytes, size limit), in order, parsed by `workers`
    processes when it pays: pickled, their bodies packed (pack_bodies); those parsed in
    this process as they are when not `packed` (a glimpse's few: pickling them, there and
    back, took a third of the time it took to parse them).

    The processes are forked only when this process runs one thread (the CLI): forking
    a threaded process (the language server) can leave a child waiting forever on a
    lock another thread held. There each starts as a fresh interpreter (spawn), which
    costs a start-up (so it pays only for more files) and leaves no process behind.
    The order of results is the order of jobs either way.
    """
    done = 0
    context = pool_context(len(jobs)) if workers > 1 else None
    if context is not None:
        try:
            with ProcessPoolExecutor(
                workers, mp_context=context, initializer=background_initializer(context)
            ) as pool:
                names = (job[0] for job in jobs)
                results = pool.map(summarize_job, jobs, chunksize=16)
                for rel, result in zip(names, results, strict=True):
                    yield rel, result
                    done += 1
            return
        except (OSError, RuntimeError):
            pass  # no processes here (or one died): parse the rest in this process
    for job in jobs[done:]:
        yield job[0], summarize_job(job) if packed else summarize_here(job)


@contextlib.contextmanager
def gc_paused(*, settle: bool = False) -> Iterator[None]:
    """Building allocates millions of small tuples and frees none: the cyclic GC only
    rescans them (measured: unpickling Django's summaries 9.4 s with it, 1.7 s without).

    settle: what was built lives as long as the index, so it goes to the collector's
    permanent generation; else the first full collection after it, which lands in some
    later edit, scans it all (measured: 1.0-1.4 s on Django). A new build first takes
    it back (the old index's objects may be garbage now).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    if settle:
        gc.unfreeze()
    try:
        yield
    finally:
        if settle:
            gc.freeze()
        if was_enabled:
            gc.enable()


def pool_context(files: int) -> BaseContext | None:
    """How to start parse workers for `files` files, or None to parse in this process.

    A started (not forked) worker is a fresh `python -c` in this process's working
    directory, often the repository: PYTHONSAFEPATH=1 in this process's environment, which
    the workers inherit, keeps that directory off their sys.path."""
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    if threading.active_count() == 1 and "fork" in methods:
        return multiprocessing.get_context("fork") if files >= PARALLEL_MIN_FILES else None
    if files < SERVED_MIN_FILES:
        return None
    for method in ("spawn", "forkserver"):
        if method in methods:
            start_children_safe()
            return multiprocessing.get_context(method)
    return None


def background_initializer(context: BaseContext) -> Callable[[], None] | None:
    """What starts a worker of context: at a lower priority when started (not forked), that
    is beside other threads, which answer someone (a language server's readers): a request
    answered in that process (a glimpse of a first build, server/glimpses.py) gets a core
    before the build's workers, which take the cores all the same when nothing else runs
    (clangd's background index runs at a low priority too). A forked worker (the CLI) keeps
    its parent's priority."""
    return None if context.get_start_method() == "fork" else background


def background() -> None:
    with contextlib.suppress(OSError):  # not allowed here: at the priority it has
        os.nice(BACKGROUND_NICE)


def prefetch_context(files: int) -> BaseContext | None:
    """How to start the process that reads library outlines ahead (index/prefetch.py):
    forked whenever this process runs one thread (it costs a few milliseconds), else as
    parse workers are."""
    import multiprocessing

    if multiprocessing.current_process().daemon:  # which may start no process
        return None
    if threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return pool_context(files)


def summarize_job(job: tuple[str, bytes, int]) -> bytes | Problem:
    gc.disable()  # a worker process: summaries are short-lived acyclic data
    summary = summarize_here(job)
    if isinstance(summary, Problem):
        return summary
    return pickle.dumps(pack_bodies(summary), protocol=pickle.HIGHEST_PROTOCOL)


def summarize_here(job: tuple[str, bytes, int]) -> FileSummary | Problem:
    rel, data, limit = job
    try:
        return summarize(rel, data, limit=limit)
    except UnreadableSource as err:
        return Problem(rel, err.kind, str(err))
    except RecursionError:
        return Problem(rel, "too-deep", "nesting too deep to read; skipped")
