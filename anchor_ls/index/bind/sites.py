"""Resolution of one file: its call sites (calls, decorators, `for`/`with`/`raise`, the
callbacks and special methods the standard library calls), property reads, bases and
imports, into the file's facts, and the argument values its calls pass on.

Plain functions of the binder's state (anchor_ls.index.bind.db); they never read files
and never change the argument facts: they return what a file passes, and
anchor_ls.index.bind.flow records it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from anchor_ls.index import dense
from anchor_ls.index.bind import classes, evaluate, flow, lookup
from anchor_ls.index.bind.db import BinderState
from anchor_ls.index.bind.definitions import PROTOCOLS
from anchor_ls.index.bind.values import in_order, interesting
from anchor_ls.index.state import EMPTY, Ctx, FileFacts, Value, Values
from anchor_ls.syntax.summary import UNKNOWN, CallSite, Expr

# Standard-library callers that call the functions handed to them: name -> keyword or None
# for any positional argument.
_CALLBACK_CALLERS = {
    "builtins.map": None,
    "builtins.filter": None,
    "functools.reduce": None,
    "builtins.sorted": "key",
    "builtins.min": "key",
    "builtins.max": "key",
}
# Builtins that call a special method of (each of) their positional arguments: str(x)
# runs x.__str__, len(x) x.__len__, print(a, b) the __str__ of each.
_DUNDER_CALLERS = {
    "builtins.str": ("__str__", 1),
    "builtins.repr": ("__repr__", 1),
    "builtins.len": ("__len__", 1),
    "builtins.print": ("__str__", None),
}


def call_targets(
    db: BinderState, callees: Values, caller: tuple[str, int] | None = None
) -> list[tuple[Value, tuple[str, int] | None, bool]]:
    """(entity value, function whose parameters receive the arguments, bound).

    Calling a decorated function calls it and the wrapper its decorators return, unless
    the caller is one of those wrappers (which calls what it wraps)."""
    out: list[tuple[Value, tuple[str, int] | None, bool]] = []
    for v in in_order(callees):
        kind = v[0]
        if kind in ("f", "b"):
            out.append((("f", v[1], v[2]), (v[1], v[2]), kind == "b"))
            if db.summaries[v[1]].scopes[v[2]].decorators:
                made, wrapping = evaluate.decoration(db, v[1], v[2])
                if caller is None or not any(
                    dec[0] == caller[0]
                    and lookup.nested_in(db.summaries[dec[0]].scopes, caller[1], dec[1])
                    for dec in wrapping
                ):
                    out += call_targets(db, made)
        elif kind == "c":
            out.append((v, None, False))
            init = classes.class_attr(db, (v[1], v[2]), "__init__", bound=True)
            init |= classes.class_attr(db, (v[1], v[2]), "__new__", bound=True)
            init |= classes.metaclass_call(db, (v[1], v[2]))
            for fn in in_order(init):
                if fn[0] in ("f", "b"):
                    out.append((("f", fn[1], fn[2]), (fn[1], fn[2]), True))
        elif kind in ("i", "I"):
            for fn in in_order(classes.instance_attr(db, (v[1], v[2]), "__call__", None)):
                if fn[0] in ("f", "b"):
                    out.append((("f", fn[1], fn[2]), (fn[1], fn[2]), fn[0] == "b"))
    return out


def resolve_file(
    db: BinderState, path: str, scopes: set[int] | None = None, previous: FileFacts | None = None
) -> tuple[FileFacts, dict]:
    """Resolve the call sites, bases and imports of one file (or of some of its scopes).

    Returns the facts and the argument values the whole file passes to functions.
    Scopes past the file's last are gone: what they found is forgotten.
    """
    summary = db.summaries[path]
    per_scope = db._scope_contrib.setdefault(path, {})
    if scopes is None or previous is None:
        facts = FileFacts()
        per_scope.clear()
        chosen: Iterable[int] = range(len(summary.scopes))
        whole = True
    else:
        facts = previous
        facts.forget_scopes(scopes)
        chosen = sorted(i for i in scopes if i < len(summary.scopes))
        for gone in scopes.difference(chosen):
            per_scope.pop(gone, None)
        whole = False
    bodies = db.bodies(path)
    for idx in chosen:
        scope = summary.scopes[idx]
        calls, attr_reads, uses = bodies[idx]
        counts = facts.counts[idx] = [0, 0, 0]
        contrib: dict = defaultdict(lambda: defaultdict(set))
        try:
            if scope.kind == "class":
                facts.bases[idx] = [v for v in classes.class_bases(db, (path, idx)) if v[0] == "c"]
            for site in calls:
                _resolve_site(db, path, idx, site, facts, counts, contrib)
            if attr_reads:
                _resolve_property_reads(db, path, idx, attr_reads, facts)
                dense.resolve_attribute_reads(db, path, idx, attr_reads, facts)
            if uses:
                dense.resolve_uses(db, path, idx, uses, facts)
        except RecursionError:  # a chain of values too long to follow: leave it unlinked
            counts[2] += 1
        except Exception as err:  # a binder bug must cost one scope, never the index
            counts[2] += 1
            facts.errors.append(f"{scope.qualname or '<module>'}: {type(err).__name__}: {err}")
        if contrib:
            per_scope[idx] = flow.plain(contrib)
        else:
            per_scope.pop(idx, None)
        if not whole:
            continue
        for binding in scope.bindings:
            if binding.value[0] in ("im", "ima", "if"):
                _record_import(db, path, binding.value, facts)
        for module, level, _pos in scope.star_imports:
            target = db.modules.resolve(module, level, path)
            if target is not None and target in db.summaries:
                facts.imports.add(target)
    facts.freeze()
    return facts, flow.merge_contributions(per_scope)


def passed_now(db: BinderState, path: str, scopes: set[int]) -> dict:
    """The argument values path passes with these scopes resolved again in the present
    argument facts (what they passed when last resolved may be older). The facts found
    are dropped; the shares it records are replaced when the caller resolves the
    scopes, as edited, right after."""
    _facts, contrib = resolve_file(db, path, scopes, FileFacts())
    return contrib


def _resolve_property_reads(
    db: BinderState, path: str, idx: int, attr_reads: Sequence[tuple], facts: FileFacts
) -> None:
    wanted = classes.property_names(db)
    for expr, span, pos, blocks in attr_reads:
        if expr[2] not in wanted:
            continue
        implicit: list[Value] = []
        ctx = Ctx(path, idx, pos, blocks, implicit)
        evaluate.attribute(db, evaluate.eval(db, expr[1], ctx), expr[2], ctx)
        for fn in implicit:
            target = ("f", fn[1], fn[2])
            facts.calls.setdefault((idx, "property"), set()).add(target)
            facts.sites[(idx, target)].append(span)


def _record_import(db: BinderState, path: str, value: Expr, facts: FileFacts) -> None:
    tag = value[0]
    if tag == "if":
        module, level, name = value[1], value[2], value[3]
        target = db.modules.resolve(module, level, path)
        if target is None:
            return
        sub = db.modules.submodule(target, name)
        defined_here = target in db.summaries and lookup.names(db, target, 0).get(name)
        if sub is not None and sub in db.summaries and not defined_here:
            facts.imports.add(sub)
        elif target in db.summaries:
            facts.imports.add(target)
        return
    dotted = value[1]
    target = db.modules.resolve(dotted, value[2], path)
    if target is not None and target in db.summaries:
        facts.imports.add(target)


def _resolve_site(
    db: BinderState,
    path: str,
    idx: int,
    site: CallSite,
    facts: FileFacts,
    counts: list[int],
    contrib: dict,
) -> None:
    implicit: list[Value] = []
    ctx = Ctx(path, idx, site.pos, site.blocks, implicit)
    callees = evaluate.eval(db, site.func, ctx)
    if site.kind in PROTOCOLS or site.kind == "raise":
        _resolve_implicit(db, idx, site, callees, ctx, facts, counts)
        return
    if site.kind == "decorator":
        dense.decorator_reference(db, path, idx, site, callees, facts)
    elif any(v[0] == "x" for v in callees):
        dense.external_call(db, path, idx, site, callees, facts)
    targets = call_targets(db, callees, (path, idx))
    for fn in implicit:
        targets.append((("f", fn[1], fn[2]), None, True))
    for fn in _callbacks(db, callees, site, ctx):
        targets.append((fn, None, False))
    for fn in in_order(_special_methods(db, callees, site, ctx)):
        targets.append((fn, None, True))
    if not targets:
        counts[1 if any(v[0] == "x" for v in callees) else 2] += 1
        return
    counts[0] += 1
    arg_ctx = Ctx(path, idx, site.pos, site.blocks)
    arg_values: list[Values] | None = None
    for target, receiver, bound in targets:
        facts.calls.setdefault((idx, site.kind), set()).add(target)
        facts.sites[(idx, target)].append(site.span)
        if receiver is None or (not site.args and not site.kwargs):
            continue
        if arg_values is None:
            arg_values = [
                EMPTY if a[0] == "*" else interesting(evaluate.eval(db, a, arg_ctx))
                for a in site.args
            ]
        _flow_args(db, receiver, bound, site, arg_values, arg_ctx, contrib)


def _resolve_implicit(
    db: BinderState,
    idx: int,
    site: CallSite,
    values: Values,
    ctx: Ctx,
    facts: FileFacts,
    counts: list,
) -> None:
    """`raise E` calls the class E; `for`/`with` call the protocol methods of instances.
    Counted as call sites only when they reach repository code."""
    if site.kind == "raise":
        classes = frozenset(v for v in values if v[0] == "c")
        targets = {t for t, _receiver, _bound in call_targets(db, classes)}
    else:
        opener, closer = PROTOCOLS[site.kind]
        targets = set()
        for v in in_order(values):
            if v[0] not in ("i", "I"):
                continue
            opened = evaluate.attribute(db, frozenset({v}), opener, ctx)
            targets |= {("f", fn[1], fn[2]) for fn in opened if fn[0] in ("f", "b")}
            if site.kind in ("with", "awith"):
                on = frozenset({v})
            else:
                on = evaluate.instances(
                    db, evaluate.call_result(db, opened, ("c", UNKNOWN, (), ()), ctx)
                )
            closed = evaluate.attribute(db, on, closer, ctx) if on else EMPTY
            targets |= {("f", fn[1], fn[2]) for fn in closed if fn[0] in ("f", "b")}
    if not targets:
        return
    counts[0] += 1
    for target in targets:
        facts.calls.setdefault((idx, "call"), set()).add(target)
        facts.sites[(idx, target)].append(site.span)


def _callbacks(db: BinderState, callees: Values, site: CallSite, ctx: Ctx) -> list[Value]:
    """The functions `map(f, xs)`, `sorted(xs, key=f)` and the like call."""
    out: list[Value] = []
    for v in in_order(callees):
        if v[0] != "x" or v[1] not in _CALLBACK_CALLERS:
            continue
        keyword = _CALLBACK_CALLERS[v[1]]
        if keyword is None:
            handed = [a for a in site.args if a[0] != "*"]
        else:
            handed = [e for k, e in site.kwargs if k == keyword]
        for expr in handed:
            for fn, _receiver, _bound in call_targets(db, evaluate.eval(db, expr, ctx)):
                out.append(fn)
    return out


def _special_methods(db: BinderState, callees: Values, site: CallSite, ctx: Ctx) -> set[Value]:
    """The `__str__`, `__len__`, ... of repository classes that `str(x)`, `len(x)`,
    `print(x)` and the like run (see _DUNDER_CALLERS)."""
    out: set[Value] = set()
    for v in in_order(callees):
        if v[0] != "x" or v[1] not in _DUNDER_CALLERS:
            continue
        method, count = _DUNDER_CALLERS[v[1]]
        for expr in [a for a in site.args if a[0] != "*"][:count]:
            for inst in in_order(evaluate.eval(db, expr, ctx)):
                if inst[0] in ("i", "I"):
                    found = evaluate.attribute(db, frozenset({inst}), method, ctx)
                    out |= {("f", fn[1], fn[2]) for fn in found if fn[0] in ("f", "b")}
    return out


def _flow_args(
    db: BinderState,
    fn: tuple[str, int],
    bound: bool,
    site: CallSite,
    arg_values: list[Values],
    ctx: Ctx,
    contrib: dict,
) -> None:
    params = db.scope(*fn).params
    positional = [p for p in params if p.kind in ("pos", "posonly")]
    if bound and positional:
        positional = positional[1:]
    star = next((p for p in params if p.kind == "star"), None)
    for i, values in enumerate(arg_values):
        if site.args[i][0] == "*":
            # `f(*args)`: any element may land in any later position
            spread = interesting(evaluate.elements(db, evaluate.eval(db, site.args[i][1], ctx)))
            if spread:
                for param in positional[i:]:
                    contrib[fn][param.name] |= spread
                if star is not None:
                    contrib[fn][star.name] |= spread
            break
        if not values:
            continue
        if i < len(positional):
            contrib[fn][positional[i].name] |= values
        elif star is not None:
            contrib[fn][star.name] |= values
    by_name = {p.name: p for p in params if p.kind in ("pos", "kwonly")}
    starstar = next((p for p in params if p.kind == "starstar"), None)
    keyed: list[tuple[str, Values]] = []
    for name, expr in site.kwargs:
        if name == "**":  # `f(**kwargs)`: forward each known key
            for d in in_order(evaluate.eval(db, expr, ctx)):
                if d[0] == "D":
                    keyed.extend((k, interesting(v)) for k, v in d[1] if k != "*")
        elif name in by_name or starstar is not None:
            keyed.append((name, interesting(evaluate.eval(db, expr, ctx))))
    for name, values in keyed:
        if not values:
            continue
        param = by_name.get(name)
        if param is not None:
            contrib[fn][param.name] |= values
        elif starstar is not None:
            contrib[fn][starstar.name].add(("D", ((name, values),)))


def warm(db: BinderState) -> None:
    """Build the repository-wide tables resolution reads now, so that the first edit
    does not wait."""
    classes.property_names(db)
    dense.value_names(db)
    classes.tables(db)
