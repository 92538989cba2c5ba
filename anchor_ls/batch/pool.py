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
from typing import Any

from anchor_ls.batch.chain import Chain, Settings, failed, run_chain

Deliver = Callable[[dict[str, Any]], None]
_results: Any = None  # a worker's end of the queue
_PR_SET_PDEATHSIG = 1
_GRACE = 30.0  # seconds a stopped worker has to clean up before it is killed


_in_chain = False  # whether this worker is running a chain (else it waits for one)


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
    """Run every chain; deliver(result) in this thread, once per task."""
    if not chains:
        return
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    seen: set[str] = set()

    def give(result: dict[str, Any]) -> None:
        if result["id"] not in seen:
            seen.add(result["id"])
            deliver(result)

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
    try:
        running: dict[Future, Chain] = {
            pool.submit(_pool_chain, chain, settings): chain for chain in chains
        }
        while running:
            drain(0.2)
            finished, _ = wait(running, timeout=0, return_when=FIRST_COMPLETED)
            for future in finished:
                chain = running.pop(future)
                error = "the worker stopped without a result"
                try:
                    for result in future.result():  # the queue's copy may still be on its way
                        give(result)
                except Exception as err:
                    error = f"worker failed: {type(err).__name__}: {err}"
                for task in chain.tasks:
                    give(failed(task, error))
        drain(0)
    except BaseException:
        processes = list(getattr(pool, "_processes", {}).values())
        for process in processes:
            process.terminate()  # SIGTERM: each removes its partial output and scratch
        for process in processes:
            process.join(_GRACE)
            if process.is_alive():
                process.kill()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
