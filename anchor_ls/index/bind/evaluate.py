"""Evaluation: the abstract values an expression may have, what a call of a function
gives (its returns, its yields, or the argument it hands back), what a parameter holds
(its annotation, its default, the argument facts flowed into it), annotations, and what
decorators make of a definition.

Plain functions of the binder's state (anchor_ls.index.bind.db); they never read files
and never change the argument facts (anchor_ls.index.bind.flow does).
"""

from __future__ import annotations

from collections import defaultdict

from anchor_ls.index.bind import classes, lookup
from anchor_ls.index.bind.db import BinderState
from anchor_ls.index.bind.definitions import as_annotation, is_overload
from anchor_ls.index.bind.values import cap, dict_key, in_order
from anchor_ls.index.state import (
    CALLABLE,
    EMPTY,
    INSTANCES,
    BoundMethod,
    Class,
    Container,
    Ctx,
    Dict,
    DictMethod,
    External,
    Function,
    Generator,
    Instance,
    Module,
    SelfInstance,
    Super,
    Value,
    Values,
)
from anchor_ls.syntax.summary import Binding, Expr, Param, Scope

_CONTAINER_BUILTINS = frozenset({"list", "tuple", "set", "frozenset", "sorted", "reversed"})
_DICT_VALUE_METHODS = frozenset({"get", "pop", "setdefault", "values"})
_MAX_FLOWED = 6
_MAX_CALLBACKS = 24


def eval(db: BinderState, expr: Expr, ctx: Ctx) -> Values:
    tag = expr[0]
    if tag == "n":
        return lookup.lookup(db, ctx, expr[1])
    if tag == "a":
        return attribute(db, eval(db, expr[1], ctx), expr[2], ctx)
    if tag == "c":
        return call_result(db, eval(db, expr[1], ctx), expr, ctx)
    if tag == "f":
        scope = db.summaries[ctx.path].scopes[expr[1]]
        kind = Class if scope.kind == "class" else Function
        return frozenset({kind(ctx.path, expr[1])})
    if tag == "dw":
        made = _made(db, ctx.path, expr[1], expr[2])
        return made or eval(db, ("f", expr[1]), ctx)
    if tag == "or":
        out: set[Value] = set()
        for part in expr[1]:
            out |= eval(db, part, ctx)
        return cap(out)
    if tag == "l":
        elems: set[Value] = set()
        for item in expr[1]:
            if item[0] == "*":
                elems |= elements(db, eval(db, item[1], ctx))
            else:
                elems |= eval(db, item, ctx)
        return frozenset({Container(cap(elems))}) if elems else EMPTY
    if tag == "d":
        keyed: dict[str, set[Value]] = defaultdict(set)
        for key, val in expr[1]:
            vals = eval(db, val, ctx)
            if vals:
                keyed[dict_key(key[1]) if key[0] == "k" else "*"] |= vals
        if not keyed:
            return EMPTY
        return frozenset({Dict(tuple(sorted((k, frozenset(v)) for k, v in keyed.items())))})
    if tag == "s":
        item = lookup.literal_item(db, expr, ctx)
        if item is not None:
            return eval(db, *item)
        return subscript(db, eval(db, expr[1], ctx), expr[2])
    if tag == "it":
        return elements(db, eval(db, expr[1], ctx))
    if tag == "ix":
        return unpack(db, expr[1], expr[2], ctx)
    if tag == "st":
        return starred(db, expr[1], expr[2], expr[3], ctx)
    if tag == "en":
        return entered(db, eval(db, expr[1], ctx))
    if tag == "ex":
        return instances(db, eval(db, expr[1], ctx), elements=True)
    if tag == "an":
        return annotation_values(db, expr[1], ctx)
    if tag == "im":
        dotted = expr[1]
        return lookup.module_value(db, dotted.split(".")[0], 0, ctx.path)
    if tag == "ima":
        return lookup.module_value(db, expr[1], expr[2], ctx.path)
    if tag == "if":
        module, level, name = expr[1], expr[2], expr[3]
        target = db.modules.resolve(module, level, ctx.path)
        if target is None:
            if level == 0 and module:
                return frozenset({External(f"{module}.{name}")})
            return EMPTY
        return lookup.module_attr(db, target, name)
    return EMPTY


