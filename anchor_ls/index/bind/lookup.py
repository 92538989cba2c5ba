"""Name lookup: the scopes of a file, the bindings of each name, and which of them reach
a use, following Python's scoping rules (flow-sensitive within a scope: the latest
binding that dominates the use, plus the conditional ones after it; the final state
from nested scopes), star imports, module attributes, and the lists a name is bound to
for certain.

Plain functions of the binder's state (anchor_ls.index.bind.db); they never read files,
and evaluate an expression only through db.eval.
"""

from __future__ import annotations

import builtins
from collections import defaultdict
from collections.abc import Iterable, Sequence

from anchor_ls.index.bind.db import BinderState
from anchor_ls.index.bind.definitions import PROTOCOLS, is_accessor_variant, method_kind_of
from anchor_ls.index.bind.memo import guarded
from anchor_ls.index.bind.values import cap, set_keys, without_keys
from anchor_ls.index.state import EMPTY, Ctx, External, Module, Value, Values
from anchor_ls.syntax.summary import Binding, Expr, Scope

_BUILTINS = frozenset(dir(builtins))


def names(db: BinderState, path: str, idx: int) -> dict[str, list[Binding]]:
    memo = db.caches.name_tables
    tables = memo.get(path)
    if tables is None:
        tables = memo[path] = [None] * len(db.summaries[path].scopes)
    table = tables[idx]
    if table is None:
        table = defaultdict(list)
        scope = db.summaries[path].scopes[idx]
        for i, param in enumerate(scope.params):
            table[param.name].append(Binding(param.name, ("P", idx, i), -1, ()))
        scopes = db.summaries[path].scopes
        for binding in scope.bindings:
            value = binding.value
            if value[0] == "f" and is_accessor_variant(scopes[value[1]], binding.name):
                continue  # `@x.setter def x`: reading x still gives the getter
            table[binding.name].append(binding)
        for bindings in table.values():
            bindings.sort(key=lambda b: b.pos)
        tables[idx] = table
    return table


def lookup(db: BinderState, ctx: Ctx, name: str) -> Values:
    """The values of a name used at ctx, following Python's scoping rules."""
    path, idx = ctx.path, ctx.scope
    scope = db.summaries[path].scopes[idx]
    if name in scope.global_names and idx != 0:
        return _outer(db, path, 0, name)
    bindings = names(db, path, idx).get(name)
    if bindings:
        return reaching(db, path, idx, name, bindings, ctx.pos, ctx.blocks)
    if scope.star_imports:
        found = _star_lookup(db, path, scope, name)
        if found:
            return found
    return _outer(db, path, scope.parent, name)


def _outer(db: BinderState, path: str, idx: int, name: str) -> Values:
    """A name seen from a nested scope: the final state of the enclosing ones."""
    return db.caches.outer.ask((path, idx, name), EMPTY, _outer_of, db, path, idx, name)


def _outer_of(db: BinderState, path: str, idx: int, name: str) -> Values:
    scopes = db.summaries[path].scopes
    result: Values | None = None
    while idx >= 0:
        scope = scopes[idx]
        if scope.kind == "class":
            idx = scope.parent
            continue
        bindings = names(db, path, idx).get(name)
        if bindings:
            result = reaching(db, path, idx, name, bindings, None, ())
            break
        if scope.star_imports:
            found = _star_lookup(db, path, scope, name)
            if found:
                result = found
                break
        idx = scope.parent
    if result is None:
        if name in _BUILTINS:
            result = frozenset({External(f"builtins.{name}")})
        else:
            result = _outside_star(db, path, name)
    return result


def _outside_star(db: BinderState, path: str, name: str) -> Values:
    """A name that no scope of path binds nor a builtin is, where its module star-imports
    modules from outside the repository (`from tkinter import *`): the name in each of
    them, for the library-aware index to find (which one defines it is known only there;
    the last is Python's when several do)."""
    if name.startswith("_"):
        return EMPTY
    out = [
        External(f"{module}.{name}")
        for module, level, _pos in reversed(db.summaries[path].scopes[0].star_imports)
        if level == 0 and module and db.modules.resolve(module, level, path) is None
    ]
    return frozenset(out)


