"""The class model: bases, MROs, class and instance attributes, `super()`, the methods
subclasses override, and the repository-wide class tables (which classes bind or store
a name, which subclass which, which module functions class bodies bind as methods).

Plain functions of the binder's state (anchor_ls.index.bind.db); they never read files,
and evaluate an expression (a base, a stored value) only through db.eval.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from functools import partial

from anchor_ls.index.bind import lookup
from anchor_ls.index.bind.db import BinderState, ClassTables, Share
from anchor_ls.index.bind.definitions import as_annotation, property_names_in
from anchor_ls.index.bind.memo import guarded
from anchor_ls.index.bind.values import cap, in_order, value_key
from anchor_ls.index.decorators import decorator_name
from anchor_ls.index.mro import Linearization, mro_of
from anchor_ls.index.state import (
    CALLABLE,
    EMPTY,
    BoundMethod,
    Class,
    Ctx,
    External,
    Function,
    ScopeValue,
    Value,
    Values,
)
from anchor_ls.syntax.summary import Expr


def class_bases(db: BinderState, cls: tuple[str, int]) -> list[Value]:
    path, idx = cls
    scope = db.scope(path, idx)
    out: list[Value] = []
    ctx = Ctx(path, scope.parent, None)
    for base in scope.bases:
        if base[0] == "s":  # Base[T]
            base = base[1]
        for v in sorted(db.eval(base, ctx), key=value_key):
            if v not in out:
                out.append(v)
    return out


def mro(db: BinderState, cls: tuple[str, int]) -> Linearization[tuple[str, int]]:
    """cls and its repository bases in C3 order."""
    memo = db.caches.mro
    return mro_of(cls, partial(repository_bases, db), memo.answers, memo.working)  # type: ignore[arg-type]


def repository_bases(db: BinderState, cls: tuple[str, int]) -> list[tuple[str, int]]:
    """cls's bases that are repository classes, in declared order."""
    return [v.scope for v in class_bases(db, cls) if isinstance(v, Class)]


def class_attr(
    db: BinderState, cls: tuple[str, int], name: str, *, bound: bool, start: int = 0
) -> Values:
    """Look `name` up along the MRO: class-body bindings, then `Cls.name = ...`."""
    definers = name_definers(db).get(name)
    if not definers:
        return EMPTY
    key = (cls, name, bound, start)
    return db.caches.class_attrs.ask(
        key, EMPTY, _class_attr_of, db, cls, name, bound, start, definers
    )


def _class_attr_of(
    db: BinderState,
    cls: tuple[str, int],
    name: str,
    bound: bool,
    start: int,
    definers: set[tuple[str, int]],
) -> Values:
    result: Values = EMPTY
    klass = _first_in_mro(
        db,
        cls,
        ("class", name),
        lambda k: k in definers and bool(lookup.names(db, *k).get(name)),
        start,
    )
    if klass is not None:
        bindings = lookup.names(db, *klass)[name]
        values = lookup.reaching(db, klass[0], klass[1], name, bindings, None, ())
        result = frozenset(_bind_method(db, v, bound) for v in values)
    return result


def _first_in_mro(
    db: BinderState,
    cls: tuple[str, int],
    key: tuple,
    test: Callable[[tuple[str, int]], bool],
    start: int = 0,
) -> tuple[str, int] | None:
    """The first class of cls's MRO (from the start-th, 0 or 1) that test holds for.

    Remembered (by key) for each MRO it ends with: a class with one base shares its
    base's MRO and so its answer, so asking it of each class of a chain costs a step a
    class, not its depth a class. test reads class bodies alone (put_file forgets the
    answers)."""
    memo = db.caches.mro_found.answers
    visited = []
    found: tuple[str, int] | None = None
    for i, (node, own) in enumerate(mro(db, cls).parts()):
        if i == 0 and start:  # cls itself: its MRO is no other's
            found = next((c for c in own[start:] if test(c)), None)
            if found is not None:
                return found
            continue
        known = memo.get((node, key), memo)
        if known is not memo:
            found = known  # type: ignore[assignment]
            break
        visited.append(node)
        found = next((c for c in own if test(c)), None)
        if found is not None:
            break
    for node in visited:
        memo[(node, key)] = found
    return found


