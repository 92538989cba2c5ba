"""Keep a long-lived index equal to the disk between answers.

Before each answer the files that may have changed are found: on Linux from the inotify
events queued for the folders of the tree (`watch`), elsewhere by a stat of every Python
file, of every file stating source roots (pyproject.toml, setup.cfg, pytest.ini, tox.ini)
and of every folder the walk went through (a folder whose mtime moved lists other names:
the tree is walked again). A file whose stat changed is read and hashed, and only
a changed hash re-indexes it, incrementally; files gone are removed from the index, new
ones added. The stats are taken, and the watches set, before the build reads the files,
so an edit made while the build runs is seen by the first check after it.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterable
from datetime import UTC, datetime

from anchor_ls.agent.watch import Watcher
from anchor_ls.index import Index
from anchor_ls.index.cache import content_hash
from anchor_ls.index.files import SKIP_DIRS, Skipped, python_files
from anchor_ls.index.roots import configures_roots

# What a file's stat says about its content: change any of these and it is read again.
Signature = tuple[int, int, int, int]


def _signature(info: os.stat_result) -> Signature:
    return (info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino)


class Freshness:
    """Build an Index, then bring it up to date with the disk on request (`sync`).

    watch=False: never use inotify (every check stats the tree).
    """

    def __init__(self, index: Index, *, watch: bool = True) -> None:
        self.index = index
        self._seen: dict[str, Signature] = {}
        self._folders: dict[str, int] = {}  # folder walked -> its mtime before it was listed
        self._links: list[str] = []  # symlinked files: their target changes elsewhere
        self._configs: list[str] = []  # files stating source roots that changed
        self._config_names: list[str] = []  # those the last walk found
        self._config_seen: dict[str, Signature] = {}  # their stats as the index read them
        self._config_now: dict[str, Signature] = {}  # their stats at the last check
        self._watcher = Watcher.open(str(index.root)) if watch else None
        self.updated: float | None = None  # when the index was last found equal to the disk

    @property
    def watching(self) -> bool:
        return self._watcher is not None

    def _walk(self) -> list[str]:
        """The Python files of the tree; records the folders walked."""
        folders: dict[str, int] = {}
        configs: list[str] = []
        names = [
            item
            for item in python_files(self.index.root, self.index.exclude, folders, configs)
            if not isinstance(item, Skipped)
        ]
        self._folders = folders
        self._config_names = configs
        prefix = str(self.index.root) + os.sep
        self._links = [rel for rel in names if os.path.islink(prefix + rel)]
        return names

    def _rewalk(self) -> list[str]:
        """Walk the tree and watch its folders; walk again while a folder moved between
        its listing and its watch (an event would have been missed)."""
        while True:
            names = self._walk()
            if self._watcher is None:
                return names
            if not self._watcher.watch(self._folders):
                self._watcher = None  # the watch limit: stat instead, from now on
                return names
            if not self._folders_moved():
                return names

    def _folders_moved(self) -> bool:
        """Whether a name was added, removed or renamed in a folder since the last walk
        (a stat per folder, where the walk lists and filters every name)."""
        root = str(self.index.root)
        sep = os.sep
        status = os.stat
        for rel, mtime in self._folders.items():
            try:
                if status(f"{root}{sep}{rel}" if rel else root).st_mtime_ns != mtime:
                    return True
            except OSError:
                return True
        return False

    def _stats(self, names: list[str]) -> dict[str, Signature]:
        prefix = str(self.index.root) + os.sep
        status = os.stat
        found: dict[str, Signature] = {}
        for rel in names:
            try:
                info = status(prefix + rel)
            except OSError:
                continue  # gone between the walk and the stat: as if not listed
            if stat.S_ISREG(info.st_mode):  # a pipe named x.py is never opened
                found[rel] = _signature(info)
        return found

    def build(self) -> None:
        self._seen = self._stats(self._rewalk())
        self._config_seen = self._config_now = self._stats(self._config_names)
        self.index.build()
        self.updated = time.time()

    def _current(self) -> dict[str, Signature]:
        """The stats of the tree as they are now, from the events or from the disk."""
        watcher = self._watcher
        if watcher is None:
            names = self._rewalk() if self._folders_moved() else list(self._seen)
            # a configuration edited in place moves no folder: its own stat tells
            now = self._config_now = self._stats(self._config_names)
            seen = self._config_seen
            self._configs = sorted(r for r in now.keys() | seen.keys() if now.get(r) != seen.get(r))
            return self._stats(names)
        changes = watcher.read()
        # a pyproject.toml, setup.cfg, pytest.ini or tox.ini: the index reads the source
        # roots it states again (Index.reload_files)
        self._configs = sorted(n for n in changes.content | changes.names if configures_roots(n))
        seen = self._seen
        if (
            changes.lost
            or any(f.rpartition("/")[2] not in SKIP_DIRS for f in changes.folders)
            or any(n.endswith(".py") and n not in seen for n in changes.names)
        ):
            return self._stats(self._rewalk())  # names came or went that the walk must judge
        touched = [n for n in (*changes.content, *changes.names, *self._links) if n in seen]
        now = dict(seen)
        fresh = self._stats(touched)
        for rel in touched:
            if rel in fresh:
                now[rel] = fresh[rel]
            else:
                del now[rel]
        return now

    def sync(self, configs: Iterable[str] = ()) -> list[str]:
        """Re-index what changed on disk since the last call; returns those relpaths.
        configs: files stating source roots the caller knows changed (those found on disk,
        by events or stats, are added)."""
        now = self._current()
        index = self.index
        changed: list[str] = []
        for rel, sig in now.items():
            if self._seen.get(rel) == sig:
                continue
            if not self._same_content(rel):
                changed.append(rel)
        for rel in sorted(set(self._seen) - set(now)):
            if index.content_hash(rel) is not None or rel in index.problems:
                changed.append(rel)  # gone: reading it removes it
        configs, self._configs = [*self._configs, *configs], []
        index.reload_files([*changed, *configs])  # many at once (a checkout): one resolution
        self._seen = now
        self._config_seen = self._config_now
        self.updated = time.time()
        return sorted(changed)

    def _same_content(self, rel: str) -> bool:
        known = self.index.content_hash(rel)
        if known is None:
            return False
        try:
            with open(os.path.join(self.index.root, rel), "rb") as file:
                data = file.read(self.index.max_file_bytes + 1)
        except OSError:
            return False
        return content_hash(data) == known

    def updated_iso(self) -> str | None:
        if self.updated is None:
            return None
        stamp = datetime.fromtimestamp(self.updated, UTC)
        return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None
