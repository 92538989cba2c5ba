"""What the binder needs to know about one file, as plain picklable data.

(Plain dataclasses without slots pickle in C, several times faster than slotted ones; the
most numerous records (bindings, call sites, parameters) are named tuples: half the memory.)

Expressions are small tuples (the binder's IR) whose first item is a tag: each kind is a
NamedTuple below (the binder reads them by position, `value[0] == "c"`), kept tuples so that
a summary stays as small and as fast to pickle as before. Every other record of a scope is a
NamedTuple too (Use, AttrRead, AttrAssign, Mutation, StarImport, ModuleConstant, Problem).
"""

from __future__ import annotations

import pickle
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

Expr = tuple[Any, ...]  # one of the EXPRESSION_KINDS
Span = tuple[int, int, int, int]


# ----- expressions: (tag, fields...), one NamedTuple per kind ---------------------------


class Name(NamedTuple):
    """`x`"""

    tag: str  # "n"
    name: str


class Attribute(NamedTuple):
    """`base.attr`"""

    tag: str  # "a"
    base: Expr
    attr: str


class Call(NamedTuple):
    """`func(*args, **kwargs)`; kwargs: (name, expr) pairs, name "**" for `**mapping`."""

    tag: str  # "c"
    func: Expr
    args: tuple[Expr, ...]
    kwargs: tuple[tuple[str, Expr], ...]


class Subscript(NamedTuple):
    """`base[key]` (key a Slice or AnySlice for a slice)."""

    tag: str  # "s"
    base: Expr
    key: Expr


class Slice(NamedTuple):
    """`[start:stop]` by int literals (None where one is left out)."""

    tag: str  # "sl"
    start: int | None
    stop: int | None


class AnySlice(NamedTuple):
    """A slice by anything else (a step, a name)."""

    tag: str  # "sl"


class Constant(NamedTuple):
    """A str or int constant (dict keys, `__all__` items)."""

    tag: str  # "k"
    value: str | int


class DictDisplay(NamedTuple):
    """`{key: value, ...}`"""

    tag: str  # "d"
    items: tuple[tuple[Expr, Expr], ...]


class SeqDisplay(NamedTuple):
    """A list, tuple or set display."""

    tag: str  # "l"
    items: tuple[Expr, ...]


class Definition(NamedTuple):
    """A function, class or named lambda, by scope index."""

    tag: str  # "f"
    scope: int


class DecoratorsFrom(NamedTuple):
    """What the decorators of scope from the k-th (0 = top) down return (a stacked
    decorator's argument)."""

    tag: str  # "dw"
    scope: int
    k: int


class Either(NamedTuple):
    """Any of several values (`a or b`, `a if c else b`, `X | Y`)."""

    tag: str  # "or"
    options: tuple[Expr, ...]


class StringAnnotation(NamedTuple):
    """A string annotation, parsed by the binder."""

    tag: str  # "sa"
    text: str


class Element(NamedTuple):
    """An element of an iterable (for targets, `*` unpacking, `yield from`)."""

    tag: str  # "it"
    iterable: Expr


class Entered(NamedTuple):
    """What `with expr as x` binds."""

    tag: str  # "en"
    manager: Expr


class Caught(NamedTuple):
    """What `except expr as x` binds (an instance of expr)."""

    tag: str  # "ex"
    exception: Expr


class Item(NamedTuple):
    """Item i of a tuple unpacking."""

    tag: str  # "ix"
    value: Expr
    index: int


class InstanceOf(NamedTuple):
    """An instance of what an annotation names."""

    tag: str  # "an"
    annotation: Expr


class Generic(NamedTuple):
    """A subscripted annotation (`Optional[X]`, `list[X]`)."""

    tag: str  # "g"
    base: Expr
    args: tuple[Expr, ...]


class Starred(NamedTuple):
    """A `*args` argument."""

    tag: str  # "*"
    value: Expr


class StarredTarget(NamedTuple):
    """A starred target: the items of value from start, less `after`."""

    tag: str  # "st"
    value: Expr
    start: int
    after: int


class Import(NamedTuple):
    """`import module` (binds the top package unless aliased)."""

    tag: str  # "im"
    module: str
    level: int


class ImportAs(NamedTuple):
    """`import module as x` (binds the module itself)."""

    tag: str  # "ima"
    module: str
    level: int


class ImportFrom(NamedTuple):
    """`from module import name`"""

    tag: str  # "if"
    module: str
    level: int
    name: str


class Unknown(NamedTuple):
    """Anything else."""

    tag: str  # "u"