def _bind_method(db: BinderState, value: Value, bound: bool) -> Value:
    if not isinstance(value, Function):
        return value
    scope = db.scope(value.path, value.idx)
    if scope.kind != "function" or db.scope(value.path, scope.parent).kind != "class":
        return value
    kind = lookup.method_kind(db, value.path, value.idx)
    if kind == "static":
        return value
    if kind == "class" or bound:
        return BoundMethod(value.path, value.idx)
    return value


def metaclass_call(db: BinderState, cls: tuple[str, int]) -> Values:
    """`__call__` of a repository metaclass: calling the class runs it."""
    klass = _first_in_mro(db, cls, ("metaclass",), lambda k: db.scope(*k).metaclass is not None)
    if klass is None:
        return EMPTY
    scope = db.scope(*klass)
    assert scope.metaclass is not None
    meta = db.eval(scope.metaclass, Ctx(klass[0], scope.parent, None))
    out: set[Value] = set()
    for m in in_order(meta):
        if isinstance(m, Class):
            out |= class_attr(db, m.scope, "__call__", bound=True)
    return frozenset(out)


def instance_attr(db: BinderState, cls: tuple[str, int], name: str, ctx: Ctx | None) -> Values:
    values, getters = stored_and_getters(db, cls, name)
    out = set(values)
    for fn in getters:
        out |= _read_property(db, fn, ctx)
    return cap(out)


def stored_and_getters(db: BinderState, cls: tuple[str, int], name: str) -> tuple[Values, tuple]:
    """(values, property getters read) of `instance.name`, cached per class and name."""
    return db.caches.instance_attrs.ask((cls, name), _NO_ATTR, _stored_and_getters, db, cls, name)


_NO_ATTR: tuple[Values, tuple] = (EMPTY, ())


def _stored_and_getters(db: BinderState, cls: tuple[str, int], name: str) -> tuple[Values, tuple]:
    out: set[Value] = set()
    getters: list[Value] = []
    klass = None
    if _bound_in_some_class_body(db, name):
        klass = _first_in_mro(
            db, cls, ("names", name), lambda k: bool(lookup.names(db, *k).get(name))
        )
    if klass is not None:
        bindings = lookup.names(db, *klass)[name]
        values = lookup.reaching(db, klass[0], klass[1], name, bindings, None, ())
        for v in in_order(values):
            if isinstance(v, Function) and _is_property(db, v):
                getters.append(v)
            else:
                out.add(_bind_method(db, v, True))
    for klass in _storers_in_mro(db, cls, name):
        for value_expr, path, scope_idx, pos in inst_attrs(db, klass).get(name, ()):
            out |= db.eval(value_expr, Ctx(path, scope_idx, pos))
    return (cap(out), tuple(getters))


def _bound_in_some_class_body(db: BinderState, name: str) -> bool:
    """Whether any class body binds name: most names read through `self` are only
    stored, and looking for them down the MRO walked a chain once per class."""
    return db.caches.body_bound.ask(name, False, _bound_in_a_body, db, name)


def _bound_in_a_body(db: BinderState, name: str) -> bool:
    return any(lookup.names(db, *k).get(name) for k in name_definers(db).get(name, ()))


def _storers_in_mro(db: BinderState, cls: tuple[str, int], name: str) -> list[tuple[str, int]]:
    """The classes of cls's MRO, in order, whose methods store `self.name`: the walk
    ends once every class storing it is met (a chain whose classes each read a name
    of their own walked the whole MRO once per class)."""
    storers = tables(db).storers.get(name)
    if not storers:
        return []
    out: list[tuple[str, int]] = []
    met: set[tuple[str, int]] = set()  # a cycle of bases can repeat a class
    for klass in mro(db, cls):
        if klass in storers:
            out.append(klass)
            met.add(klass)
            if len(met) == len(storers):
                break
    return out


def _is_property(db: BinderState, value: ScopeValue) -> bool:
    scope = db.scope(value.path, value.idx)
    return scope.kind == "function" and lookup.method_kind(db, value.path, value.idx) == "property"


