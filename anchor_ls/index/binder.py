"""The fast binder: resolves call sites, bases and imports to repository entities.

An abstract interpreter over file summaries. Values are small tuples:
  ("m", relpath)        a module ('folder/' for a namespace package)
  ("f", relpath, idx)   a function (scope idx of the file), unbound
  ("b", relpath, idx)   a method bound to its receiver (first parameter taken)
  ("c", relpath, idx)   a class
  ("i", relpath, idx)   an instance of a class
  ("I", relpath, idx)   `self`: an instance of the class or of a subclass
  ("S", relpath, idx)   `super()` inside class idx
  ("g", relpath, idx)   the generator a generator function returns
  ("L", frozenset)      a container of values
  ("D", tuple)          a dict with constant keys: ((key, frozenset), ...)
  ("x", dotted)         something outside the repository (stdlib, third party)
Names are looked up flow-sensitively within a scope (the latest binding that
dominates the use, plus the conditional ones after it) and by final state from
nested scopes. Arguments flow into parameters across calls, iterated to a
fixpoint, so callbacks and decorated functions resolve without guessing.
"""

from __future__ import annotations

import builtins
import functools
import sys
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Sequence

from anchor_ls.index import dense
from anchor_ls.index.classtables import ClassTables, Share
from anchor_ls.index.decorators import decorator_kind, decorator_name
from anchor_ls.index.modules import ModuleTable
from anchor_ls.index.mro import Linearization, mro_of
from anchor_ls.index.state import EMPTY, Ctx, FileFacts, Value, Values, renumbered
from anchor_ls.index.testcode import is_test_path
from anchor_ls.syntax.summary import (
    UNKNOWN,
    Binding,
    Body,
    CallSite,
    Expr,
    FileSummary,
    Param,
    Scope,
    pack_bodies,
    scope_bodies,
)

_BUILTINS = frozenset(dir(builtins))
_CONTAINER_BUILTINS = frozenset({"list", "tuple", "set", "frozenset", "sorted", "reversed"})
_DICT_VALUE_METHODS = frozenset({"get", "pop", "setdefault", "values"})
# The methods a `for`/`with` calls on what it iterates or enters (summary site kinds).
_PROTOCOLS = {
    "iter": ("__iter__", "__next__"),
    "aiter": ("__aiter__", "__anext__"),
    "with": ("__enter__", "__exit__"),
    "awith": ("__aenter__", "__aexit__"),
}
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
_MAX_FLOWED = 6
_MAX_CALLBACKS = 24
_MAX_VALUES = 64