def reaching(
    db: BinderState,
    path: str,
    idx: int,
    name: str,
    bindings: list[Binding],
    pos: int | None,
    blocks: tuple[int, ...],
) -> Values:
    if len(bindings) == 1:  # most names: the one binding reaches every use
        values = binding_values(db, path, idx, bindings[0])
        return cap(_mutated(db, path, idx, name, values, pos, bindings[0].pos))
    key = (path, idx, name, pos, blocks)
    return db.caches.lookups.ask(
        key, EMPTY, _reaching_of, db, path, idx, name, bindings, pos, blocks
    )


def _reaching_of(
    db: BinderState,
    path: str,
    idx: int,
    name: str,
    bindings: list[Binding],
    pos: int | None,
    blocks: tuple[int, ...],
) -> Values:
    chosen: list[Binding] = []
    for binding in reversed(bindings):
        if pos is not None and binding.pos > pos:
            continue
        chosen.append(binding)
        if blocks[: len(binding.blocks)] == binding.blocks:
            break
    if not chosen:
        chosen = bindings
    result: set[Value] = set()
    for binding in chosen:
        result |= binding_values(db, path, idx, binding)
    after = min(b.pos for b in chosen)
    return cap(_mutated(db, path, idx, name, frozenset(result), pos, after))


def binding_values(db: BinderState, path: str, idx: int, binding: Binding) -> Values:
    memo = db.caches.binding_values
    key = id(binding)  # a binding's own hash would walk its expression
    cached = memo.get(key)
    if cached is not None and cached[0] is not binding:  # the id of one gone
        memo.pop(key)
    return memo.ask(key, _NO_BINDING, _binding_values_of, db, path, idx, binding)[1]


_NO_BINDING: tuple[Binding | None, Values] = (None, EMPTY)


def _binding_values_of(
    db: BinderState, path: str, idx: int, binding: Binding
) -> tuple[Binding, Values]:
    value = binding.value
    if value[0] == "P":
        return binding, db.param_values(path, value[1], value[2])
    # evaluated just before the binding takes effect: `a, b = b, a` reads the old a, b
    return binding, db.eval(value, Ctx(path, idx, binding.pos - 1, binding.blocks))


def _mutated(
    db: BinderState, path: str, idx: int, name: str, values: Values, pos: int | None, after: int
) -> Values:
    """values of x (bound at `after` in scope idx) with what `x[k] = v`, `x.append(v)`,
    `x.update(...)` anywhere in the file add to it, read at pos (None: final state).

    A plain `x["k"] = v` in x's own scope between its binding and the read replaces the
    value of "k" (the last one wins); every other mutation only adds."""
    found = _mutation_table(db, path).get((idx, name))
    if not found:
        return values
    working = db.caches.mutating
    return guarded(
        working, (path, idx, name), values, _add_mutations, db, path, idx, values, pos, after, found
    )


def _add_mutations(
    db: BinderState,
    path: str,
    idx: int,
    values: Values,
    pos: int | None,
    after: int,
    found: list,
) -> Values:
    last: dict[str, int] = {}  # replaced key -> where it was last set
    for added, scope_idx, at, replaces in found:
        if replaces and scope_idx == idx and at > after and (pos is None or at < pos):
            for k in set_keys(added):
                last[k] = max(last.get(k, at), at)
    out = set(without_keys(values, last)) if last else set(values)
    for added, scope_idx, at, replaces in found:
        got = db.eval(added, Ctx(path, scope_idx, at))
        if last:
            stale = {k: p for k, p in last.items() if p != at} if replaces else last
            got = without_keys(got, stale)
        out |= got
    return frozenset(out)


def _collect_mutations(db: BinderState, path: str) -> dict[tuple[int, str], list]:
    scopes = db.summaries[path].scopes
    table: dict[tuple[int, str], list] = defaultdict(list)
    for s_idx, scope in enumerate(scopes):
        for name, added, pos, replaces in scope.mutations:
            owner = _binding_scope(db, path, s_idx, name)
            if owner is not None:
                table[(owner, name)].append((added, s_idx, pos, replaces))
    return table


def _binding_scope(db: BinderState, path: str, idx: int, name: str) -> int | None:
    scopes = db.summaries[path].scopes
    first = True
    while idx >= 0:
        scope = scopes[idx]
        if scope.kind == "class" and not first:
            idx = scope.parent
            continue
        if name in scope.global_names:
            return 0
        if name in names(db, path, idx):
            return idx
        idx, first = scope.parent, False
    return None


