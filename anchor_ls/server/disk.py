"""Changes made on disk: from the client's watched-file events, or from the server's own
watch where the client cannot register watchers.

Neovim on Linux registers none (its vim.lsp offers the registration on macOS and Windows
only), so a `git checkout`, a formatter or an agent editing files that are not open left
the index stale until :AnchorReindex. There the server watches each folder itself with
inotify (agent/watch.py, as `anchor-ls mcp` does) and what it sees takes the path of the
client's events. Either way an open buffer, not the disk, stays what the user sees.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path, uri_scheme

from anchor_ls.agent.watch import Changes, Watcher
from anchor_ls.index.cache import content_hash
from anchor_ls.index.files import Skipped, python_files
from anchor_ls.index.roots import configures_roots
from anchor_ls.server.folders import Folder
from anchor_ls.server.server import PYTHON_SUFFIXES, AnchorServer

log = logging.getLogger(__name__)

POLL_SECONDS = 0.3  # reading the queued events costs microseconds
Event = tuple[str, types.FileChangeType]  # a file or folder URI and what happened to it


def disk_changes(folder: Folder, relpaths: set[str]) -> set[str]:
    """Indexer thread: pick up files as they now are on disk (gone: removed)."""
    return folder.reload_many(relpaths)


def _folder_removed(folder: Folder, prefix: str) -> set[str]:
    """Indexer thread: drop every indexed file under a deleted directory."""
    graph = folder.graph
    if graph is None:
        return set()
    return folder.reload_many({p for p in graph.files() if p.startswith(prefix + "/")})


def _folder_added(folder: Folder, prefix: str, opened: set[str]) -> set[str]:
    """Indexer thread: index the files of a folder moved or copied into the tree (the
    watcher names the folder alone), except those open in the editor."""
    index = folder.index
    if index is None or not index.is_indexable(f"{prefix}/__init__.py"):
        return set()  # a folder a build leaves out (a .venv being made, an excluded one)
    found = (f"{prefix}/{i}" for i in python_files(folder.root / prefix) if isinstance(i, str))
    return folder.reload_many({rel for rel in found if rel not in opened})


async def apply_events(ls: AnchorServer, events: list[Event]) -> None:
    """Bring the indexes up to date with files and folders changed on disk."""
    changed: set[str] = set()
    files: dict[Folder, set[str]] = {}  # files changed, read together (a checkout: at once)

    async def read_files() -> None:
        for folder, relpaths in files.items():
            changed.update(await ls.mutate(disk_changes, folder, relpaths))
        files.clear()

    for event_uri, kind in events:
        deleted = kind == types.FileChangeType.Deleted
        if event_uri in ls.workspace.text_documents:
            continue  # the open buffer, not the disk, is what the user sees
        located = ls.locate_all(event_uri)
        path = Path(to_fs_path(event_uri) or "/") if uri_scheme(event_uri) == "file" else None
        if not located and path is not None and configures_roots(path.name):
            # the source roots it states: the index reads them again (Index.reload_files)
            located = [(f, rel) for f in ls.folders if (rel := f.relpath(path)) is not None]
        for folder, relpath in located:
            files.setdefault(folder, set()).add(relpath)
        if located:
            continue
        await read_files()  # in order with the folders that come or go
        created = kind == types.FileChangeType.Created
        if path is None or not (deleted or (created and path.is_dir())):
            continue  # a file created that is not Python
        for folder in ls.folders:
            prefix = folder.relpath(path)
            if not prefix:
                continue
            if deleted:
                changed |= await ls.mutate(_folder_removed, folder, prefix)
            else:
                opened = {
                    rel
                    for u in ls.workspace.text_documents
                    for each, rel in ls.locate_all(u)
                    if each is folder
                }
                changed |= await ls.mutate(_folder_added, folder, prefix, opened)
    await read_files()
    ls.changed(changed)


class DiskWatch:
    """The server's own watch of every folder it indexes (see the module docstring)."""

    def __init__(self) -> None:
        self._watchers: dict[Path, Watcher | None] = {}  # None: inotify refused the tree

    async def add(self, folders: list[Folder]) -> None:
        for folder in folders:
            if folder.root not in self._watchers:
                self._watchers[folder.root] = await asyncio.to_thread(_watch_tree, folder)

    async def run(self, ls: AnchorServer) -> None:
        try:
            while True:
                await asyncio.sleep(POLL_SECONDS)
                try:
                    events = await self._events(ls)
                    if events:
                        await apply_events(ls, events)
                except Exception:  # a failed look is not the end of watching
                    log.exception("watching the folders' files failed")
        finally:
            self.close()

    async def _events(self, ls: AnchorServer) -> list[Event]:
        events: list[Event] = []
        roots = set()
        for folder in list(ls.folders):
            roots.add(folder.root)
            if folder.root not in self._watchers:  # the tree is watched from now on
                await self.add([folder])
                continue
            watcher = self._watchers[folder.root]
            if watcher is None:
                continue
            changes = watcher.read()
            if changes.lost or changes.content or changes.names or changes.folders:
                events += await asyncio.to_thread(_events_of, folder, watcher, changes)
        for root in set(self._watchers) - roots:  # a workspace folder removed
            dropped = self._watchers.pop(root)
            if dropped is not None:
                dropped.close()
        return events

    def close(self) -> None:
        for watcher in self._watchers.values():
            if watcher is not None:
                watcher.close()
        self._watchers.clear()


