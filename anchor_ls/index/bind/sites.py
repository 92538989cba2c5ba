"""Resolution of one file: its call sites (calls, decorators, `for`/`with`/`raise`, the
callbacks and special methods the standard library calls), property reads, bases and
imports, into the file's facts, and the argument values its calls pass on.

Plain functions of the binder's state (anchor_ls.index.bind.db); they never read files
and never change the argument facts: they return what a file passes, and
anchor_ls.index.bind.flow records it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from functools import lru_cache

from anchor_ls.index import dense
from anchor_ls.index.bind import classes, evaluate, external, flow, lookup
from anchor_ls.index.bind.db import BinderState
from anchor_ls.index.bind.definitions import PROTOCOLS, method_kind_of
from anchor_ls.index.bind.values import in_order, interesting
from anchor_ls.index.state import (
    CALLABLE,
    EMPTY,
    INSTANCES,
    BoundMethod,
    Class,
    Container,
    Ctx,
    Dict,
    External,
    FileFacts,
    Function,
    Module,
    Value,
    Values,
)
from anchor_ls.index.testcode import is_test_path
from anchor_ls.index.via import (
    ATTRIBUTE,
    CONSTRUCTOR,
    DECORATOR,
    FLOW,
    IMPLICIT,
    IMPORT,
    NAME,
    PROPERTY,
    SELF,
    SUPER,
)
from anchor_ls.syntax.summary import (
    ATTR_READ,
    ATTR_WRITE,
    UNKNOWN,
    Binding,
    CallSite,
    Expr,
)

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


_UNKNOWN_OUTSIDE = external.UNKNOWN_OUTSIDE


def call_targets(
    db: BinderState, callees: Values, caller: tuple[str, int] | None = None
) -> list[tuple[Value, tuple[str, int] | None, bool]]:
    """(entity value, function whose parameters receive the arguments, bound).

    Calling a decorated function calls it and the wrapper its decorators return, unless
    the caller is one of those wrappers (which calls what it wraps)."""
    out: list[tuple[Value, tuple[str, int] | None, bool]] = []
    for v in in_order(callees):
        if isinstance(v, CALLABLE):
            out.append((Function(v.path, v.idx), v.scope, isinstance(v, BoundMethod)))
            if db.summaries[v.path].scopes[v.idx].decorators:
                made, wrapping = evaluate.decoration(db, v.path, v.idx)
                if caller is None or not any(
                    dec[0] == caller[0]
                    and lookup.nested_in(db.summaries[dec[0]].scopes, caller[1], dec[1])
                    for dec in wrapping
                ):
                    out += call_targets(db, made)
        elif isinstance(v, Class):
            out.append((v, None, False))
            init = classes.class_attr(db, v.scope, "__init__", bound=True)
            init |= classes.class_attr(db, v.scope, "__new__", bound=True)
            init |= classes.metaclass_call(db, v.scope)
            for fn in in_order(init):
                if isinstance(fn, CALLABLE):
                    out.append((Function(fn.path, fn.idx), fn.scope, True))
        elif isinstance(v, INSTANCES):
            for fn in in_order(classes.instance_attr(db, v.scope, "__call__", None)):
                if isinstance(fn, CALLABLE):
                    out.append((Function(fn.path, fn.idx), fn.scope, isinstance(fn, BoundMethod)))
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
    wanted = _wanted_in(db, path)  # see want()
    passing = bool(wanted) and not is_test_path(path)
    for idx in chosen:
        scope = summary.scopes[idx]
        calls, attr_reads, uses = bodies[idx]
        if wanted is not None:
            attr_reads, uses = _wanted_reads(wanted, attr_reads, uses)
        counts = facts.counts[idx] = [0, 0, 0]
        contrib: dict = defaultdict(lambda: defaultdict(set))
        done = 0
        try:
            if scope.kind == "class":
                bases = classes.class_bases(db, (path, idx))
                facts.bases[idx] = [v for v in bases if isinstance(v, Class)]
                external.note_bases(facts, idx, bases)
            for site in calls:
                if (
                    wanted is None
                    or (passing and (site.args or site.kwargs))
                    or mentions(_named(site), wanted)
                ):
                    _resolve_site(db, path, idx, site, facts, counts, contrib, done)
                done += 1
            if attr_reads:
                _resolve_property_reads(db, path, idx, attr_reads, facts)
                dense.resolve_attribute_reads(db, path, idx, attr_reads, facts)
            if uses:
                dense.resolve_uses(db, path, idx, uses, facts)
        except RecursionError:  # a chain of values too long to follow: leave it unlinked
            _give_up(calls, done, counts)
        except Exception as err:  # a binder bug must cost one scope, never the index
            _give_up(calls, done, counts)
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


def mentions(value: object, names: frozenset[str]) -> bool:
    """Whether a string of names is anywhere in value (an expression, or tuples of them):
    a name read, an attribute, a keyword or a constant (`getattr(x, "name")`). Read off
    its repr, where each is quoted: a tenth of the time of a walk, for every site of a
    glimpse (a constant with the quoted name in it matches too: one more site resolved).
    No names: nothing (the pattern of none would find every empty string)."""
    return bool(names) and _quoted(names).search(repr(value)) is not None


@lru_cache(maxsize=64)
def _quoted(names: frozenset[str]) -> re.Pattern[str]:
    return re.compile("'(?:{})'".format("|".join(re.escape(n) for n in sorted(names))))


def want(db: BinderState, names: frozenset[str] | None, depth: int) -> None:
    """Resolve only what can reach a function of names (a glimpse of who calls it; None:
    every site): in a test file, the sites that mention names, or a name the file binds
    to one of them, or a function whose own such site reads a parameter (`def f(self,
    qs): qs.filter()`: what a caller passes is the receiver), followed `depth` calls
    back, as the rounds pass arguments; in other files, those and every site that passes
    arguments (what a caller passes reaches a receiver through attributes and containers
    too: Django's Collector.collect(objs) stores objs that another method iterates and
    filters). Of the reads, only the property reads and references of names."""
    db.wanted, db.wanted_in = names, {}
    if not names:  # every site, or none (a glimpse of a file names its definitions only)
        return
    readers: list[tuple[frozenset[str], list[CallSite], frozenset[str]]] = []
    for path, summary in db.summaries.items():
        bodies = db.bodies(path)
        for idx, scope in enumerate(summary.scopes):
            params = [p.name for p in scope.params]
            if scope.kind != "function" or not params or not bodies[idx][0]:
                continue
            parent = summary.scopes[scope.parent] if scope.parent >= 0 else None
            called = frozenset({scope.name})
            if parent is not None and parent.kind == "class" and method_kind_of(scope) != "static":
                params = params[1:]  # self and cls are what the class says, not the callers
                if scope.name in ("__init__", "__new__"):  # called as the class
                    called = frozenset({scope.name, parent.name})
                elif scope.name.startswith("__"):  # by operators and statements, unnamed
                    continue
            if params:
                readers.append((called, list(bodies[idx][0]), frozenset(params)))
    for _ in range(depth):
        grown = frozenset().union(
            *(
                called
                for called, calls, params in readers
                if not called <= names
                and any(mentions(s.func, params) and mentions(_named(s), names) for s in calls)
            )
        )
        if not grown:
            break
        names = names | grown
    db.wanted = names


def _wanted_in(db: BinderState, path: str) -> frozenset[str] | None:
    """db.wanted, and the names path binds to them (`g = mod.wanted; g()`)."""
    wanted = db.wanted
    if not wanted:
        return wanted
    known = db.wanted_in.get(path)
    if known is None:
        scopes = db.summaries[path].scopes
        known = wanted | {b.name for s in scopes for b in s.bindings if mentions(b.value, wanted)}
        db.wanted_in[path] = known
    return known


def _named(site: CallSite) -> tuple:
    return (site.func, site.args, site.kwargs)


def _wanted_reads(
    names: frozenset[str], attr_reads: Sequence[tuple], uses: Sequence[tuple]
) -> tuple[Sequence[tuple], Sequence[tuple]]:
    """The property reads of names, and the references to them: what of a scope's reads
    can use a function of names (constant, setting and environment reads cannot)."""
    reads = [read for read in attr_reads if read[0][2] in names]
    refs = [use for use in uses if use[0] == "r" and mentions(use[1], names)]
    return reads, refs


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
    """A property read, assigned or deleted runs its getter, setter or deleter: a call of
    the property (its getter, setter and deleter are one entity)."""
    wanted = classes.property_names(db)
    for expr, span, pos, blocks, kind in attr_reads:
        if expr[2] not in wanted:
            continue
        if kind != ATTR_READ:
            which = "setter" if kind == ATTR_WRITE else "deleter"
            owners = evaluate.eval(db, expr[1], Ctx(path, idx, pos, blocks))
            for owner in in_order(owners):
                if isinstance(owner, INSTANCES):  # on a class, `C.p = v` replaces p
                    for fn in classes.property_accessors(db, owner.scope, expr[2], which):
                        _add_call(facts, idx, "property", fn, span, PROPERTY)
            continue
        implicit: list[Function] = []
        ctx = Ctx(path, idx, pos, blocks, implicit)
        evaluate.attribute(db, evaluate.eval(db, expr[1], ctx), expr[2], ctx)
        for fn in implicit:
            _add_call(facts, idx, "property", Function(fn.path, fn.idx), span, PROPERTY)


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


def _add_call(facts: FileFacts, idx: int, kind: str, target: Value, span, via: int) -> None:
    """One site of scope idx calls target, found as via says (an edge keeps its strongest)."""
    facts.calls.setdefault((idx, kind), set()).add(target)
    key = (idx, target)
    facts.sites[key].append(span)
    known = facts.via.get(key)
    if known is None or via < known:
        facts.via[key] = via


def _miss(at: int, counts: list[int]) -> None:
    """The site at this place in its scope's calls is unresolved."""
    counts[2] += 1
    counts.append(at)