def literal_item(db: BinderState, expr: Expr, ctx: Ctx) -> tuple[Expr, Ctx] | None:
    """`ls[1]` of a list display for certain: its second item, where it was written."""
    index = _constant_int(db, expr[2], ctx)
    if index is None:
        return None
    found = _literal(db, expr[1], ctx, 0)
    if found is None or not -len(found[0]) <= index < len(found[0]):
        return None
    return found[0][index], found[1]


def _constant_int(db: BinderState, expr: Expr, ctx: Ctx) -> int | None:
    """An int literal, or a name bound once to one (here or in the module it is
    imported from)."""
    for _hop in range(4):
        if expr[0] == "k":
            return expr[1] if isinstance(expr[1], int) else None
        if expr[0] == "n":
            sole = sole_binding(db, ctx, expr[1])
            if sole is None:
                return None
            expr = sole[1].value
        elif expr[0] == "if":
            module = db.modules.resolve(expr[1], expr[2], ctx.path)
            if module is None or module not in db.summaries:
                return None
            ctx, expr = Ctx(module, 0, 0), ("n", expr[3])
        else:
            return None
    return None


def _literal(
    db: BinderState, expr: Expr, ctx: Ctx, depth: int
) -> tuple[Sequence[Expr], Ctx] | None:
    """The items of the list or tuple display expr stands for, for certain: a display
    without `*`, a constant index or slice of one, or a name bound once to one that the
    file never grows, calls a method of, or hands on (see _handed_on)."""
    tag = expr[0]
    if tag == "l":
        return (expr[1], ctx) if all(item[0] != "*" for item in expr[1]) else None
    if depth > 8:
        return None
    if tag == "s":
        outer = _literal(db, expr[1], ctx, depth + 1)
        key = expr[2]
        if outer is None:
            return None
        if key[0] == "sl" and len(key) == 3:
            return outer[0][key[1] : key[2]], outer[1]
        items, index = outer[0], _constant_int(db, key, ctx)
        if index is not None and -len(items) <= index < len(items):
            return _literal(db, items[index], outer[1], depth + 1)
        return None
    if tag != "n":
        return None
    path, name = ctx.path, expr[1]
    sole = sole_binding(db, ctx, name)
    if sole is None or sole[1].value[0] not in ("l", "s", "n"):
        return None
    owner, binding = sole
    if (owner, name) in _mutation_table(db, path) or name in _handed_on(db, path):
        return None
    at = Ctx(path, owner, binding.pos - 1, binding.blocks)
    return _literal(db, binding.value, at, depth + 1)


def sole_binding(db: BinderState, ctx: Ctx, name: str) -> tuple[int, Binding] | None:
    """(scope, binding) when name, seen from ctx, is bound exactly once."""
    owner = _binding_scope(db, ctx.path, ctx.scope, name)
    bindings = names(db, ctx.path, owner).get(name, ()) if owner is not None else ()
    return (owner, bindings[0]) if owner is not None and len(bindings) == 1 else None


def _handed_on(db: BinderState, path: str) -> frozenset[str]:
    """Names of path that may stand for something else than what they were bound to:
    used as a value (passed, returned, stored, aliased), or the object of a method call
    (`ls.sort()`). Reading an item or iterating keeps a list as it is."""
    return db.caches.handed.ask(path, frozenset(), _handed_names, db, path)


def _handed_names(db: BinderState, path: str) -> frozenset[str]:
    names: set[str] = set()
    summary = db.summaries[path]
    bodies = db.bodies(path)
    for scope, (calls, _reads, _uses) in zip(summary.scopes, bodies, strict=True):
        for site in calls:
            if site.kind not in PROTOCOLS:  # what `for` iterates stays as it is
                _names_in((site.func, site.args, site.kwargs), names)
        _names_in([b.value for b in scope.bindings], names)
        _names_in((scope.return_values, scope.yields, scope.attr_assigns), names)
        _names_in([added for _name, added, _pos, _replaces in scope.mutations], names)
    return frozenset(names)


def _mutation_table(db: BinderState, path: str) -> dict[tuple[int, str], list]:
    return db.caches.mutations.ask(path, {}, _collect_mutations, db, path)


def module_names_grown(db: BinderState, path: str, idx: int) -> list[str]:
    """The names of path's module that scope idx or a scope inside it grows (`REG[k] = v`,
    `REG.append(v)`): what they hold follows idx's parameters, and any file reads it."""
    inside = set(nested(db, path, idx))
    return sorted(
        name
        for (owner, name), found in _mutation_table(db, path).items()
        if owner == 0 and any(scope_idx in inside for _added, scope_idx, _at, _r in found)
    )


