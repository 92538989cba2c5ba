"""The SQLite cache: file summaries by content hash, plus the last resolved graph.

A corrupt or foreign-version cache is thrown away and rebuilt, never trusted; so is one
that this user did not write (every row is signed with a key outside the repository: see
cache_key). Concurrent runs on one cache are safe: WAL mode, a busy timeout, and every
write in one transaction.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import sqlite3
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import platformdirs

from anchor_ls import __version__
from anchor_ls.index.cache_key import CacheKey, load_key


def _engine_digest() -> str:
    """A hash of the code that produces cached data: a changed engine never trusts old rows."""
    h = hashlib.blake2b(digest_size=8)
    package = Path(__file__).resolve().parent.parent
    for folder in ("syntax", "index"):
        for source in sorted((package / folder).rglob("*.py")):
            h.update(str(source.relative_to(package)).encode())
            h.update(source.read_bytes())
    return h.hexdigest()


SCHEMA = f"anchor-ls {__version__} cache 5 engine {_engine_digest()}"
FILE_NAME = "index.sqlite3"


_BUSY_WAIT = 30.0  # seconds, as the busy timeout of every statement
_BUSY_CODES = (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED


def _busy(err: sqlite3.DatabaseError) -> bool:
    """Locked by another connection for now: nothing wrong with the file."""
    return getattr(err, "sqlite_errorcode", None) in _BUSY_CODES or "locked" in str(err)


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def user_cache_folder(root: Path) -> Path:
    """The folder in the user cache that belongs to the repository at root (resolved): for
    a root that cannot be written, and for snapshots that must leave the source as it is."""
    digest = hashlib.sha1(str(root).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return Path(platformdirs.user_cache_dir("anchor-ls")) / f"{root.name}-{digest}"


def default_cache_dir(root: Path) -> Path:
    """<root>/.anchor-ls when writable, else a per-repository folder in the user cache."""
    preferred = root / ".anchor-ls"
    try:
        preferred.mkdir(exist_ok=True)
        ignore = preferred / ".gitignore"
        if not ignore.exists():
            ignore.write_text("*\n", encoding="utf-8")
        probe = preferred / ".write-probe"
        probe.write_bytes(b"")
        probe.unlink()
        return preferred
    except OSError:
        fallback = user_cache_folder(root)
        fallback.mkdir(parents=True, exist_ok=True)
        return fallback


def cache_dir_made(root: Path) -> bool:
    """Whether default_cache_dir(root) was made before (asking makes nothing)."""
    return (root / ".anchor-ls").is_dir() or user_cache_folder(root).is_dir()


class Cache:
    """Rows in, rows out: every blob is signed on the way in and verified on the way out,
    so callers only ever unpickle bytes this user's anchor-ls wrote."""

    def __init__(self, folder: Path, key: CacheKey | None = None, name: str = FILE_NAME) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.path = folder / name
        self.key = key or load_key()
        self.warning: str | None = self.key.problem
        self.write_error: str | None = None  # the first failed write
        waited = 0.0
        while True:
            try:
                self.db = self._open()
                return
            except sqlite3.DatabaseError as err:
                if not _busy(err):
                    self.warning = f"cache {self.path} was unreadable ({err}); rebuilt"
                    break
                if waited >= _BUSY_WAIT:
                    self.warning = f"cache {self.path} stayed locked by another process; unused"
                    self.db = self._open(":memory:")
                    return
            # Another process is setting the file up (WAL needs it alone for a moment).
            time.sleep(0.05)
            waited += 0.05
        self._remove()
        self.db = self._open()

    def _open(self, where: str | None = None) -> sqlite3.Connection:
        db = sqlite3.connect(where or self.path, timeout=30, check_same_thread=False)
        try:
            self._set_up(db)
        except sqlite3.DatabaseError:
            db.close()
            raise
        return db

    def _set_up(self, db: sqlite3.Connection) -> None:
        db.execute("PRAGMA busy_timeout = 30000")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
        meta = dict(db.execute("SELECT key, value FROM meta WHERE key IN ('schema', 'owner')"))
        owner = self.key.tag("owner", SCHEMA.encode()).hex()
        if meta.get("schema") != SCHEMA or meta.get("owner") != owner:
            if meta.get("schema") == SCHEMA and self.key.problem is None:
                self.warning = (
                    f"cache {self.path} was not written by this user on this machine; rebuilt"
                )
            with db:
                db.execute("DROP TABLE IF EXISTS summaries")
                db.execute("DROP TABLE IF EXISTS graph")
                db.execute("DROP TABLE IF EXISTS graph_parts")
                db.execute("DROP TABLE IF EXISTS derived")
                db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (SCHEMA,))
                db.execute("INSERT OR REPLACE INTO meta VALUES ('owner', ?)", (owner,))
        db.execute(
            "CREATE TABLE IF NOT EXISTS summaries (path TEXT PRIMARY KEY, hash TEXT, blob BLOB)"
        )
        db.execute("CREATE TABLE IF NOT EXISTS graph (key TEXT PRIMARY KEY, blob BLOB)")
        db.execute("CREATE TABLE IF NOT EXISTS graph_parts (name TEXT PRIMARY KEY, blob BLOB)")
        db.execute(
            "CREATE TABLE IF NOT EXISTS derived (name TEXT PRIMARY KEY, key TEXT, blob BLOB)"
        )
        db.execute("SELECT count(*) FROM summaries").fetchone()

    def _remove(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                os.unlink(f"{self.path}{suffix}")

    def take_problem(self) -> str | None:
        """What went wrong since last asked (a rebuild, foreign rows, a failed write), once."""
        said = "; ".join(m for m in (self.warning, self.write_error) if m) or None
        self.warning = self.write_error = None
        return said

    def _verified(self, name: str, stored: object) -> memoryview | None:
        payload = self.key.open(name, stored)
        if payload is None and self.warning is None:
            self.warning = (
                f"cache {self.path} holds rows that do not verify (damaged, or written by"
                " another user): ignored"
            )
        return payload

    @contextlib.contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """One transaction; a failure (full disk, read-only folder) is kept to be said once,
        and the index goes on without what was not written."""
        try:
            with self.db:
                yield self.db
        except sqlite3.Error as err:
            if self.write_error is None:
                self.write_error = f"cache {self.path} could not be written ({err}); not kept"

    def summaries(self, wanted: dict[str, str]) -> dict[str, memoryview]:
        """Pickled summaries by relpath for the (relpath -> hash) pairs the cache holds."""
        if not wanted:
            return {}
        try:
            rows = self.db.execute("SELECT path, hash, blob FROM summaries").fetchall()
        except sqlite3.DatabaseError as err:  # said: every file is parsed again
            if self.warning is None:
                self.warning = f"cache {self.path} could not be read ({err}); files parsed again"
            return {}
        out: dict[str, memoryview] = {}
        for path, digest, blob in rows:
            if wanted.get(path) == digest:
                payload = self._verified(f"summary\0{path}\0{digest}", blob)
                if payload is not None:
                    out[path] = payload
        return out

    def summary(self, path: str, digest: str) -> memoryview | None:
        """One pickled summary, if the cache holds it for this hash (a shared cache of
        library files is read a file at a time, as resolution reaches them)."""
        try:
            row = self.db.execute(
                "SELECT blob FROM summaries WHERE path = ? AND hash = ?", (path, digest)
            ).fetchone()
        except sqlite3.DatabaseError:
            return None
        return self._verified(f"summary\0{path}\0{digest}", row[0]) if row else None

    def holds_under(self, folders: tuple[str, ...]) -> bool:
        """Whether a summary of a file inside one of folders is held (a range of the
        primary key per folder: no row is read)."""
        try:
            for folder in folders:
                low = folder.rstrip("/") + "/"
                high = low[:-1] + chr(ord("/") + 1)
                found = self.db.execute(
                    "SELECT 1 FROM summaries WHERE path >= ? AND path < ? LIMIT 1", (low, high)
                ).fetchone()
                if found:
                    return True
        except sqlite3.DatabaseError:
            return False
        return False

    def store_summaries(self, items: list[tuple[str, str, bytes]]) -> None:
        """Store (relpath, hash, pickled summary) rows, replacing older versions of those paths."""
        if not items:
            return
        sign = self.key.sign
        # signed row by row as SQLite takes them: a list would hold a second copy of them all
        rows = ((p, h, sign(f"summary\0{p}\0{h}", blob)) for p, h, blob in items)
        with self._writing() as db:
            db.executemany("INSERT OR REPLACE INTO summaries VALUES (?, ?, ?)", rows)

    def holds_graph(self) -> bool:
        """Whether any graph is stored: a cold cache need not wait for the fingerprint."""
        try:
            return self.db.execute("SELECT 1 FROM graph LIMIT 1").fetchone() is not None
        except sqlite3.DatabaseError:
            return True  # load_graph says what it finds

    def load_graph(
        self, fingerprint: str, prefix: str
    ) -> tuple[object, dict[str, memoryview]] | None:
        """(state, the parts whose names start with prefix) stored for fingerprint."""
        try:
            row = self.db.execute("SELECT blob FROM graph WHERE key = ?", (fingerprint,)).fetchone()
            if row is None:
                return None
            blob = self._verified(f"graph\0{fingerprint}", row[0])
            if blob is None:
                return None
            state = pickle.loads(blob)
            parts = dict(self.graph_parts(prefix))
        except Exception:  # a damaged blob can raise almost anything from pickle.loads
            return None
        return state, parts

    def graph_parts(
        self, prefix: str, fingerprint: str | None = None
    ) -> Iterator[tuple[str, memoryview]]:
        """The stored parts whose names start with prefix, one row at a time (none when
        the graph stored is not that of fingerprint any more). A part that does not verify
        is left out, as if it were missing."""
        if fingerprint is not None:
            row = self.db.execute("SELECT 1 FROM graph WHERE key = ?", (fingerprint,)).fetchone()
            if row is None:
                return
        end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        for name, stored in self.db.execute(
            "SELECT name, blob FROM graph_parts WHERE name >= ? AND name < ?", (prefix, end)
        ):
            payload = self._verified(f"part\0{name}", stored)
            if payload is not None:
                yield name, payload

    def store_graph(
        self, fingerprint: str, state: object, parts: Iterable[tuple[str, bytes]]
    ) -> None:
        """The graph's state (small, pickled here) and its parts (key, pickled blob), a row
        each, written as they come: one blob of it all would be copied twice more on the way
        in."""
        blob = self.key.sign(
            f"graph\0{fingerprint}", pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
        )
        sign = self.key.sign
        with self._writing() as db:
            db.execute("DELETE FROM graph")
            db.execute("DELETE FROM graph_parts")
            db.execute("INSERT INTO graph VALUES (?, ?)", (fingerprint, blob))
            db.executemany(
                "INSERT INTO graph_parts VALUES (?, ?)",
                ((name, sign(f"part\0{name}", part)) for name, part in parts),
            )

    def load_derived(self, name: str, fingerprint: str) -> memoryview | None:
        """What a layer above stored for the graph of this fingerprint, if it is that one."""
        try:
            row = self.db.execute(
                "SELECT blob FROM derived WHERE name = ? AND key = ?", (name, fingerprint)
            ).fetchone()
        except sqlite3.DatabaseError:
            return None
        return self._verified(f"derived\0{name}\0{fingerprint}", row[0]) if row else None

    def store_derived(self, name: str, fingerprint: str, blob: bytes) -> None:
        signed = self.key.sign(f"derived\0{name}\0{fingerprint}", blob)
        with self._writing() as db:
            row = (name, fingerprint, signed)
            db.execute("INSERT OR REPLACE INTO derived VALUES (?, ?, ?)", row)

    def close(self) -> None:
        self.db.close()
