"""Operations on sets of the binder's abstract values (see anchor_ls.index.state).

Plain functions of values; they never look anything up and never keep a cache.
"""

from __future__ import annotations

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


def cap(values: set[Value] | Values) -> Values:
    if len(values) > MAX_VALUES:
        return frozenset(sorted(values, key=repr)[:MAX_VALUES])
    return frozenset(values)