def _star_lookup(db: BinderState, path: str, scope: Scope, name: str) -> Values:
    if name.startswith("_"):
        return EMPTY
    for module, level, _pos in reversed(scope.star_imports):
        target = db.modules.resolve(module, level, path)
        if target is None or target not in db.summaries:
            continue
        exported = db.summaries[target].all_names
        if exported is not None and name not in exported:
            continue
        found = module_attr(db, target, name)
        if found:
            return found
    return EMPTY


def module_value(db: BinderState, dotted: str, level: int, importer: str) -> Values:
    target = db.modules.resolve(dotted, level, importer)
    if target is None:
        return frozenset({External(dotted)}) if level == 0 and dotted else EMPTY
    return frozenset({Module(target)})


def module_attr(db: BinderState, module: str, name: str) -> Values:
    return db.caches.module_attrs.ask((module, name), EMPTY, _module_attr_of, db, module, name)


def _module_attr_of(db: BinderState, module: str, name: str) -> Values:
    values: Values = EMPTY
    summary = db.summaries.get(module)
    if summary is not None:
        bindings = names(db, module, 0).get(name)
        if bindings:
            values = reaching(db, module, 0, name, bindings, None, ())
        elif summary.scopes[0].star_imports:
            values = _star_lookup(db, module, summary.scopes[0], name)
    if not values:
        sub = db.modules.submodule(module, name)
        if sub is not None:
            values = frozenset({Module(sub)})
    return values


def method_kind(db: BinderState, path: str, idx: int) -> str:
    """'static', 'class', 'property' or 'instance' from the decorators."""
    return method_kind_of(db.scope(path, idx))


def children(db: BinderState, path: str) -> list[list[int]]:
    """The scopes directly inside each scope of path, in order: asked for every class,
    a scan of the file each time made a file of many classes quadratic."""
    return db.caches.children.ask(path, [], _children_of, db, path)


def _children_of(db: BinderState, path: str) -> list[list[int]]:
    scopes = db.summaries[path].scopes
    table: list[list[int]] = [[] for _ in scopes]
    for i, scope in enumerate(scopes):
        if scope.parent >= 0:
            table[scope.parent].append(i)
    return table


def with_nested(db: BinderState, path: str, idx: int) -> Iterable[int]:
    """Scope idx and the functions inside it (what `self` reaches in a method)."""
    scopes = db.summaries[path].scopes
    return (j for j in nested(db, path, idx) if j == idx or scopes[j].kind != "class")


def enclosing_class(db: BinderState, path: str, idx: int) -> int | None:
    scopes = db.summaries[path].scopes
    while idx >= 0:
        scope = scopes[idx]
        if scope.kind == "function" and scopes[scope.parent].kind == "class":
            return scope.parent
        idx = scope.parent
    return None


def nested(db: BinderState, path: str, idx: int) -> list[int]:
    """Scope idx and every scope inside it, in order."""
    scopes = db.summaries[path].scopes
    out = [idx]
    for j in range(idx + 1, len(scopes)):
        parent = scopes[j].parent
        while parent > idx:
            parent = scopes[parent].parent
        if parent == idx:
            out.append(j)
        elif scopes[j].line > scopes[idx].end_line:
            break
    return out


def nested_in(scopes: Sequence[Scope], idx: int, outer: int) -> bool:
    while idx > outer:
        idx = scopes[idx].parent
    return idx == outer


def _names_in(value: object, out: set[str]) -> None:
    """The names in value (exprs, or sequences of them), except the base of a subscript
    and what is iterated or unpacked: reading an item leaves a list as it is."""
    sequence = isinstance(value, tuple) and not (value and isinstance(value[0], str))
    if isinstance(value, list) or sequence:
        for part in value:
            _names_in(part, out)
        return
    if not isinstance(value, tuple) or not value:
        return
    tag = value[0]
    if tag == "n":
        out.add(value[1])
    elif tag in ("s", "it", "ix"):
        if value[1][0] != "n":
            _names_in(value[1], out)
        if tag == "s":
            _names_in(value[2], out)
    else:
        for part in value[1:]:
            if isinstance(part, (tuple, list)):
                _names_in(part, out)
