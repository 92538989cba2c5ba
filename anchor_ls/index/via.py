"""How the binder found a call edge (`via`): one of a small fixed set, strongest first.

A call edge made at several sites keeps the strongest of their kinds (the first in
VIA_KINDS). The graph stores a kind as its code, a small int: its place in VIA_KINDS
plus one (0: no kind, an edge that is not a call).
"""

from __future__ import annotations

# kind -> what it means (one sentence each; the order is the strength)
VIA_DOCS: dict[str, str] = {
    "name": "A plain name bound in the module or an enclosing scope (a def, a class, an alias).",
    "import": "A name bound by an import, or an attribute of an imported module (`mod.f()`).",
    "self": "A method called on `self` or `cls` (overrides reached from a base class included).",
    "super": "A method called on `super()`.",
    "constructor": "A class called: the class itself, its `__init__`, `__new__` and "
    "metaclass `__call__`.",
    "decorator": "A decorator applied to a definition.",
    "property": "A property read, assigned or deleted, which runs its getter, setter or deleter.",
    "attribute": "A method or callable attribute of a receiver whose type is declared or "
    "inferred where it is bound (`x = Order()`, `x: Order`, `self.repo.save()`).",
    "implicit": "A call Python makes without call syntax: the protocol methods of "
    "`for`/`with`, `raise E`, `__str__`/`__len__` run by `str(x)`/`len(x)`/`print(x)`, "
    "and functions handed to `map`/`filter`/`sorted(key=)` and the like.",
    "flow": "A callee or receiver whose values flowed in through parameters filled at call "
    "sites, return values or containers.",
}
VIA_KINDS: tuple[str, ...] = tuple(VIA_DOCS)
VIA_CODE: dict[str, int] = {kind: i + 1 for i, kind in enumerate(VIA_KINDS)}

NAME, IMPORT, SELF, SUPER, CONSTRUCTOR, DECORATOR, PROPERTY, ATTRIBUTE, IMPLICIT, FLOW = (
    VIA_CODE[k] for k in VIA_KINDS
)


def via_name(code: int) -> str | None:
    """The kind a code stands for (None for 0 or an unknown code)."""
    return VIA_KINDS[code - 1] if 0 < code <= len(VIA_KINDS) else None
