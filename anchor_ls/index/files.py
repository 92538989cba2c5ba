"""Which files belong to the index: a deterministic walk that survives odd trees."""

from __future__ import annotations

import errno
import fnmatch
import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from anchor_ls.index.roots import configures_roots

SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".anchor-ls",
        "__pycache__",
        "node_modules",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
    }
)


@dataclass(frozen=True, slots=True)
class Skipped:
    path: str
    kind: str
    message: str


@dataclass(frozen=True, slots=True)
class Problem:
    """A file that was read badly or not at all; reported, never fatal."""

    path: str
    kind: str  # syntax | decode | too-large | binary | unreadable | vanished | symlink-loop
    message: str


def exclude_patterns(patterns: Iterable[str]) -> tuple[str, ...]:
    """Exclude globs as relpaths are written: `./tests` and `tests/` (as a shell completes
    a folder) name the folder `tests`; as given, they matched no relpath."""
    found = []
    for pattern in patterns:
        while pattern.startswith("./"):
            pattern = pattern[2:]
        found.append(pattern.rstrip("/") or pattern)
    return tuple(found)


def is_excluded(relpath: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(relpath, p) for p in patterns)


def python_files(
    root: Path,
    exclude: Sequence[str] = (),
    folders: dict[str, int] | None = None,
    configs: list[str] | None = None,
) -> Iterator[str | Skipped]:
    """Relpaths ('/'-separated, sorted) of the .py files under root, or why one was skipped.

    Symlinked folders are not followed (no loops, nothing outside the tree);
    a symlinked file is indexed when it points to a file inside the tree.
    Virtual environments (a folder with pyvenv.cfg) are left out.
    `folders`, when given, gets the mtime (ns) of each folder walked, taken before it is
    listed: a folder whose mtime has not moved since still lists the same names.
    `configs`, when given, gets the relpaths of the files of the folders walked that state
    source roots (roots.configures_roots: pyproject.toml, setup.cfg, pytest.ini, tox.ini).
    """
    root_real = os.path.realpath(root)
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        folder = os.path.join(root, rel_dir) if rel_dir else str(root)
        try:
            if folders is not None:
                folders[rel_dir] = os.stat(folder).st_mtime_ns
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as err:
            yield Skipped(rel_dir or ".", "unreadable", f"cannot list folder: {err.strerror}")
            continue
        if rel_dir and any(e.name == "pyvenv.cfg" for e in entries):
            continue
        subdirs = []
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                is_link = entry.is_symlink()
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in SKIP_DIRS and not is_excluded(rel, exclude):
                        if _undecodable(entry.name):
                            yield Skipped(_shown(rel), "unreadable", _BAD_NAME)
                        else:
                            subdirs.append(rel)
                    continue
            except OSError as err:
                yield Skipped(rel, "unreadable", err.strerror or str(err))
                continue
            if not entry.name.endswith(".py"):
                if configs is not None and configures_roots(entry.name):
                    configs.append(rel)
                continue
            if is_excluded(rel, exclude):
                continue
            if _undecodable(entry.name):
                yield Skipped(_shown(rel), "unreadable", _BAD_NAME)
                continue
            if is_link:
                problem = _link_problem(entry.path, root_real)
                if problem is not None:
                    yield Skipped(rel, *problem)
                    continue
            yield rel
        stack.extend(reversed(subdirs))


def is_listed(root: Path, relpath: str, exclude: Sequence[str] = ()) -> bool:
    """Whether python_files(root, exclude) would list relpath, judged from its path: a
    file an editor opens or a watcher names (go to definition into a virtual
    environment, a venv created in the tree) is indexed only where a build would find it.
    """
    if not relpath.endswith(".py") or is_excluded(relpath, exclude):
        return False
    parts = relpath.split("/")
    folder = str(root)
    for depth, name in enumerate(parts[:-1], start=1):
        if name in SKIP_DIRS or is_excluded("/".join(parts[:depth]), exclude):
            return False
        folder = os.path.join(folder, name)
        if os.path.lexists(os.path.join(folder, "pyvenv.cfg")):
            return False
    return True


_BAD_NAME = "name is not valid UTF-8 (ids, the cache and editors need text); skipped"


def _undecodable(name: str) -> bool:
    """A name the file system gave as undecodable bytes (surrogate escapes)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _shown(relpath: str) -> str:
    """A printable form of an undecodable relpath, for its problem report."""
    return relpath.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _link_problem(path: str, root_real: str) -> tuple[str, str] | None:
    try:
        target = os.path.realpath(path, strict=True)
    except OSError as err:
        if "loop" in str(err).lower() or getattr(err, "errno", 0) == 40:
            return ("symlink-loop", "symbolic link loop")
        return ("unreadable", "broken symbolic link")
    if os.path.commonpath([target, root_real]) != root_real:
        return ("outside", "symbolic link to a file outside the repository; not followed")
    if not os.path.isfile(target):
        return ("unreadable", "symbolic link to something that is not a file")
    return None


def read_file(root: Path, rel: str, limit: int) -> bytes | Problem:
    """The bytes of root/rel, or why they cannot be indexed (never raises)."""
    # O_NONBLOCK: opening a FIFO named x.py must not wait for a writer forever.
    try:
        fd = os.open(os.path.join(root, rel), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return Problem(rel, "vanished", "deleted while indexing")
    except OSError as err:
        kind = "symlink-loop" if err.errno == errno.ELOOP else "unreadable"
        return Problem(rel, kind, err.strerror or str(err))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return Problem(rel, "unreadable", "not a regular file (a folder, pipe or device)")
        data = _read_at_most(fd, limit + 1, info.st_size + 1)  # it may grow after fstat
    except OSError as err:
        return Problem(rel, "unreadable", err.strerror or str(err))
    finally:
        os.close(fd)
    if len(data) > limit:
        size = max(info.st_size, len(data))
        return Problem(rel, "too-large", f"{size} bytes, over the limit; skipped")
    return data


def _read_at_most(fd: int, size: int, expected: int) -> bytes:
    """Up to size bytes of fd, in reads of about the size expected: plain reads, where a
    buffered file object cost as much as the reading (a glimpse reads every file)."""
    chunks, got = [], 0
    while got < size:
        chunk = os.read(fd, min(size - got, max(expected, 1 << 16)))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)