def property_accessors(
    db: BinderState, cls: tuple[str, int], name: str, which: str
) -> list[Function]:
    """The setter (which="setter") or deleter ("deleter") that `instance.name = v` or
    `del instance.name` runs on an instance of cls: that of the property cls's MRO finds
    for name; none for a property without one (read-only: the assignment raises), a
    cached_property (stored in the instance) or a plain attribute."""
    _values, getters = stored_and_getters(db, cls, name)
    out: list[Function] = []
    for fn in getters:
        scopes = db.summaries[fn.path].scopes
        getter = scopes[fn.idx]
        wanted = f"{getter.name}.{which}"
        found = [
            i
            for i in lookup.children(db, fn.path)[getter.parent]
            if i > fn.idx
            and scopes[i].name == getter.name
            and scopes[i].kind == "function"
            and any(decorator_name(d) == wanted for d in scopes[i].decorators)
        ]
        if found:
            out.append(Function(fn.path, found[-1]))
    return out


def _read_property(db: BinderState, fn: Function, ctx: Ctx | None) -> Values:
    if ctx is not None and ctx.implicit is not None:
        ctx.implicit.append(fn)
    return db.returns(fn.scope)


def inst_attrs(db: BinderState, cls: tuple[str, int]) -> dict[str, list]:
    """`self.name = value` in the class's methods, by name."""
    return db.caches.inst_attrs.ask(cls, {}, _inst_attrs_of, db, cls)


def _inst_attrs_of(db: BinderState, cls: tuple[str, int]) -> dict[str, list]:
    path, idx = cls
    table: dict[str, list] = defaultdict(list)
    scopes = db.summaries[path].scopes
    for i in lookup.children(db, path)[idx]:
        scope = scopes[i]
        if scope.kind != "function" or not scope.params:
            continue
        receiver = scope.params[0].name
        for method_scope in lookup.with_nested(db, path, i):
            for obj, attr, value, pos in scopes[method_scope].attr_assigns:
                if obj == ("n", receiver):
                    table[attr].append((value, path, method_scope, pos))
    return table


# Generic containers of the standard library a class can derive from (`list[Entry]`):
# their instances iterate over (and index to) the type argument's instances.
_CONTAINER_HOMES = frozenset(
    {"builtins", "typing", "typing_extensions", "collections", "collections.abc"}
)
_SEQUENCES = frozenset(
    {"list", "List", "tuple", "Tuple", "set", "Set", "frozenset", "FrozenSet", "deque", "Deque"}
    | {"Sequence", "MutableSequence", "AbstractSet", "MutableSet", "Collection", "Iterable"}
    | {"Iterator", "Reversible", "UserList"}
)
_MAPPINGS = frozenset(
    {"dict", "Dict", "Mapping", "MutableMapping", "OrderedDict", "defaultdict", "DefaultDict"}
    | {"UserDict", "ChainMap"}
)
_NO_ITEMS: tuple[Values, Values] = (EMPTY, EMPTY)


def container_items(db: BinderState, cls: tuple[str, int]) -> tuple[Values, Values]:
    """(what iterating, what indexing an instance of cls gives) when a class of its MRO
    derives from a generic container of the standard library: `class Traceback(list[Entry])`
    holds Entry instances, `class Registry(dict[str, Handler])` maps keys to Handlers."""
    return db.caches.container_items.ask(cls, _NO_ITEMS, _container_items_of, db, cls)


def _container_items_of(db: BinderState, cls: tuple[str, int]) -> tuple[Values, Values]:
    for klass in mro(db, cls):
        scope = db.scope(*klass)
        ctx = Ctx(klass[0], scope.parent, None)
        for base in scope.bases:
            annotation = as_annotation(base) if base[0] == "s" else None
            if annotation is None or not annotation[2]:
                continue
            kind = _container_kind(db.eval(base[1], ctx))
            args = annotation[2]
            if kind == "sequence":
                items = db.eval(("an", ("or", args)), ctx)
                return items, items
            if kind == "mapping" and len(args) == 2:
                return db.eval(("an", args[0]), ctx), db.eval(("an", args[1]), ctx)
    return _NO_ITEMS


def _container_kind(values: Values) -> str | None:
    for v in in_order(values):
        if isinstance(v, External):
            home, _, name = v.dotted.rpartition(".")
            if home in _CONTAINER_HOMES:
                if name in _SEQUENCES:
                    return "sequence"
                if name in _MAPPINGS:
                    return "mapping"
    return None


