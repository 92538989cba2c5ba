"""The binder's state: the program (summaries, module table), the argument facts that
flow between files, the class tables, and every cache the binder keeps.

It owns what is remembered and when it is forgotten (a file put, dropped, or the
argument facts changed); what is worked out lives in the modules of plain functions
beside it (lookup, evaluate, classes, sites, flow), which read and fill these caches.
It never reads files and never evaluates anything itself: the three queries the lower
modules need from the upper ones (eval, returns, param_values) are declared here and
provided by anchor_ls.index.binder.Binder.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from anchor_ls.index.bind.definitions import (
    is_settings_module,
    property_names_in,
    value_names_in,
)
from anchor_ls.index.bind.memo import Memo, first_item, first_of_first, whole
from anchor_ls.index.modules import ModuleTable
from anchor_ls.index.mro import Linearization
from anchor_ls.index.state import Ctx, Value, Values
from anchor_ls.syntax.summary import (
    Binding,
    Body,
    Expr,
    FileSummary,
    Param,
    Scope,
    pack_bodies,
    scope_bodies,
)

ScopeRef = tuple[str, int]  # (relpath, scope index)


class Share(NamedTuple):
    """What one file's classes add to the class tables."""

    definers: list[tuple[str, ScopeRef]]  # (name, class whose body binds it)
    bases: list[tuple[ScopeRef, ScopeRef]]  # (base, subclass)
    hosts: list[tuple[ScopeRef, ScopeRef]]  # (module function, class binding it)
    stores: list[tuple[str, ScopeRef]]  # (name, class whose methods store self.name)


class ClassTables:
    """Repository-wide tables read off class definitions, kept per file.

    Which classes bind a name, which store `self.name = ...` in their methods, which
    classes subclass which, and which module functions class bodies bind as methods: each
    is the union of every file's share. An edit that changes a file's definitions
    replaces that file's share (and those of the files that name it) instead of
    rescanning the repository, which costs a few hundred milliseconds on Django.
    (anchor_ls.index.bind.classes fills them.)
    """

    def __init__(self) -> None:
        self.shares: dict[str, Share] = {}
        # file -> the other files whose shares name its classes or functions (a base, a
        # function bound as a method): the shares a renumbering of it rewrites
        self._naming: dict[str, set[str]] = defaultdict(set)
        self._empty()

    def _empty(self) -> None:
        self.definers: dict[str, set[ScopeRef]] = defaultdict(set)
        self.subclasses: dict[ScopeRef, set[ScopeRef]] = defaultdict(set)
        self.hosts: dict[ScopeRef, set[ScopeRef]] = defaultdict(set)
        self.storers: dict[str, set[ScopeRef]] = defaultdict(set)

    def put(self, path: str, share: Share | None) -> None:
        """Replace path's share (None: the file is gone)."""
        old = self.shares.pop(path, None)
        if old is not None:
            self._apply(old, set.discard)
            for named in _named_files(path, old):
                self._naming[named].discard(path)
        if share is not None:
            self.shares[path] = share
            self._apply(share, set.add)
            for named in _named_files(path, share):
                self._naming[named].add(path)

    def _apply(self, share: Share, op: Callable[[set, ScopeRef], None]) -> None:
        for name, cls in share.definers:
            op(self.definers[name], cls)
        for base, sub in share.bases:
            op(self.subclasses[base], sub)
        for fn, cls in share.hosts:
            op(self.hosts[fn], cls)
        for name, cls in share.stores:
            op(self.storers[name], cls)

    def renumber(self, path: str, numbers: dict[int, int]) -> None:
        """path's scopes moved (old index -> new); its own share moves with them until
        it is put again once the file is read, and that compares the two: dropped, every
        class of path counted as changed, and the files of all their ancestors were
        resolved again (with no baseline: a def added above others in
        django/db/models/fields/__init__.py resolved the whole repository again). Only the
        entries of other shares that name path's scopes (a base, a function bound as a
        method) are rewritten: rebuilding every table took 1-4 s of an edit on Django."""

        def moved(ref: ScopeRef) -> ScopeRef:
            return (path, numbers.get(ref[1], ref[1])) if ref[0] == path else ref

        own = self.shares.get(path)
        self.put(path, None)
        if own is not None:
            self.put(
                path,
                Share(
                    [(name, moved(cls)) for name, cls in own.definers],
                    [(moved(base), moved(sub)) for base, sub in own.bases],
                    [(moved(fn), moved(cls)) for fn, cls in own.hosts],
                    [(name, moved(cls)) for name, cls in own.stores],
                ),
            )
        for p in sorted(self._naming.get(path, ())):
            share = self.shares[p]
            for base, sub in share.bases:
                if base[0] == path:
                    self.subclasses[base].discard(sub)
            for fn, cls in share.hosts:
                if fn[0] == path:
                    self.hosts[fn].discard(cls)
            bases = [(moved(base), sub) for base, sub in share.bases]
            hosts = [(moved(fn), cls) for fn, cls in share.hosts]
            for base, sub in bases:
                self.subclasses[base].add(sub)
            for fn, cls in hosts:
                self.hosts[fn].add(cls)
            self.shares[p] = share._replace(bases=bases, hosts=hosts)


