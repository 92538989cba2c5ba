"""Operations on sets of the binder's abstract values (see anchor_ls.index.state).

Sets of values are walked in an order of their own (in_order), never in the order they
hash to: the binder cuts a value short where it meets it again inside its own
evaluation, so which member of a set it evaluates first decides what a cycle gives, and
the hash order of a value (a tuple of strings) changes with PYTHONHASHSEED.

Plain functions of values; they never look anything up and never keep a cache.
"""

from __future__ import annotations

from collections.abc import Iterable

from anchor_ls.index.state import Container, Dict, DictMethod, External, Value, Values
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
        if isinstance(v, Dict):
            kept = tuple(item for item in v.items if item[0] not in keys)
            if kept:
                out.add(Dict(kept))
        else:
            out.add(v)
    return frozenset(out)


def dict_key(key: str | int) -> str:
    """A constant dict key as the binder's dict values hold it (str keys double as keyword
    names for `f(**d)`; an int key never matches a str one)."""
    return key if isinstance(key, str) else f"#{key}"


def interesting(values: Values) -> Values:
    """Values worth carrying into a parameter: repository things, not externals."""
    return frozenset(v for v in values if not isinstance(v, External))


def value_key(value: Value) -> tuple:
    """A value as a tuple of strings and numbers alone, its tag first: the sets inside a
    container value sorted (a set compares by inclusion, and walks in hash order). A
    value of strings and numbers is its own key (it compares as the plain tuple)."""
    if isinstance(value, Container):
        return ("L", tuple(sorted(map(value_key, value.items))))
    if isinstance(value, Dict):
        return ("D", tuple((k, tuple(sorted(map(value_key, vs)))) for k, vs in value.items))
    if isinstance(value, DictMethod):
        return ("dv", value_key(value.dict), value.method)
    return value


def in_order(values: Iterable[Value]) -> Iterable[Value]:
    """values sorted by value_key (a set of fewer than two as it is)."""
    if len(values) < 2:  # type: ignore[arg-type]
        return values
    return sorted(values, key=value_key)


def _cap_key(value: Value) -> str:
    return repr(_plain(value_key(value)))


def _plain(key: object) -> object:
    """key with every value in it as the plain tuple it is (its repr is the one cap has
    always sorted by, whatever the value types' own repr says)."""
    return tuple(map(_plain, key)) if isinstance(key, tuple) else key


def cap(values: set[Value] | Values) -> Values:
    """values, or the first MAX_VALUES of them by the text of their value_key."""
    if len(values) > MAX_VALUES:
        return frozenset(sorted(values, key=_cap_key)[:MAX_VALUES])
    return frozenset(values)
