"""Keep a long-lived index equal to the disk between answers, with no file watcher.

Before each answer every Python file is stat()ed, and every folder the walk went through: a
folder whose mtime moved is walked again (names came or went). A file whose stat changed
is read and hashed, and only a changed hash re-indexes it, incrementally.
Files gone from the walk are removed from the index; new ones are added. The stats are
taken before the build reads the files, so an edit made while the build runs is seen by
the first check after it.
"""

from __future__ import annotations

import os
import stat
import time
from datetime import UTC, datetime

from anchor_ls.index import Index
from anchor_ls.index.cache import content_hash
from anchor_ls.index.files import Skipped, python_files

# What a file's stat says about its content: change any of these and it is read again.
Signature = tuple[int, int, int, int]


def _signature(info: os.stat_result) -> Signature:
    return (info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino)


class Freshness:
    """Build an Index, then bring it up to date with the disk on request (`sync`)."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self._seen: dict[str, Signature] = {}
        self._folders: dict[str, int] = {}  # folder walked -> its mtime before it was listed
        self.updated: float | None = None  # when the index was last found equal to the disk

    def _walk(self) -> list[str]:
        """The Python files of the tree; records the folders walked."""
        folders: dict[str, int] = {}
        names = [
            item
            for item in python_files(self.index.root, self.index.exclude, folders)
            if not isinstance(item, Skipped)
        ]
        self._folders = folders
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
        self._seen = self._stats(self._walk())
        self.index.build()
        self.updated = time.time()

    def sync(self) -> list[str]:
        """Re-index what changed on disk since the last call; returns those relpaths."""
        names = self._walk() if self._folders_moved() else list(self._seen)
        now = self._stats(names)
        index = self.index
        changed: list[str] = []
        for rel, sig in now.items():
            if self._seen.get(rel) == sig:
                continue
            if not self._same_content(rel):
                index.reload_file(rel)
                changed.append(rel)
        for rel in sorted(set(self._seen) - set(now)):
            if index.content_hash(rel) is not None or rel in index.problems:
                index.remove_file(rel)
                changed.append(rel)
        self._seen = now
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