def super_attr(db: BinderState, cls: tuple[str, int], name: str, ctx: Ctx) -> Values:
    """`super().name` in cls: what the MRO after cls binds to name, and the name on the
    bases from outside that come before the class of the repository binding it, in MRO
    order (`super().dispatch()` under `class ArticleView(View)` is `View.dispatch`, for
    the library-aware index to find; see outside_attr). `super(cls, self).name` in a
    method of a subclass of cls reads the MRO of that subclass instead (_skipping)."""
    within = _super_within(db, cls, ctx)
    if within is not None:
        found = db.caches.super_below.ask(
            (within, cls, name), EMPTY, _skipping, db, within, cls, name
        )
        return _read_properties(db, found, ctx)
    out = set(class_attr(db, cls, name, bound=True, start=1))
    outside = outside_bases(db, cls, name, start=1)
    if outside:
        out.add(outside_name(outside, f".{name}"))
    if not out:  # a mixin's `super().name()`: what its subclasses' MROs put after it
        out = set(db.caches.super_below.ask((cls, name), EMPTY, _below, db, cls, name))
    return _read_properties(db, frozenset(out), ctx)


def _read_properties(db: BinderState, found: Values, ctx: Ctx) -> Values:
    """found with each property getter read: `super().prop` is the value it returns."""
    out: set[Value] = set()
    for v in in_order(found):
        if isinstance(v, Function) and _is_property(db, v):
            out |= _read_property(db, v, ctx)
        else:
            out.add(v)
    return frozenset(out)


def _super_within(db: BinderState, cls: tuple[str, int], ctx: Ctx) -> tuple[str, int] | None:
    """The class whose method reads `super(cls, self)`, where that is a subclass of cls
    (`super(Child, self)` in GrandChild), else None (`super()`, `super(Cls, self)` in
    Cls). The lookup starts after cls in the MRO of self's class, which derives from the
    enclosing class, not from cls alone: cls's own MRO and its other subclasses are not
    what runs (`class K(Cj, D)`: `super(Cj, self).f` in K is D.f, not Cj's base's)."""
    idx = lookup.enclosing_class(db, ctx.path, ctx.scope)
    if idx is None:
        return None
    within = (ctx.path, idx)
    if within == cls or cls not in mro(db, within):
        return None  # a TypeError at run time, or a super object made elsewhere
    return within


MIXIN_SUBCLASSES = 64  # a class with more subclasses than this is no mixin: not followed


def _skipping(db: BinderState, within: tuple[str, int], cls: tuple[str, int], name: str) -> Values:
    """`super(cls, self).name` in a method of within, a subclass of cls: what within's MRO
    binds to name after cls, or, where it binds nothing there, what the MROs of within's
    subclasses (at most MIXIN_SUBCLASSES, as _below) bind after cls."""
    own = _after(db, within, cls, name)
    if own:
        return cap(own)
    subs = _subclasses_up_to(db, within, MIXIN_SUBCLASSES)
    out: set[Value] = set()
    for sub in sorted(subs or ()):
        out |= _after(db, sub, cls, name)
    return cap(out)


def _below(db: BinderState, cls: tuple[str, int], name: str) -> Values:
    """`super().name` in a class whose own MRO has nothing named name after it, as in
    `class LoginMixin:` calling `super().dispatch()`, used as `class Page(LoginMixin,
    View)`: Python follows the MRO of the instance's class, so it runs what each subclass's
    MRO binds to name after cls (View.dispatch), or the name on the bases from outside
    that come first there."""
    subs = _subclasses_up_to(db, cls, MIXIN_SUBCLASSES)
    if not subs:
        return EMPTY
    if not name_definers(db).get(name) and not any(outside_line(db, sub) for sub in subs):
        return EMPTY  # neither a class of the repository nor one from outside can have it
    out: set[Value] = set()
    for sub in sorted(subs):
        out |= _after(db, sub, cls, name)
    return cap(out)


def _after(db: BinderState, owner: tuple[str, int], cls: tuple[str, int], name: str) -> set[Value]:
    """What owner's MRO binds to name after cls: the first class of the repository
    binding it there, or the name on the bases from outside that come before it."""
    line = outside_line(db, owner) or tuple(mro(db, owner))
    try:
        after = line.index(cls) + 1
    except ValueError:  # a cycle the MRO cut
        return set()
    out: set[Value] = set()
    outside: list[External] = []
    for node in line[after:]:
        if isinstance(node, External):
            outside.append(node)
        elif lookup.names(db, *node).get(name):
            out |= class_attr(db, node, name, bound=True)
            break
    if outside:
        out.add(outside_name(outside, f".{name}"))
    return out