def _named_files(path: str, share: Share) -> set[str]:
    """The files other than path whose scopes a share of path names: only its bases and
    the functions its classes bind can be another file's (see ClassTables.renumber)."""
    refs = [base for base, _sub in share.bases] + [fn for fn, _cls in share.hosts]
    return {ref[0] for ref in refs if ref[0] != path}


class Caches:
    """Every memo of the binder, by what it is read off and so when it is forgotten."""

    __slots__ = (
        "aliases",
        "binding_values",
        "body_bound",
        "children",
        "class_attrs",
        "container_items",
        "decorated",
        "handed",
        "inst_attrs",
        "instance_attrs",
        "lookups",
        "module_attrs",
        "mro",
        "mro_found",
        "mutating",
        "mutations",
        "name_tables",
        "outer",
        "outside_lines",
        "overrides",
        "read_attrs",
        "read_elsewhere",
        "returned",
        "returns",
        "subclass_tree_sizes",
        "subclasses",
        "super_below",
        "tree_reads",
        "yields",
    )

    def __init__(self) -> None:
        # Read off the summaries alone: only a changed file changes them.
        self.name_tables: Memo[str, list] = Memo(whole, guard=False)  # per scope: name -> bindings
        self.children: Memo[str, list[list[int]]] = Memo(whole, guard=False)
        self.mutations: Memo[str, dict[tuple[int, str], list]] = Memo(whole, guard=False)
        self.handed: Memo[str, frozenset[str]] = Memo(whole, guard=False)
        self.inst_attrs: Memo[ScopeRef, dict[str, list]] = Memo(first_item, guard=False)
        self.returned: Memo[ScopeRef, tuple[Param, tuple[Expr, ...]] | None] = Memo(first_item)
        self.subclasses: Memo[ScopeRef, frozenset[ScopeRef]] = Memo(guard=False)
        # Read off bodies, for the scopes of whole class trees: kept from round to round
        # (each round asks for most of them again), dropped with the build's other caches.
        self.read_attrs: Memo[ScopeRef, frozenset[str]] = Memo(first_item, guard=False)
        self.read_elsewhere: Memo[ScopeRef, frozenset[str]] = Memo(first_item, guard=False)
        self.tree_reads: Memo[ScopeRef, dict[str, list[ScopeRef]]] = Memo(guard=False)
        self.forget_values()

    def forget_values(self) -> None:
        """Drop what was evaluated: new argument facts can change any of it."""
        self.outer: Memo[tuple[str, int, str], Values] = Memo(first_item, guard=False)
        self.lookups: Memo[tuple, Values] = Memo(first_item, guard=False)
        self.binding_values: Memo[int, tuple[Binding | None, Values]] = Memo()
        self.returns: Memo[ScopeRef, Values] = Memo(first_item)
        self.yields: Memo[ScopeRef, Values] = Memo(first_item)
        self.mro: Memo[ScopeRef, Linearization[ScopeRef]] = Memo(first_item)
        # an MRO with the bases from outside the repository in it (classes.outside_line)
        self.outside_lines: Memo[ScopeRef, tuple] = Memo(first_item)
        self.mro_found: Memo[tuple[Linearization, tuple], object] = Memo(guard=False)
        self.body_bound: Memo[str, bool] = Memo(guard=False)
        self.module_attrs: Memo[tuple[str, str], Values] = Memo(first_item)
        self.mutating: set[tuple[str, int, str]] = set()  # names whose mutations are read
        # A read of `self.name` met while the instance attribute or the overrides of the
        # same (class, name) are worked out is cut, whichever of the two it is.
        attributes: set = set()
        self.instance_attrs: Memo[tuple[ScopeRef, str], tuple[Values, tuple]] = Memo(
            first_of_first, attributes
        )
        self.overrides: Memo[tuple[ScopeRef, str], Values] = Memo(None, attributes)
        self.class_attrs: Memo[tuple, Values] = Memo(first_of_first, guard=False)
        # `super().name` in a mixin: what its subclasses' MROs put after it (classes._below),
        # by (mixin, name); `super(cls, self).name` in a subclass of cls (classes._skipping),
        # by (subclass, cls, name)
        self.super_below: Memo[tuple, Values] = Memo(first_of_first, guard=False)
        self.subclass_tree_sizes: Memo[ScopeRef, int | None] = Memo(guard=False)
        self.decorated: Memo[tuple[str, int, int], tuple[Values, Values | None]] = Memo(guard=False)
        # what iterating and indexing an instance gives when its class derives `list[T]`
        self.container_items: Memo[ScopeRef, tuple[Values, Values]] = Memo(first_item)
        self.aliases: Memo[tuple[str, str], Values] = Memo(first_item)  # (module, type alias)

    def forget_file(self, path: str, same_interface: bool) -> None:
        """path was put again: forget what was read off it. Other files' answers stay
        when what they can see of it is unchanged (same_interface: an edit inside a
        body); after a warm start they fill tens of thousands of entries, 18 ms to drop
        for Django."""
        for memo in (
            self.name_tables,
            self.children,
            self.mutations,
            self.handed,
            self.inst_attrs,
            self.returned,
            self.read_attrs,
            self.read_elsewhere,
            self.tree_reads,
            self.mro_found,  # found by what class bodies bind
            self.body_bound,
        ):
            memo.forget_file(path)
        if not same_interface:
            self.subclasses.forget_file(path)
            self.forget_values()
            return
        for memo in (
            self.outer,
            self.lookups,
            self.module_attrs,
            self.returns,
            self.yields,
            self.mro,
            self.outside_lines,
            self.instance_attrs,
            self.class_attrs,
            self.super_below,
            self.container_items,
            self.aliases,
        ):
            memo.forget_file(path)