def attribute(db: BinderState, bases: Values, name: str, ctx: Ctx) -> Values:
    out: set[Value] = set()
    for base in in_order(bases):
        if isinstance(base, Module):
            out |= lookup.module_attr(db, base.path, name)
        elif isinstance(base, INSTANCES) and name == "__class__":
            out.add(Class(base.path, base.idx))
        elif isinstance(base, INSTANCES):
            cls = base.scope
            found = classes.instance_attr(db, cls, name, ctx)
            if classes.outside_line(db, cls) and not (found and classes.stores(db, cls, name)):
                found |= classes.outside_attr(db, cls, name)
            if isinstance(base, SelfInstance):
                found |= classes.overrides(db, cls, name)
            out |= found
        elif isinstance(base, Class):
            out |= classes.class_attr(db, base.scope, name, bound=False)
        elif isinstance(base, Super):
            out |= classes.super_attr(db, base.scope, name, ctx)
        elif isinstance(base, External):
            out.add(External(f"{base.dotted}.{name}"))
        elif isinstance(base, Dict) and name in _DICT_VALUE_METHODS:
            out.add(DictMethod(base, name))
    return cap(out)


def subscript(db: BinderState, bases: Values, key: Expr) -> Values:
    sliced = key[0] == "sl"
    out: set[Value] = set()
    for base in in_order(bases):
        if isinstance(base, INSTANCES):
            out |= _item(db, base.scope, sliced)
        elif sliced:  # a slice of a container is a container of the same things
            if isinstance(base, Container):
                out.add(base)
        elif isinstance(base, Container):
            out |= base.items
        elif isinstance(base, Dict):
            wanted = dict_key(key[1]) if key[0] == "k" else None
            for k, vals in base.items:
                if wanted is None or k in (wanted, "*"):
                    out |= vals
    return frozenset(out)


def _item(db: BinderState, cls: tuple[str, int], sliced: bool) -> Values:
    """An item (a slice) of an instance of cls: what its annotated `__getitem__` returns,
    else what the generic container it derives from holds."""
    annotated = _getitem_annotation(db, cls, sliced)
    if annotated is not None:
        return annotated
    items = classes.container_items(db, cls)[1]
    if sliced:
        return frozenset({Container(items)}) if items else EMPTY
    return items


def _getitem_annotation(db: BinderState, cls: tuple[str, int], sliced: bool) -> Values | None:
    """What the return annotation of cls's `__getitem__` gives (the `@overload` for a
    slice key or for another key, when it has them); None when it has no annotation."""
    out: set[Value] = set()
    annotated = False
    for fn in in_order(classes.instance_attr(db, cls, "__getitem__", None)):
        if not isinstance(fn, CALLABLE):
            continue
        for path, idx in _variants(db, fn.scope, sliced):
            returns = db.scope(path, idx).returns
            if returns is not None:
                annotated = True
                out |= annotation_values(db, returns, Ctx(path, idx, None))
    return frozenset(out) if annotated else None


def _variants(db: BinderState, fn: tuple[str, int], sliced: bool) -> list[tuple[str, int]]:
    """The `@overload` stubs of fn whose key parameter takes a slice (or does not), or
    fn itself when it has none of them."""
    path, idx = fn
    scope = db.scope(path, idx)
    if scope.parent < 0:
        return [fn]
    stubs = [
        (path, b.value[1])
        for b in lookup.names(db, path, scope.parent).get(scope.name, ())
        if b.value[0] == "f" and is_overload(db.scope(path, b.value[1]))
    ]
    chosen = [s for s in stubs if _takes_slice(db.scope(*s)) == sliced]
    return chosen or [fn]


def _takes_slice(scope: Scope) -> bool:
    """Whether an `@overload` of `__getitem__` is the one for a slice key."""
    params = scope.params
    return len(params) > 1 and _names_slice(params[1].annotation)