def outside_attr(db: BinderState, cls: tuple[str, int], name: str) -> Values:
    """`instance.name` as the bases from outside may define it: the name on an instance of
    those that cls's MRO puts before every class of the repository whose body binds name,
    as super_attr (`self.setup()` under `class ArticleView(View)` is `View.setup`, for
    the library-aware index to find; under `class Mixed(Base, Local)` `self.save()` is
    `Base().save` as well as Local.save, which runs only where Base has none); nothing
    where every base is the repository's, or a class of the repository comes first."""
    outside = outside_bases(db, cls, name)
    return frozenset({outside_name(outside, f"().{name}")}) if outside else EMPTY


def outside_name(bases: Sequence[External], suffix: str) -> External:
    """The outside name of suffix (`().name`, `.name`) read from the bases from outside of
    a class, in MRO order: `django.views.View().setup` for one; for several, the group
    `[kit.First+kit.Second]().second`, whose MRO anchor_ls.index.externals merges (C3 of
    the bases' own) and looks the name up along, the first definition winning."""
    if len(bases) == 1:
        return External(f"{bases[0].dotted}{suffix}")
    return External(f"[{'+'.join(b.dotted for b in bases)}]{suffix}")


def outside_bases(
    db: BinderState, cls: tuple[str, int], name: str, start: int = 0
) -> list[External]:
    """The bases from outside the repository in cls's MRO (from its start-th class: 1 for
    `super()`; outside_line) that come before the first class of the repository whose
    body binds name, in order: those Python may find name in first."""
    line = outside_line(db, cls)
    if not line:
        return []
    definers = name_definers(db).get(name, ())
    out: list[External] = []
    for node in line[start:]:
        if isinstance(node, External):
            out.append(node)
        elif node in definers and lookup.names(db, *node).get(name):
            break
    return out


def stores(db: BinderState, cls: tuple[str, int], name: str) -> bool:
    """Whether a method of a class of cls's MRO stores `self.name`: the instance holds it,
    before any class's attribute."""
    return bool(_storers_in_mro(db, cls, name))


def outside_line(db: BinderState, cls: tuple[str, int]) -> tuple[tuple[str, int] | External, ...]:
    """cls's MRO with its bases from outside: C3 over the repository's classes with each
    base from outside taken as a class without bases (in `class C(Mixin, Base)`, `class
    Mixin(LibMixin)`: C, Mixin, LibMixin, Base); () where no class of the MRO has a base
    from outside (the common case). Their own bases are the environment's to know: the
    library-aware index merges their MROs in this order."""
    return db.caches.outside_lines.ask(cls, (), _outside_line_of, db, cls)


def _outside_line_of(
    db: BinderState, cls: tuple[str, int]
) -> tuple[tuple[str, int] | External, ...]:
    if _first_in_mro(db, cls, ("a base outside",), partial(_has_outside_base, db)) is None:
        return ()  # the common case, answered along the MROs the binder keeps (a step a class)

    def bases(node: tuple[str, int] | External) -> list[tuple[str, int] | External]:
        if isinstance(node, External):
            return []
        found = class_bases(db, node)
        return [
            v.scope if isinstance(v, Class) else v for v in found if isinstance(v, Class | External)
        ]

    return tuple(mro_of(cls, bases, {}, set()))  # type: ignore[arg-type]


def _has_outside_base(db: BinderState, cls: tuple[str, int]) -> bool:
    return any(isinstance(v, External) for v in class_bases(db, cls))


def tables(db: BinderState) -> ClassTables:
    if db._tables is None:
        db._tables = ClassTables()  # overrides seen while building it are left out
        _put_classes(db, sorted(db.summaries))
        db.caches.subclass_tree_sizes.clear()  # counted in the tables being built
    return db._tables


def refresh_classes(db: BinderState, paths: Iterable[str]) -> dict[str, set[str]]:
    """Put the class-table shares of files whose definitions changed, and of the
    files that may name them (their bases can resolve differently now).

    Returns the files of the ancestors of every class that changed, with the names
    that changed: `self.name` there may dispatch to other overrides now.
    """
    if db._tables is None:
        return {}
    paths = sorted(paths)
    before = {path: db._tables.shares.get(path) for path in paths}
    _put_classes(db, paths)
    db.caches.subclasses.clear()
    db.forget_values()
    out: dict[str, set[str]] = defaultdict(set)
    for path in paths:
        for names, bases, rebased in _class_changes(before[path], db._tables.shares.get(path)):
            lines = [mro(db, base) for base in sorted(bases) if _still_a_class(db, base)]
            if rebased:  # a mixin's `super().name` there may follow another MRO now
                names = names.union(*(lookup.names(db, *c) for line in lines for c in line))
            for line in lines:
                for ancestor in line:
                    out[ancestor[0]] |= names
    return out


