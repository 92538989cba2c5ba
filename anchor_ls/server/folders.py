"""One workspace folder: its Index, build state, tag policy and line tables.

Mutating methods run only on the server's single indexer thread (that is what
serializes index mutations); readers on other threads read the index's latest snapshot
(`Folder.graph`), which no mutation changes.
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from pygls.uris import from_fs_path

from anchor_ls.index import EnvironmentProblem, Graph, Index, IndexStats
from anchor_ls.index.stats import graph_figures
from anchor_ls.server.hintstore import HintStore
from anchor_ls.server.settings import Settings
from anchor_ls.server.sources import SourceView
from anchor_ls.tags.policy import resolve_policy

log = logging.getLogger(__name__)

PENDING, INDEXING, READY, FAILED = "pending", "indexing", "ready", "failed"
YOUNG_LIMIT = 200_000  # objects allocated by a change small enough to sweep at once
GLIMPSE_HOLD = 5.0  # seconds a build waits for a glimpse at most, each time it yields


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while the index allocates, then freeze what it made.

    A build (or the first edit after a warm start, which loads the resolver state)
    creates millions of long-lived objects; every full collection walks all of them,
    seconds each on Django and many of them per build. Frozen objects are left out of
    later collections, so requests do not stall on the collector either. The cyclic
    garbage of a small change is collected first, while it is young and cheap to find.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_count()[0] < YOUNG_LIMIT:
            gc.collect(1)
        gc.freeze()
        if enabled:
            gc.enable()


def _read(path: str) -> bytes:
    """A library file's bytes (b"" when it went away: positions stay as the index has them)."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _cache_dir(settings: Settings, root: Path, shared: bool) -> Path | None:
    """The cache folder for `root`; one subfolder per root when several share a setting."""
    if settings.cache_dir is None:
        return None
    base = Path(settings.cache_dir).expanduser()
    if not base.is_absolute():
        base = root / base
    if shared:
        digest = hashlib.sha1(str(root).encode()).hexdigest()[:10]
        return base / f"{root.name}-{digest}"
    return base


def _python(settings: Settings, root: Path) -> str | None:
    """The interpreter of the environment the `python` setting names (`~` expanded, a
    relative path taken from the folder's root: the server does not run there), else None."""
    if settings.python is None:
        return None
    path = Path(settings.python).expanduser()
    return str(path if path.is_absolute() else root / path)


