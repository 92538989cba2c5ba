"""The key that signs every cache row: a cache file is trusted only if this user wrote it.

The cache holds pickles, and unpickling runs whatever a pickle says. A repository can ship
a cache file (`.anchor-ls/index.sqlite3` is git-ignored, and git overwrites ignored files on
checkout), and its schema key and fingerprints can be computed by anyone. So each row is
stored with a keyed BLAKE2b tag, and a row whose tag does not verify is never unpickled. The
key lives in the user cache directory, outside every repository, readable by this user only:
a cache not written by this user on this machine is rebuilt, never loaded.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import stat
from pathlib import Path

import platformdirs

KEY_BYTES = 32
TAG_BYTES = 16
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # a planted link is not followed to a key
_PERSON = b"anchor-ls cache"  # BLAKE2b's personalisation: these tags mean nothing elsewhere


def key_path() -> Path:
    return Path(platformdirs.user_cache_dir("anchor-ls")) / "cache-key"


class CacheKey:
    """Signs and verifies cache rows. `problem` says why the key is this process's own (a
    fresh one that no later run shares: the cache then only lasts as long as the process)."""

    def __init__(self, key: bytes, problem: str | None = None) -> None:
        self._key = key
        self.problem = problem

    def tag(self, name: str, payload: bytes | memoryview) -> bytes:
        h = hashlib.blake2b(key=self._key, digest_size=TAG_BYTES, person=_PERSON)
        h.update(name.encode("utf-8", "surrogateescape"))
        h.update(b"\0")
        h.update(payload)
        return h.digest()

    def sign(self, name: str, payload: bytes) -> bytes:
        """The payload as stored: its tag, then the payload. The name binds it to its row."""
        return self.tag(name, payload) + payload

    def open(self, name: str, stored: object) -> memoryview | None:
        """The payload of a stored row (a view: no copy of a warm start's many megabytes),
        or None when the row was not signed with this key."""
        if not isinstance(stored, bytes) or len(stored) < TAG_BYTES:
            return None
        payload = memoryview(stored)[TAG_BYTES:]
        return payload if hmac.compare_digest(stored[:TAG_BYTES], self.tag(name, payload)) else None


def load_key(path: Path | None = None) -> CacheKey:
    """This user's key, made on first use. A key that another user could have written or can
    read is not used: the process then signs with a key of its own, and says so."""
    path = path or key_path()
    try:
        return CacheKey(_read_or_create(path))
    except (OSError, ValueError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        problem = f"cache key {path} unusable ({reason}); the cache lasts only for this run"
        return CacheKey(os.urandom(KEY_BYTES), problem)


def _read_or_create(path: Path) -> bytes:
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NOFOLLOW, 0o600)
    try:
        os.write(fd, os.urandom(KEY_BYTES))
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(temp, path)  # never replaces a key another process made meanwhile
    except FileExistsError:
        pass
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp)
    return _read(path)


def _read(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("not a regular file")
        if hasattr(os, "getuid") and info.st_uid != os.getuid():
            raise ValueError("owned by another user")
        if info.st_mode & 0o077:
            raise ValueError("readable or writable by other users")
        data = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) != KEY_BYTES:
        raise ValueError(f"{len(data)} bytes, not {KEY_BYTES}")
    return data
