"""The binder's working types: abstract values, evaluation contexts, per-file conclusions."""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, NamedTuple

from anchor_ls.syntax.summary import Span

# The binder's abstract values. Each kind is its own NamedTuple type, and each keeps its
# old one- or two-letter tag as a hidden first item (its constructor sets it): two kinds
# with the same fields (a class and an instance of it) never compare equal or collide in
# a set, hashing and comparing stay tuple's own (fast, no object per value beyond the
# tuple), and values sort in the fixed order they always had, the tag first (see
# anchor_ls.index.bind.values.in_order), which the graph depends on.
_make = tuple.__new__


class _ScopeFields(NamedTuple):
    tag: str
    path: str  # the file's relpath
    idx: int  # the scope's index in the file's summary


class ScopeValue(_ScopeFields):
    """A value that names a scope of a file: a function, a class or what it makes."""

    __slots__ = ()
    TAG: ClassVar[str] = ""

    def __new__(cls, path: str, idx: int) -> ScopeValue:
        return _make(cls, (cls.TAG, path, idx))

    def __getnewargs__(self) -> tuple[str, int]:  # type: ignore[override]
        return (self[1], self[2])

    @property
    def scope(self) -> tuple[str, int]:
        return (self[1], self[2])


class Function(ScopeValue):
    """A function (or method, unbound) defined by scope idx of path."""

    __slots__ = ()
    TAG = "f"


class BoundMethod(ScopeValue):
    """A method bound to its receiver: calls pass its first parameter."""

    __slots__ = ()
    TAG = "b"


class Class(ScopeValue):
    __slots__ = ()
    TAG = "c"


class Instance(ScopeValue):
    """An instance of the class."""

    __slots__ = ()
    TAG = "i"


class SelfInstance(ScopeValue):
    """`self`: an instance of the class or of a subclass (overrides count)."""

    __slots__ = ()
    TAG = "I"


class Super(ScopeValue):
    """`super()` inside the class."""

    __slots__ = ()
    TAG = "S"


class Generator(ScopeValue):
    """The generator a generator function returns."""

    __slots__ = ()
    TAG = "g"


class _ModuleFields(NamedTuple):
    tag: str
    path: str  # the relpath; 'folder/' for a namespace package


class Module(_ModuleFields):
    __slots__ = ()

    def __new__(cls, path: str) -> Module:
        return _make(cls, ("m", path))

    def __getnewargs__(self) -> tuple[str]:  # type: ignore[override]
        return (self[1],)


class _ExternalFields(NamedTuple):
    tag: str
    dotted: str  # `os.path.join`, `builtins.len()` (what a call of it gives)


class External(_ExternalFields):
    """Something outside the repository (stdlib, third party)."""

    __slots__ = ()

    def __new__(cls, dotted: str) -> External:
        return _make(cls, ("x", dotted))

    def __getnewargs__(self) -> tuple[str]:  # type: ignore[override]
        return (self[1],)


class _ContainerFields(NamedTuple):
    tag: str
    items: frozenset[Value]


class Container(_ContainerFields):
    """A list, tuple, set or other container of values."""

    __slots__ = ()

    def __new__(cls, items: frozenset[Value]) -> Container:
        return _make(cls, ("L", items))

    def __getnewargs__(self) -> tuple[frozenset[Value]]:  # type: ignore[override]
        return (self[1],)


class _DictFields(NamedTuple):
    tag: str
    items: tuple[tuple[str, frozenset[Value]], ...]  # sorted by key; "*": any key


class Dict(_DictFields):
    """A dict with constant keys."""

    __slots__ = ()

    def __new__(cls, items: tuple[tuple[str, frozenset[Value]], ...]) -> Dict:
        return _make(cls, ("D", items))

    def __getnewargs__(self) -> tuple[tuple[tuple[str, frozenset[Value]], ...]]:  # type: ignore[override]
        return (self[1],)


class _DictMethodFields(NamedTuple):
    tag: str
    dict: Dict
    method: str  # get, pop, setdefault, values


class DictMethod(_DictMethodFields):
    """A method of a dict value that gives its values (`d.get`)."""

    __slots__ = ()

    def __new__(cls, dict: Dict, method: str) -> DictMethod:
        return _make(cls, ("dv", dict, method))

    def __getnewargs__(self) -> tuple[Dict, str]:  # type: ignore[override]
        return (self[1], self[2])


Value = (
    Module
    | Function
    | BoundMethod
    | Class
    | Instance
    | SelfInstance
    | Super
    | Generator
    | Container
    | Dict
    | External
    | DictMethod
)
Values = frozenset[Value]
VALUE_TYPES = (ScopeValue, Module, External, Container, Dict, DictMethod)
CALLABLE = (Function, BoundMethod)  # what a call site calls as a function
INSTANCES = (Instance, SelfInstance)
EMPTY: Values = frozenset()


class OutsideSite(NamedTuple):
    """A call site the binder counted outside the repository, or resolved in it and
    calling names outside too (see FileFacts.outside_sites)."""

    at: int  # its place in its scope's calls
    names: tuple[str, ...]  # the outside names it calls (`requests.Session().get`)
    via: int  # how the binder followed its callee (anchor_ls.index.via)
    span: Span
    resolved: bool = False  # it has a target in the repository: never unresolved


