"""Tasks into chains: one repository's tasks, ordered by commit, cut into runs of nearby
commits no longer than what keeps every worker busy."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

from anchor_ls.batch import gittree
from anchor_ls.batch.chain import Chain
from anchor_ls.batch.manifest import Task


def _commit_order(repo: str, tasks: list[Task]) -> list[Task]:
    """tasks in history order where this machine can read the repository (a chain orders
    its own tasks again on its worker; unknown commits go last, to fail there)."""
    try:
        shas = gittree.resolve(repo, [t.commit or "" for t in tasks])
        order = gittree.commit_order(repo, [s for s in shas.values() if s])
    except gittree.GitError:
        return tasks

    def key(task: Task) -> tuple[int, int, str, str]:
        sha = shas.get(task.commit or "")
        return (sha is None, order.get(sha or "", 0), sha or "", task.id)

    return sorted(tasks, key=key)


def chains(tasks: Sequence[Task], slots: int, chain_size: int | None = None) -> list[Chain]:
    """Chains of at most chain_size tasks (default: as many as fill `slots` workers,
    ceil(tasks / slots)), longest first so that the long ones start first."""
    by_repo: dict[tuple[str, str | None], list[Task]] = {}
    single: list[Chain] = []
    for task in tasks:
        if task.repo is None:
            single.append(Chain(f"source:{task.id}", (task,)))
        else:  # a chain keeps one index: one environment
            by_repo.setdefault((os.path.realpath(task.repo), task.python), []).append(task)
    limit = chain_size or max(1, math.ceil(len(tasks) / max(1, slots)))
    out: list[Chain] = []
    for (repo, python), items in by_repo.items():
        ordered = _commit_order(repo, items) if gittree.repository_problem(repo) is None else items
        parts = math.ceil(len(ordered) / limit)
        size = math.ceil(len(ordered) / parts)  # even parts: 9 in 2 is 5 + 4, not 8 + 1
        for n, start in enumerate(range(0, len(ordered), size)):
            key = f"{repo}#{n}" if python is None else f"{repo}@{python}#{n}"
            out.append(Chain(key, tuple(ordered[start : start + size])))
    out.extend(single)
    out.sort(key=lambda c: -len(c.tasks))
    return out
