"""Operations on sets of the binder's abstract values (see anchor_ls.index.state).

Sets of values are walked in an order of their own (in_order), never in the order they
hash to: the binder cuts a value short where it meets it again inside its own
evaluation, so which member of a set it evaluates first decides what a cycle gives, and
the hash order of a value (a tuple of strings) changes with PYTHONHASHSEED.

Plain functions of values; they never look anything up and never keep a cache.
"""

from __future__ import annotations

from collections.abc import Iterable

from anchor_ls.index.state import Value, Values
from anchor_ls.syntax.summary import Expr

MAX_VALUES = 64


def set_keys(added: Expr) -> list[str]:
    """The constant keys a dict display sets."""
    if added[0] != "d":
        return []
    return [dict_key(k[1]) for k, _v in added[1] if k[0] == "k"]


def without_keys(values: Values, keys: dict[str, int] | set[str]) -> Values:
    """values with the entries of keys dropped from their dicts."""
    out: set[Value] = set()
    for v in values:
        if v[0] == "D":
            kept = tuple(item for item in v[1] if item[0] not in keys)
            if kept:
                out.add(("D", kept))
        else:
            out.add(v)
    return frozenset(out)


def dict_key(key: str | int) -> str:
    """A constant dict key as the binder's dict values hold it (str keys double as keyword
    names for `f(**d)`; an int key never matches a str one)."""
    return key if isinstance(key, str) else f"#{key}"


def interesting(values: Values) -> Values:
    """Values worth carrying into a parameter: repository things, not externals."""
    return frozenset(v for v in values if v[0] != "x")


def value_key(value: Value) -> tuple:
    """A value as a tuple of strings and numbers alone: the sets inside a container
    value sorted (a set compares by inclusion, and walks in hash order)."""
    tag = value[0]
    if tag == "L":
        return ("L", tuple(sorted(map(value_key, value[1]))))
    if tag == "D":
        return ("D", tuple((k, tuple(sorted(map(value_key, vs)))) for k, vs in value[1]))
    if tag == "dv":
        return ("dv", value_key(value[1]), value[2])
    return value


def in_order(values: Iterable[Value]) -> Iterable[Value]:
    """values sorted by value_key (a set of fewer than two as it is)."""
    if len(values) < 2:  # type: ignore[arg-type]
        return values
    return sorted(values, key=value_key)


def _cap_key(value: Value) -> str:
    return repr(value_key(value))


def cap(values: set[Value] | Values) -> Values:
    """values, or the first MAX_VALUES of them by the text of their value_key."""
    if len(values) > MAX_VALUES:
        return frozenset(sorted(values, key=_cap_key)[:MAX_VALUES])
    return frozenset(values)
