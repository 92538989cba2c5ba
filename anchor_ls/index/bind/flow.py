"""Value flow: the argument values each file passes to the functions it calls, merged
into the argument facts of their parameters; which functions' facts changed, grew or
shrank; what their callers read of them (returns, yields, attributes set on `self`)
and so which scopes must be resolved again; and retraction of facts that flowed on
from ones gone.

Plain functions of the binder's state (anchor_ls.index.bind.db); they never read files.
The rounds that drive them are in anchor_ls.index.bind.rounds.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Container, Iterable

from anchor_ls.index.bind import classes, evaluate, lookup
from anchor_ls.index.bind.db import BinderState
from anchor_ls.index.bind.values import in_order
from anchor_ls.index.interface import names_scope
from anchor_ls.index.state import (
    EMPTY,
    Class,
    Ctx,
    Instance,
    SelfInstance,
    Value,
    Values,
    renumbered,
    value_paths,
)
from anchor_ls.syntax.summary import ATTR_READ, Expr
from anchor_ls.syntax.words import may_mention_of


def scope_contributions(db: BinderState, paths: Iterable[str]) -> dict[str, dict[int, dict]]:
    """The argument values of paths' scopes, for adopt() in another process."""
    return {path: db._scope_contrib[path] for path in paths}


def passed_by_scope(db: BinderState) -> dict[str, dict[int, dict]]:
    """The argument values each scope of each file passes (a cache keeps them)."""
    return db._scope_contrib


def restore_passed(db: BinderState, per_file: dict[str, dict[int, dict]]) -> None:
    """Take back what passed_by_scope() gave, as if every file had been resolved here."""
    adopt(db, per_file)
    for path, per_scope in per_file.items():
        set_contribution(db, path, merge_contributions(per_scope))


def passed(db: BinderState, path: str) -> dict:
    """The argument values path passes, as last set (set_contribution)."""
    return db._contrib.get(path, {})


def knows_scopes(db: BinderState, path: str) -> bool:
    """Whether path's argument values are known scope by scope (it was resolved here,
    or in a worker that sent them), so that some of its scopes can be resolved alone."""
    return path in db._scope_contrib


def adopt(db: BinderState, per_scope: dict[str, dict[int, dict]]) -> None:
    """Take the per-scope argument values of files another process resolved."""
    db._scope_contrib.update(per_scope)


def scopes_reading(
    db: BinderState, fn: tuple[str, int], stored: Collection[str] | None = None
) -> dict[str, set[int]]:
    """The scopes that can see fn's parameters, by file: fn and what it nests; for a
    method that stores on `self`, the scopes of its class, of its bases and of its
    subclasses too (an instance of a subclass is `self` in the methods its bases
    define): every one when stored is None, else those that read an attribute named
    in stored, or call a method that does, and so on, with what they nest (it sees
    their names)."""
    path, idx = fn
    out = {path: set(lookup.nested(db, path, idx))}
    if (stored is not None and not stored) or not _receiver_attrs(db, fn):
        return out
    cls = (path, db.summaries[path].scopes[idx].parent)
    if stored is None:
        hits = set(_class_tree(db, cls))
    else:
        by_name = _class_tree_reads(db, cls)
        hits, todo, seen = set(), list(stored), set(stored)
        while todo:
            for hit in by_name.get(todo.pop(), ()):
                if hit not in hits:
                    hits.add(hit)
                    # what `self.method()` now returns may differ
                    for name in _names_up_to_class(db, *hit):
                        if name not in seen:
                            seen.add(name)
                            todo.append(name)
    for hit_path, hit_idx in hits:
        out.setdefault(hit_path, set()).update(lookup.nested(db, hit_path, hit_idx))
    return out