def _give_up(calls: Sequence[CallSite], done: int, counts: list[int]) -> None:
    """Resolution of a scope failed: its sites not yet resolved are unresolved."""
    for at in range(done, len(calls)):
        if calls[at].kind not in PROTOCOLS and calls[at].kind != "raise":
            _miss(at, counts)


def _resolve_site(
    db: BinderState,
    path: str,
    idx: int,
    site: CallSite,
    facts: FileFacts,
    counts: list[int],
    contrib: dict,
    at: int,
) -> None:
    """Resolve the site at this place in scope idx's calls."""
    implicit: list[Function] = []
    ctx = Ctx(path, idx, site.pos, site.blocks, implicit)
    func = site.func
    receiver: Values | None = None
    if func[0] == "a":  # as eval does it, with the receiver kept for _known_outside
        receiver = evaluate.eval(db, func[1], ctx)
        callees = evaluate.attribute(db, receiver, func[2], ctx)
    else:
        callees = evaluate.eval(db, func, ctx)
    if site.kind in PROTOCOLS or site.kind == "raise":
        _resolve_implicit(db, idx, site, callees, ctx, facts, counts)
        return
    if site.kind == "decorator":
        dense.decorator_reference(db, path, idx, site, callees, facts)
    elif any(isinstance(v, External) for v in callees):
        dense.external_call(db, path, idx, site, callees, facts)
    via = DECORATOR if site.kind == "decorator" else 0
    targets: list[tuple[Value, tuple[str, int] | None, bool, int]] = []
    for v in in_order(callees):
        found = call_targets(db, frozenset({v}), (path, idx))
        if found:
            if not via:
                via = _via(db, path, idx, site.func, ctx)
            made = CONSTRUCTOR if isinstance(v, Class) and via != DECORATOR else via
            targets += [(*t, made) for t in found]
    for fn in implicit:
        targets.append((Function(fn.path, fn.idx), None, True, PROPERTY))
    for fn in _callbacks(db, callees, site, ctx):
        targets.append((fn, None, False, IMPLICIT))
    for fn in in_order(_special_methods(db, callees, site, ctx)):
        targets.append((fn, None, True, IMPLICIT))
    if not targets:
        if any(
            isinstance(v, External) and not v.dotted.startswith(_UNKNOWN_OUTSIDE) for v in callees
        ) or _known_outside(db, path, idx, func, receiver):
            counts[1] += 1
            names = external.outside_names(callees)
            if names:
                how = _via(db, path, idx, site.func, ctx)
                external.note_call(facts, idx, at, names, how, site.span)
        else:
            _miss(at, counts)
        return
    counts[0] += 1
    names = external.outside_names(callees)
    if names:  # `self.save()` of a class below Base whose subclass overrides save: Base's too
        how = via or _via(db, path, idx, site.func, ctx)
        external.note_call(facts, idx, at, names, how, site.span, resolved=True)
    arg_ctx = Ctx(path, idx, site.pos, site.blocks)
    arg_values: list[Values] | None = None
    for target, receiver, bound, how in targets:
        _add_call(facts, idx, site.kind, target, site.span, how)
        if receiver is None or (not site.args and not site.kwargs):
            continue
        if arg_values is None:
            arg_values = [
                EMPTY if a[0] == "*" else interesting(evaluate.eval(db, a, arg_ctx))
                for a in site.args
            ]
        _flow_args(db, receiver, bound, site, arg_values, arg_ctx, contrib)