def _names_slice(ann: Expr | None) -> bool:
    if ann is None:
        return False
    if ann[0] == "n":
        return ann[1] == "slice"
    if ann[0] == "sa":
        return "slice" in ann[1].replace("|", " ").split()
    if ann[0] in ("or", "l"):
        return any(_names_slice(part) for part in ann[1])
    return False


def elements(db: BinderState, values: Values) -> Values:
    out: set[Value] = set()
    for v in in_order(values):
        if isinstance(v, Container):
            out |= v.items
        elif isinstance(v, Dict):
            continue  # iterating a dict gives its keys
        elif isinstance(v, Generator):
            out |= yields(db, v.scope)
        elif isinstance(v, INSTANCES):  # __iter__ a generator, or an iterator with __next__
            out |= classes.container_items(db, v.scope)[0]
            for fn in in_order(classes.instance_attr(db, v.scope, "__iter__", None)):
                if not isinstance(fn, CALLABLE):
                    continue
                for it in in_order(returns(db, fn.scope)):
                    if isinstance(it, Generator):
                        out |= yields(db, it.scope)
                    elif isinstance(it, Container):  # `-> Iterator[T]`
                        out |= it.items
                    elif isinstance(it, INSTANCES):
                        nexts = classes.instance_attr(db, it.scope, "__next__", None)
                        for nxt in in_order(nexts):
                            if isinstance(nxt, CALLABLE):
                                out |= returns(db, nxt.scope)
    return frozenset(out)


def unpack(db: BinderState, expr: Expr, index: int, ctx: Ctx) -> Values:
    items = _literal_items(expr)
    if items is not None and -len(items) <= index < len(items):
        return eval(db, items[index], ctx)
    paired = _paired(db, expr, index, ctx)
    if paired is None:
        paired = _returned_item(db, expr, index, ctx)
    if paired is not None:
        return paired
    return elements(db, eval(db, expr, ctx))


def _returned_item(db: BinderState, expr: Expr, index: int, ctx: Ctx) -> Values | None:
    """Item index of what a call gives when every function it calls returns tuple
    displays of one length (`formsets, inlines = self._create_formsets()`: the first
    is the formsets, not the union of both); None for anything else, or when the item
    gives nothing yet (a cycle cut short): then the union of the items is the answer."""
    if expr[0] != "c":
        return None
    callees = eval(db, expr[1], ctx)
    if not callees:
        return None
    out: set[Value] = set()
    for v in in_order(callees):
        if not isinstance(v, CALLABLE):
            return None
        scope = db.scope(v.path, v.idx)
        if scope.kind != "function" or scope.yields or not scope.return_values:
            return None
        inside = Ctx(v.path, v.idx, None)
        for returned in scope.return_values:
            items = _literal_items(returned)
            if items is None or not -len(items) <= index < len(items):
                return None
            out |= eval(db, items[index], inside)
    return frozenset(out) if out else None


def _paired(db: BinderState, expr: Expr, index: int, ctx: Ctx) -> Values | None:
    """Item index of an element of `enumerate(xs)` (1: an element of xs; 0: a count)
    or of `zip(xs, ys)` (an element of the index-th iterable); None for anything else."""
    if expr[0] != "it" or expr[1][0] != "c":
        return None
    func, args = expr[1][1], expr[1][2]
    if any(a[0] == "*" for a in args) or func[0] != "n" or func[1] not in ("enumerate", "zip"):
        return None
    if eval(db, func, ctx) != {External(f"builtins.{func[1]}")}:
        return None
    if func[1] == "enumerate":
        if not args or index not in (0, 1, -1, -2):
            return None
        return elements(db, eval(db, args[0], ctx)) if index in (1, -1) else EMPTY
    if not -len(args) <= index < len(args):
        return None
    return elements(db, eval(db, args[index], ctx))