def scopes_reading_attributes(
    db: BinderState,
    stored: dict[str, set[tuple[str, int]]],
    known: dict[str, set[int]] | None = None,
) -> dict[str, set[int]]:
    """The scopes of any file that read or call an attribute named in stored on an
    instance of a class storing it (name -> those classes), with what they nest, by
    file: an instance is read outside its class tree too (`except Skipped as e:
    e.msg`), and what a method stores on `self` reaches those readers as well.

    The receivers are evaluated in the argument facts of the coming round: taken by
    name alone (but on `self` or a module), the standard library's second round read
    3,346 scopes more than the 7,034 it read before, and a cold build took a fifth more
    time; evaluated, 71 more. known: scopes read again anyway, by file (not evaluated)."""
    out: dict[str, set[int]] = {}
    probes = [(name, name.encode()) for name in sorted(stored)]
    if not probes:
        return out
    for path in sorted(db.summaries):
        wanted = may_mention_of(db.summaries[path].words, probes)
        if not wanted:
            continue
        hits: set[int] = set()
        skip = known.get(path, set()) if known else set()
        for idx in range(len(db.summaries[path].scopes)):
            if idx in hits or idx in skip or wanted.isdisjoint(_reads_elsewhere(db, path, idx)):
                continue
            if _reads_stored(db, path, idx, {n: stored[n] for n in wanted}):
                hits.update(lookup.nested(db, path, idx))
        if hits:
            out[path] = hits
    return out


def _reads_stored(
    db: BinderState, path: str, idx: int, stored: dict[str, set[tuple[str, int]]]
) -> bool:
    """Whether scope idx reads a name of stored on an instance whose MRO holds a class
    that stores it (a default reading one counts, unevaluated)."""
    if _defaults_read(db, path, idx) & stored.keys():
        return True
    calls, attr_reads, _uses = db.bodies(path)[idx]
    read = [(r.expr, r.pos, r.blocks) for r in attr_reads if r.kind == ATTR_READ]
    read.extend((site.func, site.pos, site.blocks) for site in calls if site.func[0] == "a")
    receiver = _own_receiver(db, path, idx)
    for expr, pos, blocks in read:
        classes_storing = stored.get(expr[2])
        if not classes_storing or expr[1] == receiver:
            continue
        try:
            values = db.eval(expr[1], Ctx(path, idx, pos, blocks))
            for v in in_order(values):
                if isinstance(v, Instance | SelfInstance) and not classes_storing.isdisjoint(
                    classes.mro(db, v.scope)
                ):
                    return True
        except Exception:  # a binder bug (or a chain too deep) costs a wider round only
            return True
    return False


def _defaults_read(db: BinderState, path: str, idx: int) -> set[str]:
    names: set[str] = set()
    for param in db.summaries[path].scopes[idx].params:
        _attribute_names(param.default, names)
    return names


def _class_tree(db: BinderState, cls: tuple[str, int]) -> list[tuple[str, int]]:
    """The scopes of the classes an instance of cls can be `self` in: its bases,
    itself, its subclasses."""
    return [
        (cls_path, i)
        for cls_path, cls_idx in sorted({*classes.mro(db, cls), *classes.subclasses(db, cls)})
        for i in lookup.nested(db, cls_path, cls_idx)
    ]


def _class_tree_reads(db: BinderState, cls: tuple[str, int]) -> dict[str, list[tuple[str, int]]]:
    """Attribute name -> the scopes of _class_tree(cls) that read it."""
    return db.caches.tree_reads.ask(cls, {}, _class_tree_reads_of, db, cls)


def _class_tree_reads_of(db: BinderState, cls: tuple[str, int]) -> dict[str, list[tuple[str, int]]]:
    found: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for scope in _class_tree(db, cls):
        for name in _reads(db, *scope):
            found[name].append(scope)
    return found


def _reads(db: BinderState, path: str, idx: int) -> frozenset[str]:
    """The attribute names scope idx reads or calls (on any object), its parameters'
    defaults included."""
    return db.caches.read_attrs.ask((path, idx), frozenset(), _reads_of, db, path, idx)


def _reads_elsewhere(db: BinderState, path: str, idx: int) -> frozenset[str]:
    """The attribute names scope idx reads or calls on anything but its method's own
    receiver or a module: `self.name` in a class outside a class tree reads no instance
    of it (the class tree's readers are scopes_reading's). With those, 7,768 scopes of
    the standard library read a name stored after its build's first round; 3,346
    without."""
    key = (path, idx)
    return db.caches.read_elsewhere.ask(key, frozenset(), _reads_elsewhere_of, db, path, idx)