EXPRESSION_KINDS: tuple[type[tuple[Any, ...]], ...] = (
    Name,
    Attribute,
    Call,
    Subscript,
    Slice,
    AnySlice,
    Constant,
    DictDisplay,
    SeqDisplay,
    Definition,
    DecoratorsFrom,
    Either,
    StringAnnotation,
    Element,
    Entered,
    Caught,
    Item,
    InstanceOf,
    Generic,
    Starred,
    StarredTarget,
    Import,
    ImportAs,
    ImportFrom,
    Unknown,
)
for _kind in EXPRESSION_KINDS:
    # An expression's repr is its tuple's: the index compares what files export by repr.
    _kind.__repr__ = tuple.__repr__  # type: ignore[method-assign]

UNKNOWN: Expr = Unknown("u")


# ----- the other records of a scope ------------------------------------------------------


class Use(NamedTuple):
    """A value use, for the dense facts. kind: "r" a name or attribute used as a value (an
    argument, a container item, an attribute or class-level assignment, a default, a return
    value): a reference; "n" a read of an UPPER_CASE name (a module constant, maybe
    imported); "s" `x.environ["K"]` / `x.config["K"]`: expr is the subscript, its key a
    constant."""

    kind: str
    expr: Expr
    span: Span
    pos: int
    blocks: tuple[int, ...]


ATTR_READ, ATTR_WRITE, ATTR_DELETE = "r", "w", "d"


class AttrRead(NamedTuple):
    """An attribute read, assigned or deleted (kind ATTR_READ, ATTR_WRITE, ATTR_DELETE): on
    a property each runs a function, its getter, setter or deleter. Only reads give
    values (and dense facts)."""

    expr: Expr
    span: Span
    pos: int
    blocks: tuple[int, ...]
    kind: str = ATTR_READ


class AttrAssign(NamedTuple):
    """`self.x = v`, `obj.attr = v`"""

    obj: Expr
    attr: str
    value: Expr
    pos: int


class Mutation(NamedTuple):
    """`x[k] = v`, `x.append(v)`, `x.update(...)` grow what x holds; replaces: the constant
    keys it sets lose their earlier values (see expressions.mutate)."""

    name: str
    added: Expr
    pos: int
    replaces: bool


class StarImport(NamedTuple):
    """`from module import *`"""

    module: str
    level: int
    pos: int


class ModuleConstant(NamedTuple):
    """A module-level UPPER_CASE assignment."""

    name: str
    line: int
    end_line: int
    span: Span


class Problem(NamedTuple):
    """Why a file was read in part (kind: decode, syntax, too-deep, ...)."""

    kind: str
    message: str


class Binding(NamedTuple):
    name: str
    value: Expr
    pos: int  # byte offset of the statement, for "latest binding before a use"
    blocks: tuple[int, ...]  # enclosing conditional/loop blocks within the scope


class CallSite(NamedTuple):
    func: Expr
    args: tuple[Expr, ...]
    kwargs: tuple[tuple[str, Expr], ...]
    span: Span  # the called name, for call-hierarchy ranges
    pos: int
    blocks: tuple[int, ...]
    kind: str = "call"  # call | decorator | raise | iter | aiter | with | awith (implicit)


class Param(NamedTuple):
    name: str
    kind: str  # pos | posonly | kwonly | star | starstar
    annotation: Expr | None
    default: Expr | None


@dataclass
class Scope:
    kind: str  # module | class | function | lambda
    name: str
    qualname: str  # '' for the module
    parent: int  # -1 for the module
    line: int  # 1-based line of the def/class keyword (1 for the module)
    end_line: int
    start_line: int  # first decorator line
    name_span: Span
    decorators: Sequence[Expr] = field(default_factory=list)
    bases: Sequence[Expr] = field(default_factory=list)
    metaclass: Expr | None = None
    params: Sequence[Param] = field(default_factory=list)
    returns: Expr | None = None  # return annotation
    bindings: Sequence[Binding] = field(default_factory=list)
    # The body: read only when this file itself is resolved (see pack_bodies).
    calls: Sequence[CallSite] = field(default_factory=list)
    return_values: Sequence[Expr] = field(default_factory=list)
    yields: Sequence[Expr] = field(default_factory=list)
    attr_assigns: Sequence[AttrAssign] = field(default_factory=list)
    attr_reads: Sequence[AttrRead] = field(default_factory=list)
    mutations: Sequence[Mutation] = field(default_factory=list)
    global_names: frozenset[str] = frozenset()  # `global x` (shared empty default: most scopes)
    star_imports: Sequence[StarImport] = field(default_factory=list)
    uses: Sequence[Use] = field(default_factory=list)  # value uses, for the dense facts
    is_async: bool = False
    free_calls: frozenset[str] = frozenset()  # names of enclosing functions a nested one calls
    called_params: frozenset[str] = frozenset()  # parameters it calls (or a nested one does)