def starred(db: BinderState, expr: Expr, start: int, after: int, ctx: Ctx) -> Values:
    items = _literal_items(expr)
    if items is not None and start <= len(items) - after:
        chosen = items[start : len(items) - after]
        elems: set[Value] = set()
        for item in chosen:
            elems |= eval(db, item, ctx)
    else:
        elems = set(elements(db, eval(db, expr, ctx)))
    return frozenset({Container(frozenset(elems))}) if elems else EMPTY


def entered(db: BinderState, values: Values) -> Values:
    """What `with value as x` binds: __enter__'s result, or the value itself."""
    out: set[Value] = set()
    for v in in_order(values):
        if isinstance(v, INSTANCES):
            enter = classes.instance_attr(db, v.scope, "__enter__", None)
            if enter:
                for fn in in_order(enter):
                    if isinstance(fn, CALLABLE):
                        out |= returns(db, fn.scope)
                continue
        if isinstance(v, Generator):  # a @contextmanager generator: `as` binds what it yields
            out |= yields(db, v.scope)
        elif isinstance(v, INSTANCES):
            out.add(v)
        elif isinstance(v, External):  # `with open(p) as f`: what its __enter__ returns
            out.add(External(f"{v.dotted}.__enter__()"))
    return frozenset(out)


def instances(db: BinderState, values: Values, elements: bool = False) -> Values:
    out: set[Value] = set()
    for v in values:
        if isinstance(v, Class):
            out.add(Instance(v.path, v.idx))
        elif isinstance(v, INSTANCES):
            out.add(v)
        elif elements and isinstance(v, Container):
            out |= instances(db, v.items)
    return frozenset(out)


def annotation_values(db: BinderState, ann: Expr | None, ctx: Ctx) -> Values:
    """The values an annotated name holds: instances of the classes it names."""
    if ann is None:
        return EMPTY
    tag = ann[0]
    if tag in ("n", "a"):
        return _named_annotation(db, ann, ctx)
    if tag == "sa":
        return _string_annotation(db, ann[1], ctx)
    if tag == "or":
        out: set[Value] = set()
        for part in ann[1]:
            out |= annotation_values(db, part, ctx)
        return frozenset(out)
    if tag == "g":
        base, args = ann[1], ann[2]
        name = base[-1] if base and base[0] in ("n", "a") else ""
        name = base[1] if base and base[0] == "n" else (base[2] if base[0] == "a" else "")
        if name in ("Optional", "Union", "Annotated", "Final", "ClassVar", "Required"):
            parts = args[:1] if name in ("Annotated", "Final", "ClassVar") else args
            return annotation_values(db, ("or", parts), ctx)
        if name in ("Generator", "AsyncGenerator"):  # what it yields, not what it is sent
            args = args[:1]
        if name in ("type", "Type"):
            out = set()
            for arg in args:
                if arg[0] in ("n", "a"):
                    out |= {v for v in _ann_target(db, arg, ctx) if isinstance(v, Class)}
            return frozenset(out)
        if name in ("dict", "Dict", "Mapping", "MutableMapping", "defaultdict"):
            vals = annotation_values(db, args[1], ctx) if len(args) > 1 else EMPTY
            return frozenset({Dict((("*", vals),))}) if vals else EMPTY
        if name in ("Callable", "Literal"):
            return EMPTY
        elems: set[Value] = set()
        for arg in args:
            elems |= annotation_values(db, arg, ctx)
        if elems:
            return frozenset({Container(frozenset(elems))})
        return instances(db, _ann_target(db, base, ctx))
    if tag == "l":
        return EMPTY
    return EMPTY


def _ann_target(db: BinderState, ann: Expr, ctx: Ctx) -> Values:
    # Annotations are read at the end of the scope chain (they may be forward references).
    return eval(db, ann, Ctx(ctx.path, ctx.scope, None))