def _reads_elsewhere_of(db: BinderState, path: str, idx: int) -> frozenset[str]:
    receiver = _own_receiver(db, path, idx)
    calls, attr_reads, _uses = db.bodies(path)[idx]
    roots: dict[str, str | None] = {}
    read = [expr for expr, _span, _pos, _blocks, kind in attr_reads if kind == ATTR_READ]
    read.extend(site.func for site in calls if site.func[0] == "a")
    names = {
        expr[2]
        for expr in read
        if expr[1] != receiver and not _of_a_module(db, path, idx, expr[1], roots)
    }
    return frozenset(names | _defaults_read(db, path, idx))


def _of_a_module(
    db: BinderState, path: str, idx: int, expr: Expr, roots: dict[str, str | None]
) -> bool:
    """Whether expr is an imported module (its attributes are the module's names), or
    anything reached from a module outside the repository (outside too): not an instance
    of a repository class. The standard library read `os.path` in 1,304 scopes."""
    depth = 0
    while expr[0] == "a":
        expr, depth = expr[1], depth + 1
    if expr[0] != "n":
        return False
    if expr[1] not in roots:
        roots[expr[1]] = _imported(db, path, idx, expr[1])
    where = roots[expr[1]]
    return where == "outside" or (where == "module" and depth == 0)


def _imported(db: BinderState, path: str, idx: int, name: str) -> str | None:
    """ "module" when only `import` statements bind name where scope idx finds it, "outside"
    when they (or `from` imports) bind it to a module outside the repository, else None."""
    scopes = db.summaries[path].scopes
    at = idx
    while at >= 0:
        scope = scopes[at]
        if at == idx or scope.kind != "class":
            if any(param.name == name for param in scope.params):
                return None
            bindings = lookup.names(db, path, at).get(name)
            if bindings:
                kinds = {_import_kind(db, path, binding.value) for binding in bindings}
                return kinds.pop() if len(kinds) == 1 else None
        at = scope.parent
    return None


def _import_kind(db: BinderState, path: str, value: Expr) -> str | None:
    if value[0] in ("im", "ima"):
        inside = db.modules.resolve(value[1].split(".")[0], 0, path) is not None
        return "module" if inside else "outside"
    if value[0] == "if" and value[2] == 0 and value[1]:  # as evaluate.eval finds it
        return None if db.modules.resolve(value[1], 0, path) is not None else "outside"
    return None


def _own_receiver(db: BinderState, path: str, idx: int) -> tuple[str, str] | None:
    """`self` (or `cls`) as scope idx reads it: the first parameter of the method that is
    idx or holds it; None outside a method, or in a static one."""
    scopes = db.summaries[path].scopes
    while idx > 0:
        scope = scopes[idx]
        if scope.kind == "class":
            return None
        if scopes[scope.parent].kind == "class":
            if not scope.params or lookup.method_kind(db, path, idx) == "static":
                return None
            return ("n", scope.params[0].name)
        idx = scope.parent
    return None


def _reads_of(db: BinderState, path: str, idx: int) -> frozenset[str]:
    calls, attr_reads, _uses = db.bodies(path)[idx]
    names = {read[0][2] for read in attr_reads if read[4] == ATTR_READ}  # not the stores
    names.update(site.func[2] for site in calls if site.func[0] == "a")
    for param in db.summaries[path].scopes[idx].params:
        _attribute_names(param.default, names)
    return frozenset(names)


def _names_up_to_class(db: BinderState, path: str, idx: int) -> list[str]:
    """The names of scope idx and of the functions around it, up to a class."""
    scopes = db.summaries[path].scopes
    out = []
    while idx > 0 and scopes[idx].kind != "class":
        out.append(scopes[idx].name)
        idx = scopes[idx].parent
    return out


def _receiver_attrs(db: BinderState, method: tuple[str, int]) -> list[str]:
    """The names the method (or what it nests) sets on `self`: inst_attrs() reads only
    those. Empty for a function outside a class."""
    path, idx = method
    scopes = db.summaries[path].scopes
    parent = scopes[idx].parent
    if parent < 0 or scopes[parent].kind != "class" or not scopes[idx].params:
        return []
    receiver = ("n", scopes[idx].params[0].name)
    return sorted(
        {
            assign[1]
            for nested in lookup.with_nested(db, path, idx)
            for assign in scopes[nested].attr_assigns
            if assign[0] == receiver
        }
    )


