"""Repository-wide tables read off class definitions, kept per file.

Which classes bind a name, which store `self.name = ...` in their methods, which
classes subclass which, and which module functions class bodies bind as methods: each
is the union of every file's share. An edit that changes a file's definitions
replaces that file's share (and those of the files that name it) instead of
rescanning the repository, which costs a few hundred milliseconds on Django.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import NamedTuple

from anchor_ls.index.state import renumbered

Scope = tuple[str, int]  # (relpath, scope index)


class Share(NamedTuple):
    """What one file's classes add to the tables."""

    definers: list[tuple[str, Scope]]  # (name, class whose body binds it)
    bases: list[tuple[Scope, Scope]]  # (base, subclass)
    hosts: list[tuple[Scope, Scope]]  # (module function, class binding it)
    stores: list[tuple[str, Scope]]  # (name, class whose methods store self.name)


class ClassTables:
    def __init__(self) -> None:
        self.shares: dict[str, Share] = {}
        self._empty()

    def _empty(self) -> None:
        self.definers: dict[str, set[Scope]] = defaultdict(set)
        self.subclasses: dict[Scope, set[Scope]] = defaultdict(set)
        self.hosts: dict[Scope, set[Scope]] = defaultdict(set)
        self.storers: dict[str, set[Scope]] = defaultdict(set)

    def put(self, path: str, share: Share | None) -> None:
        """Replace path's share (None: the file is gone)."""
        old = self.shares.pop(path, None)
        if old is not None:
            self._apply(old, set.discard)
        if share is not None:
            self.shares[path] = share
            self._apply(share, set.add)

    def _apply(self, share: Share, op: Callable[[set, Scope], None]) -> None:
        for name, cls in share.definers:
            op(self.definers[name], cls)
        for base, sub in share.bases:
            op(self.subclasses[base], sub)
        for fn, cls in share.hosts:
            op(self.hosts[fn], cls)
        for name, cls in share.stores:
            op(self.storers[name], cls)

    def renumber(self, path: str, numbers: dict[int, int]) -> None:
        """path's scopes moved (old index -> new); its own share is stale and dropped
        (it is put again once the file is read)."""
        shares = {p: s for p, s in self.shares.items() if p != path}
        self.shares = {}
        self._empty()
        for p, share in shares.items():
            self.put(p, Share(*(renumbered(part, path, numbers) for part in share)))