def _string_annotation(db: BinderState, text: str, ctx: Ctx) -> Values:
    text = text.strip()
    if not text:
        return EMPTY
    if "|" in text:
        out: set[Value] = set()
        for part in text.split("|"):
            out |= _string_annotation(db, part, ctx)
        return frozenset(out)
    if text.startswith(("Optional[", "typing.Optional[")) and text.endswith("]"):
        return _string_annotation(db, text[text.index("[") + 1 : -1], ctx)
    parts = text.split(".")
    if not all(p.isidentifier() for p in parts):
        return EMPTY
    expr: Expr = ("n", parts[0])
    for p in parts[1:]:
        expr = ("a", expr, p)
    return _named_annotation(db, expr, ctx)


def _is_type_alias(expr: Expr) -> bool:
    """Whether expr is the annotation `TypeAlias` (`typing.TypeAlias`)."""
    return expr[0] == "an" and expr[1][0] in ("n", "a") and expr[1][-1] == "TypeAlias"


def _named_annotation(db: BinderState, ann: Expr, ctx: Ctx) -> Values:
    """An annotation that is a (dotted) name: instances of the class it names, or what
    the type alias it names stands for."""
    alias = _alias(db, ann, ctx, 0)
    if alias is None:
        return instances(db, _ann_target(db, ann, ctx))
    module, name, value = alias
    return db.caches.aliases.ask(
        (module, name), EMPTY, annotation_values, db, value, Ctx(module, 0, None)
    )


def _alias(db: BinderState, ann: Expr, ctx: Ctx, hops: int) -> tuple[str, str, Expr] | None:
    """(module, name, the annotation it stands for) when ann names a module-level type
    alias (`TextType = Union[str, "Text"]`, `X: TypeAlias = "Text"`), here or through
    imports of it; None for anything else (a class, most of all)."""
    if hops > 8:
        return None
    if ann[0] == "a":
        modules = [
            v for v in eval(db, ann[1], Ctx(ctx.path, ctx.scope, None)) if isinstance(v, Module)
        ]
        if len(modules) != 1 or modules[0].path not in db.summaries:  # a namespace folder
            return None
        ctx, name = Ctx(modules[0].path, 0, None), ann[2]
    else:
        name = ann[1]
    sole = lookup.sole_binding(db, ctx, name)
    if sole is None or sole[0] != 0:
        return None
    value = sole[1].value
    if value[0] == "if":
        target = db.modules.resolve(value[1], value[2], ctx.path)
        if target is None or target not in db.summaries:
            return None
        return _alias(db, ("n", value[3]), Ctx(target, 0, None), hops + 1)
    declared = value[0] == "or" and _is_type_alias(value[1][-1])
    if declared:  # `X: TypeAlias = ...`
        value = value[1][0]
    if value[0] != "s" and not (declared and value[0] == "k"):
        return None
    spelled = as_annotation(value)
    return None if spelled is None else (ctx.path, name, spelled)


def param_values(db: BinderState, path: str, idx: int, index: int) -> Values:
    scope = db.scope(path, idx)
    param = scope.params[index]
    out: set[Value] = set()
    parent = db.summaries[path].scopes[scope.parent] if scope.parent >= 0 else None
    if index == 0 and parent is not None and parent.kind == "class" and param.kind == "pos":
        kind = lookup.method_kind(db, path, idx)
        if kind in ("instance", "property"):
            out.add(SelfInstance(path, scope.parent))
        elif kind == "class":
            out.add(Class(path, scope.parent))
    elif index == 0 and param.kind == "pos" and scope.kind == "function":
        # `save = _save` in a class body makes a module function a method of that class
        out |= {SelfInstance(*cls) for cls in classes.hosts(db).get((path, idx), ())}
    ctx = Ctx(path, idx, None)
    if param.annotation is not None:
        out |= annotation_values(db, param.annotation, ctx)
    if param.default is not None:
        parent_ctx = Ctx(path, scope.parent, None)
        out |= {v for v in eval(db, param.default, parent_ctx) if not isinstance(v, External)}
    flowed = db.param_facts.get((path, idx), {}).get(param.name, EMPTY)
    # More is a megamorphic parameter: no edge on a guess. Functions handed over to be
    # called are many by design (a matcher per grouping rule), and each is called; a
    # registry that keeps what it is given has no call to show for it.
    if len(flowed) <= _MAX_FLOWED or (
        len(flowed) <= _MAX_CALLBACKS
        and param.name in scope.called_params
        and all(isinstance(v, Function) for v in flowed)
    ):
        out |= flowed
    if param.kind == "star":
        return frozenset({Container(frozenset(out))}) if out else EMPTY
    return cap(out)