class Folder:
    """A workspace folder and the index of the Python files under it."""

    def __init__(self, uri: str, root: Path, origin: str = "workspace folder") -> None:
        self.uri = uri
        self.root = root
        self.origin = origin  # what named it: a workspace folder, rootUri, an opened file
        self.root_uri = (from_fs_path(str(root)) or "").rstrip("/")
        self.index: Index | None = None
        self.state = PENDING
        self.error: str | None = None
        # why the `python` setting was not used in the last build, if it was not
        self.environment_problem: str | None = None
        self.stats: IndexStats | None = None
        self.policy: Any = None
        self.hints = HintStore()
        # The index whose stored hints were read, and how many files they covered; the
        # index they were stored for (once per build each).
        self.hints_read_for: Index | None = None
        self.hints_restored = 0
        self.hints_saved_for: Index | None = None
        self._views: dict[str, tuple[str, SourceView]] = {}  # relpath -> (content hash, view)
        self._built = False  # the first build has ended (ready or failed)
        self.building_since: float | None = None  # time.monotonic() the first build began
        # hierarchy answers until the first build ends (server/glimpses.py Glimpses)
        self.glimpses: Any = None
        self._built_lock = threading.Lock()
        self._built_waiters: list[asyncio.Future[None]] = []

    # ----- reads (any thread) -------------------------------------------
    @property
    def graph(self) -> Graph | None:
        """The graph of the index's latest snapshot (frozen: read it without a lock)."""
        return self.index.graph if self.index is not None else None

    def first_build(self) -> asyncio.Future[None] | None:
        """Event loop: a future done when the first build ends, or None once it has.

        Until then the graph is empty (a build puts it together at its end), so an
        answer from it would be a silent empty one.
        """
        with self._built_lock:
            if self._built:
                return None
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._built_waiters.append(waiter)
            return waiter

    def first_build_running(self) -> bool:
        with self._built_lock:
            return not self._built

    def yield_to_glimpses(self) -> None:
        """Indexer thread, between files: a glimpse being made (a question asked while the
        first build runs) goes first; the build waits for it, at most GLIMPSE_HOLD s."""
        glimpses = self.glimpses
        if glimpses is not None:
            glimpses.wait_idle(GLIMPSE_HOLD)

    def _first_build_ended(self) -> None:
        with self._built_lock:
            self._built, waiters = True, self._built_waiters
            self._built_waiters = []
            self.glimpses = None
        for waiter in waiters:
            waiter.get_loop().call_soon_threadsafe(_wake, waiter)

    def relpath(self, path: Path) -> str | None:
        try:
            rel = path.resolve().relative_to(self.root)
        except (ValueError, OSError):
            return None
        return rel.as_posix()

    def view(self, relpath: str) -> SourceView | None:
        """Derived facts of the source last indexed for relpath (cached until its content
        hash changes: the index keeps sources compressed, reading one makes new bytes).
        An absolute path is a library's file (an external entity's): read from the disk."""
        if relpath.startswith("/"):
            return self._library_view(relpath)
        index = self.index
        digest = index.content_hash(relpath) if index is not None else None
        if index is None or digest is None:
            return None
        cached = self._views.get(relpath)
        if cached is not None and cached[0] == digest:
            return cached[1]
        view = SourceView(
            self.root_uri,
            relpath,
            index.source_is_ascii(relpath),
            lambda: index.source(relpath) or b"",
        )
        self._views[relpath] = (digest, view)
        return view

    def _library_view(self, path: str) -> SourceView | None:
        """A library file as a view (its URI, its lines for positions), kept while its size
        and modification time stay; None when it cannot be read."""
        try:
            stat = os.stat(path)
        except OSError:
            return None
        stamp = f"{stat.st_size}:{stat.st_mtime_ns}"
        cached = self._views.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        uri = from_fs_path(path) or ""
        view = SourceView("", "", False, partial(_read, path))
        view.uri, view.uri_json = uri, json.dumps(uri)  # as pygls quotes it
        self._views[path] = (stamp, view)
        return view

    # ----- mutations (indexer thread only) ------------------------------
    def build(self, settings: Settings, shared_cache: bool, progress: Callable) -> None:
        """(Re)create the Index and build it; the old graph serves until the new one is ready."""
        self.state = INDEXING
        self.error = None
        if self.building_since is None:
            self.building_since = time.monotonic()
        self.hints.begin_change()
        try:
            self._build(settings, shared_cache, progress)
        finally:
            self.hints.end_change(None)
            self._first_build_ended()

    def _build(self, settings: Settings, shared_cache: bool, progress: Callable) -> None:
        if self.policy is None:  # until the graph's figures are known
            self.policy = resolve_policy(settings.policy, 0.0, settings.max_items)
        self.environment_problem = None
        first = self.index is None  # serve what is known while the graph fills in
        try:
            index = self._new_index(settings, shared_cache)
            if first:
                self.index = index
            with collector_paused():
                try:
                    stats = index.build(progress)
                except EnvironmentProblem as err:  # the interpreter answered while it built
                    index.close()
                    index = self._without_environment(err, settings, shared_cache)
                    if first:
                        self.index = index
                    stats = index.build(progress)
        except Exception as exc:  # reported to the client; the server keeps running
            log.exception("indexing %s failed", self.root)
            self.state = FAILED
            self.error = f"{type(exc).__name__}: {exc}"
            return
        self.index = index
        self.stats = stats
        self._views.clear()
        self.state = READY
        self.choose_policy(settings)

    def _new_index(self, settings: Settings, shared_cache: bool) -> Index:
        """The Index the settings describe. A `python` setting that names no usable
        interpreter is told (environment_problem) and the index reads the server's own
        environment instead: hints without libraries beat no hints."""
        python = _python(settings, self.root)
        try:
            return Index(self.root, python=python, **self._options(settings, shared_cache))
        except EnvironmentProblem as err:
            return self._without_environment(err, settings, shared_cache)

    def _without_environment(
        self, err: EnvironmentProblem, settings: Settings, shared_cache: bool
    ) -> Index:
        """The index with the server's own environment, the named one's problem told (it
        may be found when the Index is made, or only when its build waits for the answer)."""
        self.environment_problem = f"{err}; libraries are read from the server's own environment"
        return Index(self.root, **self._options(settings, shared_cache))

    def _options(self, settings: Settings, shared_cache: bool) -> dict[str, Any]:
        return {
            "cache_dir": _cache_dir(settings, self.root, shared_cache),
            "exclude": settings.exclude,
            "source_roots": settings.source_roots,
            "pause": self.yield_to_glimpses,
        }

    def choose_policy(self, settings: Settings) -> None:
        graph = self.graph
        if graph is None:
            return
        mean_out, _hubs = graph_figures(graph)
        self.policy = resolve_policy(settings.policy, mean_out, settings.max_items)
        self.hints.clear()

    def load_engine(self) -> None:
        """Load the resolver state a warm start deferred, so the first edit need not.

        A no-op after a cold build. The graph is not touched: readers go on answering
        meanwhile (they only share the interpreter with it).
        """
        index = self.index
        if index is None or self.state != READY:
            return
        with index.lock, collector_paused():
            index.ensure_engine()

    def prepare_edits(self, relpath: str) -> None:
        """Indexer thread: keep the tree of a file an editor opened for its first edit."""
        index = self.index
        if index is not None and self.state == READY:
            index.prepare_edits(relpath)

    def update(self, relpath: str, text: str | bytes) -> set[str]:
        return self._mutate(lambda index: index.update_file(relpath, text), {relpath})

    def reload(self, relpath: str) -> set[str]:
        return self._mutate(lambda index: index.reload_file(relpath), {relpath})

    def reload_many(self, relpaths: set[str]) -> set[str]:
        """Files changed or gone on disk at once (a checkout): see Index.reload_files."""
        return self._mutate(lambda index: index.reload_files(relpaths), relpaths)

    def _mutate(self, change: Callable[[Index], set[str]], relpaths: set[str]) -> set[str]:
        index = self.index
        if index is None:
            return set()
        before = index.snapshot()
        changed: set[str] | None = None
        self.hints.begin_change()
        try:
            with collector_paused():
                changed = set(change(index)) | relpaths
        finally:
            # A graph put together anew (the index rebuilt itself) changed everything.
            rebuilt = index.snapshot().built != before.built
            self.hints.end_change(None if rebuilt else changed)
        return changed