@dataclass
class FileSummary:
    path: str
    scopes: list[Scope]
    line_count: int
    all_names: list[str] | None = None  # a literal __all__
    problems: list[Problem] = field(default_factory=list)
    constants: list[ModuleConstant] = field(default_factory=list)  # module UPPER_CASE names
    # module-level `if __name__ == "__main__":` blocks, from the `if` to the end of its body
    # (not its else): demo code, ranked after the rest where lists are capped
    main_blocks: list[Span] = field(default_factory=list)
    encoding: str = "utf-8"
    bodies: bytes | None = None  # the scopes' bodies, pickled, once packed
    words: bytes = b""  # the words of the text, hashed (see words.words_sketch)


Body = tuple[Sequence[CallSite], Sequence[Any], Sequence[Any]]  # calls, attr_reads, uses


def local_names(scope: Scope) -> set[str]:
    """The names a scope binds itself (its parameters included)."""
    return {b.name for b in scope.bindings} | {p.name for p in scope.params}


def pack_bodies(summary: FileSummary) -> FileSummary:
    """Move every scope's body (call sites, attribute reads, value uses) into one pickled blob.

    A repository index holds every file's summary but reads a body only while it resolves
    that file: packed and compressed, the bodies cost a twelfth of their memory (7 MB for
    Django's 2,788 files; zlib's fastest level, a tenth of a second to undo them all).
    Each scope's body is pickled on its own: a later round reads a few scopes of a file.
    """
    if summary.bodies is None:
        bodies = [
            pickle.dumps(body, pickle.HIGHEST_PROTOCOL) if any(body) else b""
            for body in ((s.calls, s.attr_reads, s.uses) for s in summary.scopes)
        ]
        summary.bodies = zlib.compress(pickle.dumps(bodies, pickle.HIGHEST_PROTOCOL), 1)
        seen: dict[tuple, tuple] = {}
        for scope in summary.scopes:
            scope.calls = scope.attr_reads = scope.uses = ()
            for name in _GROWN:  # done growing: tuples are smaller, and most are the empty one
                setattr(scope, name, tuple(_shared_items(getattr(scope, name), seen)))
            scope.returns = shared_expression(scope.returns, seen)
            scope.metaclass = shared_expression(scope.metaclass, seen)
    return summary


def _shared_items(items: Sequence[Any], seen: dict[tuple, tuple]) -> Sequence[Any]:
    """items with each expression in them equal to one met before in the file (`self`,
    `self.x`, `str` as a parameter's annotation) made that one object: pickled, a file's
    summary then holds each once (half its tuples on Django were repeats, 16 MB of a warm
    start). Bindings stay objects of their own: the binder keeps their values by id."""
    try:
        return [
            Binding(
                b.name, shared_expression(b.value, seen), b.pos, shared_expression(b.blocks, seen)
            )
            if type(b) is Binding
            else shared_expression(b, seen)
            for b in items
        ]
    except RecursionError:  # an expression too deep to walk: as it is
        return items


def shared_expression(value: Any, seen: dict[tuple, tuple]) -> Any:
    """value with every tuple in it equal to one met before (seen, per file) made that one
    object (RecursionError for an expression too deep to walk)."""
    if not isinstance(value, tuple):
        return value
    # the type and items tell a tuple: nested tuples by identity (each is the one seen),
    # strings as they are, other constants with their type (True == 1 == 1.0). One loop,
    # no generators: this runs for every expression a file holds (a tenth of an outline).
    key: list[object] = [type(value)]
    items: list[object] = []
    same = True
    for item in value:
        kind = type(item)
        if kind is str:
            key.append(item)
        elif isinstance(item, tuple):
            one = shared_expression(item, seen)
            same = same and one is item
            item = one
            key.append(id(one))
        else:
            key.append((kind, item if kind is int or item is None else repr(item)))
        items.append(item)
    frozen = tuple(key)
    found = seen.get(frozen)
    if found is None:
        found = seen[frozen] = value if same else tuple.__new__(type(value), items)
    return found


# The Scope fields the parser appends to.
_GROWN = (
    "decorators",
    "bases",
    "params",
    "bindings",
    "return_values",
    "yields",
    "attr_assigns",
    "mutations",
    "star_imports",
)


def scope_bodies(summary: FileSummary) -> Sequence[Body]:
    """Each scope's (calls, attr_reads, uses), packed or not."""
    if summary.bodies is None:
        return [(s.calls, s.attr_reads, s.uses) for s in summary.scopes]
    return PackedBodies(pickle.loads(zlib.decompress(summary.bodies)))


_NO_BODY: Body = ((), (), ())


class PackedBodies(Sequence[Body]):
    """The bodies of a packed summary, each unpickled when first read."""

    __slots__ = ("_items",)

    def __init__(self, items: list[bytes | Body]) -> None:
        self._items = items

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, i: int) -> Body:  # type: ignore[override]
        item = self._items[i]
        if isinstance(item, bytes):
            item = self._items[i] = pickle.loads(item) if item else _NO_BODY
        return item