@dataclass(slots=True)
class Ctx:
    """Where an expression is evaluated: a scope and a point in it."""

    path: str
    scope: int
    pos: int | None  # None: the scope's final state
    blocks: tuple[int, ...] = ()
    implicit: list[Function] | None = None  # property getters read while evaluating


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

    def scopes_differing(self, other: FileFacts) -> set[int]:
        """The scopes for which other found something else than these facts (calls,
        sites, bases, references, dense facts, counts, what was left outside)."""
        out: set[int] = set()
        for table in _BY_INDEX:
            mine, theirs = getattr(self, table), getattr(other, table)
            out.update(i for i in mine.keys() | theirs.keys() if _at(mine, i) != _at(theirs, i))
        for table in _KEYED:
            mine, theirs = getattr(self, table), getattr(other, table)
            at = _targets_at if table == "calls" else _at
            out.update(k[0] for k in mine.keys() | theirs.keys() if at(mine, k) != at(theirs, k))
        return out

    def of_scopes(self, scopes: Collection[int]) -> FileFacts:
        """What these facts hold for those scopes alone (for replace_scopes)."""
        out = FileFacts()
        for table in _BY_INDEX:
            into = getattr(out, table)
            into.update((i, found) for i, found in getattr(self, table).items() if i in scopes)
        for table in _KEYED:
            into = getattr(out, table)
            into.update((k, found) for k, found in getattr(self, table).items() if k[0] in scopes)
        return out

    def move_scopes(self, numbers: dict[int, int]) -> None:
        """The file's own scopes moved (old index -> new; those left out are gone): what
        each found follows it, what the gone ones found is dropped (see renumber for the
        values that name them)."""
        by_index = (self.counts, self.bases, self.outside_sites, self.outside_bases)
        keyed = (self.calls, self.sites, self.via, self.refs, self.dense)
        held = {i for table in by_index for i in table}
        held.update(key[0] for table in keyed for key in table)
        self.forget_scopes(held.difference(numbers))
        for table in by_index:
            moved: dict = {numbers[i]: found for i, found in table.items()}
            table.clear()
            table.update(moved)
        for table in keyed:
            moved = {(numbers[key[0]], *key[1:]): found for key, found in table.items()}
            table.clear()
            table.update(moved)

    def move_lines(self, moved: Callable[[Span], Span]) -> None:
        """The file's text moved (an edit added or removed lines): every span follows."""
        for table in (self.sites, self.refs, self.dense):
            for key, spans in table.items():
                table[key] = tuple(moved(s) if type(s) is tuple else s for s in spans)
        for idx, noted in self.outside_sites.items():
            self.outside_sites[idx] = tuple(s._replace(span=moved(s.span)) for s in noted)

    def named_paths(self) -> set[str]:
        """The files whose scopes these facts name (those whose renumbering rewrites them)."""
        values: set[Value] = set()
        for table in (self.calls, self.bases, self.outside_bases):
            for found in table.values():
                values.update(found)
        for keyed in (self.sites, self.via, self.refs):
            values.update(key[1] for key in keyed)
        return set().union(*map(value_paths, values))

    def renumber(self, path: str, numbers: dict[int, int]) -> None:
        """File path's scopes moved (old index -> new): rename the values that name them
        (the entries that name none stay as they are, in their order)."""
        for table in (self.calls, self.bases, self.outside_bases):
            for key, values in table.items():
                if any(path in value_paths(v) for v in values):
                    table[key] = type(values)(renumbered(v, path, numbers) for v in values)
        for keyed in (self.sites, self.via, self.refs):
            if any(path in value_paths(key[1]) for key in keyed):
                renamed = {
                    (key[0], renumbered(key[1], path, numbers))
                    if path in value_paths(key[1])
                    else key: spans
                    for key, spans in keyed.items()
                }
                keyed.clear()
                keyed.update(renamed)


# The tables of FileFacts keyed by scope index, and by (scope index, ...).
_BY_INDEX = ("bases", "counts", "outside_sites", "outside_bases")
_KEYED = ("calls", "sites", "via", "refs", "dense")
_MISSING = object()


def _at(table: dict, key: object) -> object:
    return table.get(key, _MISSING)


def _targets_at(table: dict[tuple[int, str], Collection[Value]], key: object) -> object:
    """What a scope's sites of a kind call, as the set it is: freeze makes it a tuple in
    the set's order, which the hash seed sets (and renumber keeps the order from before):
    compared as tuples, use.py's reader, found calling the same two functions before an
    edit and after it, differed under some seeds, and the edit resolved afresh."""
    found = table.get(key, _MISSING)
    return found if found is _MISSING else frozenset(found)


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


@functools.lru_cache(maxsize=1 << 16)
def value_paths(value: Value) -> frozenset[str]:
    """The files one value names, at any depth (cached: the same nested values are passed
    from file after file, and walking them took 1.5 s of a stdlib build)."""
    if isinstance(value, ScopeValue):
        return frozenset((value.path,))
    if isinstance(value, Container):
        return frozenset().union(*map(value_paths, value.items))
    if isinstance(value, Dict):
        return frozenset().union(*(value_paths(v) for _key, vs in value.items for v in vs))
    if isinstance(value, DictMethod):
        return value_paths(value.dict)
    return frozenset()  # a module or an outside thing: no scope of a file


def renumbered(data: object, path: str, numbers: dict[int, int]) -> object:
    """data with every value that names a scope of path (a ScopeValue, or a (path, index)
    key) pointing at the scope's new index."""
    if isinstance(data, ScopeValue):
        if data[1] == path:
            return type(data)(path, numbers.get(data[2], data[2]))
        return data
    if isinstance(data, VALUE_TYPES):  # a value holding values: each of its fields
        return type(data)(*(renumbered(v, path, numbers) for v in data[1:]))
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