def returns(db: BinderState, fn: tuple[str, int]) -> Values:
    return db.caches.returns.ask(fn, EMPTY, _returns_of, db, fn)


def yields(db: BinderState, fn: tuple[str, int]) -> Values:
    return db.caches.yields.ask(fn, EMPTY, _yields_of, db, fn)


def _returns_of(db: BinderState, fn: tuple[str, int]) -> Values:
    path, idx = fn
    scope = db.scope(path, idx)
    ctx = Ctx(path, idx, None)
    out: set[Value] = set()
    if scope.returns is not None:
        out |= annotation_values(db, scope.returns, ctx)
    if scope.yields:
        out.add(Generator(path, idx))
    else:
        for expr in scope.return_values:
            out |= eval(db, expr, ctx)
    return cap(out)


def _yields_of(db: BinderState, fn: tuple[str, int]) -> Values:
    path, idx = fn
    scope = db.scope(path, idx)
    out: set[Value] = set()
    ctx = Ctx(path, idx, None)
    for expr in scope.yields:
        out |= eval(db, expr, ctx)
    return frozenset(out)


def call_result(db: BinderState, callees: Values, call: Expr, ctx: Ctx) -> Values:
    out: set[Value] = set()
    for v in in_order(callees):
        if isinstance(v, CALLABLE):
            passed = _passed_through(db, v.scope, isinstance(v, BoundMethod), call, ctx)
            out |= returns(db, v.scope) if passed is None else passed
        elif isinstance(v, Class):
            out.add(Instance(v.path, v.idx))
        elif isinstance(v, INSTANCES):
            for fn in in_order(classes.instance_attr(db, v.scope, "__call__", None)):
                if isinstance(fn, CALLABLE):
                    out |= returns(db, fn.scope)
        elif isinstance(v, External):
            out |= _external_result(db, v.dotted, call, ctx)
        elif isinstance(v, DictMethod):  # d.get(k), d.pop(k), d.values()
            args, method = call[2], v.method
            values = subscript(db, frozenset({v.dict}), args[0] if args else ("u",))
            out |= values if method != "values" else {Container(values)}
            if method == "get" and len(args) > 1:
                out |= eval(db, args[1], ctx)
    return cap(out)


def _passed_through(
    db: BinderState, fn: tuple[str, int], bound: bool, call: Expr, ctx: Ctx
) -> Values | None:
    """What a call of a function that returns one of its parameters as it came gives:
    the argument this call passes (`def first(x, y): return x`), not what every call
    passes, with what its other returns give (a nested def: a decorator factory's
    `return inner(f) if f else inner`). None (or nothing: an argument not known here)
    when the function does more, or the argument cannot be told: then what every call
    passes is the answer."""
    plan = _returned_param(db, fn)
    if plan is None or call[0] != "c":
        return None
    param, others = plan
    arg = _argument(db, fn, bound, call, param)
    if arg is None:
        return None
    out = set(eval(db, arg, ctx))
    if not out and arg[0] == "n":  # a name not known here (a cycle cut short): unsure
        return None
    inside = Ctx(fn[0], fn[1], None)
    for expr in others:
        out |= eval(db, expr, inside)
    return frozenset(out)


def _argument(
    db: BinderState, fn: tuple[str, int], bound: bool, call: Expr, param: Param
) -> Expr | None:
    """The expression a call passes for one parameter of fn; None when it spreads
    `*args`/`**kwargs` or leaves the parameter to its default."""
    args, kwargs = call[2], call[3]
    if any(a[0] == "*" for a in args) or any(k == "**" for k, _ in kwargs):
        return None
    params = db.scope(*fn).params
    positional = [p.name for p in params if p.kind in ("pos", "posonly")][int(bound) :]
    at = positional.index(param.name) if param.name in positional else len(args)
    if at < len(args):
        return args[at]
    if param.kind != "posonly":
        for name, expr in kwargs:
            if name == param.name:
                return expr
    return None