class Binder:
    def __init__(self) -> None:
        sys.setrecursionlimit(max(sys.getrecursionlimit(), 6000))
        self.summaries: dict[str, FileSummary] = {}
        self.modules = ModuleTable(())
        self.param_facts: dict[tuple[str, int], dict[str, set[Value]]] = defaultdict(
            lambda: defaultdict(set)
        )
        self._contrib: dict[str, dict[tuple[str, int], dict[str, set[Value]]]] = {}
        self._contrib_by_fn: dict[tuple[str, int], dict[str, dict]] = defaultdict(dict)
        self._scope_contrib: dict[str, dict[int, dict]] = {}
        # file -> the files whose argument facts name its functions or values; and back
        self._passers: dict[str, set[str]] = defaultdict(set)
        self._named: dict[str, set[str]] = {}
        self.shrunk: set[tuple[str, int]] = set()  # functions whose argument facts lost values
        # The file edited last keeps its bodies unpacked: the next keystroke needs them again.
        self._unpacked: tuple[FileSummary, Sequence[Body]] | None = None
        self._last_read: tuple[FileSummary, Sequence[Body]] | None = None
        self.clear_caches()
        self._forget_definitions()

    # ----- program ------------------------------------------------------
    def set_files(
        self,
        summaries: dict[str, FileSummary],
        root_package: str = "",
        roots: Iterable[str] = (),
    ) -> None:
        """roots: the source roots beyond the repository's own (anchor_ls/index/roots.py)."""
        self._pack_unpacked()
        self.summaries = dict(summaries)
        self.modules = ModuleTable(self.summaries, root_package, roots)
        self.clear_caches()
        self._forget_definitions()

    def put_file(
        self,
        summary: FileSummary,
        *,
        same_interface: bool = False,
        bodies: Sequence[Body] | None = None,
    ) -> None:
        """Replace one file. When what other files can see of it is unchanged (an edit
        inside a body), only the conclusions drawn from this file are forgotten.

        bodies: those of an unpacked summary, which stays so until another file is put."""
        path = summary.path
        self._pack_unpacked(replaced=path)
        if bodies is not None and summary.bodies is None:
            self._unpacked = (summary, bodies)
        else:
            pack_bodies(summary)
        self.summaries[path] = summary
        self.modules.add(path)
        self._forget_definitions_of(summary, same_interface)
        # Read off this file's summary alone (other files' entries stay: after a warm
        # start they fill tens of thousands of entries, 18 ms to drop for Django).
        self._names.pop(path, None)
        self._mutations.pop(path, None)
        self._handed.pop(path, None)
        for cache in (self._inst_attrs, self._returned, self._read_attrs):
            for key in [k for k in cache if k[0] == path]:
                del cache[key]
        self._tree_reads = {}
        self._mro_found = {}  # found by what class bodies bind
        self._body_bound = {}
        if not same_interface:
            self._subclass_cache = {}
            self.forget_values()
            return
        for cache in (self._outer_cache, self._lookup_cache, self._module_attr_cache):
            for key in [k for k in cache if k[0] == path]:
                del cache[key]
        for cache in (self._returns, self._yields, self._mro):
            for key in [k for k in cache if k[0] == path]:
                del cache[key]
        for cache in (self._instance_attr_cache, self._class_attr_cache):
            for key in [k for k in cache if k[0][0] == path]:
                del cache[key]

    def bodies(self, path: str) -> Sequence[Body]:
        """Each scope's (calls, attr_reads, uses) in path. The last ones unpacked are kept:
        an edit reads those of its file two or three times (3 ms each for a 100 KB file)."""
        summary = self.summaries[path]
        for kept in (self._unpacked, self._last_read):
            if kept is not None and kept[0] is summary:
                return kept[1]
        bodies = scope_bodies(summary)
        self._last_read = (summary, bodies)
        return bodies

    def _pack_unpacked(self, replaced: str | None = None) -> None:
        """Pack the summary left unpacked, unless it is the one of path replaced: dropped,
        it stays as it is for whoever still reads it."""
        if self._unpacked is not None:
            if self._unpacked[0].path != replaced:
                pack_bodies(self._unpacked[0])
            self._unpacked = None

    def drop_file(self, relpath: str) -> None:
        self._pack_unpacked(replaced=relpath)
        self.summaries.pop(relpath, None)
        self._scope_contrib.pop(relpath, None)
        self.modules.discard(relpath)
        self.clear_caches()
        self._constants.pop(relpath, None)
        self._setting_defs = None
        if self._tables is not None:
            self._tables.put(relpath, None)

    def clear_caches(self) -> None:
        # Read off the summaries alone: only a changed file changes them.
        self._names: dict[str, list] = {}
        self._inst_attrs: dict[tuple[str, int], dict[str, list]] = {}
        self._children: dict[str, tuple[list[Scope], list[list[int]]]] = {}
        self._mutations: dict[str, dict[tuple[int, str], list]] = {}
        self._handed: dict[str, frozenset[str]] = {}
        self._subclass_cache: dict[tuple[str, int], frozenset] = {}
        self._returned: dict[tuple[str, int], tuple[Param, tuple[Expr, ...]] | None] = {}
        # Read off bodies, for the scopes of whole class trees: kept from round to round
        # (each round asks for most of them again), dropped with the build's other caches.
        self._read_attrs: dict[tuple[str, int], frozenset[str]] = {}
        self._tree_reads: dict[tuple[str, int], dict[str, list[tuple[str, int]]]] = {}
        self.forget_values()

    def forget_values(self) -> None:
        """Drop what was evaluated: new argument facts can change any of it."""
        self._outer_cache: dict[tuple[str, int, str], Values] = {}
        self._yields: dict[tuple[str, int], Values] = {}
        self._binding_values: dict[int, tuple[Binding, Values]] = {}
        self._lookup_cache: dict[tuple, Values] = {}
        self._returns: dict[tuple[str, int], Values] = {}
        self._mro: dict[tuple[str, int], Linearization[tuple[str, int]]] = {}
        self._mro_found: dict[tuple[Linearization, tuple], object] = {}
        self._body_bound: dict[str, bool] = {}
        self._module_attr_cache: dict[tuple[str, str], Values] = {}
        self._in_progress: set = set()
        self._instance_attr_cache: dict[tuple, tuple[Values, tuple]] = {}
        self._class_attr_cache: dict[tuple, Values] = {}
        self._override_cache: dict[tuple, frozenset] = {}
        self._subclass_tree_sizes: dict[tuple[str, int], int | None] = {}
        self._decorated: dict[tuple[str, int, int], tuple[Values, Values | None]] = {}

    def _forget_definitions_of(self, summary: FileSummary, same_interface: bool) -> None:
        """One file changed: update the tables read off every summary (rebuilding them
        costs a scan of the whole repository, too slow for every keystroke)."""
        path = summary.path
        self._constants.pop(path, None)
        if is_settings_module(path):
            self._setting_defs = None
        # Other classes, bases or class bodies now: refresh_classes() puts the file's
        # share of the class tables. The name filters below may keep a superset (right,
        # only slower).
        if not same_interface and self._property_names is not None:
            self._property_names |= _property_names(self, path)
        if self._value_names is not None:
            added = _value_names([summary], self._value_names) - self._value_names
            if added:
                self._value_names = self._value_names | added

    def warm(self) -> None:
        """Build the repository-wide tables now, so that the first edit does not wait."""
        self.property_names()
        self.value_names()
        self.tables()

    def _forget_definitions(self) -> None:
        """Tables read off every summary; a body edit can define nested functions too."""
        self._value_names: frozenset[str] | None = None
        self._constants: dict[str, frozenset[str]] = {}
        self._setting_defs: dict[str, list[str]] | None = None
        # Read off class bases and bodies, and decorators: argument facts cannot change them.
        self._tables: ClassTables | None = None
        self._property_names: frozenset[str] | None = None

    # ----- scopes and names ---------------------------------------------
    def scope(self, path: str, idx: int) -> Scope:
        return self.summaries[path].scopes[idx]

    def names(self, path: str, idx: int) -> dict[str, list[Binding]]:
        tables = self._names.get(path)
        if tables is None:
            tables = self._names[path] = [None] * len(self.summaries[path].scopes)
        table = tables[idx]
        if table is None:
            table = defaultdict(list)
            scope = self.summaries[path].scopes[idx]
            for i, param in enumerate(scope.params):
                table[param.name].append(Binding(param.name, ("P", idx, i), -1, ()))
            scopes = self.summaries[path].scopes
            for binding in scope.bindings:
                value = binding.value
                if value[0] == "f" and _is_accessor_variant(scopes[value[1]], binding.name):
                    continue  # `@x.setter def x`: reading x still gives the getter
                table[binding.name].append(binding)
            for bindings in table.values():
                bindings.sort(key=lambda b: b.pos)
            tables[idx] = table
        return table

    def lookup(self, ctx: Ctx, name: str) -> Values:
        """The values of a name used at ctx, following Python's scoping rules."""
        path, idx = ctx.path, ctx.scope
        scope = self.summaries[path].scopes[idx]
        if name in scope.global_names and idx != 0:
            return self._outer(path, 0, name)
        bindings = self.names(path, idx).get(name)
        if bindings:
            return self._reaching(path, idx, name, bindings, ctx.pos, ctx.blocks)
        if scope.star_imports:
            found = self._star_lookup(path, scope, name)
            if found:
                return found
        return self._outer(path, scope.parent, name)

    def _outer(self, path: str, idx: int, name: str) -> Values:
        """A name seen from a nested scope: the final state of the enclosing ones."""
        key = (path, idx, name)
        cached = self._outer_cache.get(key)
        if cached is not None:
            return cached
        scopes = self.summaries[path].scopes
        result: Values | None = None
        while idx >= 0:
            scope = scopes[idx]
            if scope.kind == "class":
                idx = scope.parent
                continue
            bindings = self.names(path, idx).get(name)
            if bindings:
                result = self._reaching(path, idx, name, bindings, None, ())
                break
            if scope.star_imports:
                found = self._star_lookup(path, scope, name)
                if found:
                    result = found
                    break
            idx = scope.parent
        if result is None:
            result = frozenset({("x", f"builtins.{name}")}) if name in _BUILTINS else EMPTY
        self._outer_cache[key] = result
        return result

    def _reaching(
        self,
        path: str,
        idx: int,
        name: str,
        bindings: list[Binding],
        pos: int | None,
        blocks: tuple[int, ...],
    ) -> Values:
        if len(bindings) == 1:  # most names: the one binding reaches every use
            values = self.binding_values(path, idx, bindings[0])
            return _cap(self._mutated(path, idx, name, values, pos, bindings[0].pos))
        key = (path, idx, name, pos, blocks)
        cached = self._lookup_cache.get(key)
        if cached is not None:
            return cached
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
            result |= self.binding_values(path, idx, binding)
        after = min(b.pos for b in chosen)
        values = _cap(self._mutated(path, idx, name, frozenset(result), pos, after))
        self._lookup_cache[key] = values
        return values

    def binding_values(self, path: str, idx: int, binding: Binding) -> Values:
        key = id(binding)
        cached = self._binding_values.get(key)
        if cached is not None and cached[0] is binding:
            return cached[1]
        if key in self._in_progress:
            return EMPTY
        self._in_progress.add(key)
        try:
            value = binding.value
            if value[0] == "P":
                values = self.param_values(path, value[1], value[2])
            else:
                # evaluated just before the binding takes effect: `a, b = b, a` reads the old a, b
                values = self.eval(value, Ctx(path, idx, binding.pos - 1, binding.blocks))
        finally:
            self._in_progress.discard(key)
        self._binding_values[key] = (binding, values)
        return values

    def _mutated(
        self, path: str, idx: int, name: str, values: Values, pos: int | None, after: int
    ) -> Values:
        """values of x (bound at `after` in scope idx) with what `x[k] = v`, `x.append(v)`,
        `x.update(...)` anywhere in the file add to it, read at pos (None: final state).

        A plain `x["k"] = v` in x's own scope between its binding and the read replaces the
        value of "k" (the last one wins); every other mutation only adds."""
        found = self._mutation_table(path).get((idx, name))
        if not found:
            return values
        key = ("mut", path, idx, name)
        if key in self._in_progress:
            return values
        last: dict[str, int] = {}  # replaced key -> where it was last set
        for added, scope_idx, at, replaces in found:
            if replaces and scope_idx == idx and at > after and (pos is None or at < pos):
                for k in _set_keys(added):
                    last[k] = max(last.get(k, at), at)
        self._in_progress.add(key)
        out = set(_without_keys(values, last)) if last else set(values)
        try:
            for added, scope_idx, at, replaces in found:
                got = self.eval(added, Ctx(path, scope_idx, at))
                if last:
                    stale = {k: p for k, p in last.items() if p != at} if replaces else last
                    got = _without_keys(got, stale)
                out |= got
        finally:
            self._in_progress.discard(key)
        return frozenset(out)

    def _collect_mutations(self, path: str) -> dict[tuple[int, str], list]:
        scopes = self.summaries[path].scopes
        table: dict[tuple[int, str], list] = defaultdict(list)
        for s_idx, scope in enumerate(scopes):
            for name, added, pos, replaces in scope.mutations:
                owner = self._binding_scope(path, s_idx, name)
                if owner is not None:
                    table[(owner, name)].append((added, s_idx, pos, replaces))
        return table

    def _binding_scope(self, path: str, idx: int, name: str) -> int | None:
        scopes = self.summaries[path].scopes
        first = True
        while idx >= 0:
            scope = scopes[idx]
            if scope.kind == "class" and not first:
                idx = scope.parent
                continue
            if name in scope.global_names:
                return 0
            if name in self.names(path, idx):
                return idx
            idx, first = scope.parent, False
        return None

    # ----- index-sensitive reads of literal lists -------------------------
    def _literal_item(self, expr: Expr, ctx: Ctx) -> tuple[Expr, Ctx] | None:
        """`ls[1]` of a list display for certain: its second item, where it was written."""
        index = self._constant_int(expr[2], ctx)
        if index is None:
            return None
        found = self._literal(expr[1], ctx, 0)
        if found is None or not -len(found[0]) <= index < len(found[0]):
            return None
        return found[0][index], found[1]

    def _constant_int(self, expr: Expr, ctx: Ctx) -> int | None:
        """An int literal, or a name bound once to one (here or in the module it is
        imported from)."""
        for _hop in range(4):
            if expr[0] == "k":
                return expr[1] if isinstance(expr[1], int) else None
            if expr[0] == "n":
                sole = self._sole_binding(ctx, expr[1])
                if sole is None:
                    return None
                expr = sole[1].value
            elif expr[0] == "if":
                module = self.modules.resolve(expr[1], expr[2], ctx.path)
                if module is None or module not in self.summaries:
                    return None
                ctx, expr = Ctx(module, 0, 0), ("n", expr[3])
            else:
                return None
        return None

    def _literal(self, expr: Expr, ctx: Ctx, depth: int) -> tuple[Sequence[Expr], Ctx] | None:
        """The items of the list or tuple display expr stands for, for certain: a display
        without `*`, a constant index or slice of one, or a name bound once to one that the
        file never grows, calls a method of, or hands on (see _handed_on)."""
        tag = expr[0]
        if tag == "l":
            return (expr[1], ctx) if all(item[0] != "*" for item in expr[1]) else None
        if depth > 8:
            return None
        if tag == "s":
            outer = self._literal(expr[1], ctx, depth + 1)
            key = expr[2]
            if outer is None:
                return None
            if key[0] == "sl" and len(key) == 3:
                return outer[0][key[1] : key[2]], outer[1]
            items, index = outer[0], self._constant_int(key, ctx)
            if index is not None and -len(items) <= index < len(items):
                return self._literal(items[index], outer[1], depth + 1)
            return None
        if tag != "n":
            return None
        path, name = ctx.path, expr[1]
        sole = self._sole_binding(ctx, name)
        if sole is None or sole[1].value[0] not in ("l", "s", "n"):
            return None
        owner, binding = sole
        if (owner, name) in self._mutation_table(path) or name in self._handed_on(path):
            return None
        at = Ctx(path, owner, binding.pos - 1, binding.blocks)
        return self._literal(binding.value, at, depth + 1)

    def _sole_binding(self, ctx: Ctx, name: str) -> tuple[int, Binding] | None:
        """(scope, binding) when name, seen from ctx, is bound exactly once."""
        owner = self._binding_scope(ctx.path, ctx.scope, name)
        bindings = self.names(ctx.path, owner).get(name, ()) if owner is not None else ()
        return (owner, bindings[0]) if owner is not None and len(bindings) == 1 else None

    def _handed_on(self, path: str) -> frozenset[str]:
        """Names of path that may stand for something else than what they were bound to:
        used as a value (passed, returned, stored, aliased), or the object of a method call
        (`ls.sort()`). Reading an item or iterating keeps a list as it is."""
        found = self._handed.get(path)
        if found is None:
            names: set[str] = set()
            summary = self.summaries[path]
            bodies = self.bodies(path)
            for scope, (calls, _reads, _uses) in zip(summary.scopes, bodies, strict=True):
                for site in calls:
                    if site.kind not in _PROTOCOLS:  # what `for` iterates stays as it is
                        _names_in((site.func, site.args, site.kwargs), names)
                _names_in([b.value for b in scope.bindings], names)
                _names_in((scope.return_values, scope.yields, scope.attr_assigns), names)
                _names_in([added for _name, added, _pos, _replaces in scope.mutations], names)
            found = self._handed[path] = frozenset(names)
        return found

    def _mutation_table(self, path: str) -> dict[tuple[int, str], list]:
        table = self._mutations.get(path)
        if table is None:
            table = self._mutations[path] = self._collect_mutations(path)
        return table

    def _star_lookup(self, path: str, scope: Scope, name: str) -> Values:
        if name.startswith("_"):
            return EMPTY
        for module, level, _pos in reversed(scope.star_imports):
            target = self.modules.resolve(module, level, path)
            if target is None or target not in self.summaries:
                continue
            exported = self.summaries[target].all_names
            if exported is not None and name not in exported:
                continue
            found = self.module_attr(target, name)
            if found:
                return found
        return EMPTY

    # ----- modules --------------------------------------------------------
    def module_value(self, dotted: str, level: int, importer: str) -> Values:
        target = self.modules.resolve(dotted, level, importer)
        if target is None:
            return frozenset({("x", dotted)}) if level == 0 and dotted else EMPTY
        return frozenset({("m", target)})

    def module_attr(self, module: str, name: str) -> Values:
        key = (module, name)
        cached = self._module_attr_cache.get(key)
        if cached is not None:
            return cached
        if key in self._in_progress:
            return EMPTY
        self._in_progress.add(key)
        try:
            values: Values = EMPTY
            summary = self.summaries.get(module)
            if summary is not None:
                bindings = self.names(module, 0).get(name)
                if bindings:
                    values = self._reaching(module, 0, name, bindings, None, ())
                elif summary.scopes[0].star_imports:
                    values = self._star_lookup(module, summary.scopes[0], name)
            if not values:
                sub = self.modules.submodule(module, name)
                if sub is not None:
                    values = frozenset({("m", sub)})
        finally:
            self._in_progress.discard(key)
        self._module_attr_cache[key] = values
        return values

    # ----- expressions ----------------------------------------------------
    def eval(self, expr: Expr, ctx: Ctx) -> Values:
        tag = expr[0]
        if tag == "n":
            return self.lookup(ctx, expr[1])
        if tag == "a":
            return self.attribute(self.eval(expr[1], ctx), expr[2], ctx)
        if tag == "c":
            return self.call_result(self.eval(expr[1], ctx), expr, ctx)
        if tag == "f":
            scope = self.summaries[ctx.path].scopes[expr[1]]
            kind = "c" if scope.kind == "class" else "f"
            return frozenset({(kind, ctx.path, expr[1])})
        if tag == "dw":
            made = self._made(ctx.path, expr[1], expr[2])
            return made or self.eval(("f", expr[1]), ctx)
        if tag == "or":
            out: set[Value] = set()
            for part in expr[1]:
                out |= self.eval(part, ctx)
            return _cap(out)
        if tag == "l":
            elems: set[Value] = set()
            for item in expr[1]:
                if item[0] == "*":
                    elems |= self.elements(self.eval(item[1], ctx))
                else:
                    elems |= self.eval(item, ctx)
            return frozenset({("L", _cap(elems))}) if elems else EMPTY
        if tag == "d":
            keyed: dict[str, set[Value]] = defaultdict(set)
            for key, val in expr[1]:
                vals = self.eval(val, ctx)
                if vals:
                    keyed[_dict_key(key[1]) if key[0] == "k" else "*"] |= vals
            if not keyed:
                return EMPTY
            return frozenset({("D", tuple(sorted((k, frozenset(v)) for k, v in keyed.items())))})
        if tag == "s":
            item = self._literal_item(expr, ctx)
            if item is not None:
                return self.eval(*item)
            return self.subscript(self.eval(expr[1], ctx), expr[2])
        if tag == "it":
            return self.elements(self.eval(expr[1], ctx))
        if tag == "ix":
            return self.unpack(expr[1], expr[2], ctx)
        if tag == "st":
            return self.starred(expr[1], expr[2], expr[3], ctx)
        if tag == "en":
            return self.entered(self.eval(expr[1], ctx))
        if tag == "ex":
            return self.instances(self.eval(expr[1], ctx), elements=True)
        if tag == "an":
            return self.annotation_values(expr[1], ctx)
        if tag == "im":
            dotted = expr[1]
            return self.module_value(dotted.split(".")[0], 0, ctx.path)
        if tag == "ima":
            return self.module_value(expr[1], expr[2], ctx.path)
        if tag == "if":
            module, level, name = expr[1], expr[2], expr[3]
            target = self.modules.resolve(module, level, ctx.path)
            if target is None:
                if level == 0 and module:
                    return frozenset({("x", f"{module}.{name}")})
                return EMPTY
            return self.module_attr(target, name)
        return EMPTY

    def attribute(self, bases: Values, name: str, ctx: Ctx) -> Values:
        out: set[Value] = set()
        for base in bases:
            kind = base[0]
            if kind == "m":
                out |= self.module_attr(base[1], name)
            elif kind in ("i", "I") and name == "__class__":
                out.add(("c", base[1], base[2]))
            elif kind in ("i", "I"):
                cls = (base[1], base[2])
                found = self.instance_attr(cls, name, ctx)
                if kind == "I":
                    found |= self._overrides(cls, name)
                out |= found
            elif kind == "c":
                out |= self.class_attr((base[1], base[2]), name, bound=False)
            elif kind == "S":
                out |= self.super_attr((base[1], base[2]), name, ctx)
            elif kind == "x":
                out.add(("x", f"{base[1]}.{name}"))
            elif kind == "D" and name in _DICT_VALUE_METHODS:
                out.add(("dv", base, name))
        return _cap(out)

    def subscript(self, bases: Values, key: Expr) -> Values:
        if key[0] == "sl":  # a slice of a container is a container of the same things
            return frozenset(b for b in bases if b[0] == "L")
        out: set[Value] = set()
        for base in bases:
            if base[0] == "L":
                out |= base[1]
            elif base[0] == "D":
                wanted = _dict_key(key[1]) if key[0] == "k" else None
                for k, vals in base[1]:
                    if wanted is None or k in (wanted, "*"):
                        out |= vals
        return frozenset(out)

    def elements(self, values: Values) -> Values:
        out: set[Value] = set()
        for v in values:
            if v[0] == "L":
                out |= v[1]
            elif v[0] == "D":
                continue  # iterating a dict gives its keys
            elif v[0] == "g":
                out |= self.yields((v[1], v[2]))
            elif v[0] in ("i", "I"):  # __iter__ a generator, or an iterator whose __next__ returns
                for fn in self.instance_attr((v[1], v[2]), "__iter__", None):
                    if fn[0] not in ("f", "b"):
                        continue
                    for it in self.returns((fn[1], fn[2])):
                        if it[0] == "g":
                            out |= self.yields((it[1], it[2]))
                        elif it[0] in ("i", "I"):
                            for nxt in self.instance_attr((it[1], it[2]), "__next__", None):
                                if nxt[0] in ("f", "b"):
                                    out |= self.returns((nxt[1], nxt[2]))
        return frozenset(out)

    def unpack(self, expr: Expr, index: int, ctx: Ctx) -> Values:
        items = _literal_items(expr)
        if items is not None and -len(items) <= index < len(items):
            return self.eval(items[index], ctx)
        return self.elements(self.eval(expr, ctx))

    def starred(self, expr: Expr, start: int, after: int, ctx: Ctx) -> Values:
        items = _literal_items(expr)
        if items is not None and start <= len(items) - after:
            chosen = items[start : len(items) - after]
            elems: set[Value] = set()
            for item in chosen:
                elems |= self.eval(item, ctx)
        else:
            elems = set(self.elements(self.eval(expr, ctx)))
        return frozenset({("L", frozenset(elems))}) if elems else EMPTY

    def entered(self, values: Values) -> Values:
        """What `with value as x` binds: __enter__'s result, or the value itself."""
        out: set[Value] = set()
        for v in values:
            if v[0] in ("i", "I"):
                enter = self.instance_attr((v[1], v[2]), "__enter__", None)
                if enter:
                    for fn in enter:
                        if fn[0] in ("f", "b"):
                            out |= self.returns((fn[1], fn[2]))
                    continue
            if v[0] == "g":  # a @contextmanager generator: `as` binds what it yields
                out |= self.yields((v[1], v[2]))
            elif v[0] in ("i", "I"):
                out.add(v)
        return frozenset(out)

    def instances(self, values: Values, elements: bool = False) -> Values:
        out: set[Value] = set()
        for v in values:
            if v[0] == "c":
                out.add(("i", v[1], v[2]))
            elif v[0] in ("i", "I"):
                out.add(v)
            elif elements and v[0] == "L":
                out |= self.instances(v[1])
        return frozenset(out)

    # ----- annotations ------------------------------------------------------
    def annotation_values(self, ann: Expr | None, ctx: Ctx) -> Values:
        """The values an annotated name holds: instances of the classes it names."""
        if ann is None:
            return EMPTY
        tag = ann[0]
        if tag in ("n", "a"):
            return self.instances(self._ann_target(ann, ctx))
        if tag == "sa":
            return self._string_annotation(ann[1], ctx)
        if tag == "or":
            out: set[Value] = set()
            for part in ann[1]:
                out |= self.annotation_values(part, ctx)
            return frozenset(out)
        if tag == "g":
            base, args = ann[1], ann[2]
            name = base[-1] if base and base[0] in ("n", "a") else ""
            name = base[1] if base and base[0] == "n" else (base[2] if base[0] == "a" else "")
            if name in ("Optional", "Union", "Annotated", "Final", "ClassVar", "Required"):
                parts = args[:1] if name in ("Annotated", "Final", "ClassVar") else args
                return self.annotation_values(("or", parts), ctx)
            if name in ("type", "Type"):
                out = set()
                for arg in args:
                    if arg[0] in ("n", "a"):
                        out |= {v for v in self._ann_target(arg, ctx) if v[0] == "c"}
                return frozenset(out)
            if name in ("dict", "Dict", "Mapping", "MutableMapping", "defaultdict"):
                vals = self.annotation_values(args[1], ctx) if len(args) > 1 else EMPTY
                return frozenset({("D", (("*", vals),))}) if vals else EMPTY
            if name in ("Callable", "Literal"):
                return EMPTY
            elems: set[Value] = set()
            for arg in args:
                elems |= self.annotation_values(arg, ctx)
            if elems:
                return frozenset({("L", frozenset(elems))})
            return self.instances(self._ann_target(base, ctx))
        if tag == "l":
            return EMPTY
        return EMPTY

    def _ann_target(self, ann: Expr, ctx: Ctx) -> Values:
        # Annotations are read at the end of the scope chain (they may be forward references).
        return self.eval(ann, Ctx(ctx.path, ctx.scope, None))

    def _string_annotation(self, text: str, ctx: Ctx) -> Values:
        text = text.strip()
        if not text:
            return EMPTY
        if "|" in text:
            out: set[Value] = set()
            for part in text.split("|"):
                out |= self._string_annotation(part, ctx)
            return frozenset(out)
        if text.startswith(("Optional[", "typing.Optional[")) and text.endswith("]"):
            return self._string_annotation(text[text.index("[") + 1 : -1], ctx)
        parts = text.split(".")
        if not all(p.isidentifier() for p in parts):
            return EMPTY
        expr: Expr = ("n", parts[0])
        for p in parts[1:]:
            expr = ("a", expr, p)
        return self.instances(self._ann_target(expr, ctx))

    # ----- classes ------------------------------------------------------------
    def class_bases(self, cls: tuple[str, int]) -> list[Value]:
        path, idx = cls
        scope = self.scope(path, idx)
        out: list[Value] = []
        ctx = Ctx(path, scope.parent, None)
        for base in scope.bases:
            if base[0] == "s":  # Base[T]
                base = base[1]
            for v in sorted(self.eval(base, ctx)):
                if v not in out:
                    out.append(v)
        return out

    def mro(self, cls: tuple[str, int]) -> Linearization[tuple[str, int]]:
        """cls and its repository bases in C3 order."""
        return mro_of(cls, self.repository_bases, self._mro, self._in_progress)

    def repository_bases(self, cls: tuple[str, int]) -> list[tuple[str, int]]:
        """cls's bases that are repository classes, in declared order."""
        return [(v[1], v[2]) for v in self.class_bases(cls) if v[0] == "c"]

    def class_attr(self, cls: tuple[str, int], name: str, *, bound: bool, start: int = 0) -> Values:
        """Look `name` up along the MRO: class-body bindings, then `Cls.name = ...`."""
        definers = self.definers().get(name)
        if not definers:
            return EMPTY
        key = (cls, name, bound, start)
        cached = self._class_attr_cache.get(key)
        if cached is not None:
            return cached
        result: Values = EMPTY
        klass = self._first_in_mro(
            cls, ("class", name), lambda k: k in definers and bool(self.names(*k).get(name)), start
        )
        if klass is not None:
            bindings = self.names(*klass)[name]
            values = self._reaching(klass[0], klass[1], name, bindings, None, ())
            result = frozenset(self._bind_method(v, bound) for v in values)
        self._class_attr_cache[key] = result
        return result

    def _first_in_mro(
        self,
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
        memo = self._mro_found
        visited = []
        found: tuple[str, int] | None = None
        for i, (node, own) in enumerate(self.mro(cls).parts()):
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

    def _bind_method(self, value: Value, bound: bool) -> Value:
        if value[0] != "f":
            return value
        scope = self.scope(value[1], value[2])
        if scope.kind != "function" or self.scope(value[1], scope.parent).kind != "class":
            return value
        kind = self.method_kind(value[1], value[2])
        if kind == "static":
            return value
        if kind == "class" or bound:
            return ("b", value[1], value[2])
        return value

    def metaclass_call(self, cls: tuple[str, int]) -> Values:
        """`__call__` of a repository metaclass: calling the class runs it."""
        klass = self._first_in_mro(
            cls, ("metaclass",), lambda k: self.scope(*k).metaclass is not None
        )
        if klass is None:
            return EMPTY
        scope = self.scope(*klass)
        assert scope.metaclass is not None
        meta = self.eval(scope.metaclass, Ctx(klass[0], scope.parent, None))
        out: set[Value] = set()
        for m in meta:
            if m[0] == "c":
                out |= self.class_attr((m[1], m[2]), "__call__", bound=True)
        return frozenset(out)

    def method_kind(self, path: str, idx: int) -> str:
        """'static', 'class', 'property' or 'instance' from the decorators."""
        scope = self.scope(path, idx)
        for dec in scope.decorators:
            kind = decorator_kind(dec)
            if kind != "instance":
                return kind
        return "instance"

    def instance_attr(self, cls: tuple[str, int], name: str, ctx: Ctx | None) -> Values:
        values, getters = self._instance_attr(cls, name)
        out = set(values)
        for fn in getters:
            out |= self._read_property(fn, ctx)
        return _cap(out)

    def _instance_attr(self, cls: tuple[str, int], name: str) -> tuple[Values, tuple]:
        """(values, property getters read) of `instance.name`, cached per class and name."""
        key = (cls, name)
        cached = self._instance_attr_cache.get(key)
        if cached is not None:
            return cached
        if key in self._in_progress:
            return EMPTY, ()
        self._in_progress.add(key)
        out: set[Value] = set()
        getters: list[Value] = []
        try:
            klass = None
            if self._bound_in_some_class_body(name):
                klass = self._first_in_mro(
                    cls, ("names", name), lambda k: bool(self.names(*k).get(name))
                )
            if klass is not None:
                bindings = self.names(*klass)[name]
                values = self._reaching(klass[0], klass[1], name, bindings, None, ())
                for v in values:
                    if v[0] == "f" and self._is_property(v):
                        getters.append(v)
                    else:
                        out.add(self._bind_method(v, True))
            for klass in self._storers_in_mro(cls, name):
                for value_expr, path, scope_idx, pos in self.inst_attrs(klass).get(name, ()):
                    out |= self.eval(value_expr, Ctx(path, scope_idx, pos))
        finally:
            self._in_progress.discard(key)
        result = (_cap(out), tuple(getters))
        self._instance_attr_cache[key] = result
        return result

    def _bound_in_some_class_body(self, name: str) -> bool:
        """Whether any class body binds name: most names read through `self` are only
        stored, and looking for them down the MRO walked a chain once per class."""
        found = self._body_bound.get(name)
        if found is None:
            found = self._body_bound[name] = any(
                self.names(*k).get(name) for k in self.definers().get(name, ())
            )
        return found

    def _storers_in_mro(self, cls: tuple[str, int], name: str) -> list[tuple[str, int]]:
        """The classes of cls's MRO, in order, whose methods store `self.name`: the walk
        ends once every class storing it is met (a chain whose classes each read a name
        of their own walked the whole MRO once per class)."""
        storers = self.tables().storers.get(name)
        if not storers:
            return []
        out: list[tuple[str, int]] = []
        met: set[tuple[str, int]] = set()  # a cycle of bases can repeat a class
        for klass in self.mro(cls):
            if klass in storers:
                out.append(klass)
                met.add(klass)
                if len(met) == len(storers):
                    break
        return out

    def _is_property(self, value: Value) -> bool:
        scope = self.scope(value[1], value[2])
        return scope.kind == "function" and self.method_kind(value[1], value[2]) == "property"

    def _read_property(self, fn: Value, ctx: Ctx | None) -> Values:
        if ctx is not None and ctx.implicit is not None:
            ctx.implicit.append(fn)
        return self.returns((fn[1], fn[2]))

    def inst_attrs(self, cls: tuple[str, int]) -> dict[str, list]:
        """`self.name = value` in the class's methods, by name."""
        cached = self._inst_attrs.get(cls)
        if cached is not None:
            return cached
        path, idx = cls
        table: dict[str, list] = defaultdict(list)
        scopes = self.summaries[path].scopes
        for i in self.children(path)[idx]:
            scope = scopes[i]
            if scope.kind != "function" or not scope.params:
                continue
            receiver = scope.params[0].name
            for method_scope in self._with_nested(path, i):
                for obj, attr, value, pos in scopes[method_scope].attr_assigns:
                    if obj == ("n", receiver):
                        table[attr].append((value, path, method_scope, pos))
        self._inst_attrs[cls] = table
        return table

    def children(self, path: str) -> list[list[int]]:
        """The scopes directly inside each scope of path, in order: asked for every class,
        a scan of the file each time made a file of many classes quadratic."""
        scopes = self.summaries[path].scopes
        kept = self._children.get(path)
        if kept is not None and kept[0] is scopes:
            return kept[1]
        table: list[list[int]] = [[] for _ in scopes]
        for i, scope in enumerate(scopes):
            if scope.parent >= 0:
                table[scope.parent].append(i)
        self._children[path] = (scopes, table)
        return table

    def _with_nested(self, path: str, idx: int) -> Iterable[int]:
        """Scope idx and the functions inside it (what `self` reaches in a method)."""
        scopes = self.summaries[path].scopes
        return (j for j in self._nested(path, idx) if j == idx or scopes[j].kind != "class")

    def super_attr(self, cls: tuple[str, int], name: str, ctx: Ctx) -> Values:
        out: set[Value] = set()
        for v in self.class_attr(cls, name, bound=True, start=1):
            if v[0] == "f" and self._is_property(v):
                out |= self._read_property(v, ctx)
            else:
                out.add(v)
        return frozenset(out)

    def tables(self) -> ClassTables:
        if self._tables is None:
            self._tables = ClassTables()  # overrides seen while building it are left out
            self._put_classes(sorted(self.summaries))
            self._subclass_tree_sizes = {}  # counted in the tables being built
        return self._tables

    def refresh_classes(self, paths: Iterable[str]) -> dict[str, set[str]]:
        """Put the class-table shares of files whose definitions changed, and of the
        files that may name them (their bases can resolve differently now).

        Returns the files of the ancestors of every class that changed, with the names
        that changed: `self.name` there may dispatch to other overrides now.
        """
        if self._tables is None:
            return {}
        paths = sorted(paths)
        before = {path: self._tables.shares.get(path) for path in paths}
        self._put_classes(paths)
        self._subclass_cache.clear()
        self.forget_values()
        out: dict[str, set[str]] = defaultdict(set)
        for path in paths:
            for names, bases in _class_changes(before[path], self._tables.shares.get(path)):
                for base in bases:
                    for ancestor in self.mro(base) if base[0] in self.summaries else ():
                        out[ancestor[0]] |= names
        return out

    def _put_classes(self, paths: list[str]) -> None:
        """Shares of paths: first what the class bodies bind (read off the syntax), then
        the bases, whose evaluation can look names up in class bodies."""
        assert self._tables is not None
        shares: dict[str, Share] = {}
        for path in paths:
            if path not in self.summaries:
                self._tables.put(path, None)
                continue
            shares[path] = Share([], [], [], [])
            for i, scope in enumerate(self.summaries[path].scopes):
                if scope.kind == "class":
                    for binding in scope.bindings:
                        shares[path].definers.append((binding.name, (path, i)))
                        if binding.value[0] == "n":
                            fn = self._function_named(path, i, binding.value[1])
                            if fn is not None and self.enclosing_class(*fn) is None:
                                shares[path].hosts.append((fn, (path, i)))
                    for attr, stores in self.inst_attrs((path, i)).items():
                        shares[path].stores.append((attr, (path, i)))
                        if any(_may_be_callable(value[0]) for value in stores):
                            shares[path].definers.append((attr, (path, i)))
            self._tables.put(path, shares[path])
        for path, share in shares.items():
            for i, scope in enumerate(self.summaries[path].scopes):
                if scope.kind == "class" and scope.bases:
                    for base in self.class_bases((path, i)):
                        if base[0] == "c":
                            share.bases.append(((base[1], base[2]), (path, i)))
            self._tables.put(path, share)

    def subclasses(self, cls: tuple[str, int]) -> frozenset[tuple[str, int]]:
        found = self._subclasses_up_to(cls, sys.maxsize)
        assert found is not None  # no limit to pass
        return found

    def _subclasses_up_to(
        self, cls: tuple[str, int], limit: int
    ) -> frozenset[tuple[str, int]] | None:
        """subclasses(cls) when there are at most limit of them, else None, in steps
        bounded by limit."""
        cached = self._subclass_cache.get(cls)
        if cached is not None:
            return cached if len(cached) <= limit else None
        table = self.tables().subclasses
        out: set[tuple[str, int]] = set()
        todo = [cls]
        while todo:
            for sub in table.get(todo.pop(), ()):
                if sub not in out:
                    if len(out) == limit:
                        return None
                    out.add(sub)
                    todo.append(sub)
        result = frozenset(out)
        self._subclass_cache[cls] = result
        return result

    def _definers_in_line(
        self, cls: tuple[str, int], name: str, definers: set[tuple[str, int]]
    ) -> int:
        """How many of definers cls's (repeat-free) MRO holds. Counted once for each MRO
        it ends with, like _first_in_mro, and no further than the last definer: asked of
        each class of a chain, a step a class."""
        memo = self._mro_found
        key = ("in line", name)
        visited: list[tuple[Linearization, int]] = []  # (node, count before it)
        count = 0
        for node, own in self.mro(cls).parts():
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

    def _overrides(self, cls: tuple[str, int], name: str) -> frozenset[Value]:
        """The methods named name that instances of cls's subclasses can run (what their
        MROs find first), capped like every value set: the attribute reading them caps
        their union with the rest, so capping them first changes nothing."""
        key = (cls, name)
        cached = self._override_cache.get(key)
        if cached is not None:
            return cached
        if key in self._in_progress:
            return EMPTY
        definers = self.definers().get(name, set())
        if self._overrides_down_tree(cls, name, definers):
            return self._override_cache[key]
        out: set[Value] = set()
        found = self._overriding(cls, name, definers)
        self._in_progress.add(key)
        try:
            for klass in found:
                out |= self._override_values(klass, name)
        finally:
            self._in_progress.discard(key)
        result = _cap(out)
        self._override_cache[key] = result
        return result

    def _override_values(self, klass: tuple[str, int], name: str) -> set[Value]:
        """The methods klass's name is: its class attribute, or `self.name = self.method`
        in its methods."""
        out: set[Value] = set()
        stored: set[Value] = set()
        for value_expr, path, scope_idx, pos in self.inst_attrs(klass).get(name, ()):
            if _may_be_callable(value_expr):
                stored |= self.eval(value_expr, Ctx(path, scope_idx, pos))
        for v in self.class_attr(klass, name, bound=True) | stored:
            if v[0] in ("f", "b") and not self._is_property(("f", v[1], v[2])):
                out.add(v)
        return out

    def _overrides_down_tree(
        self, cls: tuple[str, int], name: str, definers: set[tuple[str, int]]
    ) -> bool:
        """Put the overrides of cls and of the subclasses below it from those of its
        direct subclasses, when each subclass has one base and there are no more of them
        than definers (so _overriding walks every subclass's MRO): each direct subclass
        adds the definer its MRO finds first and what its own subclasses find, and capping
        their capped sets gives the cap of the whole. A chain whose every class overrides
        the method built the set of all the classes below each class. False (nothing
        put) when the shape is another, or a subclass's overrides are being worked out."""
        size = self._single_base_subclasses(cls)
        if size is None or size > len(definers):
            return False
        table = self.tables().subclasses
        order: list[tuple[str, int]] = []
        todo = [cls]
        while todo:
            node = todo.pop()
            if node != cls and (node, name) in self._in_progress:
                return False
            order.append(node)
            todo.extend(s for s in table.get(node, ()) if (s, name) not in self._override_cache)
        for node in reversed(order):  # subclasses before their bases
            key = (node, name)
            if key in self._override_cache:
                continue
            out: set[Value] = set()
            self._in_progress.add(key)
            try:
                for sub in table.get(node, ()):
                    first = self._first_in_mro(sub, ("definer", name), lambda k: k in definers)
                    if first is not None:
                        out |= self._override_values(first, name)
                    out |= self._override_cache.get((sub, name), EMPTY)
            finally:
                self._in_progress.discard(key)
            self._override_cache[key] = _cap(out)
        return True

    def _single_base_subclasses(self, cls: tuple[str, int]) -> int | None:
        """How many subclasses cls has when each has one repository base and cls's MRO
        is no cycle (its subclasses are then a tree), else None. Remembered per class."""
        sizes = self._subclass_tree_sizes
        if cls in sizes:
            return sizes[cls]
        if self.mro(cls).cyclic:
            sizes[cls] = None
            return None
        table = self.tables().subclasses
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
                if below is None or total is None or self.repository_bases(sub) != [node]:
                    total = None
                    break
                total += 1 + below
            sizes[node] = total
        return sizes[cls]

    def _overriding(
        self, cls: tuple[str, int], name: str, definers: set[tuple[str, int]]
    ) -> set[tuple[str, int]]:
        """The definers the MRO of some subclass of cls finds first: its own override, or a
        sibling base's. Walks the subclasses' MROs, or, when the definers are fewer, only
        the MROs of the subclasses that also derive from a definer outside cls's line
        (Django's SimpleTestCase has 2,121 subclasses and most names one definer)."""
        if not definers:
            return set()
        subs: frozenset[tuple[str, int]] | None = None
        line_count = 0 if self.mro(cls).cyclic else self._definers_in_line(cls, name, definers)
        if line_count == len(definers):
            # Every definer is cls or an ancestor: no subclass count past len(definers) is
            # needed (more subclasses than definers find none; a chain's classes each
            # built the set of all the classes below them).
            subs = self._subclasses_up_to(cls, len(definers))
            if subs is None:
                return set()
        if subs is None:
            subs = self.subclasses(cls)
        walk: Iterable[tuple[str, int]] = subs
        found: set[tuple[str, int]] = set()
        if len(definers) < len(subs):
            line = set(self.mro(cls))
            walk = set()
            for klass in definers:
                if klass in subs:
                    found.add(klass)  # its own MRO starts with it
                elif klass not in line:
                    walk |= self.subclasses(klass) & subs
        for sub in walk:
            for klass in self.mro(sub):
                if klass in definers:
                    found.add(klass)
                    break
        return found

    # ----- functions ------------------------------------------------------
    def enclosing_class(self, path: str, idx: int) -> int | None:
        scopes = self.summaries[path].scopes
        while idx >= 0:
            scope = scopes[idx]
            if scope.kind == "function" and scopes[scope.parent].kind == "class":
                return scope.parent
            idx = scope.parent
        return None

    def param_values(self, path: str, idx: int, index: int) -> Values:
        scope = self.scope(path, idx)
        param = scope.params[index]
        out: set[Value] = set()
        parent = self.summaries[path].scopes[scope.parent] if scope.parent >= 0 else None
        if index == 0 and parent is not None and parent.kind == "class" and param.kind == "pos":
            kind = self.method_kind(path, idx)
            if kind in ("instance", "property"):
                out.add(("I", path, scope.parent))
            elif kind == "class":
                out.add(("c", path, scope.parent))
        elif index == 0 and param.kind == "pos" and scope.kind == "function":
            # `save = _save` in a class body makes a module function a method of that class
            out |= {("I", *cls) for cls in self.hosts().get((path, idx), ())}
        ctx = Ctx(path, idx, None)
        if param.annotation is not None:
            out |= self.annotation_values(param.annotation, ctx)
        if param.default is not None:
            parent_ctx = Ctx(path, scope.parent, None)
            out |= {v for v in self.eval(param.default, parent_ctx) if v[0] != "x"}
        flowed = self.param_facts.get((path, idx), {}).get(param.name, EMPTY)
        # More is a megamorphic parameter: no edge on a guess. Functions handed over to be
        # called are many by design (a matcher per grouping rule), and each is called; a
        # registry that keeps what it is given has no call to show for it.
        if len(flowed) <= _MAX_FLOWED or (
            len(flowed) <= _MAX_CALLBACKS
            and param.name in scope.called_params
            and all(v[0] == "f" for v in flowed)
        ):
            out |= flowed
        if param.kind == "star":
            return frozenset({("L", frozenset(out))}) if out else EMPTY
        return _cap(out)

    def definers(self) -> dict[str, set[tuple[str, int]]]:
        """Name -> the classes whose bodies bind it: most attributes read through `self`
        are bound in no class body, and need no walk along any MRO."""
        return self.tables().definers

    def hosts(self) -> dict[tuple[str, int], set[tuple[str, int]]]:
        """Functions defined outside a class that a class body binds by name, and the classes.

        Read from the definitions alone (no evaluation), so no value depends on when this
        table is first built.
        """
        return self.tables().hosts

    def _function_named(
        self, path: str, idx: int, name: str, depth: int = 0
    ) -> tuple[str, int] | None:
        """The def a name in scope idx (a class body or a module) stands for, through imports."""
        if depth > 8 or path not in self.summaries:
            return None
        bindings = self.names(path, idx).get(name)
        if not bindings:
            return self._function_named(path, 0, name, depth + 1) if idx != 0 else None
        value = bindings[-1].value
        if value[0] == "f" and self.scope(path, value[1]).kind == "function":
            return (path, value[1])
        if value[0] == "if":
            target = self.modules.resolve(value[1], value[2], path)
            return self._function_named(target, 0, value[3], depth + 1) if target else None
        return None

    def returns(self, fn: tuple[str, int]) -> Values:
        return self._memo(self._returns, "ret", fn, self._returns_of)

    def yields(self, fn: tuple[str, int]) -> Values:
        return self._memo(self._yields, "yield", fn, self._yields_of)

    def _memo(self, cache: dict, tag: str, fn: tuple[str, int], compute) -> Values:
        """Cached per function; a recursive request while computing sees nothing yet."""
        cached = cache.get(fn)
        if cached is not None:
            return cached
        key = (tag, fn)
        if key in self._in_progress:
            return EMPTY
        self._in_progress.add(key)
        try:
            values = compute(fn)
        finally:
            self._in_progress.discard(key)
        cache[fn] = values
        return values

    def _returns_of(self, fn: tuple[str, int]) -> Values:
        path, idx = fn
        scope = self.scope(path, idx)
        ctx = Ctx(path, idx, None)
        out: set[Value] = set()
        if scope.returns is not None:
            out |= self.annotation_values(scope.returns, ctx)
        if scope.yields:
            out.add(("g", path, idx))
        else:
            for expr in scope.return_values:
                out |= self.eval(expr, ctx)
        return _cap(out)

    def _yields_of(self, fn: tuple[str, int]) -> Values:
        path, idx = fn
        scope = self.scope(path, idx)
        out: set[Value] = set()
        ctx = Ctx(path, idx, None)
        for expr in scope.yields:
            out |= self.eval(expr, ctx)
        return frozenset(out)

    # ----- calls ------------------------------------------------------------
    def call_result(self, callees: Values, call: Expr, ctx: Ctx) -> Values:
        out: set[Value] = set()
        for v in callees:
            kind = v[0]
            if kind in ("f", "b"):
                passed = self._passed_through((v[1], v[2]), kind == "b", call, ctx)
                out |= self.returns((v[1], v[2])) if passed is None else passed
            elif kind == "c":
                out.add(("i", v[1], v[2]))
            elif kind in ("i", "I"):
                for fn in self.instance_attr((v[1], v[2]), "__call__", None):
                    if fn[0] in ("f", "b"):
                        out |= self.returns((fn[1], fn[2]))
            elif kind == "x":
                out |= self._external_result(v[1], call, ctx)
            elif kind == "dv":  # d.get(k), d.pop(k), d.values()
                args, method = call[2], v[2]
                values = self.subscript(frozenset({v[1]}), args[0] if args else ("u",))
                out |= values if method != "values" else {("L", values)}
                if method == "get" and len(args) > 1:
                    out |= self.eval(args[1], ctx)
        return _cap(out)

    def _passed_through(
        self, fn: tuple[str, int], bound: bool, call: Expr, ctx: Ctx
    ) -> Values | None:
        """What a call of a function that returns one of its parameters as it came gives:
        the argument this call passes (`def first(x, y): return x`), not what every call
        passes, with what its other returns give (a nested def: a decorator factory's
        `return inner(f) if f else inner`). None (or nothing: an argument not known here)
        when the function does more, or the argument cannot be told: then what every call
        passes is the answer."""
        plan = self._returned_param(fn)
        if plan is None or call[0] != "c":
            return None
        param, others = plan
        arg = self._argument(fn, bound, call, param)
        if arg is None:
            return None
        out = set(self.eval(arg, ctx))
        if not out and arg[0] == "n":  # a name not known here (a cycle cut short): unsure
            return None
        inside = Ctx(fn[0], fn[1], None)
        for expr in others:
            out |= self.eval(expr, inside)
        return frozenset(out)

    def _argument(self, fn: tuple[str, int], bound: bool, call: Expr, param: Param) -> Expr | None:
        """The expression a call passes for one parameter of fn; None when it spreads
        `*args`/`**kwargs` or leaves the parameter to its default."""
        args, kwargs = call[2], call[3]
        if any(a[0] == "*" for a in args) or any(k == "**" for k, _ in kwargs):
            return None
        params = self.scope(*fn).params
        positional = [p.name for p in params if p.kind in ("pos", "posonly")][int(bound) :]
        at = positional.index(param.name) if param.name in positional else len(args)
        if at < len(args):
            return args[at]
        if param.kind != "posonly":
            for name, expr in kwargs:
                if name == param.name:
                    return expr
        return None

    def _returned_param(self, fn: tuple[str, int]) -> tuple[Param, tuple[Expr, ...]] | None:
        """The parameter every `return` of fn that reads a parameter gives back unchanged
        (itself, or through a nested function that does), and the other returns: nested
        definitions, whatever the call."""
        if fn not in self._returned:
            self._returned[fn] = None  # a function returning its own call: nothing to tell
            self._returned[fn] = self._find_returned_param(fn)
        return self._returned[fn]

    def _find_returned_param(self, fn: tuple[str, int]) -> tuple[Param, tuple[Expr, ...]] | None:
        scope = self.scope(*fn)
        if scope.returns is not None or scope.yields or not scope.return_values:
            return None
        names = self.names(*fn)
        params = {p.name: p for p in scope.params}
        through: set[str] = set()
        others: list[Expr] = []
        for expr in scope.return_values:
            name = self._passing(fn, expr, params, names)
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
        self, fn: tuple[str, int], expr: Expr, params: dict[str, Param], names: dict
    ) -> str | None:
        """The parameter of fn an expression returns unchanged: the parameter's name, or a
        call of a nested function that returns the argument it is given for it."""
        if expr[0] == "n":
            return expr[1] if expr[1] in params else None
        if expr[0] != "c" or expr[1][0] != "n" or not _defined_once(names, expr[1][1]):
            return None
        inner = (fn[0], names[expr[1][1]][0].value[1])
        if self.scope(*inner).decorators:  # a call of what its decorators made of it
            return None
        plan = self._returned_param(inner)
        if plan is None or plan[1]:
            return None
        arg = self._argument(inner, False, expr, plan[0])
        return None if arg is None else self._passing(fn, arg, params, names)

    def _external_result(self, dotted: str, call: Expr, ctx: Ctx) -> Values:
        name = dotted.removeprefix("builtins.")
        args = call[2]
        if name == "super":
            cls = self.enclosing_class(ctx.path, ctx.scope)
            if args and args[0][0] in ("n", "a"):
                explicit = [v for v in self.eval(args[0], ctx) if v[0] == "c"]
                if explicit:
                    return frozenset(("S", v[1], v[2]) for v in explicit)
            return frozenset({("S", ctx.path, cls)}) if cls is not None else EMPTY
        if name in ("copy.copy", "copy.deepcopy") and args:  # a value like the one copied
            return frozenset(v for v in self.eval(args[0], ctx) if v[0] != "x")
        if name in ("functools.partial", "partial") and args:
            return frozenset(v for v in self.eval(args[0], ctx) if v[0] in ("f", "b", "c"))
        if name in ("map", "filter") and args:  # what the function returns / keeps
            elems: set[Value] = set()
            for arg in args:
                values = frozenset(v for v in self.eval(arg, ctx) if v[0] != "x")
                if name == "map":
                    elems |= self.call_result(values, call, ctx)
                elems |= self.elements(values)
            return frozenset({("L", _cap(elems))}) if elems else EMPTY
        if name in _CONTAINER_BUILTINS and args:
            elems = self.elements(self.eval(args[0], ctx))
            return frozenset({("L", elems)}) if elems else EMPTY
        if name == "type" and len(args) == 1:
            return frozenset(("c", v[1], v[2]) for v in self.eval(args[0], ctx) if v[0] in "iI")
        if name in ("staticmethod", "classmethod", "property") and args:
            return self.eval(args[0], ctx)
        if name == "getattr" and len(args) >= 2 and args[1][0] == "k":
            return self.attribute(self.eval(args[0], ctx), str(args[1][1]), ctx)
        return frozenset({("x", f"{dotted}()")})

    def call_targets(
        self, callees: Values, caller: tuple[str, int] | None = None
    ) -> list[tuple[Value, tuple[str, int] | None, bool]]:
        """(entity value, function whose parameters receive the arguments, bound).

        Calling a decorated function calls it and the wrapper its decorators return, unless
        the caller is one of those wrappers (which calls what it wraps)."""
        out: list[tuple[Value, tuple[str, int] | None, bool]] = []
        for v in callees:
            kind = v[0]
            if kind in ("f", "b"):
                out.append((("f", v[1], v[2]), (v[1], v[2]), kind == "b"))
                if self.summaries[v[1]].scopes[v[2]].decorators:
                    made, wrapping = self._decoration(v[1], v[2])
                    if caller is None or not any(
                        dec[0] == caller[0]
                        and _nested_in(self.summaries[dec[0]].scopes, caller[1], dec[1])
                        for dec in wrapping
                    ):
                        out += self.call_targets(made)
            elif kind == "c":
                out.append((v, None, False))
                init = self.class_attr((v[1], v[2]), "__init__", bound=True)
                init |= self.class_attr((v[1], v[2]), "__new__", bound=True)
                init |= self.metaclass_call((v[1], v[2]))
                for fn in init:
                    if fn[0] in ("f", "b"):
                        out.append((("f", fn[1], fn[2]), (fn[1], fn[2]), True))
            elif kind in ("i", "I"):
                for fn in self.instance_attr((v[1], v[2]), "__call__", None):
                    if fn[0] in ("f", "b"):
                        out.append((("f", fn[1], fn[2]), (fn[1], fn[2]), fn[0] == "b"))
        return out

    def _decoration(self, path: str, idx: int, start: int = 0) -> tuple[Values, Values]:
        """(what a definition's decorators, from the start-th down, make of it; the
        decorators that wrapped it). What they make is repository code wrapping it: a
        function nested in a decorator that calls the decorator's parameter, or an instance
        of a decorator class; empty when they hand it back (`return f`) or are not
        repository code: the definition itself is what runs.

        One pass from the bottom decorator up keeps what each start gives on its way (each
        decorator's call site asks for the ones below it): n decorators cost n steps, not
        n * n / 2 (8,000 took 50 s). Those starts keep no wrapping decorators (None):
        only start 0 is asked for them."""
        key = (path, idx, start)
        cached = self._decorated.get(key)
        if cached is not None and cached[1] is not None:
            return cached
        if cached is None:  # a decorator applied to itself sees nothing yet
            self._decorated[key] = (EMPTY, EMPTY)
        scope = self.summaries[path].scopes[idx]
        ctx = Ctx(path, scope.parent, None)
        current: Values = EMPTY
        wrapping: set[tuple[str, int]] = set()
        # the bottom decorator applies first
        for at in range(len(scope.decorators) - 1, start - 1, -1):
            made: set[Value] = set()
            for dec in self.eval(scope.decorators[at], ctx):
                if dec[0] == "c":
                    made.add(("i", dec[1], dec[2]))
                    wrapping.add((dec[1], dec[2]))
                elif dec[0] in ("f", "b"):
                    wrappers = self._wrappers((dec[1], dec[2]), dec[0] == "b")
                    made |= wrappers
                    if wrappers:
                        wrapping.add((dec[1], dec[2]))
            current = frozenset(made) or current
            if at > start:
                self._decorated.setdefault((path, idx, at), (current, None))
        self._decorated[key] = result = (current, frozenset(wrapping))
        return result

    def _made(self, path: str, idx: int, start: int) -> Values:
        """What a definition's decorators from the start-th down make of it."""
        cached = self._decorated.get((path, idx, start))
        return cached[0] if cached is not None else self._decoration(path, idx, start)[0]

    def _wrappers(self, dec: tuple[str, int], bound: bool) -> set[Value]:
        """The functions decorator dec returns that call the function it was given."""
        params = self.summaries[dec[0]].scopes[dec[1]].params[int(bound) :]
        if not params or params[0].kind not in ("pos", "posonly"):
            return set()
        given = params[0].name
        scopes = self.summaries[dec[0]].scopes
        return {
            v
            for v in self.returns(dec)
            if v[0] == "f"
            and v[1] == dec[0]
            and given in scopes[v[2]].free_calls
            and _nested_in(scopes, v[2], dec[1])
        }

    def resolve_file(
        self, path: str, scopes: set[int] | None = None, previous: FileFacts | None = None
    ) -> tuple[FileFacts, dict]:
        """Resolve the call sites, bases and imports of one file (or of some of its scopes).

        Returns the facts and the argument values the whole file passes to functions.
        Scopes past the file's last are gone: what they found is forgotten.
        """
        summary = self.summaries[path]
        per_scope = self._scope_contrib.setdefault(path, {})
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
        bodies = self.bodies(path)
        for idx in chosen:
            scope = summary.scopes[idx]
            calls, attr_reads, uses = bodies[idx]
            counts = facts.counts[idx] = [0, 0, 0]
            contrib: dict = defaultdict(lambda: defaultdict(set))
            try:
                if scope.kind == "class":
                    facts.bases[idx] = [v for v in self.class_bases((path, idx)) if v[0] == "c"]
                for site in calls:
                    self._resolve_site(path, idx, site, facts, counts, contrib)
                if attr_reads:
                    self._resolve_property_reads(path, idx, attr_reads, facts)
                    dense.resolve_attribute_reads(self, path, idx, attr_reads, facts)
                if uses:
                    dense.resolve_uses(self, path, idx, uses, facts)
            except RecursionError:  # a chain of values too long to follow: leave it unlinked
                counts[2] += 1
            except Exception as err:  # a binder bug must cost one scope, never the index
                counts[2] += 1
                facts.errors.append(f"{scope.qualname or '<module>'}: {type(err).__name__}: {err}")
            if contrib:
                per_scope[idx] = _plain(contrib)
            else:
                per_scope.pop(idx, None)
            if not whole:
                continue
            for binding in scope.bindings:
                if binding.value[0] in ("im", "ima", "if"):
                    self._record_import(path, binding.value, facts)
            for module, level, _pos in scope.star_imports:
                target = self.modules.resolve(module, level, path)
                if target is not None and target in self.summaries:
                    facts.imports.add(target)
        facts.freeze()
        return facts, _merge_contributions(per_scope)

    def passed_now(self, path: str, scopes: set[int]) -> dict:
        """The argument values path passes with these scopes resolved again in the present
        argument facts (what they passed when last resolved may be older). The facts found
        are dropped; the shares it records are replaced when the caller resolves the
        scopes, as edited, right after."""
        _facts, contrib = self.resolve_file(path, scopes, FileFacts())
        return contrib

    def scope_contributions(self, paths: Iterable[str]) -> dict[str, dict[int, dict]]:
        """The argument values of paths' scopes, for adopt() in another process."""
        return {path: self._scope_contrib[path] for path in paths}

    def passed_by_scope(self) -> dict[str, dict[int, dict]]:
        """The argument values each scope of each file passes (a cache keeps them)."""
        return self._scope_contrib

    def restore_passed(self, per_file: dict[str, dict[int, dict]]) -> None:
        """Take back what passed_by_scope() gave, as if every file had been resolved here."""
        self.adopt(per_file)
        for path, per_scope in per_file.items():
            self.set_contribution(path, _merge_contributions(per_scope))

    def knows_scopes(self, path: str) -> bool:
        """Whether path's argument values are known scope by scope (it was resolved here,
        or in a worker that sent them), so that some of its scopes can be resolved alone."""
        return path in self._scope_contrib

    def adopt(self, per_scope: dict[str, dict[int, dict]]) -> None:
        """Take the per-scope argument values of files another process resolved."""
        self._scope_contrib.update(per_scope)

    def scopes_reading(
        self, fn: tuple[str, int], stored: Collection[str] | None = None
    ) -> dict[str, set[int]]:
        """The scopes that can see fn's parameters, by file: fn and what it nests; for a
        method that stores on `self`, the scopes of its class, of its bases and of its
        subclasses too (an instance of a subclass is `self` in the methods its bases
        define): every one when stored is None, else those that read an attribute named
        in stored, or call a method that does, and so on, with what they nest (it sees
        their names)."""
        path, idx = fn
        out = {path: set(self._nested(path, idx))}
        if (stored is not None and not stored) or not self._receiver_attrs(fn):
            return out
        cls = (path, self.summaries[path].scopes[idx].parent)
        if stored is None:
            hits = set(self._class_tree(cls))
        else:
            by_name = self._class_tree_reads(cls)
            hits, todo, seen = set(), list(stored), set(stored)
            while todo:
                for hit in by_name.get(todo.pop(), ()):
                    if hit not in hits:
                        hits.add(hit)
                        # what `self.method()` now returns may differ
                        for name in self._names_up_to_class(*hit):
                            if name not in seen:
                                seen.add(name)
                                todo.append(name)
        for hit_path, hit_idx in hits:
            out.setdefault(hit_path, set()).update(self._nested(hit_path, hit_idx))
        return out

    def _class_tree(self, cls: tuple[str, int]) -> list[tuple[str, int]]:
        """The scopes of the classes an instance of cls can be `self` in: its bases,
        itself, its subclasses."""
        return [
            (cls_path, i)
            for cls_path, cls_idx in sorted({*self.mro(cls), *self.subclasses(cls)})
            for i in self._nested(cls_path, cls_idx)
        ]

    def _class_tree_reads(self, cls: tuple[str, int]) -> dict[str, list[tuple[str, int]]]:
        """Attribute name -> the scopes of _class_tree(cls) that read it."""
        found = self._tree_reads.get(cls)
        if found is None:
            found = self._tree_reads[cls] = defaultdict(list)
            for scope in self._class_tree(cls):
                for name in self._reads(*scope):
                    found[name].append(scope)
        return found

    def _reads(self, path: str, idx: int) -> frozenset[str]:
        """The attribute names scope idx reads or calls (on any object), its parameters'
        defaults included."""
        found = self._read_attrs.get((path, idx))
        if found is None:
            calls, attr_reads, _uses = self.bodies(path)[idx]
            names = {read[0][2] for read in attr_reads}
            names.update(site.func[2] for site in calls if site.func[0] == "a")
            for param in self.summaries[path].scopes[idx].params:
                _attribute_names(param.default, names)
            found = self._read_attrs[(path, idx)] = frozenset(names)
        return found

    def _names_up_to_class(self, path: str, idx: int) -> list[str]:
        """The names of scope idx and of the functions around it, up to a class."""
        scopes = self.summaries[path].scopes
        out = []
        while idx > 0 and scopes[idx].kind != "class":
            out.append(scopes[idx].name)
            idx = scopes[idx].parent
        return out

    def _nested(self, path: str, idx: int) -> list[int]:
        """Scope idx and every scope inside it, in order."""
        scopes = self.summaries[path].scopes
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

    def _receiver_attrs(self, method: tuple[str, int]) -> list[str]:
        """The names the method (or what it nests) sets on `self`: inst_attrs() reads only
        those. Empty for a function outside a class."""
        path, idx = method
        scopes = self.summaries[path].scopes
        parent = scopes[idx].parent
        if parent < 0 or scopes[parent].kind != "class" or not scopes[idx].params:
            return []
        receiver = ("n", scopes[idx].params[0].name)
        return sorted(
            {
                assign[1]
                for nested in self._with_nested(path, idx)
                for assign in scopes[nested].attr_assigns
                if assign[0] == receiver
            }
        )

    def property_names(self) -> frozenset[str]:
        """Names of every property getter in the repository: the reads worth resolving."""
        if self._property_names is None:
            self._property_names = frozenset().union(
                *(_property_names(self, path) for path in self.summaries)
            )
        return self._property_names

    def value_names(self) -> frozenset[str]:
        """The names a reference can be made through: those of functions and classes, and
        aliases of them (`h = f`, `self.cb = f`, two levels deep). Others are not worth
        evaluating."""
        if self._value_names is None:
            self._value_names = frozenset(_value_names(self.summaries.values(), frozenset()))
        return self._value_names

    def constant_names(self, path: str) -> frozenset[str]:
        names = self._constants.get(path)
        if names is None:
            names = self._constants[path] = frozenset(c[0] for c in self.summaries[path].constants)
        return names

    def constant_origin(self, path: str, idx: int, name: str) -> tuple[str, str] | None:
        """Where the module constant a name read in scope idx comes from, if it is one."""
        scopes = self.summaries[path].scopes
        cur = idx
        while cur >= 0:
            scope = scopes[cur]
            if (cur == idx or scope.kind != "class") and (
                name in self.names(path, cur) or (cur == 0 and scope.star_imports)
            ):
                return self.module_constant(path, name) if cur == 0 else None
            if name in scope.global_names:
                return self.module_constant(path, name)
            cur = scope.parent
        return None

    def module_constant(self, path: str, name: str, depth: int = 0) -> tuple[str, str] | None:
        """The module constant `name` of module path is, through imports and re-exports."""
        if depth > 8 or path not in self.summaries:
            return None
        if name in self.constant_names(path):
            return (path, name)
        module = self.summaries[path].scopes[0]
        for binding in self.names(path, 0).get(name, ()):
            value = binding.value
            if value[0] == "if":
                target = self.modules.resolve(value[1], value[2], path)
                if target is not None:
                    return self.module_constant(target, value[3], depth + 1)
        if name not in self.names(path, 0):
            for star, level, _pos in module.star_imports:
                target = self.modules.resolve(star, level, path)
                found = self.module_constant(target, name, depth + 1) if target else None
                if found is not None:
                    return found
        return None

    def setting_definitions(self) -> dict[str, list[str]]:
        """Setting name -> the constants that define it in the repository's settings modules."""
        if self._setting_defs is None:
            defs: dict[str, list[str]] = defaultdict(list)
            for path in sorted(self.summaries):
                if is_settings_module(path) and not is_test_path(path):
                    for name in sorted(self.constant_names(path)):
                        defs[name].append(f"{path}:{name}")
            self._setting_defs = dict(defs)
        return self._setting_defs

    def _resolve_property_reads(
        self, path: str, idx: int, attr_reads: Sequence[tuple], facts: FileFacts
    ) -> None:
        wanted = self.property_names()
        for expr, span, pos, blocks in attr_reads:
            if expr[2] not in wanted:
                continue
            implicit: list[Value] = []
            ctx = Ctx(path, idx, pos, blocks, implicit)
            self.attribute(self.eval(expr[1], ctx), expr[2], ctx)
            for fn in implicit:
                target = ("f", fn[1], fn[2])
                facts.calls.setdefault((idx, "property"), set()).add(target)
                facts.sites[(idx, target)].append(span)

    def _record_import(self, path: str, value: Expr, facts: FileFacts) -> None:
        tag = value[0]
        if tag == "if":
            module, level, name = value[1], value[2], value[3]
            target = self.modules.resolve(module, level, path)
            if target is None:
                return
            sub = self.modules.submodule(target, name)
            defined_here = target in self.summaries and self.names(target, 0).get(name)
            if sub is not None and sub in self.summaries and not defined_here:
                facts.imports.add(sub)
            elif target in self.summaries:
                facts.imports.add(target)
            return
        dotted = value[1]
        target = self.modules.resolve(dotted, value[2], path)
        if target is not None and target in self.summaries:
            facts.imports.add(target)

    def _resolve_site(
        self,
        path: str,
        idx: int,
        site: CallSite,
        facts: FileFacts,
        counts: list[int],
        contrib: dict,
    ) -> None:
        implicit: list[Value] = []
        ctx = Ctx(path, idx, site.pos, site.blocks, implicit)
        callees = self.eval(site.func, ctx)
        if site.kind in _PROTOCOLS or site.kind == "raise":
            self._resolve_implicit(idx, site, callees, ctx, facts, counts)
            return
        if site.kind == "decorator":
            dense.decorator_reference(self, path, idx, site, callees, facts)
        elif any(v[0] == "x" for v in callees):
            dense.external_call(self, path, idx, site, callees, facts)
        targets = self.call_targets(callees, (path, idx))
        for fn in implicit:
            targets.append((("f", fn[1], fn[2]), None, True))
        for fn in self._callbacks(callees, site, ctx):
            targets.append((fn, None, False))
        for fn in self._special_methods(callees, site, ctx):
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
                    EMPTY if a[0] == "*" else _interesting(self.eval(a, arg_ctx)) for a in site.args
                ]
            self._flow_args(receiver, bound, site, arg_values, arg_ctx, contrib)

    def _resolve_implicit(
        self, idx: int, site: CallSite, values: Values, ctx: Ctx, facts: FileFacts, counts: list
    ) -> None:
        """`raise E` calls the class E; `for`/`with` call the protocol methods of instances.
        Counted as call sites only when they reach repository code."""
        if site.kind == "raise":
            classes = frozenset(v for v in values if v[0] == "c")
            targets = {t for t, _receiver, _bound in self.call_targets(classes)}
        else:
            opener, closer = _PROTOCOLS[site.kind]
            targets = set()
            for v in values:
                if v[0] not in ("i", "I"):
                    continue
                opened = self.attribute(frozenset({v}), opener, ctx)
                targets |= {("f", fn[1], fn[2]) for fn in opened if fn[0] in ("f", "b")}
                if site.kind in ("with", "awith"):
                    on = frozenset({v})
                else:
                    on = self.instances(self.call_result(opened, ("c", UNKNOWN, (), ()), ctx))
                closed = self.attribute(on, closer, ctx) if on else EMPTY
                targets |= {("f", fn[1], fn[2]) for fn in closed if fn[0] in ("f", "b")}
        if not targets:
            return
        counts[0] += 1
        for target in targets:
            facts.calls.setdefault((idx, "call"), set()).add(target)
            facts.sites[(idx, target)].append(site.span)

    def _callbacks(self, callees: Values, site: CallSite, ctx: Ctx) -> list[Value]:
        """The functions `map(f, xs)`, `sorted(xs, key=f)` and the like call."""
        out: list[Value] = []
        for v in callees:
            if v[0] != "x" or v[1] not in _CALLBACK_CALLERS:
                continue
            keyword = _CALLBACK_CALLERS[v[1]]
            if keyword is None:
                handed = [a for a in site.args if a[0] != "*"]
            else:
                handed = [e for k, e in site.kwargs if k == keyword]
            for expr in handed:
                for fn, _receiver, _bound in self.call_targets(self.eval(expr, ctx)):
                    out.append(fn)
        return out

    def _special_methods(self, callees: Values, site: CallSite, ctx: Ctx) -> set[Value]:
        """The `__str__`, `__len__`, ... of repository classes that `str(x)`, `len(x)`,
        `print(x)` and the like run (see _DUNDER_CALLERS)."""
        out: set[Value] = set()
        for v in callees:
            if v[0] != "x" or v[1] not in _DUNDER_CALLERS:
                continue
            method, count = _DUNDER_CALLERS[v[1]]
            for expr in [a for a in site.args if a[0] != "*"][:count]:
                for inst in self.eval(expr, ctx):
                    if inst[0] in ("i", "I"):
                        found = self.attribute(frozenset({inst}), method, ctx)
                        out |= {("f", fn[1], fn[2]) for fn in found if fn[0] in ("f", "b")}
        return out

    def _flow_args(
        self,
        fn: tuple[str, int],
        bound: bool,
        site: CallSite,
        arg_values: list[Values],
        ctx: Ctx,
        contrib: dict,
    ) -> None:
        params = self.scope(*fn).params
        positional = [p for p in params if p.kind in ("pos", "posonly")]
        if bound and positional:
            positional = positional[1:]
        star = next((p for p in params if p.kind == "star"), None)
        for i, values in enumerate(arg_values):
            if site.args[i][0] == "*":
                # `f(*args)`: any element may land in any later position
                spread = _interesting(self.elements(self.eval(site.args[i][1], ctx)))
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
                for d in self.eval(expr, ctx):
                    if d[0] == "D":
                        keyed.extend((k, _interesting(v)) for k, v in d[1] if k != "*")
            elif name in by_name or starstar is not None:
                keyed.append((name, _interesting(self.eval(expr, ctx))))
        for name, values in keyed:
            if not values:
                continue
            param = by_name.get(name)
            if param is not None:
                contrib[fn][param.name] |= values
            elif starstar is not None:
                contrib[fn][starstar.name].add(("D", ((name, values),)))

    def set_contribution(self, path: str, contrib: dict) -> set[tuple[str, int]]:
        """Record the argument values one file passes; returns functions whose facts changed."""
        old = self._contrib.get(path, {})
        new = {fn: {k: set(v) for k, v in ps.items()} for fn, ps in contrib.items()}
        self._contrib[path] = new
        named = _named_paths(new)
        for gone in self._named.get(path, set()) - named:
            self._passers[gone].discard(path)
        for added in named - self._named.get(path, set()):
            self._passers[added].add(path)
        self._named[path] = named
        changed = {fn for fn in set(old) | set(new) if old.get(fn) != new.get(fn)}
        for fn in changed:
            sources = self._contrib_by_fn[fn]
            if fn in new:
                sources[path] = new[fn]
            else:
                sources.pop(path, None)
            merged: dict[str, set[Value]] = defaultdict(set)
            for params in sources.values():
                for name, values in params.items():
                    merged[name] |= values
            if merged:
                self.param_facts[fn] = merged
            else:
                self.param_facts.pop(fn, None)
                self._contrib_by_fn.pop(fn, None)
            mine_before, mine_now = old.get(fn, {}), new.get(fn, {})
            if any(not vals <= mine_now.get(name, set()) for name, vals in mine_before.items()):
                self.shrunk.add(
                    fn
                )  # this file stopped passing something: it may live on in a cycle
        return changed

    def results_changed(
        self,
        fns: set[tuple[str, int]],
        before: dict[tuple[str, int], dict[str, set[Value]]],
        evaluated: Callable[[], dict | None] | None = None,
    ) -> tuple[set[tuple[str, int]], dict[tuple[str, int], set[str]]]:
        """Of fns (whose argument facts changed since `before`, a copy of param_facts),
        those whose callers read something new of them (what they return or yield, or
        the attributes a method sets on `self`: a constructor keeps its arguments), and
        of those the methods whose attributes changed, with the names of those.

        Both sides are results(fns), from empty caches in one order, so a cycle cut short
        cuts both alike; evaluated gives the side before (a worker that still had those
        facts evaluated it), else it is evaluated here."""
        after = self.results(fns)
        prior = evaluated() if evaluated is not None else None
        if prior is None:
            now = {fn: self.param_facts.get(fn) for fn in fns}
            _put_facts(self.param_facts, {fn: before.get(fn) for fn in fns})
            try:
                prior = self.results(fns)
            finally:
                _put_facts(self.param_facts, now)
        self.forget_values()
        changed = {fn for fn in after if prior[fn] != after[fn]}
        storing: dict[tuple[str, int], set[str]] = {}
        for fn in changed:
            old, new = prior[fn][2], after[fn][2]
            if old != new:
                names = self._receiver_attrs(fn)
                if isinstance(old, tuple) and isinstance(new, tuple):  # else it failed
                    names = [n for n, a, b in zip(names, old, new, strict=True) if a != b]
                storing[fn] = set(names)
        return changed, storing

    def results(self, fns: Iterable[tuple[str, int]]) -> dict[tuple[str, int], tuple]:
        """What a caller can read of each of fns (see results_changed), in one order."""
        self.forget_values()
        out: dict[tuple[str, int], tuple] = {}
        for fn in sorted(fn for fn in fns if fn[0] in self.summaries):
            cls = (fn[0], self.scope(*fn).parent)
            try:
                attrs = tuple(
                    self._with_bases(self._instance_attr(cls, n)[0])
                    for n in self._receiver_attrs(fn)
                )
                out[fn] = (
                    self._with_bases(self.returns(fn)),
                    self._with_bases(self.yields(fn)),
                    attrs,
                )
            except Exception:  # a binder bug (or a chain too deep) costs a wider round only
                out[fn] = (EMPTY, EMPTY, object())  # unequal to the other side's: changed
        return out

    def _with_bases(self, values: Values) -> tuple[Values, frozenset]:
        """values, and the bases of each class among them (or of its instances): a class
        defined in a function can take its bases from the function's parameters."""
        return values, frozenset(
            (v, tuple(self.mro((v[1], v[2])))) for v in values if v[0] in ("c", "i", "I")
        )

    def retract(self, fns: set[tuple[str, int]]) -> set[str]:
        """Delete and re-derive: drop every argument fact that flowed on through the
        parameters of fns (so a cycle cannot keep a fact alive after its origin went);
        returns the files to resolve again."""
        todo = list(fns)
        seen = set(fns)
        files: set[str] = set()
        while todo:
            fn = todo.pop()
            if fn[0] not in self.summaries:
                continue
            for path, readers in self.scopes_reading(fn).items():
                per_scope = self._scope_contrib.get(path, {})
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
        for path in files:
            self.set_contribution(path, _merge_contributions(self._scope_contrib[path]))
        self.shrunk.clear()
        self.forget_values()
        return files

    def renumber(self, path: str, numbers: dict[int, int]) -> None:
        """path's scopes moved (old index -> new): rename every argument fact naming them."""
        if self._tables is not None:
            self._tables.renumber(path, numbers)
        self._contrib = {
            src: renumbered(contrib, path, numbers) for src, contrib in self._contrib.items()
        }
        self._scope_contrib = {
            src: {idx: renumbered(c, path, numbers) for idx, c in per_scope.items()}
            for src, per_scope in self._scope_contrib.items()
            if src != path  # path itself is resolved again from scratch
        }
        self._contrib_by_fn = defaultdict(dict)
        self.param_facts.clear()
        for src, contrib in self._contrib.items():
            for fn, params in contrib.items():
                self._contrib_by_fn[fn][src] = params
                merged = self.param_facts[fn]
                for name, values in params.items():
                    merged[name] |= values
        self.clear_caches()

    def passers(self, path: str) -> list[str]:
        """The files whose argument facts name a scope of path (a function receiving the
        arguments, or a value passed), sorted."""
        return sorted(self._passers.get(path, ()))

    def forget_contribution(self, path: str) -> set[tuple[str, int]]:
        return self.set_contribution(path, {})


