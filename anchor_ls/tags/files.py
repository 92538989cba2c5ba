"""File-system helpers for the tag commands: atomic rewrites and a walk that never follows links."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

PYTHON_SUFFIXES = (".py", ".pyi", ".pyw")
# Folders that are never anyone's source: VCS data and caches (ours included).
SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".anchor-ls", "__pycache__"})


class ChangedOnDisk(Exception):
    """The file no longer holds the bytes the new text was computed from."""


def _before_swap(path: Path) -> None:
    """Runs after the last look at path and before the swap: where tests put an editor's save."""


Identity = tuple[int, int, int, int]  # st_dev, st_ino, st_size, st_mtime_ns


def atomic_rewrite(path: Path, data: bytes, expected: bytes, *, durable: bool = True) -> None:
    """Replace path's bytes by `data` via a temporary file and a swap, keeping mode bits.

    Raises PermissionError for a file without its owner's write bit or that this user
    may not write (a rename in a writable folder could replace it; an editor or a
    formatter would refuse), and for one whose owner or group the new file could not be
    given (another user's file the swap would hand to this one), OSError(EMLINK) for a file with
    more than one hard link (the swap would give this name a new inode and leave the other
    names with the old text; writing into the shared inode instead is not atomic: an
    interrupted write would lose the file under every name), and ChangedOnDisk, and leaves the
    file as it is, when it stopped holding `expected`
    while the new text was being computed or written. Where the system can exchange two
    names atomically (Linux, macOS) the file displaced by the swap is checked afterwards
    and put back when it is not the one checked, so an editor's save is never lost;
    elsewhere the check runs right before the rename.
    """
    before = os.lstat(path)
    if not before.st_mode & stat.S_IWUSR:  # its owner made it read-only: no swap undoes that
        raise PermissionError(errno.EACCES, "read-only file; left as is", str(path))
    if not os.access(path, os.W_OK):  # another user's file in a writable folder: not ours
        raise PermissionError(errno.EACCES, "not writable by this user; left as is", str(path))
    if before.st_nlink > 1:
        raise OSError(errno.EMLINK, _hard_links(before.st_nlink), str(path))
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
            made = os.lstat(tmp)
            if (made.st_uid, made.st_gid) != (before.st_uid, before.st_gid):
                raise PermissionError(errno.EPERM, _owner_kept_from(before), str(path))
        seen = _holding(path, expected)
        if seen is None:
            raise ChangedOnDisk(str(path))
        _before_swap(path)
        ours = _identity_of(Path(tmp))
        if not _exchange(tmp, path):
            if _holding(path, expected) != seen:
                raise ChangedOnDisk(str(path))
            os.replace(tmp, path)
            return
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    # tmp now names the file the swap displaced: the one checked, or an editor's save.
    if _holding(Path(tmp), expected) == seen:
        os.unlink(tmp)
        return
    _exchange(tmp, path)  # the save goes back
    if _holding(Path(tmp), data) != ours:  # an even newer save came meanwhile: it wins
        _exchange(tmp, path)
    os.unlink(tmp)
    raise ChangedOnDisk(str(path))


def _owner_kept_from(before: os.stat_result) -> str:
    return (
        f"owned by uid {before.st_uid}, gid {before.st_gid}, which a rewrite by this user "
        "cannot keep; left as is"
    )


def _hard_links(count: int) -> str:
    return f"it has {count} hard links (a rewrite would split them); left as is"


def _identity_of(path: Path) -> Identity:
    st = os.lstat(path)
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _holding(path: Path, expected: bytes) -> Identity | None:
    """The file's identity when it holds exactly `expected` (read through one descriptor)."""
    try:
        with open(path, "rb") as handle:
            st = os.fstat(handle.fileno())
            if st.st_size != len(expected) or handle.read() != expected:
                return None
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


_RENAME_EXCHANGE = 2  # renameat2 flag (Linux)
_RENAME_SWAP = 2  # renamex_np flag (macOS)
_AT_FDCWD = -100


@cache
def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _exchange(a: str | Path, b: str | Path) -> bool:
    """Swap the files at two names in one step; False when this system cannot."""
    libc = _libc()
    old, new = os.fsencode(a), os.fsencode(b)
    if libc is not None and hasattr(libc, "renameat2"):
        done = libc.renameat2(_AT_FDCWD, old, _AT_FDCWD, new, _RENAME_EXCHANGE)
    elif libc is not None and hasattr(libc, "renamex_np"):
        done = libc.renamex_np(old, new, _RENAME_SWAP)
    else:
        return False
    if done == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
        return False  # not on this file system: the caller falls back to a checked rename
    raise OSError(err, os.strerror(err), str(b))


@dataclass(frozen=True, slots=True)
class Entry:
    relpath: str  # '/'-separated, relative to the walk's root ("." for the root itself)
    path: Path
    kind: str  # dir | file | link | other | unreadable (a folder not listed: see `error`)
    mode: int
    error: str = ""


def walk(
    root: Path,
    skip: frozenset[str] = SKIP_DIRS,
    prune: Path | None = None,
    *,
    skip_venvs: bool = False,
    skipped: list[str] | None = None,
) -> Iterator[Entry]:
    """Every entry under root in sorted order, depth first, without following symlinks.

    Directories named in `skip` and the directory `prune` (compared by identity) are left out,
    and with `skip_venvs` those below root that hold a pyvenv.cfg (virtual environments, as
    the index leaves them out); `skipped`, when given, gets the relpath of each folder left
    out for its name or as a virtual environment.
    A folder that cannot be listed is an `unreadable` entry (its contents are not in the
    walk: callers say so); an entry gone between the listing and its stat is left out.
    """
    prune_id = _identity(prune) if prune is not None else None

    def visit(folder: Path, prefix: str) -> Iterator[Entry]:
        try:
            with os.scandir(folder) as it:
                items = sorted(it, key=lambda e: e.name)
        except OSError as err:
            if not isinstance(err, FileNotFoundError) or not prefix:
                why = err.strerror or str(err)
                yield Entry(prefix.rstrip("/") or ".", folder, "unreadable", 0, why)
            return
        for item in items:
            rel = f"{prefix}{item.name}"
            try:
                st = item.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue  # removed since the listing (an editor's probe file, a build's temp)
            path = Path(item.path)
            if stat.S_ISLNK(st.st_mode):
                yield Entry(rel, path, "link", st.st_mode)
            elif stat.S_ISDIR(st.st_mode):
                if (st.st_dev, st.st_ino) == prune_id:
                    continue
                if item.name in skip or (skip_venvs and _holds_pyvenv_cfg(path)):
                    if skipped is not None:
                        skipped.append(rel)
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


def _holds_pyvenv_cfg(folder: Path) -> bool:
    return os.path.lexists(os.path.join(folder, "pyvenv.cfg"))


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