def _still_a_class(db: BinderState, ref: tuple[str, int]) -> bool:
    """Whether a base named in a share from before the change is still a class there: its
    file may be gone or emptied (its ancestors then changed with that file's own share)."""
    summary = db.summaries.get(ref[0])
    scopes = summary.scopes if summary is not None else ()
    return ref[1] < len(scopes) and scopes[ref[1]].kind == "class"


def _put_classes(db: BinderState, paths: list[str]) -> None:
    """Shares of paths: first what the class bodies bind (read off the syntax), then
    the bases, whose evaluation can look names up in class bodies."""
    assert db._tables is not None
    shares: dict[str, Share] = {}
    for path in paths:
        if path not in db.summaries:
            db._tables.put(path, None)
            continue
        shares[path] = Share([], [], [], [])
        for i, scope in enumerate(db.summaries[path].scopes):
            if scope.kind == "class":
                for binding in scope.bindings:
                    shares[path].definers.append((binding.name, (path, i)))
                    if binding.value[0] == "n":
                        fn = _function_named(db, path, i, binding.value[1])
                        if fn is not None and lookup.enclosing_class(db, *fn) is None:
                            shares[path].hosts.append((fn, (path, i)))
                for attr, stores in inst_attrs(db, (path, i)).items():
                    shares[path].stores.append((attr, (path, i)))
                    if any(_may_be_callable(value[0]) for value in stores):
                        shares[path].definers.append((attr, (path, i)))
        db._tables.put(path, shares[path])
    for path, share in shares.items():
        for i, scope in enumerate(db.summaries[path].scopes):
            if scope.kind == "class" and scope.bases:
                for base in class_bases(db, (path, i)):
                    if isinstance(base, Class):
                        share.bases.append((base.scope, (path, i)))
        db._tables.put(path, share)


def subclasses(db: BinderState, cls: tuple[str, int]) -> frozenset[tuple[str, int]]:
    found = _subclasses_up_to(db, cls, sys.maxsize)
    assert found is not None  # no limit to pass
    return found


def _subclasses_up_to(
    db: BinderState, cls: tuple[str, int], limit: int
) -> frozenset[tuple[str, int]] | None:
    """subclasses(cls) when there are at most limit of them, else None, in steps
    bounded by limit."""
    memo = db.caches.subclasses
    cached = memo.get(cls)
    if cached is not None:
        return cached if len(cached) <= limit else None
    table = tables(db).subclasses
    out: set[tuple[str, int]] = set()
    todo = [cls]
    while todo:
        for sub in table.get(todo.pop(), ()):
            if sub not in out:
                if len(out) == limit:
                    return None
                out.add(sub)
                todo.append(sub)
    result = memo[cls] = frozenset(out)
    return result


def _definers_in_line(
    db: BinderState, cls: tuple[str, int], name: str, definers: set[tuple[str, int]]
) -> int:
    """How many of definers cls's (repeat-free) MRO holds. Counted once for each MRO
    it ends with, like _first_in_mro, and no further than the last definer: asked of
    each class of a chain, a step a class."""
    memo = db.caches.mro_found.answers
    key = ("in line", name)
    visited: list[tuple[Linearization, int]] = []  # (node, count before it)
    count = 0
    for node, own in mro(db, cls).parts():
        known = memo.get((node, key), memo)
        if known is not memo:
            count += known  # type: ignore[operator]
            break
        visited.append((node, count))
        count += sum(1 for c in own if c in definers)
        if count == len(definers):
            break
    for node, before in visited:
        memo[(node, key)] = count - before
    return count


