"""What other files can see of a file (its interface), and how an edit renumbers its
scopes: what an edit compares to know which other files may now resolve differently."""

from __future__ import annotations

from collections.abc import Container, Iterable

from anchor_ls.syntax.summary import FileSummary


def interface_items(
    summary: FileSummary, among: Iterable[int] | None = None
) -> set[tuple[str, str]]:
    """(name, what it is) for each thing another file can see (of the scopes among, else
    of all); scope indices, which shift when a definition is inserted, are written as
    qualnames (and which of the definitions of a qualname, if there are several)."""
    scopes = summary.scopes
    twins = _twins(scopes)

    def show(value: tuple) -> str:
        """value's repr, with definitions by qualname (values are tuples all the way down
        once a summary's lists are made tuples, packed or not)."""
        text = repr(value)
        return repr(_by_qualname(value, scopes, twins)) if "('f', " in text else text

    items: set[tuple[str, str]] = set()
    for i in range(len(scopes)) if among is None else among:
        scope = scopes[i]
        tail = scope.qualname.rpartition(".")[2]
        shape = (
            scope.kind,
            scope.qualname,
            twins.get(i, 0),
            tuple(scope.decorators),
            tuple(scope.bases),
            tuple((p.name, p.kind, p.annotation) for p in scope.params),
            tuple(sorted(scope.free_calls)),
            tuple(sorted(scope.called_params)),
            scope.returns,
            tuple(scope.return_values),
            tuple(scope.yields),
        )
        items.add((tail, show(shape)))
        if scope.kind in ("module", "class"):
            items.update((b.name, show((scope.qualname, b.value))) for b in scope.bindings)
        items.update((a, show((scope.qualname, o, v))) for o, a, v, _ in scope.attr_assigns)
        items.update((m, show((scope.qualname, m, lv))) for m, lv, _ in scope.star_imports)
    return items


def _by_qualname(value: object, scopes: list, twins: dict[int, int]) -> object:
    if isinstance(value, tuple):
        if len(value) == 2 and value[0] == "f" and isinstance(value[1], int):
            return ("f", scopes[value[1]].qualname, twins.get(value[1], 0))
        return tuple(_by_qualname(v, scopes, twins) for v in value)
    return value


def _twins(scopes: list) -> dict[int, int]:
    """index -> which definition of its kind and qualname it is, for those defined more
    than once (a property and its setter)."""
    seen: dict[tuple[str, str], list[int]] = {}
    for i, scope in enumerate(scopes):
        seen.setdefault((scope.kind, scope.qualname), []).append(i)
    return {i: k for same in seen.values() if len(same) > 1 for k, i in enumerate(same)}


def layout(summary: FileSummary) -> list[tuple[str, str]]:
    """What a scope index means in this file: binder values refer to scopes by index."""
    return [(scope.kind, scope.qualname) for scope in summary.scopes]


def renumbering(
    old: list[tuple[str, str]], new: list[tuple[str, str]]
) -> tuple[dict[int, int], set[int]]:
    """(old scope index -> new index for each scope still there, old indices gone). A scope
    is known by kind and qualname; a name defined twice (a property and its setter) by order.
    """

    def numbered(layout: list[tuple[str, str]]) -> list[tuple[str, str, int]]:
        seen: dict[tuple[str, str], int] = {}
        out = []
        for key in layout:
            seen[key] = seen.get(key, -1) + 1
            out.append((*key, seen[key]))
        return out

    where = {key: i for i, key in enumerate(numbered(new))}
    numbers: dict[int, int] = {}
    gone: set[int] = set()
    for i, key in enumerate(numbered(old)):
        if key in where:
            numbers[i] = where[key]
        else:
            gone.add(i)
    return numbers, gone


def renumbered_definitions(expr: object, numbers: dict[int, int]) -> object:
    """A summary's expression (or a list or tuple of them) with the scope indices its
    definitions name (`("f", index)`, `("dw", index, k)`) moved old -> new: two versions
    of a scope whose file had a def inserted above it then compare equal."""
    if isinstance(expr, tuple) and expr:
        head = expr[0]
        if head in ("f", "dw") and len(expr) in (2, 3) and type(expr[1]) is int:
            return (head, numbers.get(expr[1], expr[1]), *expr[2:])
        return tuple(renumbered_definitions(item, numbers) for item in expr)
    if isinstance(expr, list):
        return [renumbered_definitions(item, numbers) for item in expr]
    return expr


def names_scope(data: object, rel: str, gone: Container[int] | None) -> bool:
    """Whether a binder value (nested tuples, sets and dicts of them) names a scope of file
    rel that is in gone (None: any): ("f"|"b"|"c"|"i"|"I"|"S"|"g", rel, index)."""
    if isinstance(data, tuple):
        if len(data) == 3 and data[1] == rel and isinstance(data[2], int):
            return gone is None or data[2] in gone
        return any(names_scope(item, rel, gone) for item in data)
    if isinstance(data, dict):
        return any(names_scope(v, rel, gone) for v in data.values())
    if isinstance(data, frozenset | set | list):
        return any(names_scope(item, rel, gone) for item in data)
    return False


def binds_module(value: tuple, stem: str) -> bool:
    """Whether a binding value imports a module whose dotted name holds stem."""
    return value[0] in ("im", "ima", "if") and (
        stem in value[1] or (value[0] == "if" and value[3] == stem)
    )