def _set_keys(added: Expr) -> list[str]:
    """The constant keys a dict display sets."""
    if added[0] != "d":
        return []
    return [_dict_key(k[1]) for k, _v in added[1] if k[0] == "k"]


def _without_keys(values: Values, keys: dict[str, int] | set[str]) -> Values:
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


def _dict_key(key: str | int) -> str:
    """A constant dict key as the binder's dict values hold it (str keys double as keyword
    names for `f(**d)`; an int key never matches a str one)."""
    return key if isinstance(key, str) else f"#{key}"


def _may_be_callable(value: Expr) -> bool:
    """`self.x = self.method`, `= lambda ...`: a stored function, by syntax (`self.x = x`
    is mostly data, and in __init__ of most classes: each such name would make every
    `self.x` read walk the subclasses)."""
    return value[0] == "f" or (value[0] == "a" and value[1][0] == "n")


def _nested_in(scopes: Sequence[Scope], idx: int, outer: int) -> bool:
    while idx > outer:
        idx = scopes[idx].parent
    return idx == outer


def _put_facts(
    param_facts: dict[tuple[str, int], dict[str, set[Value]]],
    facts: dict[tuple[str, int], dict[str, set[Value]] | None],
) -> None:
    for fn, params in facts.items():
        if params is None:
            param_facts.pop(fn, None)
        else:
            param_facts[fn] = params