def overrides(db: BinderState, cls: tuple[str, int], name: str) -> frozenset[Value]:
    """The methods named name that instances of cls's subclasses can run (what their
    MROs find first), capped like every value set: the attribute reading them caps
    their union with the rest, so capping them first changes nothing."""
    memo = db.caches.overrides
    key = (cls, name)
    cached = memo.get(key)
    if cached is not None:
        return cached
    if key in memo.working:
        return EMPTY
    definers = name_definers(db).get(name, set())
    if _overrides_down_tree(db, cls, name, definers):
        return memo[key]
    # The classes that override, outside the guard: a request met while finding them is
    # worked out in full (the guard cuts only what their methods' values lead back to).
    found = _overriding(db, cls, name, definers)
    result = memo[key] = guarded(memo.working, key, EMPTY, _override_set, db, found, name)
    return result


def _override_set(db: BinderState, found: set[tuple[str, int]], name: str) -> Values:
    out: set[Value] = set()
    for klass in sorted(found):
        out |= _override_values(db, klass, name)
    return cap(out)


def _override_values(db: BinderState, klass: tuple[str, int], name: str) -> set[Value]:
    """The methods klass's name is: its class attribute, or `self.name = self.method`
    in its methods."""
    out: set[Value] = set()
    stored: set[Value] = set()
    for value_expr, path, scope_idx, pos in inst_attrs(db, klass).get(name, ()):
        if _may_be_callable(value_expr):
            stored |= db.eval(value_expr, Ctx(path, scope_idx, pos))
    for v in class_attr(db, klass, name, bound=True) | stored:
        if isinstance(v, CALLABLE) and not _is_property(db, v):
            out.add(v)
    return out


def _overrides_down_tree(
    db: BinderState, cls: tuple[str, int], name: str, definers: set[tuple[str, int]]
) -> bool:
    """Put the overrides of cls and of the subclasses below it from those of its
    direct subclasses, when each subclass has one base and there are no more of them
    than definers (so _overriding walks every subclass's MRO): each direct subclass
    adds the definer its MRO finds first and what its own subclasses find, and capping
    their capped sets gives the cap of the whole. A chain whose every class overrides
    the method built the set of all the classes below each class. False (nothing
    put) when the shape is another, or a subclass's overrides are being worked out."""
    size = _single_base_subclasses(db, cls)
    if size is None or size > len(definers):
        return False
    table = tables(db).subclasses
    memo = db.caches.overrides
    order: list[tuple[str, int]] = []
    todo = [cls]
    while todo:
        node = todo.pop()
        if node != cls and (node, name) in memo.working:
            return False
        order.append(node)
        todo.extend(sorted(s for s in table.get(node, ()) if (s, name) not in memo))
    for node in reversed(order):  # subclasses before their bases
        key = (node, name)
        if key not in memo:
            subs = sorted(table.get(node, ()))
            memo[key] = guarded(
                memo.working, key, EMPTY, _overrides_of_subs, db, subs, name, definers
            )
    return True


def _overrides_of_subs(
    db: BinderState, subs: Iterable[tuple[str, int]], name: str, definers: set[tuple[str, int]]
) -> Values:
    """What the direct subclasses subs of a class override name with (see
    _overrides_down_tree)."""
    memo = db.caches.overrides
    out: set[Value] = set()
    for sub in subs:
        first = _first_in_mro(db, sub, ("definer", name), lambda k: k in definers)
        if first is not None:
            out |= _override_values(db, first, name)
        out |= memo.get((sub, name), EMPTY)
    return cap(out)


def _single_base_subclasses(db: BinderState, cls: tuple[str, int]) -> int | None:
    """How many subclasses cls has when each has one repository base and cls's MRO
    is no cycle (its subclasses are then a tree), else None. Remembered per class."""
    sizes = db.caches.subclass_tree_sizes.answers
    if cls in sizes:
        return sizes[cls]
    if mro(db, cls).cyclic:
        sizes[cls] = None
        return None
    table = tables(db).subclasses
    order: list[tuple[str, int]] = []
    seen: set[tuple[str, int]] = set()
    todo = [cls]
    while todo:
        node = todo.pop()
        if node in seen:  # only a cycle of bases reaches a class twice here
            sizes[cls] = None
            return None
        seen.add(node)
        order.append(node)
        todo.extend(s for s in table.get(node, ()) if s not in sizes)
    for node in reversed(order):  # subclasses before their bases
        total: int | None = 0
        for sub in table.get(node, ()):
            below = sizes[sub]
            if below is None or total is None or repository_bases(db, sub) != [node]:
                total = None
                break
            total += 1 + below
        sizes[node] = total
    return sizes[cls]


