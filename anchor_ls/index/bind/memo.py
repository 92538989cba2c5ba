"""The binder's one cache mechanism: a memo of one query, guarded against cycles and
forgotten by file.

A query met again inside its own evaluation (a cycle of definitions, `x = f(x)`) is cut
there: the inner request gets the memo's cut value (nothing yet) and is not remembered,
the outer one finishes and is. Each memo knows which file a key belongs to, so that an
edit forgets what was read off the file edited and keeps the rest.

It holds answers only: it never computes anything on its own and never reads files.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

_MISSING = object()


def first_item(key: tuple) -> str:
    """The file of a key that starts with it: (path, ...)."""
    return key[0]


def first_of_first(key: tuple) -> str:
    """The file of a key that starts with a scope: ((path, idx), ...)."""
    return key[0][0]


def whole(key: str) -> str:
    """The file of a key that is a path."""
    return key


class Memo(Generic[K, V]):
    """Answers of one query by key.

    file_of: the file a key belongs to (forget_file forgets those keys; None: a key
    belongs to no one file, forget_file forgets every key). guard: whether a request
    met inside its own evaluation is cut (True), the same with the keys being worked out
    shared with another memo (a set: their requests cut each other), or evaluated again
    inside (False: the query ends by the guards of the queries it asks)."""

    __slots__ = ("answers", "file_of", "working")

    def __init__(self, file_of: Callable[[K], str] | None = None, guard: bool | set = True) -> None:
        self.answers: dict[K, V] = {}
        self.file_of = file_of
        self.working: set | None = guard if isinstance(guard, set) else set() if guard else None

    def ask(self, key: K, cut: V, compute: Callable[..., V], *args: object) -> V:
        """The answer for key: remembered, or compute(*args) (remembered), or cut while
        key is being worked out (a cycle, in a guarded memo: not remembered)."""
        found = self.answers.get(key, _MISSING)
        if found is not _MISSING:
            return found  # type: ignore[return-value]
        working = self.working
        if working is None:
            value = compute(*args)
        else:
            if key in working:
                return cut
            working.add(key)
            try:
                value = compute(*args)
            finally:
                working.discard(key)
        self.answers[key] = value
        return value

    def get(self, key: K, default: V | None = None) -> V | None:
        return self.answers.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self.answers

    def __getitem__(self, key: K) -> V:
        return self.answers[key]

    def __setitem__(self, key: K, value: V) -> None:
        self.answers[key] = value

    def __iter__(self) -> Iterator[K]:
        return iter(self.answers)

    def __len__(self) -> int:
        return len(self.answers)

    def pop(self, key: K) -> None:
        self.answers.pop(key, None)

    def forget_file(self, path: str) -> None:
        """Forget the answers of path's keys (every answer when keys have no file)."""
        file_of = self.file_of
        if file_of is None:
            self.answers = {}
            return
        answers = self.answers
        for key in [k for k in answers if file_of(k) == path]:
            del answers[key]

    def clear(self) -> None:
        self.answers = {}
        if self.working is not None:
            self.working.clear()


def guarded(working: set, key: object, cut: V, compute: Callable[..., V], *args: object) -> V:
    """compute(*args) with key among the keys being worked out, or cut if it is already
    (a cycle)."""
    if key in working:
        return cut
    working.add(key)
    try:
        return compute(*args)
    finally:
        working.discard(key)