class BinderState:
    """The state of one binder (see the module docstring)."""

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
        # Resolve only what can reach a function of these names (None: everything): a
        # glimpse of who calls it (index/glimpse.py) needs no other callee (sites.want)
        self.wanted: frozenset[str] | None = None
        self.wanted_in: dict[str, frozenset[str]] = {}  # and the names a file binds to them
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
        self.caches.forget_file(path, same_interface)

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
        self.constants.pop(relpath)
        self._setting_defs = None
        # its share of the class tables stays until refresh_classes() takes it out: what
        # the file's classes were is what tells which ancestors dispatch differently now

    def clear_caches(self) -> None:
        self.caches = Caches()

    def forget_values(self) -> None:
        """Drop what was evaluated: new argument facts can change any of it."""
        self.caches.forget_values()

    def _forget_definitions_of(self, summary: FileSummary, same_interface: bool) -> None:
        """One file changed: update the tables read off every summary (rebuilding them
        costs a scan of the whole repository, too slow for every keystroke)."""
        path = summary.path
        self.constants.pop(path)
        if is_settings_module(path):
            self._setting_defs = None
        # Other classes, bases or class bodies now: refresh_classes() puts the file's
        # share of the class tables. The name filters below may keep a superset (right,
        # only slower).
        if not same_interface and self._property_names is not None:
            self._property_names |= property_names_in(self.summaries[path])
        if self._value_names is not None:
            added = value_names_in([summary], self._value_names) - self._value_names
            if added:
                self._value_names = self._value_names | added

    def _forget_definitions(self) -> None:
        """Tables read off every summary; a body edit can define nested functions too."""
        self._value_names: frozenset[str] | None = None
        self.constants: Memo[str, frozenset[str]] = Memo(whole, guard=False)
        self._setting_defs: dict[str, list[str]] | None = None
        # Read off class bases and bodies, and decorators: argument facts cannot change them.
        self._tables: ClassTables | None = None
        self._property_names: frozenset[str] | None = None

    # ----- scopes and names ---------------------------------------------
    def scope(self, path: str, idx: int) -> Scope:
        return self.summaries[path].scopes[idx]

    # ----- queries of the modules above (see anchor_ls.index.binder.Binder) ----------
    def eval(self, expr: Expr, ctx: Ctx) -> Values:
        """The values expr may have at ctx (anchor_ls.index.bind.evaluate.eval)."""
        raise NotImplementedError

    def returns(self, fn: tuple[str, int]) -> Values:
        """What a call of fn gives (anchor_ls.index.bind.evaluate.returns)."""
        raise NotImplementedError

    def param_values(self, path: str, idx: int, index: int) -> Values:
        """The values a parameter holds (anchor_ls.index.bind.evaluate.param_values)."""
        raise NotImplementedError