def set_contribution(db: BinderState, path: str, contrib: dict) -> set[tuple[str, int]]:
    """Record the argument values one file passes; returns functions whose facts changed."""
    old = db._contrib.get(path, {})
    new = {fn: {k: set(v) for k, v in ps.items()} for fn, ps in contrib.items()}
    db._contrib[path] = new
    named = _named_paths(new)
    for gone in db._named.get(path, set()) - named:
        db._passers[gone].discard(path)
    for added in named - db._named.get(path, set()):
        db._passers[added].add(path)
    db._named[path] = named
    changed = {fn for fn in set(old) | set(new) if old.get(fn) != new.get(fn)}
    for fn in changed:
        sources = db._contrib_by_fn[fn]
        if fn in new:
            sources[path] = new[fn]
        else:
            sources.pop(path, None)
        merged: dict[str, set[Value]] = defaultdict(set)
        for params in sources.values():
            for name, values in params.items():
                merged[name] |= values
        if merged:
            db.param_facts[fn] = merged
        else:
            db.param_facts.pop(fn, None)
            db._contrib_by_fn.pop(fn, None)
        mine_before, mine_now = old.get(fn, {}), new.get(fn, {})
        if any(not vals <= mine_now.get(name, set()) for name, vals in mine_before.items()):
            db.shrunk.add(fn)  # this file stopped passing something: it may live on in a cycle
    return changed


def results_changed(
    db: BinderState,
    fns: set[tuple[str, int]],
    before: dict[tuple[str, int], dict[str, set[Value]]],
    evaluated: Callable[[], dict | None] | None = None,
) -> tuple[set[tuple[str, int]], dict[tuple[str, int], set[str]], set[tuple[str, str]]]:
    """Of fns (whose argument facts changed since `before`, a copy of param_facts),
    those whose callers read something new of them (what they return or yield, or
    the attributes a method sets on `self`: a constructor keeps its arguments), and
    of those the methods whose attributes changed, with the names of those; and the
    module names (path, name) that hold something else now (`REG[name] = c()` in one).

    Both sides are results(fns), from empty caches in one order, so a cycle cut short
    cuts both alike; evaluated gives the side before (a worker that still had those
    facts evaluated it), else it is evaluated here."""
    after = results(db, fns)
    prior = evaluated() if evaluated is not None else None
    if prior is None:
        now = {fn: db.param_facts.get(fn) for fn in fns}
        _put_facts(db.param_facts, {fn: before.get(fn) for fn in fns})
        try:
            prior = results(db, fns)
        finally:
            _put_facts(db.param_facts, now)
    db.forget_values()
    changed = {fn for fn in after if prior[fn] != after[fn]}
    storing: dict[tuple[str, int], set[str]] = {}
    grown: set[tuple[str, str]] = set()
    for fn in changed:
        old, new = prior[fn][2], after[fn][2]
        if old != new:
            names = _receiver_attrs(db, fn)
            if isinstance(old, tuple) and isinstance(new, tuple):  # else it failed
                names = [n for n, a, b in zip(names, old, new, strict=True) if a != b]
            storing[fn] = set(names)
        old, new = prior[fn][3], after[fn][3]
        if old != new:
            held = dict(old) if isinstance(old, tuple) else {}
            now = new if isinstance(new, tuple) else ((n, None) for n in held)
            grown.update((fn[0], name) for name, values in now if held.get(name) != values)
    return changed, storing, grown


