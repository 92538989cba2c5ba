"""Hierarchy answers from glimpses (index/glimpse.py) while a folder's first build runs.

A cold build of a large repository has no graph for tens of seconds; a call or type
hierarchy asked meanwhile is answered from the index of the few files that can hold
its answer. Each glimpse is made once per build, on a reader thread, and they are
dropped with the first build's end: from then on the folder's own graph answers.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from anchor_ls.index import Entity
from anchor_ls.index.glimpse import Corpus, glimpse, used_scope, users_scope, users_wanted
from anchor_ls.index.model import path_of
from anchor_ls.server.folders import READY, Folder

# What a request asks, and the scope that answers it: who uses the entity, or what it uses.
USERS = ("incoming", "subtypes")


class Glimpses:
    """The glimpses of one folder during its first build (reader threads; one at a time)."""

    def __init__(self, root: Path, exclude: Sequence[str], source_roots: Sequence[str]) -> None:
        self.root = root
        self.exclude = tuple(exclude)
        self.source_roots = tuple(source_roots)
        self._lock = threading.RLock()  # a scope may need a glimpse of its entity's file
        self._idle = threading.Event()  # set while no glimpse is being made or awaited
        self._idle.set()
        self._busy = 0  # glimpses being made, asked for or about to be (see soon)
        self._busy_lock = threading.Lock()
        self._corpus: Corpus | None = None
        self._made: dict[tuple[frozenset[str], frozenset[str] | None], Folder] = {}
        # (what, id) -> its glimpse: a scope is found by reading every file's text, and a
        # client asks the same again and again while the build runs
        self._asked: dict[tuple[str, str], Folder | None] = {}

    def of_file(self, relpath: str) -> Folder | None:
        """A glimpse of one file (its own definitions, no call resolved: enough to name
        the one under a cursor)."""
        return self._of(("file", relpath), lambda corpus: users_scope(corpus, relpath), frozenset())

    def for_request(self, entity_id: str, which: str) -> Folder | None:
        """A glimpse that answers `which` (incoming, supertypes, subtypes) of entity_id."""
        if which in USERS:
            return self._of(
                ("users", entity_id),
                lambda corpus: users_scope(corpus, entity_id),
                users_wanted(entity_id, self._kind_of(entity_id)),
            )
        return self._of(
            ("used", entity_id),
            lambda corpus: used_scope(corpus, entity_id, self._text_of(entity_id)),
        )

    def soon(self, entity_id: str, which: str) -> Callable[[], Folder | None]:
        """for_request(entity_id, which), to be run on another thread: the build waits
        from now on, not only once that thread begins it."""
        self._begin()

        def run() -> Folder | None:
            try:
                return self.for_request(entity_id, which)
            finally:
                self._end()

        return run

    @contextmanager
    def busy(self) -> Iterator[None]:
        """The build waits while this runs (a glimpse, or what asks for several)."""
        self._begin()
        try:
            yield
        finally:
            self._end()

    def _begin(self) -> None:
        with self._busy_lock:
            self._busy += 1
            self._idle.clear()

    def _end(self) -> None:
        with self._busy_lock:
            self._busy -= 1
            if not self._busy:
                self._idle.set()

    def _kind_of(self, entity_id: str) -> str:
        found = self._own(entity_id)
        return found[1].kind if found is not None else ""

    def _text_of(self, entity_id: str) -> bytes:
        """The source lines of entity_id, from a glimpse of its file."""
        found = self._own(entity_id)
        if found is None or found[0].index is None:
            return b""
        own, entity = found
        lines = (own.index.source(entity.path) or b"").splitlines(keepends=True)
        return b"".join(lines[entity.start_line - 1 : entity.end_line])

    def _own(self, entity_id: str) -> tuple[Folder, Entity] | None:
        """The glimpse of entity_id's file, and the entity in it."""
        own = self.of_file(path_of(entity_id))
        graph = own.graph if own is not None else None
        entity = graph.entity(entity_id) if graph is not None else None
        return (own, entity) if own is not None and entity is not None else None

    def _of(
        self,
        key: tuple[str, str],
        scope_of: Callable[[Corpus], frozenset[str] | None],
        wanted: frozenset[str] | None = None,
    ) -> Folder | None:
        """The glimpse of the scope scope_of finds (None: no glimpse can answer), with the
        sites that mention wanted resolved (None: every site)."""
        with self.busy(), self._lock:
            if key in self._asked:
                return self._asked[key]
            return self._make(key, scope_of, wanted)

    def wait_idle(self, timeout: float) -> bool:
        """Indexer thread: wait (at most timeout seconds) while a glimpse is being made or
        awaited; False: it still is. The build's own thread, beside a glimpse, halves its
        speed: the interpreter lock takes turns (Django, QuerySet.filter: 1.0 s alone,
        3.3 s beside the build)."""
        return self._idle.wait(timeout)

    def _make(
        self,
        key: tuple[str, str],
        scope_of: Callable[[Corpus], frozenset[str] | None],
        wanted: frozenset[str] | None,
    ) -> Folder | None:
        """_of, its lock held."""
        if self._corpus is None:
            self._corpus = Corpus.read(self.root, self.exclude)
        corpus = self._corpus
        scope = scope_of(corpus)
        if scope is None:
            self._asked[key] = None
            return None
        found = self._made.get((scope, wanted))
        if found is None:
            found = Folder("", self.root, origin="glimpse")
            found.index = glimpse(
                corpus,
                scope,
                exclude=self.exclude,
                source_roots=self.source_roots,
                wanted=wanted,
            )
            found.stats = found.index.stats()
            found.state = READY
            self._made[(scope, wanted)] = found
        self._asked[key] = found
        return found


def entity_under(folder: Folder, relpath: str, line: int, col: int) -> Entity | None:
    """The definition whose name is under (line, col) in a glimpse: elsewhere a call may
    be under the cursor, and what it calls may be in a file the glimpse did not read."""
    graph = folder.graph
    entity = graph.entity_at(relpath, line) if graph is not None else None
    if entity is None or entity.kind == "module":
        return None
    sl, sc, el, ec = entity.name_span
    return entity if (sl, sc) <= (line, col) <= (el, ec) else None
