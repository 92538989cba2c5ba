"""Chains on a local process pool: a result comes back through a queue as each task ends.

Workers are fresh interpreters (spawn): they get the program's sys.path, which holds
nothing of the working folder (see syspath), and its environment, PYTHONSAFEPATH
included. A worker that dies takes its chain's open tasks with it: they
are failed results, and the other chains go on.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import queue
import signal
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from anchor_ls.batch.chain import Chain, Settings, failed, run_chain

Deliver = Callable[[dict[str, Any]], None]
_results: Any = None  # a worker's end of the queue
_PR_SET_PDEATHSIG = 1
_GRACE = 30.0  # seconds a stopped worker has to clean up before it is killed


_in_chain = False  # whether this worker is running a chain (else it waits for one)
_STARTED = "started"  # the message a worker sends as it starts a chain: its key, its pid


def _stop(_signum: int, _frame: object) -> None:
    """A terminated worker cleans up what its chain was writing, then leaves."""
    if not _in_chain:
        os._exit(130)
    raise KeyboardInterrupt


def _start_worker(results: Any) -> None:
    global _results
    _results = results
    # Never wait at exit to flush results nobody reads (a stopped driver): the returned
    # list of each chain is what counts, the queue only shows progress sooner.
    results.cancel_join_thread()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C: the driver stops the workers
    signal.signal(signal.SIGTERM, _stop)
    _stop_with_driver()


def _stop_with_driver() -> None:
    """SIGTERM when the driver dies (killed, even with SIGKILL), where Linux can say so: a
    worker never waits on its queue forever."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _pool_chain(chain: Chain, settings: Settings) -> list[dict[str, Any]]:
    global _in_chain
    out = []
    _in_chain = True
    _results.put({_STARTED: chain.key, "pid": os.getpid()})
    results = run_chain(chain, settings)
    try:
        for result in results:
            _results.put(result)
            out.append(result)
    except KeyboardInterrupt:
        # Stopped (SIGTERM): clean up (closing the chain removes its scratch and what its
        # task was writing), then leave. Returning would hand the executor the exception
        # and this worker the next queued chain, run to the end after the driver said
        # "interrupted": whole snapshots that no result line records.
        results.close()
        os._exit(130)
    finally:
        _in_chain = False
    return out


def run_pool(chains: Sequence[Chain], settings: Settings, workers: int, deliver: Deliver) -> None:
    """Run every chain; deliver(result) in this thread, once per task.

    A worker that dies (killed for memory, a crash) breaks the whole process pool: every
    chain's future then fails, the other workers are stopped. The chain that worker ran
    (it says which when it starts one) fails its open tasks; the other chains' open tasks
    run again on a new pool."""
    if not chains:
        return
    context = multiprocessing.get_context("spawn")
    seen: set[str] = set()
    current: dict[int, str] = {}  # a worker's pid -> the key of the chain it last started

    def give(result: dict[str, Any]) -> None:
        if _STARTED in result:
            current[result["pid"]] = result[_STARTED]
        elif result["id"] not in seen:
            seen.add(result["id"])
            deliver(result)

    todo = list(chains)
    blind = 0  # pools broken with no chain to blame
    while todo:
        # a queue of its own: a worker killed while it wrote may leave the last one locked
        broken, exits = _run_pool_once(todo, settings, workers, context, give)
        todo = []
        guilty = {current.get(pid): code for pid, code in exits.items() if not _stopped(code)}
        blamed = False
        for chain in broken:
            open_tasks = tuple(t for t in chain.tasks if t.id not in seen)
            if not open_tasks:
                continue
            code = guilty.get(chain.key)
            if code is None and blind < 2:
                todo.append(Chain(chain.key, open_tasks))  # stopped with the pool: again
                continue
            blamed = True
            why = _death(code) if code is not None else "the process pool broke"
            for task in open_tasks:
                give(failed(task, f"the worker died ({why}) running this task's chain"))
        if todo and not blamed:
            blind += 1


def _stopped(code: int | None) -> bool:
    """Whether a worker's exit code is one of the pool's own stops (or a normal end)."""
    return code in (None, 0, 130, -signal.SIGTERM)


def _death(code: int) -> str:
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"signal {-code}, {signal.Signals(-code).name}"
        return f"signal {-code}"
    return f"exit code {code}"


def _run_pool_once(
    chains: Sequence[Chain],
    settings: Settings,
    workers: int,
    context: Any,
    give: Deliver,
) -> tuple[list[Chain], dict[int, int | None]]:
    """Run chains on one pool: (the chains a broken pool failed, each worker's exit code
    by pid; both empty when the pool did not break)."""
    results = context.Queue()

    def drain(block: float) -> None:
        try:
            give(results.get(timeout=block))
            while True:
                give(results.get_nowait())
        except queue.Empty:
            return

    pool = ProcessPoolExecutor(
        max(1, min(workers, len(chains))),
        mp_context=context,
        initializer=_start_worker,
        initargs=(results,),
    )
    processes: dict[int, Any] = {}
    broken: list[Chain] = []
    try:
        running: dict[Future, Chain] = {
            pool.submit(_pool_chain, chain, settings): chain for chain in chains
        }
        while running:
            drain(0.2)
            processes.update(getattr(pool, "_processes", None) or {})
            finished, _ = wait(running, timeout=0, return_when=FIRST_COMPLETED)
            for future in finished:
                chain = running.pop(future)
                error = "the worker stopped without a result"
                try:
                    for result in future.result():  # the queue's copy may still be on its way
                        give(result)
                except BrokenProcessPool:
                    broken.append(chain)
                    continue
                except Exception as err:
                    error = f"worker failed: {type(err).__name__}: {err}"
                for task in chain.tasks:
                    give(failed(task, error))
        drain(0)
    except BaseException:
        processes.update(getattr(pool, "_processes", None) or {})
        for process in processes.values():
            process.terminate()  # SIGTERM: each removes its partial output and scratch
        for process in processes.values():
            process.join(_GRACE)
            if process.is_alive():
                process.kill()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)  # a broken pool: its workers stopped (SIGTERM) and joined
    if not broken:
        return [], {}
    drain(0)  # what the workers said before the pool broke, the chains they started
    return broken, {pid: process.exitcode for pid, process in processes.items()}
