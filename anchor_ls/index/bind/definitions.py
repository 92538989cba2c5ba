"""What the binder reads off definitions alone, without evaluating anything: the kind
of a method by its decorators, the names worth evaluating, which modules hold settings.

Plain functions of summaries; they never evaluate, never read files and never keep a
cache (the binder's state keeps what they give).
"""

from __future__ import annotations

from collections.abc import Iterable

from anchor_ls.index.decorators import decorator_kind, decorator_name
from anchor_ls.syntax.summary import Expr, FileSummary, Scope

# The methods a `for`/`with` calls on what it iterates or enters (summary site kinds).
PROTOCOLS = {
    "iter": ("__iter__", "__next__"),
    "aiter": ("__aiter__", "__anext__"),
    "with": ("__enter__", "__exit__"),
    "awith": ("__aenter__", "__aexit__"),
}


def method_kind_of(scope: Scope) -> str:
    """'static', 'class', 'property' or 'instance' from the decorators."""
    for dec in scope.decorators:
        kind = decorator_kind(dec)
        if kind != "instance":
            return kind
    return "instance"


def property_names_in(summary: FileSummary) -> frozenset[str]:
    """The names of the property getters a file defines."""
    return frozenset(
        scope.name
        for scope in summary.scopes
        if scope.decorators and scope.kind == "function" and method_kind_of(scope) == "property"
    )


def is_accessor_variant(scope: Scope, name: str) -> bool:
    return any(decorator_name(d) in (f"{name}.setter", f"{name}.deleter") for d in scope.decorators)


def value_names_in(summaries: Iterable[FileSummary], known: frozenset[str]) -> set[str]:
    """Function and class names in summaries, plus aliases of those or of known names."""
    names: set[str] = set()
    aliases: list[tuple[str, str]] = []  # (alias, the name or attribute it copies)
    for summary in summaries:
        for scope in summary.scopes:
            if scope.kind != "module":
                names.add(scope.name)
            for b in scope.bindings:
                if b.value[0] in ("n", "a"):
                    aliases.append((b.name, b.value[-1]))
            for a in scope.attr_assigns:
                if a[2][0] in ("n", "a"):
                    aliases.append((a[1], a[2][-1]))
    for _depth in range(2):
        names.update([a for a, source in aliases if source in names or source in known])
    return names


def is_settings_module(path: str) -> bool:
    """settings.py, global_settings.py, *_settings.py, or a module of a settings/ package."""
    stem = path.rpartition("/")[2].removesuffix(".py")
    return (
        stem in ("settings", "global_settings")
        or stem.endswith("_settings")
        or ("/settings/" in f"/{path}")
    )


def as_annotation(expr: Expr) -> Expr | None:
    """A value expression read as the annotation it spells (`Union[str, "Text"]` bound
    to a name, `list[Entry]` among the bases of a class), or None when it spells none."""
    tag = expr[0]
    if tag == "n":
        return expr
    if tag == "a":
        return expr if as_annotation(expr[1]) is not None else None
    if tag == "k":
        return ("sa", expr[1]) if isinstance(expr[1], str) else None
    if tag == "l":  # the parameter list of `Callable[[A], R]`
        return ("l", tuple(a for a in map(as_annotation, expr[1]) if a is not None))
    if tag == "s" and expr[1][0] in ("n", "a"):
        key = expr[2]
        args = key[1] if key[0] == "l" else (key,)
        return ("g", expr[1], tuple(a for a in map(as_annotation, args) if a is not None))
    return None


def is_overload(scope: Scope) -> bool:
    """A `typing.overload` stub: a signature, not the code that runs."""
    return any(decorator_name(d).rpartition(".")[2] == "overload" for d in scope.decorators)