def _returned_param(db: BinderState, fn: tuple[str, int]) -> tuple[Param, tuple[Expr, ...]] | None:
    """The parameter every `return` of fn that reads a parameter gives back unchanged
    (itself, or through a nested function that does), and the other returns: nested
    definitions, whatever the call."""
    # a function returning its own call: nothing to tell
    return db.caches.returned.ask(fn, None, _find_returned_param, db, fn)


def _find_returned_param(
    db: BinderState, fn: tuple[str, int]
) -> tuple[Param, tuple[Expr, ...]] | None:
    scope = db.scope(*fn)
    if scope.returns is not None or scope.yields or not scope.return_values:
        return None
    names = lookup.names(db, *fn)
    params = {p.name: p for p in scope.params}
    through: set[str] = set()
    others: list[Expr] = []
    for expr in scope.return_values:
        name = _passing(db, fn, expr, params, names)
        if name is not None:
            through.add(name)
        elif expr[0] == "n" and expr[1] not in params and _defined_once(names, expr[1]):
            others.append(expr)
        else:
            return None
    if len(through) != 1:
        return None
    (name,) = through
    param = params[name]
    if param.kind in ("star", "starstar") or name in scope.global_names:
        return None
    if any(m[0] == name for m in scope.mutations):  # `x.append(f); return x` adds to it
        return None
    if len(names.get(name, ())) != 1:  # bound again in fn
        return None
    return param, tuple(others)


def _passing(
    db: BinderState, fn: tuple[str, int], expr: Expr, params: dict[str, Param], names: dict
) -> str | None:
    """The parameter of fn an expression returns unchanged: the parameter's name, or a
    call of a nested function that returns the argument it is given for it."""
    if expr[0] == "n":
        return expr[1] if expr[1] in params else None
    if expr[0] != "c" or expr[1][0] != "n" or not _defined_once(names, expr[1][1]):
        return None
    inner = (fn[0], names[expr[1][1]][0].value[1])
    if db.scope(*inner).decorators:  # a call of what its decorators made of it
        return None
    plan = _returned_param(db, inner)
    if plan is None or plan[1]:
        return None
    arg = _argument(db, inner, False, expr, plan[0])
    return None if arg is None else _passing(db, fn, arg, params, names)


def _external_result(db: BinderState, dotted: str, call: Expr, ctx: Ctx) -> Values:
    name = dotted.removeprefix("builtins.")
    args = call[2]
    if name == "super":
        cls = lookup.enclosing_class(db, ctx.path, ctx.scope)
        if args and args[0][0] in ("n", "a"):
            explicit = [v for v in eval(db, args[0], ctx) if isinstance(v, Class)]
            if explicit:
                return frozenset(Super(v.path, v.idx) for v in explicit)
        return frozenset({Super(ctx.path, cls)}) if cls is not None else EMPTY
    if name in ("copy.copy", "copy.deepcopy") and args:  # a value like the one copied
        return frozenset(v for v in eval(db, args[0], ctx) if not isinstance(v, External))
    if name in ("functools.partial", "partial") and args:
        return frozenset(
            v for v in eval(db, args[0], ctx) if isinstance(v, Function | BoundMethod | Class)
        )
    if name in ("map", "filter") and args:  # what the function returns / keeps
        elems: set[Value] = set()
        for arg in args:
            values = frozenset(v for v in eval(db, arg, ctx) if not isinstance(v, External))
            if name == "map":
                elems |= call_result(db, values, call, ctx)
            elems |= elements(db, values)
        return frozenset({Container(cap(elems))}) if elems else EMPTY
    if name in _CONTAINER_BUILTINS and args:
        elems = elements(db, eval(db, args[0], ctx))
        return frozenset({Container(elems)}) if elems else EMPTY
    if name == "type" and len(args) == 1:
        return frozenset(
            Class(v.path, v.idx) for v in eval(db, args[0], ctx) if isinstance(v, INSTANCES)
        )
    if name in ("staticmethod", "classmethod", "property") and args:
        return eval(db, args[0], ctx)
    if name == "getattr" and len(args) >= 2 and args[1][0] == "k":
        return attribute(db, eval(db, args[0], ctx), str(args[1][1]), ctx)
    return frozenset({External(f"{dotted}()")})


