"""A summary's records are named types: each expression kind its own NamedTuple (still a
tuple the binder reads by position), and they stay so through the cache's pickles."""

from __future__ import annotations

import pickle
from typing import Any

from anchor_ls.syntax.parse import summarize
from anchor_ls.syntax.summary import (
    EXPRESSION_KINDS,
    AttrAssign,
    AttrRead,
    Call,
    Definition,
    ImportFrom,
    ModuleConstant,
    Mutation,
    Name,
    Problem,
    StarImport,
    Use,
    pack_bodies,
    scope_bodies,
)

SOURCE = b"""\
from os import environ
from pkg import *
import json as j
LIMIT = 3

class Base:
    pass

@decorate(Base)
def f(a: "Base", *args: int, **kw) -> Base | None:
    items = [a, *args]
    first, *rest = items
    items.append(LIMIT)
    with open(a) as fh:
        for x in fh:
            try:
                y = x[1:2] or {"k": x}[0]
            except ValueError as err:
                z = (lambda: err)()
    self.v = environ["HOME"]
    w = fh.name
    return Base(a, key=kw)

def g(
"""

TAGS = {"n", "a", "c", "s", "sl", "k", "d", "l", "f", "dw", "or", "sa", "it", "en", "ex"}
TAGS |= {"ix", "an", "g", "*", "st", "im", "ima", "if", "u"}


def _expressions(value: Any) -> list[tuple[Any, ...]]:
    """Every tagged expression in value (records and plain pairs walked through)."""
    found = []
    if isinstance(value, tuple | list):
        if value and isinstance(value, EXPRESSION_KINDS):
            found.append(value)
        for part in value:
            found.extend(_expressions(part))
    return found


def _all_records(summary: Any) -> list[Any]:
    records: list[Any] = [*summary.problems, *summary.constants]
    for scope, (calls, reads, uses) in zip(summary.scopes, scope_bodies(summary), strict=True):
        records += [*scope.decorators, *scope.bases, scope.metaclass, scope.returns]
        records += [*scope.params, *scope.bindings, *scope.return_values, *scope.yields]
        records += [*scope.attr_assigns, *scope.mutations, *scope.star_imports]
        records += [*calls, *reads, *uses]
    return [r for r in records if r is not None]


def test_every_record_of_a_summary_has_a_named_type() -> None:
    summary = summarize("pkg/m.py", SOURCE)
    records = _all_records(summary)
    kinds = {type(r) for r in records}
    assert {AttrAssign, AttrRead, Mutation, StarImport, Use, ModuleConstant, Problem} <= kinds
    expressions = [e for r in records for e in _expressions(r)]
    assert expressions
    for expr in expressions:
        assert expr[0] == expr.tag and expr.tag in TAGS
    seen = {type(e).__name__ for e in expressions}
    assert {"Call", "Name", "Attribute", "Definition", "ImportFrom", "Either"} <= seen
    untyped = [e for r in records for e in _plain_tagged(r)]
    assert untyped == []


def _plain_tagged(value: Any) -> list[tuple[Any, ...]]:
    """Plain tuples that look like a tagged expression (no keyword here is named as a tag)."""
    found = []
    if isinstance(value, tuple | list):
        if type(value) is tuple and value and value[0] in TAGS:
            found.append(value)
        for part in value:
            found.extend(_plain_tagged(part))
    return found


def test_a_call_and_a_definition_are_distinct_types_that_read_as_before() -> None:
    summary = summarize("pkg/m.py", b"class C: pass\nC()\n")
    (call,) = summary.scopes[0].calls
    assert isinstance(call.func, Name) and call.func == ("n", "C")
    binding = next(b for b in summary.scopes[0].bindings if b.name == "C")
    assert isinstance(binding.value, Definition) and binding.value == ("f", 1)
    assert repr(binding.value) == "('f', 1)"  # the index compares interfaces by repr
    imported = summarize("m.py", b"from os import path\n").scopes[0].bindings[0].value
    assert isinstance(imported, ImportFrom) and imported.module == "os"


def test_records_keep_their_types_through_the_cache_pickle() -> None:
    summary = pack_bodies(summarize("pkg/m.py", SOURCE))
    again = pickle.loads(pickle.dumps(summary, pickle.HIGHEST_PROTOCOL))
    before, after = _all_records(summary), _all_records(again)
    assert before == after
    assert [type(r) for r in before] == [type(r) for r in after]
    calls = [
        c for _, (cs, _r, _u) in zip(again.scopes, scope_bodies(again), strict=True) for c in cs
    ]
    assert any(isinstance(c.func, Name) for c in calls)
    assert all(isinstance(c.args, tuple) for c in calls)
    assert Call in {type(e) for r in after for e in _expressions(r)}


def test_an_outline_keeps_definitions_and_drops_function_bodies() -> None:
    """What a library file is read for: its classes, methods, bases, aliases and return
    annotations, never what its functions do."""
    source = (
        b"from .base import Base\n\n\nclass View(Base):\n    name = 'v'\n\n"
        b"    def get(self) -> Base:\n        def inner():\n            pass\n"
        b"        helper(self)\n        return inner\n\n\nAlias = View\n"
    )
    full, outline = summarize("m.py", source), summarize("m.py", source, outline=True)
    assert [s.qualname for s in full.scopes] == ["", "View", "View.get", "View.get.inner"]
    assert [s.qualname for s in outline.scopes] == ["", "View", "View.get"]
    get = outline.scopes[2]
    assert get.returns == full.scopes[2].returns and full.scopes[2].params
    assert get.params == []  # what a call passes is never matched in a library
    assert (get.bindings, get.calls, get.return_values) == ([], [], [])
    assert outline.scopes[1].bases == full.scopes[1].bases
    assert outline.scopes[1].bindings == full.scopes[1].bindings
    assert outline.scopes[0].bindings == full.scopes[0].bindings


def test_an_outline_walks_parameters_decorators_and_calls_only_where_they_bind() -> None:
    """An outline keeps no parameters, decorators or calls, so it does not walk them,
    but a walrus or a comprehension's target inside one binds a name where it stands
    (a module's binding, that a library name may lead to): those are walked."""
    source = (
        b"import registry\n\n\n@registry.add('x')\ndef plain(a: int = 1, *b, c=f(2)) -> int:\n"
        b"    pass\n\n\n@registry.add([d for d in range(3)])\ndef spaced(e=(g := 4)) -> None:\n"
        b"    pass\n\n\nregistry.update({h: 1 for h in 'ab'})\nregistry.clear()\n"
        b"if (i := 5) > 2:\n    j = 6\nelif sys.version_info >= (3, 8):\n    j = 7\n\n\n"
        b"class K(Base, metaclass=Meta):\n    pass\n"
    )
    full, outline = summarize("m.py", source), summarize("m.py", source, outline=True)
    plain = outline.scopes[1]
    assert (plain.params, plain.decorators) == ([], [])
    assert full.scopes[1].params and full.scopes[1].decorators
    assert outline.scopes[-1].metaclass is None and full.scopes[-1].metaclass is not None
    assert outline.scopes[-1].bases == full.scopes[-1].bases
    assert {"d", "g", "h", "i", "j"} <= {b.name for b in outline.scopes[0].bindings}
    assert outline.scopes[0].bindings == full.scopes[0].bindings
    assert [s.returns for s in outline.scopes] == [s.returns for s in full.scopes]
    assert outline.scopes[0].calls == [] and full.scopes[0].calls
