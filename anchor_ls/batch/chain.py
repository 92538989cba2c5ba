"""One worker's part of a batch: a chain of tasks, moved from snapshot to snapshot.

The tasks of one repository come ordered by commit. The first commit's tree is written
into a scratch folder (named like the repository, as the binder reads the root's name)
and indexed with the repository's cache on this machine; each next commit is reached by
writing only the paths `git diff-tree` names, and the index takes the files that changed
(agent.freshness, the engine the long-lived servers use; see INCREMENTAL_NOTE). Without
`incremental` it is built again instead, with the summaries of the unchanged files from
the cache (only the changed files are parsed). Each snapshot is written by `tag --out`'s
own code into a private folder under DIR/.partial and renamed to DIR/<id> when complete:
a crash or Ctrl-C never leaves a half-written DIR/<id>. A task whose DIR/<id> was made
from what its line no longer asks (Task.replace) swaps the old snapshot out the same way.

A step that fails (a missing commit, a timeout, an error) is a failed result; the chain
then starts again from nothing at its next task, as the index may be half-updated.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import json
import os
import resource
import secrets
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from anchor_ls.agent.freshness import Freshness
from anchor_ls.batch import gittree
from anchor_ls.batch.manifest import SNAPSHOT_FIELDS, Task
from anchor_ls.index import EnvironmentProblem, Index
from anchor_ls.index.files import exclude_patterns
from anchor_ls.index.roots import configures_roots
from anchor_ls.tags import commands
from anchor_ls.tags.apply import Reuse, TagError

PARTIAL = ".partial"  # DIR/.partial/: snapshots being written
GRAPH_FILE = "graph.json"
# INCREMENTAL_NOTE: a step hands the files it changed to Index.reload_files, the engine the
# server and mcp use: fewer than AFRESH_MIN_FILES take an update each (their dependents
# resolved again until argument flow settles, else every file), more are parsed and every
# file is resolved once from the summaries held, as a build does. On real histories (the
# last 40 commits of sphinx and of pytest) each step's snapshot held the bytes of a step
# built again (--no-incremental), for 0.2-0.6 s a step against 2-4 s; steps of many files
# (Django's point releases, 6 to 38 files) cost about one resolution of the repository
# either way. Cases remain where a settled update differs from a fresh build: a build stops
# after MAX_ROUNDS rounds of argument flow, and an update resolves its scopes with what the
# rounds had not yet carried there (see the reresolve docstring); --no-incremental, which
# builds at every step, never does.


@dataclass(frozen=True, slots=True)
class Settings:
    """What every chain of a run shares (picklable: it goes to pool and Ray workers)."""

    out: str  # the output folder, absolute
    graph: bool = False
    timeout: float | None = None  # seconds per task
    cache: str | None = None  # this machine's cache root (default: the user cache folder)
    work: str | None = None  # where scratch trees go (default: the system's temp folder)
    exclude: tuple[str, ...] = ()
    # Move the index from commit to commit with the files a step changed (INCREMENTAL_NOTE);
    # False: build it again from the cached summaries at each step.
    incremental: bool = True


# The options of a run that change what DIR/<id> holds (graph.json, the files indexed):
# recorded and compared with the SNAPSHOT_FIELDS of its line. The others (timeout, cache,
# work, workers, chain size, Ray) change how, not what; incremental is meant to write the
# same bytes (INCREMENTAL_NOTE) and is not compared either, or switching to
# --no-incremental to check a run would redo every task before it could check one.
SNAPSHOT_OPTIONS = ("graph", "exclude")


def made_with(task: Task, settings: Settings) -> dict[str, Any]:
    """What the snapshot of task is made with besides its origin: its line's
    SNAPSHOT_FIELDS (python as the run resolved it: the line's own or --python) and the
    run's SNAPSHOT_OPTIONS. The `made_with` of its `ok` line; exclude is written as the
    index reads it (./a/ is a; order and repeats do not count), so equal is the same."""
    record: dict[str, Any] = {name: getattr(task, name) for name in SNAPSHOT_FIELDS}
    record["graph"] = settings.graph
    record["exclude"] = sorted(set(exclude_patterns(settings.exclude)))
    assert set(record) == {*SNAPSHOT_FIELDS, *SNAPSHOT_OPTIONS}
    return record


@dataclass(frozen=True, slots=True)
class Chain:
    """Tasks one worker runs in turn: one repository's (or one source folder)."""

    key: str
    tasks: tuple[Task, ...]


class TaskTimeout(Exception):
    """The task ran past --timeout."""


def cache_folder(settings: Settings, where: str) -> Path:
    """The index cache of one repository on this machine: every chain of it (this run's,
    another worker's, the next run's) reads the file summaries the others stored."""
    root = Path(settings.cache or Path(platformdirs.user_cache_dir("anchor-ls")) / "batch")
    real = os.path.realpath(where)
    digest = hashlib.sha1(real.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return root / f"{_tree_name(real)}-{digest}"


def _tree_name(where: str) -> str:
    """The snapshot's folder name: the repository's (a bare `name.git` gives `name`, the
    `.git` folder of a work tree `name/.git` its work tree's name)."""
    path = Path(where)
    if path.name == ".git":
        path = path.parent
    name = path.name
    return name[:-4] if name.endswith(".git") and len(name) > 4 else name or "repo"


@contextlib.contextmanager
def _deadline(seconds: float | None) -> Iterator[None]:
    """TaskTimeout in this thread after seconds (only a main thread can be interrupted so:
    elsewhere, as in a threaded Ray actor, tasks run without a limit)."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(_signum: int, _frame: object) -> None:
        raise TaskTimeout(f"timed out after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _private_folder(parent: Path, ident: str) -> Path:
    """A new folder parent/<ident>.<random> with the mode the umask gives, as `tag --out`'s
    folders have (mkdtemp's is 0700: DIR/<id> was readable by its owner alone, on a
    shared file system too)."""
    while True:
        folder = parent / f"{ident}.{secrets.token_hex(4)}"
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        return folder


def _base(task: Task) -> dict[str, Any]:
    out: dict[str, Any] = {"id": task.id}
    if task.source is not None:
        out["source"] = task.source
    else:
        out["repo"], out["commit"] = task.repo, task.commit
    return out


def failed(task: Task, error: str, **extra: Any) -> dict[str, Any]:
    return {**_base(task), "status": "failed", "error": error, **extra}


class _Step:
    """The live state of a chain: the scratch tree, the commit it holds, its index."""

    def __init__(self, settings: Settings, scratch: Path) -> None:
        self.settings = settings
        self.scratch = scratch
        self.root: Path | None = None
        self.sha: str | None = None
        self.index: Index | None = None
        self.fresh: Freshness | None = None
        self.reuse = Reuse()  # the last snapshot written, for the next to copy from
        self.python: str | None = None  # the environment of the index (Task.python)

    def reset(self) -> None:
        self.reuse.forget()
        if self.index is not None:
            self.index.close()
        self.index = self.fresh = None
        self.sha = None
        if self.root is not None and self.root.exists():
            shutil.rmtree(self.root)

    def to_commit(self, repo: str, sha: str) -> tuple[str, int]:
        """Bring the scratch tree and its index to commit sha: ('full' | 'incremental' |
        'rebuilt', the Python files parsed or indexed again)."""
        if self.index is not None and self.fresh is not None and self.sha is not None:
            assert self.root is not None
            changed = gittree.move(repo, self.sha, sha, self.root)
            self.sha = sha
            if self.settings.incremental:  # a pyproject.toml, pytest.ini...: its roots
                return "incremental", len(self.fresh.sync([*filter(configures_roots, changed)]))
            self.fresh.build()  # the unchanged files' summaries come from the cache
            return "rebuilt", self.index.stats().reparsed
        self.reset()
        self.root = self.scratch / _tree_name(os.path.realpath(repo))
        gittree.materialize(repo, sha, self.root)
        self.index = Index(
            self.root,
            cache_dir=cache_folder(self.settings, repo),
            exclude=self.settings.exclude,
            workers=1,
            python=self.python,
        )
        self.fresh = Freshness(self.index, watch=False)
        self.fresh.build()
        self.sha = sha
        return "full", self.index.stats().reparsed


def _export(
    task: Task, index: Index, name: str, settings: Settings, reuse: Reuse | None = None
) -> dict[str, Any]:
    """Write DIR/<id> (the snapshot, graph.json with --graph) atomically; its figures."""
    out = Path(settings.out)
    final = out / task.id
    if final.exists() and not task.replace:
        raise FileExistsError(f"{final} appeared while this task ran (another run?)")
    partial_root = out / PARTIAL
    partial_root.mkdir(parents=True, exist_ok=True)
    partial = _private_folder(partial_root, task.id)
    try:
        snapshot = partial / name
        report = commands.export(
            index,
            snapshot,
            policy=task.policy,
            max_items=task.max_items,
            cross_file=task.cross_file,
            tests=task.tests,
            reuse=reuse,
        )
        tag_bytes = 0
        for rel in report.changed:
            tag_bytes += (snapshot / rel).stat().st_size - index.source_size(rel)
        if settings.graph:
            data = index.snapshot().graph.to_json()
            data["root"] = str(final / name)
            with open(partial / GRAPH_FILE, "w", encoding="utf-8") as handle:
                json.dump(data, handle)
                handle.write("\n")
        stats = index.stats()
        _into_place(partial, final, task.replace)  # the one step that makes the task done
    except BaseException:
        if reuse is not None:
            reuse.discard()
        shutil.rmtree(partial, ignore_errors=True)
        raise
    copied = reuse.copied if reuse is not None else 0
    if reuse is not None:
        reuse.advance(final / name)
    figures: dict[str, Any] = {
        "files": stats.files,
        "entities": stats.entities,
        "edges": sum(stats.edges.values()),
        "tagged_files": len(report.changed),
        "tag_bytes": tag_bytes,
        "copied_files": copied,  # Python files copied from the last snapshot, not rendered
        "policy": report.policy.name if report.policy else task.policy,
        "snapshot": f"{task.id}/{name}",
    }
    if stats.problems:  # files the index read badly or not at all, by kind
        figures["index_problems"] = stats.problems
    if report.problems:  # files the snapshot could not tag or copy (the first ones)
        figures["problems"] = report.problems[:20]
    return figures


def _into_place(partial: Path, final: Path, replace: bool) -> None:
    """Rename the complete snapshot `partial` to `final`. With `replace`, a snapshot at
    `final` is swapped out: exchanged in one step where the system can (Linux's
    renameat2), else moved aside first (for a moment there is no `final`, never a half
    one); the old one, now at `partial` or aside, is removed."""
    if not replace:
        os.rename(partial, final)
        return
    try:
        os.rename(partial, final)  # no snapshot there (or an empty folder) after all
        return
    except OSError as err:
        if err.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
    if _exchange(partial, final):
        shutil.rmtree(partial, ignore_errors=True)
        return
    aside = _private_folder(partial.parent, f"{final.name}.old")
    os.rename(final, aside / final.name)
    try:
        os.rename(partial, final)
    except BaseException:
        with contextlib.suppress(OSError):
            os.rename(aside / final.name, final)
        raise
    finally:
        shutil.rmtree(aside, ignore_errors=True)


_RENAME_EXCHANGE = 2  # linux/fs.h
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap the paths a and b in one step (Linux 3.15+, a file system that can); False
    where that cannot be done and nothing was changed."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2  # glibc 2.28+
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p]
    renameat2.argtypes += [ctypes.c_uint]
    done = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if done == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EXDEV):
        return False
    raise OSError(code, os.strerror(code), str(b))


def _one(task: Task, step: _Step, sha: str | None, settings: Settings) -> dict[str, Any]:
    start = time.perf_counter()
    with _deadline(settings.timeout):
        if task.source is not None:
            return _from_source(task, settings, start)
        assert task.repo is not None and sha is not None
        if task.python != step.python:  # another environment: another index
            step.reset()
            step.python = task.python
        how, reindexed = step.to_commit(task.repo, sha)
        assert step.index is not None and step.root is not None
        figures = _export(task, step.index, step.root.name, settings, step.reuse)
    seconds = round(time.perf_counter() - start, 3)
    return {
        **_base(task),
        "status": "ok",
        "sha": sha,
        "index": how,
        "reindexed": reindexed,
        **figures,
        "seconds": seconds,
        "made_with": made_with(task, settings),
    }


def _from_source(task: Task, settings: Settings, start: float) -> dict[str, Any]:
    assert task.source is not None
    root = Path(task.source)
    if not root.is_dir():
        raise NotADirectoryError(f"source {task.source}: no such folder")
    index = Index(
        root,
        cache_dir=cache_folder(settings, str(root)),
        exclude=settings.exclude,
        workers=1,
        python=task.python,
    )
    try:
        index.build()
        reindexed = index.stats().reparsed
        figures = _export(task, index, _tree_name(str(root.resolve())), settings)
    finally:
        index.close()
    return {
        **_base(task),
        "status": "ok",
        "index": "full",
        "reindexed": reindexed,
        **figures,
        "seconds": round(time.perf_counter() - start, 3),
        "made_with": made_with(task, settings),
    }


def _ordered(chain: Chain) -> tuple[list[dict[str, Any]], list[tuple[Task, str | None]]]:
    """(failed results of the tasks that cannot run: an unreadable repository, a missing
    commit; the others with their commits, in history order)."""
    repo_tasks = [t for t in chain.tasks if t.repo is not None]
    ready: list[tuple[Task, str | None]] = [(t, None) for t in chain.tasks if t.repo is None]
    if not repo_tasks:
        return [], ready
    repo = repo_tasks[0].repo
    assert repo is not None
    problem = gittree.repository_problem(repo)
    if problem is not None:
        return [failed(t, problem) for t in repo_tasks], ready
    try:
        shas = gittree.resolve(repo, [t.commit or "" for t in repo_tasks])
        order = gittree.commit_order(repo, [s for s in shas.values() if s])
    except gittree.GitError as err:
        return [failed(t, f"repository {repo}: {err}") for t in repo_tasks], ready
    bad: list[dict[str, Any]] = []
    found: list[tuple[int, str, Task]] = []
    for task in repo_tasks:
        sha = shas.get(task.commit or "")
        if sha is None:
            bad.append(failed(task, f"commit {task.commit!r} not found in {repo}"))
        else:
            found.append((order.get(sha, 0), sha, task))
    found.sort(key=lambda item: (item[0], item[1], item[2].id))
    return bad, ready + [(task, sha) for _when, sha, task in found]


def run_chain(chain: Chain, settings: Settings) -> Iterator[dict[str, Any]]:
    """The chain's results, one per task, each as soon as it is known. Closing the
    generator early (an interrupt) removes what the task under way had written."""
    worker = f"{socket.gethostname()}:{os.getpid()}"
    if settings.work:
        Path(settings.work).mkdir(parents=True, exist_ok=True)
    scratch: Path | None = None
    step: _Step | None = None
    try:  # made inside: an interrupt right after the scratch tree is made still removes it
        with _uninterrupted():  # and none between making it and knowing its name
            parent = settings.work or tempfile.gettempdir()
            _sweep_dead_scratch(parent)
            scratch = Path(tempfile.mkdtemp(prefix=_scratch_prefix(os.getpid()), dir=parent))
        step = _Step(settings, scratch)
        bad, ready = _ordered(chain)
        for result in bad:
            yield {**result, "worker": worker}
        for task, sha in ready:
            start = time.perf_counter()
            try:
                result = _one(task, step, sha, settings)
            except (Exception, TaskTimeout) as err:
                seconds = round(time.perf_counter() - start, 3)
                result = failed(task, _error_text(err), sha=sha, seconds=seconds)
                step.reset()
            yield {**result, "worker": worker, "worker_peak_mb": _peak_mb()}
    finally:
        with _uninterrupted():
            if step is not None:
                with contextlib.suppress(Exception):
                    step.reset()
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)


SCRATCH_PREFIX = "anchor-ls-batch-"


def _scratch_prefix(pid: int) -> str:
    """A scratch tree's name says the host and the worker that made it, so that another
    worker can tell it was left by a worker now dead."""
    host = "".join(c if c.isalnum() or c in "-." else "_" for c in socket.gethostname())
    return f"{SCRATCH_PREFIX}{host}-{pid}-"


def _sweep_dead_scratch(parent: str) -> None:
    """Remove the scratch trees that workers of this host left when they were killed (the
    OOM killer, kill -9: no cleanup runs then), each a whole repository's checkout: a long
    run on large repositories filled the disk with them. A tree whose worker is alive, or
    of another host or user, is left alone; a pid used again keeps its tree (never one
    in use removed)."""
    prefix = _scratch_prefix(0)[: -len("0-")]
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return
    me = os.getuid()
    for entry in entries:
        if not entry.name.startswith(prefix):
            continue
        pid_text = entry.name[len(prefix) :].partition("-")[0]
        try:
            if not pid_text.isdigit() or entry.stat(follow_symlinks=False).st_uid != me:
                continue
            if not entry.is_dir(follow_symlinks=False) or _alive(int(pid_text)):
                continue
        except OSError:
            continue
        shutil.rmtree(entry.path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's: alive
        return True
    return True


@contextlib.contextmanager
def _uninterrupted() -> Iterator[None]:
    """SIGTERM and SIGINT wait until the block is done (then act): a pool worker's stop
    raises KeyboardInterrupt wherever it lands, and one landing in the removal of a
    scratch tree left the tree behind. Their handlers are swapped for one that notes them
    (a blocked signal mask is the calling thread's alone: in a worker with another thread,
    a multiprocessing queue's feeder or Ray's, the signal went to that thread and the
    handler ran in the block all the same). Only the main thread handles signals."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []

    def hold(signum: int, _frame: object) -> None:
        held.append(signum)

    before = {  # a handler set outside Python (None) is left alone: it cannot be put back
        sig: signal.signal(sig, hold)
        for sig in (signal.SIGTERM, signal.SIGINT)
        if signal.getsignal(sig) is not None
    }
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        for sig in dict.fromkeys(held):
            signal.raise_signal(sig)  # now, to the handler of before


def _peak_mb() -> int:
    """This worker's peak memory so far (what a machine must hold per worker)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024))


def _error_text(err: BaseException) -> str:
    known = (TaskTimeout, gittree.GitError, TagError, FileExistsError, EnvironmentProblem)
    if isinstance(err, known):  # messages that say what failed: "python PATH: ..."
        return str(err)
    if isinstance(err, OSError):
        return f"{err.filename or ''}: {err.strerror or err}".lstrip(": ")
    return f"{type(err).__name__}: {err}"