def _overriding(
    db: BinderState, cls: tuple[str, int], name: str, definers: set[tuple[str, int]]
) -> set[tuple[str, int]]:
    """The definers the MRO of some subclass of cls finds first: its own override, or a
    sibling base's. Walks the subclasses' MROs, or, when the definers are fewer, only
    the MROs of the subclasses that also derive from a definer outside cls's line
    (Django's SimpleTestCase has 2,121 subclasses and most names one definer)."""
    if not definers:
        return set()
    subs: frozenset[tuple[str, int]] | None = None
    line_count = 0 if mro(db, cls).cyclic else _definers_in_line(db, cls, name, definers)
    if line_count == len(definers):
        # Every definer is cls or an ancestor: no subclass count past len(definers) is
        # needed (more subclasses than definers find none; a chain's classes each
        # built the set of all the classes below them).
        subs = _subclasses_up_to(db, cls, len(definers))
        if subs is None:
            return set()
    if subs is None:
        subs = subclasses(db, cls)
    walk: Iterable[tuple[str, int]] = subs
    found: set[tuple[str, int]] = set()
    if len(definers) < len(subs):
        line = set(mro(db, cls))
        walk = set()
        for klass in definers:
            if klass in subs:
                found.add(klass)  # its own MRO starts with it
            elif klass not in line:
                walk |= subclasses(db, klass) & subs
    for sub in sorted(walk):
        for klass in mro(db, sub):
            if klass in definers:
                found.add(klass)
                break
    return found


def name_definers(db: BinderState) -> dict[str, set[tuple[str, int]]]:
    """Name -> the classes whose bodies bind it: most attributes read through `self`
    are bound in no class body, and need no walk along any MRO."""
    return tables(db).definers


def hosts(db: BinderState) -> dict[tuple[str, int], set[tuple[str, int]]]:
    """Functions defined outside a class that a class body binds by name, and the classes.

    Read from the definitions alone (no evaluation), so no value depends on when this
    table is first built.
    """
    return tables(db).hosts


def _function_named(
    db: BinderState, path: str, idx: int, name: str, depth: int = 0
) -> tuple[str, int] | None:
    """The def a name in scope idx (a class body or a module) stands for, through imports."""
    if depth > 8 or path not in db.summaries:
        return None
    bindings = lookup.names(db, path, idx).get(name)
    if not bindings:
        return _function_named(db, path, 0, name, depth + 1) if idx != 0 else None
    value = bindings[-1].value
    if value[0] == "f" and db.scope(path, value[1]).kind == "function":
        return (path, value[1])
    if value[0] == "if":
        target = db.modules.resolve(value[1], value[2], path)
        return _function_named(db, target, 0, value[3], depth + 1) if target else None
    return None


def property_names(db: BinderState) -> frozenset[str]:
    """Names of every property getter in the repository: the reads worth resolving."""
    if db._property_names is None:
        db._property_names = frozenset().union(
            *(property_names_in(db.summaries[path]) for path in db.summaries)
        )
    return db._property_names


def _may_be_callable(value: Expr) -> bool:
    """`self.x = self.method`, `= lambda ...`: a stored function, by syntax (`self.x = x`
    is mostly data, and in __init__ of most classes: each such name would make every
    `self.x` read walk the subclasses)."""
    return value[0] == "f" or (value[0] == "a" and value[1][0] == "n")


def _class_changes(
    before: Share | None, after: Share | None
) -> Iterable[tuple[set[str], set[tuple[str, int]], bool]]:
    """(names, bases, rebased) of each class whose body bindings or bases differ: the
    names added or removed (all of them when the bases changed), its bases, old and new,
    and whether they changed."""
    classes: dict[tuple[str, int], tuple[list[set], list[set]]] = defaultdict(
        lambda: ([set(), set()], [set(), set()])
    )
    for side, share in enumerate((before, after)):
        for name, cls in share.definers if share else ():
            classes[cls][0][side].add(name)
        for base, sub in share.bases if share else ():
            classes[sub][1][side].add(base)
    for (old_names, new_names), (old_bases, new_bases) in classes.values():
        if old_bases != new_bases:
            yield old_names | new_names, old_bases | new_bases, True
        elif old_names != new_names:
            yield old_names ^ new_names, new_bases, False
