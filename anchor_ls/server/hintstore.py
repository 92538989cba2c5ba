"""Whole-file inlay hints kept between requests, dropped only where a change reaches them.

A file's hints show facts of its own definitions and link to definitions in other
files, so they go stale when the index reports a change to the file itself or to one
of the files they link to (`FileHints.deps`); everything else is kept across edits.

Hints are computed on reader threads while the indexer thread may be changing the
graph. The store's epoch is odd while a change runs; hints are stored only when the
epoch did not move while they were computed, so an answer read from a half-changed
graph is used once and never kept.
"""

from __future__ import annotations

import threading
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass

from anchor_ls.server.protocol import JsonText

# Kept hints, in bytes of JSON. Django's 2,800 files take about 11 MiB.
BUDGET_BYTES = 96 << 20


@dataclass(frozen=True, slots=True)
class FileHints:
    """Every hint of one file as JSON text, in line order, and what they were made from.

    `deps`: the files whose definitions the labels link to (their positions are in the
    hints), this file included, and those of every entry of a cut field (a change to one
    can change what the cut keeps: anchor_ls.tags.rank); a change to any of them makes
    these hints stale.
    """

    rows: tuple[int, ...]
    parts: tuple[str, ...]
    deps: frozenset[str]

    @property
    def size(self) -> int:
        return sum(len(p) for p in self.parts) + 64

    def within(self, first: int, last: int) -> JsonText:
        """The hints whose header ends on lines first..last (both included), as a JSON array."""
        lo, hi = bisect_left(self.rows, first), bisect_right(self.rows, last)
        return JsonText("[" + ", ".join(self.parts[lo:hi]) + "]")


NO_HINTS = FileHints((), (), frozenset())


class HintStore:
    """FileHints by relpath for one key (shown fields, position encoding, lazy tooltips)."""

    def __init__(self, budget: int = BUDGET_BYTES) -> None:
        self.budget = budget
        self._lock = threading.Lock()
        self._key: Hashable = None
        self._files: OrderedDict[str, FileHints] = OrderedDict()
        self._size = 0
        self._epoch = 0

    # ----- reads (any thread) -------------------------------------------
    def token(self) -> int:
        """Taken before computing hints; put() keeps them only if no change ran since."""
        return self._epoch

    def get(self, key: Hashable, relpath: str) -> FileHints | None:
        with self._lock:
            if key != self._key:
                return None
            found = self._files.get(relpath)
            if found is not None:
                self._files.move_to_end(relpath)
            return found

    def missing(self, key: Hashable, relpaths: Iterable[str]) -> list[str]:
        with self._lock:
            if key != self._key:
                return list(relpaths)
            return [p for p in relpaths if p not in self._files]

    @property
    def full(self) -> bool:
        return self._size >= self.budget

    @property
    def size(self) -> int:
        return self._size

    def __len__(self) -> int:
        return len(self._files)

    def kept(self, key: Hashable) -> dict[str, FileHints]:
        """Every file's hints kept for key (a copy)."""
        with self._lock:
            return dict(self._files) if key == self._key else {}

    # ----- writes -------------------------------------------------------
    def put(self, key: Hashable, relpath: str, hints: FileHints, token: int) -> bool:
        """Keep hints computed since token(), unless a change started or ran in between."""
        with self._lock:
            if token != self._epoch or token % 2:
                return False
            if key != self._key:
                self._reset(key)
            old = self._files.pop(relpath, None)
            if old is not None:
                self._size -= old.size
            self._files[relpath] = hints
            self._size += hints.size
            while self._size > self.budget and len(self._files) > 1:
                _rel, evicted = self._files.popitem(last=False)
                self._size -= evicted.size
            return True

    def begin_change(self) -> None:
        """The indexer thread starts changing the graph: nothing computed now is kept."""
        with self._lock:
            if self._epoch % 2 == 0:
                self._epoch += 1

    def end_change(self, changed: set[str] | None) -> None:
        """The change is done: drop the hints it touched (None: all of them)."""
        with self._lock:
            if changed is None:
                self._reset(self._key)
            elif changed:
                stale = [
                    rel
                    for rel, hints in self._files.items()
                    if rel in changed or not hints.deps.isdisjoint(changed)
                ]
                for rel in stale:
                    self._size -= self._files.pop(rel).size
            if self._epoch % 2:
                self._epoch += 1

    def clear(self) -> None:
        with self._lock:
            self._reset(self._key)
            self._epoch += 2  # hints being computed now used the old settings or policy

    def _reset(self, key: Hashable) -> None:
        self._key = key
        self._files = OrderedDict()
        self._size = 0
