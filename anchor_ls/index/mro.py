"""C3 linearization (the MRO) in time and memory proportional to the classes.

The textbook merge looks for each head in the tail of every list: cubic in the depth of
a class chain (2,500 classes `class C1(C0)`, `class C2(C1)`, ... took a minute), and a
list per class is quadratic memory in it. Here a class with one base shares its base's
MRO instead of copying it, and the merge counts each class's places in the tails and
takes in one step the runs of the longest list that no other list holds.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Generic, TypeVar, overload

T = TypeVar("T", bound=Hashable)


class Linearization(Sequence[T], Generic[T]):
    """An MRO: its own first classes, then (shared, not copied) the whole MRO of a base.

    cyclic: a base still being linearized (a cycle of bases) stood for itself alone in it
    or in the MRO of an ancestor; only then can the MRO repeat a class.
    """

    __slots__ = ("_own", "_rest", "_size", "cyclic")

    def __init__(
        self, own: list[T], rest: Linearization[T] | None = None, cyclic: bool = False
    ) -> None:
        self._own = own
        self._rest = rest
        self._size = len(own) + (len(rest) if rest is not None else 0)
        self.cyclic = cyclic or (rest is not None and rest.cyclic)

    def __iter__(self) -> Iterator[T]:
        node: Linearization[T] | None = self
        while node is not None:
            yield from node._own
            node = node._rest

    def __len__(self) -> int:
        return self._size

    def parts(self) -> Iterator[tuple[Linearization[T], list[T]]]:
        """Each MRO this one ends with, itself first, and the classes it puts before the
        next: what is found along one can be remembered for all that end with it."""
        node: Linearization[T] | None = self
        while node is not None:
            yield node, node._own
            node = node._rest

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return list(self)[index]
        if index < 0:
            index += self._size
        node: Linearization[T] | None = self
        while node is not None:
            if 0 <= index < len(node._own):
                return node._own[index]
            index -= len(node._own)
            node = node._rest
        raise IndexError(index)

    def __repr__(self) -> str:
        return f"Linearization({list(self)!r})"


def linearize(
    cls: T, bases: Sequence[T], base_mros: Sequence[Linearization[T] | None]
) -> Linearization[T]:
    """The MRO of cls from its bases' (None for a base being linearized: a cycle, cut
    there, where the base stands for itself alone)."""
    if len(bases) == 1 and base_mros[0] is not None and not base_mros[0].cyclic:
        return Linearization([cls], base_mros[0])  # the C3 merge of a repeat-free MRO and its head
    seqs = [list(m) if m is not None else [b] for b, m in zip(bases, base_mros, strict=True)]
    cyclic = any(m is None or m.cyclic for m in base_mros)
    return Linearization(c3_merge(cls, [*seqs, bases]), None, cyclic)


def mro_of(
    cls: T,
    bases_of: Callable[[T], Sequence[T]],
    known: dict[T, Linearization[T]],
    active: set[T],
) -> Linearization[T]:
    """cls and its bases (bases_of, in declared order) in C3 order. Walked with a stack of
    its own, not recursion: a chain of thousands of classes is as deep.

    known: the MROs found so far, added to; active: the classes being linearized (a base
    among them, a cycle, stands for itself alone).
    """
    cached = known.get(cls)
    if cached is not None:
        return cached
    if cls in active:
        return Linearization([cls], None, cyclic=True)
    # (class, its bases, the MROs of those linearized so far), innermost last
    stack: list[tuple[T, list[T], list[Linearization[T] | None]]] = []

    def push(klass: T) -> None:
        active.add(klass)
        stack.append((klass, [], []))  # on the stack before bases_of can fail: let go after
        stack[-1][1].extend(bases_of(klass))

    try:
        push(cls)
        while True:
            klass, bases, done = stack[-1]
            if len(done) < len(bases):
                base = bases[len(done)]
                found = known.get(base)
                if found is not None or base in active:
                    done.append(found)
                else:
                    push(base)
                continue
            result = linearize(klass, bases, done)
            stack.pop()
            active.discard(klass)
            known[klass] = result
            if not stack:
                return result
            stack[-1][2].append(result)
    finally:
        for klass, _bases, _done in stack:
            active.discard(klass)


def c3_merge(first: T, seqs: Sequence[Sequence[T]]) -> list[T]:
    """[first] followed by the C3 merge of seqs (the bases' MROs, then the bases).

    Where no head can be taken (an inconsistent hierarchy) the rest follows depth-first,
    without repeats. The result is the textbook merge's, repeats in the lists included
    (a cycle of bases, cut where it closes, gives those).
    """
    result = [first]
    lists = [s for s in seqs if s]
    if not lists:
        return result
    tails: Counter[T] = Counter()
    for s in lists:
        tails.update(s[1:])
    big = max(range(len(lists)), key=lambda i: len(lists[i]))
    marks = _marks(lists, big)
    marked = set(marks)
    pos = [0] * len(lists)
    live = len(lists)
    while live:
        for i, s in enumerate(lists):
            if pos[i] < len(s) and not tails[s[pos[i]]]:
                break
        else:
            return _depth_first(result, lists, pos)
        at = pos[i]
        if i == big and at not in marked:
            # A run no other list holds: taking a class of it changes no other list's
            # head or tails, so the next scan finds the same lists blocked and this one's
            # next head free; the merge takes the run whole.
            end = marks[bisect.bisect(marks, at)] if marks and marks[-1] > at else len(s)
            result.extend(s[at:end])
            pos[i] = end
            if end < len(s):
                tails[s[end]] -= 1
            else:
                live -= 1
            continue
        head = s[at]
        result.append(head)
        for j, t in enumerate(lists):
            if pos[j] < len(t) and t[pos[j]] == head:
                pos[j] += 1
                if pos[j] < len(t):
                    tails[t[pos[j]]] -= 1
                else:
                    live -= 1
    return result


def _marks(lists: Sequence[Sequence[T]], big: int) -> list[int]:
    """The places in lists[big] of the classes another list holds, ascending (all of its
    places when it holds a class twice: no runs then)."""
    index = dict(zip(lists[big], range(len(lists[big])), strict=True))
    if len(index) < len(lists[big]):
        return list(range(len(lists[big])))
    return sorted({index[c] for i, s in enumerate(lists) if i != big for c in s if c in index})


def _depth_first(result: list[T], lists: Sequence[Sequence[T]], pos: list[int]) -> list[T]:
    """The rest of each list in turn, leaving out what result holds."""
    seen = set(result)
    for s, at in zip(lists, pos, strict=True):
        for c in s[at:]:
            if c not in seen:
                seen.add(c)
                result.append(c)
    return result
