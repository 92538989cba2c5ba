"""Whole-file hints computed ahead of the requests that will want them.

A pass that completes on an index unchanged since its build stores the hints in the
index cache, with what they were made for (the graph, settings, policy, folder); the
next start on the same graph reads them back at once, before any request needs them.

After a build, and after every change, the warmer fills each folder's HintStore on
the reader pool: the open documents first, then every other file, largest first (a
large file is what a request would wait longest for; a small one is quick to do on
demand), a slice of about WARM_SECONDS at a time so that it never holds a reader for
long. It works only while the client is quiet (no request open or answered for
QUIET_SECONDS): a Python thread working in the background slows every other thread
down, answers included. A request that finds its file missing computes it at once.
"""

from __future__ import annotations

import asyncio
import logging
import pickle
import time
from collections.abc import Hashable

from anchor_ls.server.folders import READY, Folder
from anchor_ls.server.hints import HintForm, file_hints
from anchor_ls.server.hintstore import FileHints
from anchor_ls.server.hosts import WarmHost

log = logging.getLogger(__name__)

WARM_SECONDS = 0.02
QUIET_SECONDS = 0.1
YIELD_SECONDS = 0.01


def compute(folder: Folder, relpath: str, form: HintForm) -> FileHints:
    """Reader thread: the hints of one file, kept in the store unless the index moved.

    Requests that find a file missing call this too.
    """
    store = folder.hints
    token = store.token()
    found = file_hints(folder, relpath, form)
    store.put(form, relpath, found, token)
    return found


class HintWarmer:
    """One background pass at a time over the folders of a server; kick() asks for another."""

    def __init__(self, server: WarmHost) -> None:
        self.server = server
        self._task: asyncio.Task[None] | None = None
        self._again = False

    # ----- the background pass -----------------------------------------
    async def settled(self) -> None:
        """Wait until no pass is running (background work that can wait goes after it)."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    def kick(self) -> None:
        """Event loop: start a pass, or have the running one start over (priorities moved)."""
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._again = False
        self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        try:
            while True:
                self._again = False
                for folder in list(self.server.folders):
                    if not await self._warm(folder):
                        break
                if not self._again:
                    return
        except Exception:  # the executor is shut down, or a bug: hints are then computed on demand
            log.debug("hint warmer stopped", exc_info=True)

    async def _warm(self, folder: Folder) -> bool:
        """Fill one folder's store; False when the pass should start over."""
        server = self.server
        if folder.state != READY or not server.settings.inlay_hints or folder.graph is None:
            return True
        key: Hashable = server.hint_form()
        if folder.hints_read_for is not folder.index:
            folder.hints_read_for = folder.index
            folder.hints_restored = await server.read(_restore, folder, key)
        todo = await server.read(self._todo, folder, key)
        at = 0
        started = time.perf_counter()
        while at < len(todo) and not folder.hints.full:
            if self._again or folder.state != READY:
                return False
            if not server.quiet(QUIET_SECONDS):
                await asyncio.sleep(YIELD_SECONDS)
                continue
            at = await server.read(self._warm_some, folder, todo, at, key)
        if todo and at == len(todo) and folder.hints_saved_for is not folder.index:
            folder.hints_saved_for = folder.index
            await server.read(_save, folder, key)
        if todo:
            log.info(
                "hints of %d files of %s ready in %.0f ms (%d files, %.1f MiB kept)",
                at,
                folder.root.name,
                (time.perf_counter() - started) * 1000,
                len(folder.hints),
                folder.hints.size / (1 << 20),
            )
        return True

    def _todo(self, folder: Folder, key: Hashable) -> list[str]:
        """Reader thread: the files without hints, open documents first."""
        graph = folder.graph
        if graph is None:
            return []
        files = graph.files()
        index = folder.index
        if index is not None:
            files.sort(key=lambda rel: -index.source_size(rel))
        first: list[str] = []
        for uri in list(self.server.workspace.text_documents):
            where = self.server.locate(uri)
            if where is not None and where[0] is folder:
                first.append(where[1])
        ordered = list(dict.fromkeys(first + files))
        return folder.hints.missing(key, ordered)

    def _warm_some(self, folder: Folder, todo: list[str], at: int, key: HintForm) -> int:
        """Reader thread: compute hints from todo[at] on for about WARM_SECONDS."""
        deadline = time.perf_counter() + WARM_SECONDS
        store = folder.hints
        quiet = self.server.quiet
        while (
            at < len(todo)
            and time.perf_counter() < deadline
            and not self._again
            and quiet(QUIET_SECONDS)
        ):
            if not store.missing(key, (todo[at],)):
                at += 1
                continue
            compute(folder, todo[at], key)
            view = folder.view(todo[at])
            if view is not None:  # what hints need of it is kept; the rest can go
                view.drop_table()
            at += 1
        return at


STORED = "inlay-hints"
STORE_VERSION = 1  # of the stored form: FileHints and the JSON in it


def _identity(folder: Folder, key: Hashable) -> tuple:
    """What stored hints must have been made for, besides the graph (the cache's key)."""
    return (key, repr(folder.policy), folder.root_uri, STORE_VERSION)


def _save(folder: Folder, key: Hashable) -> None:
    """Reader thread: store every kept file's hints with the index (if it is as built)."""
    index = folder.index
    kept = folder.hints.kept(key)
    if index is not None and kept:
        blob = pickle.dumps((_identity(folder, key), kept), protocol=pickle.HIGHEST_PROTOCOL)
        index.keep_derived(STORED, blob)


def _restore(folder: Folder, key: Hashable) -> int:
    """Reader thread: put the stored hints of this graph in the store; how many files."""
    index = folder.index
    blob = index.derived(STORED) if index is not None else None
    if blob is None:
        return 0
    token = folder.hints.token()
    try:
        identity, kept = pickle.loads(blob)
    except Exception:  # a damaged row: compute them again
        return 0
    if identity != _identity(folder, key):
        return 0
    return sum(folder.hints.put(key, rel, hints, token) for rel, hints in kept.items())