# The tags of displays whose type is a builtin one: a list, tuple, set, dict, a number;
# and the binder's values that stand for builtin containers (a list, a dict).
_BUILTIN_DISPLAYS = frozenset({"l", "d", "k"})
_BUILTIN_VALUES = (Container, Dict)


def _known_outside(
    db: BinderState, path: str, idx: int, func: Expr, receiver: Values | None
) -> bool:
    """A call the binder has no value for, yet of something outside the repository:
    a method of a name only ever bound to a display (`out = []; out.append(x)`) or of
    values the binder holds as builtin lists and dicts, an attribute of instances of
    classes with a base from outside (`class Stack(list)`), a name
    of a repository module that only a star import of an outside module can define
    (`os.umask`: `from posix import *`), a parameter whose default is outside
    (`def f(isinstance=isinstance)`) and that no call site fills."""
    if func[0] == "a" and func[1][0] == "n":
        bindings = _bindings(db, path, idx, func[1][1])
        if bindings and all(b.value[0] in _BUILTIN_DISPLAYS for b in bindings):
            return True
    if receiver is not None:
        for v in in_order(receiver):
            if isinstance(v, Module) and v.path in db.summaries and _stars_outside(db, v.path):
                return True
        if receiver and all(
            isinstance(v, _BUILTIN_VALUES)
            or (isinstance(v, INSTANCES) and _based_outside(db, v.scope))
            for v in receiver
        ):
            return True
    elif func[0] == "n":
        bindings = _bindings(db, path, idx, func[1])
        if bindings and all(b.value[0] == "P" for b in bindings):
            return all(_default_outside(db, path, b.value) for b in bindings)
    return False


