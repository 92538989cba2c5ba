"""Chains as Ray tasks (the optional extra `anchor-ls[ray]`): one streaming task per chain,
its results coming back to the driver as each task of the chain ends.

Workers start with PYTHONSAFEPATH=1 (the runtime environment of the
job), so that the graph is the one the CLI makes. Ray itself puts the driver's working
folder first on every worker's sys.path (and runs a local cluster's workers there), so the
driver starts Ray from an empty folder of its own; a chain also drops the working folder
from sys.path before it imports anything more. Outputs go to --out, which every worker
must see at the same path (a shared file system on a cluster), as it must see the
repositories of its tasks.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from anchor_ls.batch import plan
from anchor_ls.batch.chain import Chain, Settings, failed
from anchor_ls.batch.manifest import Task

Deliver = Callable[[dict[str, Any]], None]
RUNTIME_ENV = {"env_vars": {"PYTHONSAFEPATH": "1"}}
_GRACE = 30.0  # seconds interrupted chains have to clean up


class RayMissing(Exception):
    """Ray is not installed, or none could be started or joined (a refused run)."""


def _ray_chain(chain: Chain, settings: Settings) -> Iterator[dict[str, Any]]:
    from anchor_ls.syspath import keep_repository_off_path

    keep_repository_off_path()
    from anchor_ls.batch.chain import run_chain

    yield from run_chain(chain, settings)


def _stop(ray: Any, streams: list[Any]) -> None:
    """Interrupt the running chains (each cleans up what its task was writing, as a pool
    worker does) and wait a while for them to end before the cluster is let go."""
    for stream in streams:
        with contextlib.suppress(Exception):
            ray.cancel(stream)
    deadline = time.monotonic() + _GRACE
    for stream in streams:
        with contextlib.suppress(Exception):
            while time.monotonic() < deadline:
                ray.get(next(stream), timeout=max(0.1, deadline - time.monotonic()))


def run_ray(
    tasks: Sequence[Task],
    settings: Settings,
    address: str | None,
    deliver: Deliver,
    *,
    num_cpus: int | None = None,
    chain_size: int | None = None,
) -> None:
    """Run every task on Ray (a local one when address is None, else the cluster there,
    `auto` for the one this machine belongs to), in chains cut for the cluster's CPUs;
    deliver(result) once per task."""
    try:
        import ray
    except ImportError:
        raise RayMissing("--ray needs Ray: pip install 'anchor-ls[ray]'") from None
    # Ray puts the driver's working folder on every worker's sys.path, and a local cluster
    # runs its workers there: both get an empty folder of ours instead.
    neutral = tempfile.mkdtemp(prefix="anchor-ls-ray-")
    here = os.getcwd()
    os.chdir(neutral)
    try:
        if address is None:
            ray.init(
                num_cpus=num_cpus,
                include_dashboard=False,
                runtime_env=RUNTIME_ENV,
                log_to_driver=False,
            )
        else:
            ray.init(address=address, runtime_env=RUNTIME_ENV, log_to_driver=False)
    except Exception as err:  # no cluster at `auto` or ADDRESS, a local one that fails
        shutil.rmtree(neutral, ignore_errors=True)
        where = "start a local Ray" if address is None else f"join the Ray cluster at {address}"
        raise RayMissing(f"--ray: could not {where}: {type(err).__name__}: {err}") from None
    finally:
        os.chdir(here)
    seen: set[str] = set()

    def give(result: dict[str, Any]) -> None:
        if result["id"] not in seen:
            seen.add(result["id"])
            deliver(result)

    running: dict[Any, Chain] = {}  # an interrupt while chains are planned stops none
    try:
        slots = int(ray.cluster_resources().get("CPU", 1))
        chains = plan.chains(tasks, slots, chain_size)
        remote = ray.remote(num_cpus=1, max_retries=0)(_ray_chain)
        running = {
            remote.options(num_returns="streaming").remote(chain, settings): chain
            for chain in chains
        }
        while running:
            ready, _ = ray.wait(list(running), num_returns=1, timeout=1.0)
            for stream in ready:
                chain = running[stream]
                try:
                    give(ray.get(next(stream)))
                    continue
                except StopIteration:
                    error = "the chain ended without a result"
                except Exception as err:  # a worker lost, a task error: the chain's rest fails
                    error = f"ray task failed: {type(err).__name__}: {err}"
                del running[stream]
                for task in chain.tasks:
                    give(failed(task, error))
    except BaseException:
        _stop(ray, list(running))
        raise
    finally:
        ray.shutdown()
        shutil.rmtree(neutral, ignore_errors=True)