def results(db: BinderState, fns: Iterable[tuple[str, int]]) -> dict[tuple[str, int], tuple]:
    """What a caller can read of each of fns (see results_changed), in one order."""
    db.forget_values()
    out: dict[tuple[str, int], tuple] = {}
    for fn in sorted(fn for fn in fns if fn[0] in db.summaries):
        cls = (fn[0], db.scope(*fn).parent)
        try:
            attrs = tuple(
                _with_bases(db, classes.stored_and_getters(db, cls, n)[0])
                for n in _receiver_attrs(db, fn)
            )
            grown = tuple(
                (name, _with_bases(db, lookup.module_attr(db, fn[0], name)))
                for name in lookup.module_names_grown(db, *fn)
            )
            out[fn] = (
                _with_bases(db, evaluate.returns(db, fn)),
                _with_bases(db, evaluate.yields(db, fn)),
                attrs,
                grown,
            )
        except Exception:  # a binder bug (or a chain too deep) costs a wider round only
            out[fn] = (EMPTY, EMPTY, object(), object())  # unequal to the other side's
    return out


def _with_bases(db: BinderState, values: Values) -> tuple[Values, frozenset]:
    """values, and the bases of each class among them (or of its instances): a class
    defined in a function can take its bases from the function's parameters."""
    return values, frozenset(
        (v, tuple(classes.mro(db, v.scope)))
        for v in in_order(values)
        if isinstance(v, Class | Instance | SelfInstance)
    )


def retract(db: BinderState, fns: set[tuple[str, int]]) -> set[str]:
    """Delete and re-derive: drop every argument fact that flowed on through the
    parameters of fns (so a cycle cannot keep a fact alive after its origin went);
    returns the files to resolve again."""
    todo = list(fns)
    seen = set(fns)
    files: set[str] = set()
    while todo:
        fn = todo.pop()
        if fn[0] not in db.summaries:
            continue
        for path, readers in scopes_reading(db, fn).items():
            per_scope = db._scope_contrib.get(path, {})
            for idx in readers:
                contrib = per_scope.get(idx)
                if not contrib:
                    continue
                for target in contrib:
                    if target not in seen:
                        seen.add(target)
                        todo.append(target)
                per_scope[idx] = {}
                files.add(path)
    # A retraction takes values away, never adds one: an edit's file passes its
    # contribution as held (rounds._as_held), its scopes' shares as found, and merged
    # again they put back what it found past the build's last round (on pytest, the
    # MockConfig that structures.py passes get_empty_parameterset_mark).
    for path in sorted(files):
        remaining = merge_contributions(db._scope_contrib[path])
        set_contribution(db, path, _within(remaining, db._contrib.get(path, {})))
    db.shrunk.clear()
    db.forget_values()
    return files


def _within(contrib: dict, held: dict) -> dict:
    """contrib with only the values held has too (function -> parameter -> values)."""
    out: dict = {}
    for fn, params in contrib.items():
        kept = held.get(fn, {})
        both = {name: values & kept.get(name, EMPTY) for name, values in params.items()}
        both = {name: values for name, values in both.items() if values}
        if both:
            out[fn] = both
    return out


def renumber(
    db: BinderState,
    path: str,
    numbers: dict[int, int],
    passers: Iterable[str],
    gone: Container[int] = (),
    *,
    keep_own: bool = True,
) -> None:
    """path's scopes moved (old index -> new; gone: those removed): rename every argument
    fact naming them.

    passers: passers(path) before the edit dropped any facts naming path's scopes gone
    (the per-scope shares of a file that passed them may still name them). Only those
    files' facts are rewritten: rewriting every file's took 1-2 s of an edit on Django.

    path's own per-scope shares follow their scopes (a gone scope's is dropped), so that
    an edit that only added or removed definitions resolves those alone: resolved whole
    in the argument facts grown since the build's last round, the other scopes found
    what a build of the same text does not (a def added above the others in
    django/db/models/fields/__init__.py: 30 references more, 6 fewer). Not keep_own:
    path is resolved whole again, from scratch (what arrived after the build's last
    round then counts as a change, and the rounds or a fresh resolution settle it as a
    build does)."""
    if db._tables is not None:
        db._tables.renumber(path, numbers)
    own = db._scope_contrib.pop(path, None)
    if own is not None and keep_own:
        db._scope_contrib[path] = {
            numbers[idx]: moved_contribution(contrib, path, numbers, gone)
            for idx, contrib in own.items()
            if idx in numbers
        }
    fns: set[tuple[str, int]] = set()
    for src in sorted(passers):
        per_scope = db._scope_contrib.get(src)
        if per_scope is not None and src != path:
            db._scope_contrib[src] = {
                idx: _renamed(c, path, numbers) for idx, c in per_scope.items()
            }
        old = db._contrib.get(src)
        if old is None:
            continue
        new = _renamed(old, path, numbers)
        db._contrib[src] = new
        gone = [fn for fn, params in old.items() if new.get(fn) is not params]
        came = [fn for fn, params in new.items() if old.get(fn) is not params]
        for fn in gone:
            db._contrib_by_fn[fn].pop(src, None)
        for fn in came:
            db._contrib_by_fn[fn][src] = new[fn]
        fns.update(gone, came)
    for fn in fns:  # merged again from their sources, as set_contribution does
        merged: dict[str, set[Value]] = defaultdict(set)
        for params in db._contrib_by_fn[fn].values():
            for name, values in params.items():
                merged[name] |= values
        if merged:
            db.param_facts[fn] = merged
        else:
            db.param_facts.pop(fn, None)
            db._contrib_by_fn.pop(fn, None)
    db.clear_caches()