def _based_outside(db: BinderState, cls: tuple[str, int]) -> bool:
    """A class of the repository with a base from outside it (`class Stack(list)`,
    `socket.socket(_socket.socket)`): what its own code lacks, that base may define."""
    return any(
        any(isinstance(v, External) for v in classes.class_bases(db, c))
        for c in classes.mro(db, cls)
    )


def _stars_outside(db: BinderState, module: str) -> bool:
    """module star-imports a module from outside the repository."""
    for name, level, _pos in db.summaries[module].scopes[0].star_imports:
        target = db.modules.resolve(name, level, module)
        if target is None or target not in db.summaries:
            return True
    return False


def _default_outside(db: BinderState, path: str, param: Expr) -> bool:
    scope = db.summaries[path].scopes[param[1]]
    default = scope.params[param[2]].default
    if default is None or scope.parent < 0:
        return False
    values = evaluate.eval(db, default, Ctx(path, scope.parent, None, ()))
    return bool(values) and all(isinstance(v, External) for v in values)


def _via(db: BinderState, path: str, idx: int, func: Expr, ctx: Ctx) -> int:
    """How a call site's callee expression was followed, from its shape and the binding
    of the name it starts from (see anchor_ls.index.via): cheap, little evaluated again."""
    tag = func[0]
    if tag == "n":
        return _name_via(db, path, idx, func[1], callee=True)
    if tag != "a":
        return FLOW  # `fns[0]()`, `make()()`: a value out of a container or a return
    base = func[1]
    if base[0] == "c" and base[1] == ("n", "super"):
        return SUPER
    root = base
    while root[0] == "a":
        root = root[1]
    if root[0] == "c":  # `Order().total()`: made right there; `make().total()`: returned
        return ATTRIBUTE if _made_by_class(db, path, idx, root[1], ctx) else FLOW
    if root[0] != "n":
        return FLOW if root[0] == "s" else ATTRIBUTE
    if root[1] in ("self", "cls") and _is_first_param(db, path, idx, root[1]):
        return SELF if root is base else ATTRIBUTE
    return _name_via(db, path, idx, root[1], callee=False)


def _is_first_param(db: BinderState, path: str, idx: int, name: str) -> bool:
    """name is the first parameter of the method it is used in (or of one around it)."""
    scopes = db.summaries[path].scopes
    while idx > 0:
        scope = scopes[idx]
        if scope.kind == "function" and scopes[scope.parent].kind == "class":
            return bool(scope.params) and scope.params[0].name == name
        idx = scope.parent
    return False


def _name_via(db: BinderState, path: str, idx: int, name: str, callee: bool) -> int:
    """How a name's values were found: an import, a parameter or a value out of a call
    or a container (flow), or a definition or plain assignment (name for a callee,
    attribute for a receiver)."""
    bindings = _bindings(db, path, idx, name)
    kinds = {b.value[0] for b in bindings}
    if kinds & {"im", "ima", "if"}:
        return IMPORT
    plain = NAME if callee else ATTRIBUTE
    if any(_flowed(db, path, idx, b, callee) for b in bindings):
        return FLOW
    return plain


