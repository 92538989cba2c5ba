"""What the binder needs to know about one file, as plain picklable data.

(Plain dataclasses without slots pickle in C, several times faster than slotted ones; the
most numerous records (bindings, call sites, parameters) are named tuples: half the memory.)

Expressions are small tuples (the binder's IR), tagged by their first item:
  ("n", name)                     a name
  ("a", base, attr)               attribute access
  ("c", func, args, kwargs)       a call; args: tuple of exprs, kwargs: tuple of (name, expr)
  ("s", base, key)                subscript (key ("sl",) for a slice)
  ("k", value)                    a str/int constant (dict keys, __all__ items)
  ("d", ((key, value), ...))      a dict display
  ("l", (item, ...))              a list, tuple or set display
  ("f", scope)                    a definition (function, class or named lambda) by scope index
  ("dw", scope, k)                 definition scope as its decorators from the k-th (0 = top) down
                                  return it (a stacked decorator's argument)
  ("or", (expr, ...))             any of several values (`a or b`, `a if c else b`)
  ("sa", text)                    a string annotation, parsed by the binder
  ("it", expr)                    an element of an iterable (for targets, `*` unpacking)
  ("en", expr)                    what `with expr as x` binds
  ("ex", expr)                    what `except expr as x` binds (an instance of expr)
  ("ix", expr, i)                 item i of a tuple unpacking
  ("an", annotation)              an instance of what an annotation names
  ("g", base, args)               a subscripted annotation (`Optional[X]`, `list[X]`)
  ("*", expr)                     a `*args` argument
  ("st", expr, start, after)      a starred target: the items of expr from start, less `after`
  ("im", module, level)           `import module` (binds the top package unless aliased)
  ("ima", module, level)          `import module as x` (binds the module itself)
  ("if", module, level, name)     `from module import name`
  ("u",)                          anything else
"""

from __future__ import annotations

import pickle
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

Expr = tuple[Any, ...]
UNKNOWN: Expr = ("u",)
Span = tuple[int, int, int, int]


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
    # (object expr, attribute, value expr, pos): `self.x = v`, `obj.attr = v`
    attr_assigns: Sequence[tuple[Expr, str, Expr, int]] = field(default_factory=list)
    # attribute reads (expr, span, pos, blocks): a read of a property calls its getter
    attr_reads: Sequence[tuple[Expr, Span, int, tuple[int, ...]]] = field(default_factory=list)
    # (name, added expr, pos, replaces): `x[k] = v`, `x.append(v)`, `x.update(...)` grow what x
    # holds; replaces: the constant keys it sets lose their earlier values (see parse.mutate)
    mutations: Sequence[tuple[str, Expr, int, bool]] = field(default_factory=list)
    global_names: frozenset[str] = frozenset()  # `global x` (shared empty default: most scopes)
    star_imports: Sequence[tuple[str, int, int]] = field(default_factory=list)  # module, level, pos
    # Value uses for the dense facts, (tag, expr, span, pos, blocks); tag:
    #   "r" a name or attribute used as a value (an argument, a container item, an
    #       attribute or class-level assignment, a default, a return value): a reference
    #   "n" a read of an UPPER_CASE name (a module constant, maybe imported)
    #   "s" `x.environ["K"]` / `x.config["K"]`: expr is the subscript, its key a constant
    uses: Sequence[tuple[str, Expr, Span, int, tuple[int, ...]]] = field(default_factory=list)
    is_async: bool = False
    free_calls: frozenset[str] = frozenset()  # names of enclosing functions a nested one calls
    called_params: frozenset[str] = frozenset()  # parameters it calls (or a nested one does)


@dataclass
class FileSummary:
    path: str
    scopes: list[Scope]
    line_count: int
    all_names: list[str] | None = None  # a literal __all__
    problems: list[tuple[str, str]] = field(default_factory=list)  # (kind, message)
    # module-level UPPER_CASE assignments: (name, line, end_line, name span)
    constants: list[tuple[str, int, int, Span]] = field(default_factory=list)
    # module-level `if __name__ == "__main__":` blocks, from the `if` to the end of its body
    # (not its else): demo code, ranked after the rest where lists are capped
    main_blocks: list[Span] = field(default_factory=list)
    encoding: str = "utf-8"
    bodies: bytes | None = None  # the scopes' bodies, pickled, once packed
    words: bytes = b""  # the words of the text, hashed (see parse.words_sketch)


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
        for scope in summary.scopes:
            scope.calls = scope.attr_reads = scope.uses = ()
            for name in _GROWN:  # done growing: tuples are smaller, and most are the empty one
                setattr(scope, name, tuple(getattr(scope, name)))
    return summary


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