def moved_contribution(
    contrib: dict, path: str, numbers: dict[int, int], gone: Container[int]
) -> dict:
    """Argument values (function -> parameter -> values) passed before path's scopes moved,
    as they name them now: those to a scope gone, and the values naming one, are dropped
    (as the index drops them from every file that passed them)."""
    kept: dict = {}
    for fn, params in contrib.items():
        if fn[0] == path and fn[1] in gone:
            continue
        kept[fn] = {
            name: {v for v in values if not names_scope(v, path, gone)}
            for name, values in params.items()
        }
    return renumbered(kept, path, numbers)  # type: ignore[return-value]


def _renamed(contrib: dict, path: str, numbers: dict[int, int]) -> dict:
    """Argument facts (function -> parameter -> values) with path's scopes renumbered;
    the entries that name none of them are kept as they are."""
    out = {}
    for fn, params in contrib.items():
        values = (v for vs in params.values() for v in vs)
        if fn[0] == path or any(path in value_paths(v) for v in values):
            out[renumbered(fn, path, numbers)] = renumbered(params, path, numbers)
        else:
            out[fn] = params
    return out


def passers(db: BinderState, path: str) -> list[str]:
    """The files whose argument facts name a scope of path (a function receiving the
    arguments, or a value passed), sorted."""
    return sorted(db._passers.get(path, ()))


def forget_contribution(db: BinderState, path: str) -> set[tuple[str, int]]:
    return set_contribution(db, path, {})


def _put_facts(
    param_facts: dict[tuple[str, int], dict[str, set[Value]]],
    facts: dict[tuple[str, int], dict[str, set[Value]] | None],
) -> None:
    for fn, params in facts.items():
        if params is None:
            param_facts.pop(fn, None)
        else:
            param_facts[fn] = params


def merge_contributions(per_scope: dict[int, dict]) -> dict:
    """One file's argument values by function and parameter, from its scopes' shares."""
    merged: dict = {}
    for contrib in per_scope.values():
        for fn, params in contrib.items():
            into = merged.setdefault(fn, {})
            for name, values in params.items():
                into[name] = into.get(name, EMPTY) | values
    return merged


def _named_paths(contrib: dict) -> set[str]:
    """The files whose scopes argument facts name: (path, index) keys and values such as
    Function(path, index), at any depth."""
    out: set[str] = set()
    for fn, params in contrib.items():
        out.add(fn[0])
        for values in params.values():
            for value in values:
                out |= value_paths(value)
    return out


def plain(contrib: dict) -> dict:
    """Argument values without the defaultdicts: their factories cannot be pickled, and
    another process may resolve a share of the files."""
    return {fn: dict(params) for fn, params in contrib.items()}


def _attribute_names(expr: object, out: set[str]) -> None:
    """The names of the attributes read in expr."""
    if isinstance(expr, tuple) and expr:
        if expr[0] == "a":
            out.add(expr[2])
        for part in expr[1:] if isinstance(expr[0], str) else expr:
            _attribute_names(part, out)