def _flowed(db: BinderState, path: str, idx: int, binding: Binding, callee: bool) -> bool:
    """The binding's values came from call sites (a parameter; a receiver's with no
    annotation), a return (a call of anything but a class, for a receiver) or a container."""
    tag = binding.value[0]
    if tag == "P":
        scope = db.summaries[path].scopes[binding.value[1]]
        return callee or scope.params[binding.value[2]].annotation is None
    if tag == "c":
        return callee or not _calls_class(db, path, idx, binding)
    return tag in ("s", "it", "ix", "st")


def _bindings(db: BinderState, path: str, idx: int, name: str) -> list[Binding]:
    """The bindings of name in the scope that holds it, seen from scope idx."""
    scopes = db.summaries[path].scopes
    first = True
    while idx >= 0:
        scope = scopes[idx]
        if first or scope.kind != "class":
            found = lookup.names(db, path, idx).get(name)
            if found:
                return found
        first = False
        idx = scope.parent
    return []


def _calls_class(db: BinderState, path: str, idx: int, binding: Binding) -> bool:
    """`x = Order(...)`: the receiver is an instance made right there (attribute), not a
    value some function returned (flow)."""
    ctx = Ctx(path, idx, binding.pos - 1, binding.blocks)
    return _made_by_class(db, path, idx, binding.value[1], ctx)


def _made_by_class(db: BinderState, path: str, idx: int, callee: Expr, ctx: Ctx) -> bool:
    made = evaluate.eval(db, callee, Ctx(path, idx, ctx.pos, ctx.blocks))
    return bool(made) and all(isinstance(v, Class) for v in made)


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
        classes = frozenset(v for v in values if isinstance(v, Class))
        targets = {t for t, _receiver, _bound in call_targets(db, classes)}
    else:
        opener, closer = PROTOCOLS[site.kind]
        targets = set()
        for v in in_order(values):
            if not isinstance(v, INSTANCES):
                continue
            opened = evaluate.attribute(db, frozenset({v}), opener, ctx)
            targets |= {Function(fn.path, fn.idx) for fn in opened if isinstance(fn, CALLABLE)}
            if site.kind in ("with", "awith"):
                on = frozenset({v})
            else:
                on = evaluate.instances(
                    db, evaluate.call_result(db, opened, ("c", UNKNOWN, (), ()), ctx)
                )
            closed = evaluate.attribute(db, on, closer, ctx) if on else EMPTY
            targets |= {Function(fn.path, fn.idx) for fn in closed if isinstance(fn, CALLABLE)}
    if not targets:
        return
    counts[0] += 1
    for target in in_order(targets):
        _add_call(facts, idx, "call", target, site.span, IMPLICIT)


def _callbacks(db: BinderState, callees: Values, site: CallSite, ctx: Ctx) -> list[Value]:
    """The functions `map(f, xs)`, `sorted(xs, key=f)` and the like call."""
    out: list[Value] = []
    for v in in_order(callees):
        if not isinstance(v, External) or v.dotted not in _CALLBACK_CALLERS:
            continue
        keyword = _CALLBACK_CALLERS[v.dotted]
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
        if not isinstance(v, External) or v.dotted not in _DUNDER_CALLERS:
            continue
        method, count = _DUNDER_CALLERS[v.dotted]
        for expr in [a for a in site.args if a[0] != "*"][:count]:
            for inst in in_order(evaluate.eval(db, expr, ctx)):
                if isinstance(inst, INSTANCES):
                    found = evaluate.attribute(db, frozenset({inst}), method, ctx)
                    out |= {Function(fn.path, fn.idx) for fn in found if isinstance(fn, CALLABLE)}
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
                if isinstance(d, Dict):
                    keyed.extend((k, interesting(v)) for k, v in d.items if k != "*")
        elif name in by_name or starstar is not None:
            keyed.append((name, interesting(evaluate.eval(db, expr, ctx))))
    for name, values in keyed:
        if not values:
            continue
        param = by_name.get(name)
        if param is not None:
            contrib[fn][param.name] |= values
        elif starstar is not None:
            contrib[fn][starstar.name].add(Dict(((name, values),)))


def warm(db: BinderState) -> None:
    """Build the repository-wide tables resolution reads now, so that the first edit
    does not wait."""
    classes.property_names(db)
    dense.value_names(db)
    classes.tables(db)
