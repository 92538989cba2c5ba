"""The binder's working types: abstract values, evaluation contexts, per-file conclusions."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from anchor_ls.syntax.summary import Span

Value = tuple
Values = frozenset
EMPTY: frozenset = frozenset()


class OutsideSite(NamedTuple):
    """A call site the binder counted outside the repository (see FileFacts.outside_sites)."""

    at: int  # its place in its scope's calls
    names: tuple[str, ...]  # the outside names it calls (`requests.Session().get`)
    via: int  # how the binder followed its callee (anchor_ls.index.via)
    span: Span


@dataclass(slots=True)
class Ctx:
    """Where an expression is evaluated: a scope and a point in it."""

    path: str
    scope: int
    pos: int | None  # None: the scope's final state
    blocks: tuple[int, ...] = ()
    implicit: list[Value] | None = None  # property getters read while evaluating


@dataclass(slots=True)
class FileFacts:
    """Everything the binder concludes from one file's source."""

    # Sets and lists while a resolution adds to them; tuples once it is done (freeze).
    calls: dict[tuple[int, str], Collection[Value]] = field(default_factory=dict)
    sites: dict[tuple[int, Value], Sequence] = field(default_factory=lambda: defaultdict(list))
    bases: dict[int, list[Value]] = field(default_factory=dict)
    imports: set[str] = field(default_factory=set)
    # (scope idx, target) -> how its strongest site found it, a code of anchor_ls.index.via,
    # while a resolution adds to sites: freeze moves each to the end of its sites entry
    # (one slot there; a dict of them cost 3.4 MB on Django). Read them with call_via.
    via: dict[tuple[int, Value], int] = field(default_factory=dict)
    # scope idx -> [resolved, external, unresolved] call sites, then the place of each
    # unresolved one in the scope's calls (its body's first list): 8 bytes a site, where
    # names and spans held here cost 2.5 MB more on Django. Read them with missed_at.
    counts: dict[int, Sequence[int]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # internal errors, reported as problems
    # (scope idx, function or class value) -> where the scope uses it as a value
    refs: dict[tuple[int, Value], Sequence[Span]] = field(default_factory=lambda: defaultdict(list))
    # (scope idx, edge kind, target id) -> where: env_var, io_dep, const_ref, config_usage
    dense: dict[tuple[int, str, str], Sequence[Span]] = field(
        default_factory=lambda: defaultdict(list)
    )
    # What the binder leaves outside the repository, for anchor_ls.index.externals to find
    # in the environment: scope idx -> its sites counted outside, each (place in its calls,
    # the outside names it calls, its via code, span) (unresolved when none of the names
    # is installed); class scope idx -> all its bases in declared order, for the classes
    # with a base outside.
    outside_sites: dict[int, Sequence[OutsideSite]] = field(default_factory=dict)
    outside_bases: dict[int, Sequence[Value]] = field(default_factory=dict)

    def freeze(self) -> None:
        """A resolution is done adding: tuples hold the same in half the memory (a scope
        resolved again has its entries dropped first, then new ones grown)."""
        sites, via = self.sites, self.via
        for key, code in via.items():
            sites[key] = (*sites[key], code)
        via.clear()
        tables = (self.calls, self.sites, self.refs, self.dense, self.counts)
        for table in (*tables, self.outside_sites):
            for key, value in table.items():
                if type(value) is not tuple:
                    table[key] = tuple(value)

    def missed_at(self, idx: int) -> Sequence[int]:
        """Where scope idx's unresolved call sites are in its calls."""
        return self.counts.get(idx, ())[3:]

    def call_spans(self, key: tuple[int, Value]) -> Sequence[Span]:
        """Where scope key[0] calls key[1]."""
        found = self.sites.get(key, ())
        return found[:-1] if found and type(found[-1]) is int else found

    def call_via(self, key: tuple[int, Value]) -> int:
        """How the strongest of those sites found the call (an anchor_ls.index.via code)."""
        found = self.sites.get(key, ())
        return found[-1] if found and type(found[-1]) is int else self.via.get(key, 0)

    @property
    def resolved(self) -> int:
        return sum(c[0] for c in self.counts.values())

    @property
    def external(self) -> int:
        return sum(c[1] for c in self.counts.values())

    @property
    def unresolved(self) -> int:
        return sum(c[2] for c in self.counts.values())

    def forget_scopes(self, scopes: set[int]) -> None:
        """Drop everything found for those scopes (to be resolved again, or gone)."""
        for key in [k for k in self.calls if k[0] in scopes]:
            del self.calls[key]
        for table in (self.sites, self.via, self.refs, self.dense):
            for key in [k for k in table if k[0] in scopes]:
                del table[key]
        for idx in scopes:
            self.counts.pop(idx, None)
            self.bases.pop(idx, None)
            self.outside_sites.pop(idx, None)
            self.outside_bases.pop(idx, None)

    def replace_scopes(self, scopes: set[int], other: FileFacts) -> None:
        """Take what other (a resolution of those scopes alone) found for them in place of
        what this held for them (scopes past the file's last are gone)."""
        self.forget_scopes(scopes)
        for table in (
            *("calls", "sites", "via", "bases", "refs", "dense", "counts"),
            *("outside_sites", "outside_bases"),
        ):
            getattr(self, table).update(getattr(other, table))
        self.errors.extend(other.errors)

    def move_lines(self, moved: Callable[[Span], Span]) -> None:
        """The file's text moved (an edit added or removed lines): every span follows."""
        for table in (self.sites, self.refs, self.dense):
            for key, spans in table.items():
                table[key] = tuple(moved(s) if type(s) is tuple else s for s in spans)
        for idx, noted in self.outside_sites.items():
            self.outside_sites[idx] = tuple(s._replace(span=moved(s.span)) for s in noted)

    def renumber(self, path: str, numbers: dict[int, int]) -> None:
        """File path's scopes moved (old index -> new): rename the values that name them."""
        for table in (self.calls, self.bases, self.outside_bases):
            for key, values in table.items():
                table[key] = type(values)(renumbered(v, path, numbers) for v in values)
        for table in (self.sites, self.via, self.refs):
            renamed = {renumbered(k, path, numbers): spans for k, spans in table.items()}
            table.clear()
            table.update(renamed)


def pack_sites(sites: Iterable[tuple[str, Span]]) -> str:
    """Named spans as text, a line each: `name line col` for a span of just the name on
    its line, else `name line col end_line end_col` (Django has 66,000 unresolved sites:
    200 bytes each as tuples of ints, 14 as text)."""
    lines = []
    for name, (a, b, c, d) in sites:
        short = a == c and d - b == len(name.encode()) and name
        lines.append(f"{name} {a} {b}" if short else f"{name} {a} {b} {c} {d}")
    return "\n".join(lines)


def unpack_site(line: str) -> tuple[str, Span]:
    """One line of pack_sites."""
    name, *numbers = line.split(" ")
    if len(numbers) == 2:
        a, b = int(numbers[0]), int(numbers[1])
        return name, (a, b, a, b + len(name.encode()))
    a, b, c, d = map(int, numbers)
    return name, (a, b, c, d)


def renumbered(data: object, path: str, numbers: dict[int, int]) -> object:
    """data with every value that names a scope of path, (kind, path, index) or
    (path, index), pointing at the scope's new index."""
    if isinstance(data, tuple):
        n = len(data)
        if n == 3 and data[1] == path and isinstance(data[2], int):
            return (data[0], path, numbers.get(data[2], data[2]))
        if n == 2 and data[0] == path and isinstance(data[1], int):
            return (path, numbers.get(data[1], data[1]))
        return tuple(renumbered(v, path, numbers) for v in data)
    if isinstance(data, frozenset | set):
        return type(data)(renumbered(v, path, numbers) for v in data)
    if isinstance(data, list):
        return [renumbered(v, path, numbers) for v in data]
    if isinstance(data, dict):
        return {renumbered(k, path, numbers): renumbered(v, path, numbers) for k, v in data.items()}
    return data
