"""Decorators that change what a definition is (a property, a static or class method)."""

from __future__ import annotations

from anchor_ls.syntax.summary import Expr

_PROPERTY_DECORATORS = frozenset(
    {"property", "cached_property", "functools.cached_property", "builtins.property"}
)


def decorator_kind(dec: Expr) -> str:
    """What a decorator makes of a method: 'static', 'class', 'property' or 'instance'."""
    name = decorator_name(dec)
    if name == "staticmethod":
        return "static"
    if name == "classmethod":
        return "class"
    if name in _PROPERTY_DECORATORS or name.endswith((".setter", ".getter", ".deleter")):
        return "property"
    return "instance"


def decorator_name(dec: Expr) -> str:
    if dec[0] == "c":
        dec = dec[1]
    parts: list[str] = []
    while dec[0] == "a":
        parts.append(dec[2])
        dec = dec[1]
    if dec[0] == "n":
        parts.append(dec[1])
        return ".".join(reversed(parts))
    return ""
