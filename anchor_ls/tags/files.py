"""File-system helpers for the tag commands: atomic rewrites and a walk that never follows links."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PYTHON_SUFFIXES = (".py", ".pyi", ".pyw")
# Folders that are never anyone's source: VCS data and caches (ours included).
SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".anchor-ls", "__pycache__"})


class ChangedOnDisk(Exception):
    """The file no longer holds the bytes the new text was computed from."""


def atomic_rewrite(path: Path, data: bytes, expected: bytes, *, durable: bool = True) -> None:
    """Replace path's bytes by `data` via a temporary file and a rename, keeping mode bits.

    Raises ChangedOnDisk (and writes nothing) when the file stopped holding `expected`
    while the new text was being computed.
    """
    before = os.lstat(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".anchor-ls-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.chmod(tmp, stat.S_IMODE(before.st_mode))
        if hasattr(os, "chown"):
            with contextlib.suppress(OSError):
                os.chown(tmp, before.st_uid, before.st_gid)
        if path.read_bytes() != expected:
            raise ChangedOnDisk(str(path))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@dataclass(frozen=True, slots=True)
class Entry:
    relpath: str  # '/'-separated, relative to the walk's root
    path: Path
    kind: str  # dir | file | link | other
    mode: int


def walk(
    root: Path, skip: frozenset[str] = SKIP_DIRS, prune: Path | None = None
) -> Iterator[Entry]:
    """Every entry under root in sorted order, depth first, without following symlinks.

    Directories named in `skip` and the directory `prune` (compared by identity) are left out.
    """
    prune_id = _identity(prune) if prune is not None else None

    def visit(folder: Path, prefix: str) -> Iterator[Entry]:
        try:
            with os.scandir(folder) as it:
                items = sorted(it, key=lambda e: e.name)
        except OSError:
            return
        for item in items:
            rel = f"{prefix}{item.name}"
            st = item.stat(follow_symlinks=False)
            path = Path(item.path)
            if stat.S_ISLNK(st.st_mode):
                yield Entry(rel, path, "link", st.st_mode)
            elif stat.S_ISDIR(st.st_mode):
                if item.name in skip or (st.st_dev, st.st_ino) == prune_id:
                    continue
                yield Entry(rel, path, "dir", st.st_mode)
                yield from visit(path, rel + "/")
            elif stat.S_ISREG(st.st_mode):
                if item.name in skip:
                    continue
                yield Entry(rel, path, "file", st.st_mode)
            else:
                yield Entry(rel, path, "other", st.st_mode)

    yield from visit(root, "")


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def is_python(name: str) -> bool:
    return name.endswith(PYTHON_SUFFIXES)


def inside(path: Path, root: Path) -> bool:
    """Whether path (resolved) is root or below it."""
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True