def decoration(db: BinderState, path: str, idx: int, start: int = 0) -> tuple[Values, Values]:
    """(what a definition's decorators, from the start-th down, make of it; the
    decorators that wrapped it). What they make is repository code wrapping it: a
    function nested in a decorator that calls the decorator's parameter, or an instance
    of a decorator class; empty when they hand it back (`return f`) or are not
    repository code: the definition itself is what runs.

    One pass from the bottom decorator up keeps what each start gives on its way (each
    decorator's call site asks for the ones below it): n decorators cost n steps, not
    n * n / 2 (8,000 took 50 s). Those starts keep no wrapping decorators (None):
    only start 0 is asked for them."""
    memo = db.caches.decorated
    key = (path, idx, start)
    cached = memo.get(key)
    if cached is not None and cached[1] is not None:
        return cached  # type: ignore[return-value]
    if cached is None:  # a decorator applied to itself sees nothing yet
        memo[key] = (EMPTY, EMPTY)
    scope = db.summaries[path].scopes[idx]
    ctx = Ctx(path, scope.parent, None)
    current: Values = EMPTY
    wrapping: set[tuple[str, int]] = set()
    # the bottom decorator applies first
    for at in range(len(scope.decorators) - 1, start - 1, -1):
        made: set[Value] = set()
        for dec in in_order(eval(db, scope.decorators[at], ctx)):
            if isinstance(dec, Class):
                made.add(Instance(dec.path, dec.idx))
                wrapping.add(dec.scope)
            elif isinstance(dec, CALLABLE):
                wrappers = _wrappers(db, dec.scope, isinstance(dec, BoundMethod))
                made |= wrappers
                if wrappers:
                    wrapping.add(dec.scope)
        current = frozenset(made) or current
        if at > start and (path, idx, at) not in memo:
            memo[(path, idx, at)] = (current, None)
    memo[key] = result = (current, frozenset(wrapping))
    return result


def _made(db: BinderState, path: str, idx: int, start: int) -> Values:
    """What a definition's decorators from the start-th down make of it."""
    cached = db.caches.decorated.get((path, idx, start))
    return cached[0] if cached is not None else decoration(db, path, idx, start)[0]


def _wrappers(db: BinderState, dec: tuple[str, int], bound: bool) -> set[Value]:
    """The functions decorator dec returns that call the function it was given."""
    params = db.summaries[dec[0]].scopes[dec[1]].params[int(bound) :]
    if not params or params[0].kind not in ("pos", "posonly"):
        return set()
    given = params[0].name
    scopes = db.summaries[dec[0]].scopes
    return {
        v
        for v in returns(db, dec)
        if isinstance(v, Function)
        and v.path == dec[0]
        and given in scopes[v.idx].free_calls
        and lookup.nested_in(scopes, v.idx, dec[1])
    }


def _literal_items(expr: Expr) -> tuple[Expr, ...] | None:
    """The items of a tuple/list display, following constant unpacking indexes."""
    if expr[0] == "l" and all(item[0] != "*" for item in expr[1]):
        return expr[1]
    if expr[0] == "ix":
        outer = _literal_items(expr[1])
        if outer is not None and -len(outer) <= expr[2] < len(outer):
            return _literal_items(outer[expr[2]])
    return None


def _defined_once(names: dict[str, list[Binding]], name: str) -> bool:
    """Whether a scope binds name once, to a definition of its own (a nested def)."""
    bound = names.get(name, ())
    return len(bound) == 1 and bound[0].value[0] == "f"