def _watch_tree(folder: Folder) -> Watcher | None:
    """A watcher of every folder a build of folder walks (None where inotify cannot be
    had, or refuses one: the watch limit)."""
    watcher = Watcher.open(str(folder.root))
    if watcher is None:
        return None
    return watcher if watcher.watch(_folders(folder.root, _exclude(folder))) else None


def _folders(root: Path, exclude: tuple[str, ...]) -> dict[str, int]:
    """The folders a build of root walks (relpaths; '' is root), as python_files finds them."""
    walked: dict[str, int] = {}
    for _ in python_files(root, exclude, walked):
        pass
    return walked


def _exclude(folder: Folder) -> tuple[str, ...]:
    return tuple(folder.index.exclude) if folder.index is not None else ()


def _events_of(folder: Folder, watcher: Watcher, changes: Changes) -> list[Event]:
    """Worker thread: the events that changes stand for. Lost events (a watched folder
    deleted or moved, the kernel's queue full) are made up for by comparing the tree with
    the index: a file whose bytes are not those indexed, one indexed and gone."""
    root = folder.root
    events: list[Event] = []
    for rel in sorted(changes.content | changes.names):
        if rel.endswith(PYTHON_SUFFIXES) or configures_roots(rel):
            events.append(_file_event(root, rel))
    for rel in sorted(changes.folders):
        path = root / rel
        if not path.is_dir():
            events.append((_uri(path), types.FileChangeType.Deleted))
            continue
        index = folder.index
        if index is not None and not index.is_indexable(f"{rel}/__init__.py"):
            continue  # a folder no build walks (the cache, a venv being made)
        walked = _folders(path, _exclude(folder))
        watcher.watch(f"{rel}/{sub}" if sub else rel for sub in walked)
        events.append((_uri(path), types.FileChangeType.Created))
    if changes.lost:
        events += _differences(folder, watcher)
    return events


def _differences(folder: Folder, watcher: Watcher) -> list[Event]:
    """The files of the tree whose bytes the index does not hold, and the indexed files
    the tree no longer has; every folder walked is watched (again)."""
    index = folder.index
    if index is None:
        return []
    walked: dict[str, int] = {}
    found = [
        rel
        for rel in python_files(folder.root, index.exclude, walked)
        if not isinstance(rel, Skipped)
    ]
    watcher.watch(walked)
    events: list[Event] = []
    for rel in found:
        try:
            data = (folder.root / rel).read_bytes()
        except OSError:
            continue
        if index.content_hash(rel) != content_hash(data):
            events.append(_file_event(folder.root, rel))
    graph = folder.graph
    for rel in sorted(set(graph.files()) - set(found)) if graph is not None else ():
        events.append((_uri(folder.root / rel), types.FileChangeType.Deleted))
    return events


def _file_event(root: Path, rel: str) -> Event:
    path = root / rel
    kind = types.FileChangeType.Changed if path.is_file() else types.FileChangeType.Deleted
    return _uri(path), kind


def _uri(path: Path) -> str:
    return from_fs_path(os.fspath(path)) or ""


async def start(ls: AnchorServer) -> asyncio.Task[None] | None:
    """Watch the folders' files from the server, unless the client can take watchers:
    the folders known now from before their first build reads them (a file written while
    it runs is then seen), those added later from the next look."""
    if ls.client_supports("workspace.did_change_watched_files.dynamic_registration"):
        return None
    watch = DiskWatch()
    await watch.add(ls.folders)
    return asyncio.ensure_future(watch.run(ls))


def stop(task: asyncio.Task[None] | None) -> None:
    if task is not None:
        with contextlib.suppress(RuntimeError):
            task.cancel()