def _merge_contributions(per_scope: dict[int, dict]) -> dict:
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
    ("f", path, index), at any depth."""
    out: set[str] = set()
    for fn, params in contrib.items():
        out.add(fn[0])
        for values in params.values():
            for value in values:
                out |= _value_paths(value)
    return out


@functools.lru_cache(maxsize=1 << 16)
def _value_paths(value: object) -> frozenset[str]:
    """The files one value names, at any depth (cached: the same nested values are passed
    from file after file, and walking them took 1.5 s of a stdlib build)."""
    if isinstance(value, tuple):
        if len(value) == 3 and isinstance(value[2], int) and isinstance(value[1], str):
            return frozenset((value[1],))
        return frozenset().union(
            *(_value_paths(v) for v in value if isinstance(v, tuple | frozenset))
        )
    if isinstance(value, frozenset):
        return frozenset().union(*map(_value_paths, value))
    return EMPTY


def _class_changes(
    before: Share | None, after: Share | None
) -> Iterable[tuple[set[str], set[tuple[str, int]]]]:
    """(names, bases) of each class whose body bindings or bases differ: the names
    added or removed (all of them when the bases changed) and its bases, old and new."""
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
            yield old_names | new_names, old_bases | new_bases
        elif old_names != new_names:
            yield old_names ^ new_names, new_bases


def _property_names(binder: Binder, path: str) -> frozenset[str]:
    return frozenset(
        scope.name
        for i, scope in enumerate(binder.summaries[path].scopes)
        if scope.decorators
        and scope.kind == "function"
        and binder.method_kind(path, i) == "property"
    )


def _plain(contrib: dict) -> dict:
    """Argument values without the defaultdicts: their factories cannot be pickled, and
    another process may resolve a share of the files."""
    return {fn: dict(params) for fn, params in contrib.items()}


def _is_accessor_variant(scope: Scope, name: str) -> bool:
    return any(decorator_name(d) in (f"{name}.setter", f"{name}.deleter") for d in scope.decorators)


def _attribute_names(expr: object, out: set[str]) -> None:
    """The names of the attributes read in expr."""
    if isinstance(expr, tuple) and expr:
        if expr[0] == "a":
            out.add(expr[2])
        for part in expr[1:] if isinstance(expr[0], str) else expr:
            _attribute_names(part, out)


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


def _literal_items(expr: Expr) -> tuple[Expr, ...] | None:
    """The items of a tuple/list display, following constant unpacking indexes."""
    if expr[0] == "l" and all(item[0] != "*" for item in expr[1]):
        return expr[1]
    if expr[0] == "ix":
        outer = _literal_items(expr[1])
        if outer is not None and -len(outer) <= expr[2] < len(outer):
            return _literal_items(outer[expr[2]])
    return None


def _interesting(values: Values) -> Values:
    """Values worth carrying into a parameter: repository things, not externals."""
    return frozenset(v for v in values if v[0] != "x")


def _defined_once(names: dict[str, list[Binding]], name: str) -> bool:
    """Whether a scope binds name once, to a definition of its own (a nested def)."""
    bound = names.get(name, ())
    return len(bound) == 1 and bound[0].value[0] == "f"


def _cap(values: set[Value] | Values) -> Values:
    if len(values) > _MAX_VALUES:
        return frozenset(sorted(values, key=repr)[:_MAX_VALUES])
    return frozenset(values)


def _value_names(summaries: Iterable[FileSummary], known: frozenset[str]) -> set[str]:
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
