"""Which names changed in a set of folders since the last look: Linux inotify, through ctypes.

A freshness check that stats every file of Django costs 10-40 ms; reading the events the
kernel queued costs microseconds, and an event is queued before the write that caused it
returns, so an edit an agent finished is always in the next read. Where inotify is
missing (not Linux) or refuses a folder (the watch limit), `Watcher.open` returns None
and the caller stats every file instead.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import struct
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field

IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_EXCL_UNLINK = 0x04000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = 0o4000  # Linux's O_NONBLOCK and O_CLOEXEC
IN_CLOEXEC = 0o2000000

CONTENT = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE
NAMES = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO
LOST = IN_DELETE_SELF | IN_MOVE_SELF | IN_Q_OVERFLOW | IN_IGNORED
MASK = CONTENT | NAMES | IN_DELETE_SELF | IN_MOVE_SELF
MASK |= IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK
_HEADER = struct.Struct("iIII")


@dataclass(slots=True)
class Changes:
    """What the events since the last read say: names (relpaths) whose content may have
    changed, names that came or went, folders that came or went, and whether events were
    lost (then only a full walk knows)."""

    content: set[str] = field(default_factory=set)
    names: set[str] = field(default_factory=set)
    folders: set[str] = field(default_factory=set)
    lost: bool = False


class Watcher:
    """inotify watches on folders of one tree, keyed by their relpath ('' is the root)."""

    def __init__(self, fd: int, root: str, libc: ctypes.CDLL) -> None:
        self._fd = fd
        self._root = root
        self._libc = libc
        self._folders: dict[int, str] = {}  # watch descriptor -> relpath of its folder

    @classmethod
    def open(cls, root: str) -> Watcher | None:
        """A watcher, or None where inotify cannot be had."""
        if not sys.platform.startswith("linux"):
            return None
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        except (OSError, AttributeError):
            return None
        return cls(fd, root, libc) if fd >= 0 else None

    def watch(self, folders: Iterable[str]) -> bool:
        """Watch each folder (again: the kernel keeps one watch per folder); False when one
        cannot be watched, after which the watcher is closed and must not be used."""
        for rel in folders:
            path = os.fsencode(os.path.join(self._root, rel) if rel else self._root)
            wd = self._libc.inotify_add_watch(self._fd, path, MASK)
            if wd < 0:
                if ctypes.get_errno() == 2:  # the folder went: the next walk sees it
                    continue
                self.close()
                return False
            self._folders[wd] = rel
        return True

    def read(self) -> Changes:
        """The changes queued since the last read (none: an empty Changes)."""
        changes = Changes()
        while True:
            try:
                data = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                return changes
            except OSError:
                changes.lost = True
                return changes
            if not data:
                return changes
            self._parse(data, changes)

    def _parse(self, data: bytes, changes: Changes) -> None:
        at = 0
        while at + _HEADER.size <= len(data):
            wd, mask, _cookie, size = _HEADER.unpack_from(data, at)
            name = data[at + _HEADER.size : at + _HEADER.size + size].rstrip(b"\0")
            at += _HEADER.size + size
            if mask & LOST:
                changes.lost = True
                if mask & IN_IGNORED:
                    self._folders.pop(wd, None)
                continue
            folder = self._folders.get(wd)
            if folder is None or not name:
                continue
            text = os.fsdecode(name)
            rel = f"{folder}/{text}" if folder else text
            if mask & IN_ISDIR:
                if mask & NAMES:
                    changes.folders.add(rel)
            elif mask & NAMES:
                changes.names.add(rel)
            elif mask & CONTENT:
                changes.content.add(rel)

    def close(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1
