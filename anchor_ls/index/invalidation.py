"""What an edit of one file makes stale: the files that may now resolve differently,
the argument facts that name scopes gone or moved, the class tables to refresh.

A part of Index (its base class): the methods work on the index's state, and leave the
resolving to Index._reresolve.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from anchor_ls.index import facts as factlib
from anchor_ls.index.bind.flow import moved_contribution
from anchor_ls.index.binder import Binder
from anchor_ls.index.bodies import BodyEdit, body_edit
from anchor_ls.index.interface import (
    binds_module,
    interface_items,
    layout,
    names_scope,
    renumbering,
)
from anchor_ls.index.model import CALLS, IMPORTS, INHERITS, Entity, Graph, path_of
from anchor_ls.index.roots import states_a_root
from anchor_ls.index.sources import Sources
from anchor_ls.index.state import FileFacts
from anchor_ls.syntax.parse import has_word, may_mention, words_sketch
from anchor_ls.syntax.reparse import Reparser
from anchor_ls.syntax.summary import Body, FileSummary


class Of(NamedTuple):
    """What one file imports of one module (by the last part of its name, as the import
    bindings hold it), worked out once per summary: a walk through re-exports asks it of
    hundreds of importers at each edit of a much-imported file (django/db/models/query.py:
    723, 50 ms a time before)."""

    whole: bool  # the module itself or `*` of it: every name
    names: frozenset[str]  # the names a from-import of it takes
    passes_all: bool  # its names are the importer's module scope's too (`*` at the top)
    passes: tuple[tuple[str, str], ...]  # (bound, imported) of its top-level from-imports


@dataclass(frozen=True, slots=True)
class Imports:
    """What one file imports, as the walk through re-exports reads it."""

    stars: tuple[str, ...]  # modules star-imported (Python allows them at module level)
    values: tuple[tuple, ...]  # import binding values of every scope
    top_stars: tuple[str, ...]
    top_from: tuple[tuple[str, tuple], ...]  # (bound name, value) of module-level from-imports
    _of: dict[str, Of] = field(default_factory=dict)

    @classmethod
    def of(cls, summary: FileSummary) -> Imports:
        values = tuple(
            b.value
            for scope in summary.scopes
            for b in scope.bindings
            if b.value[0] in ("im", "ima", "if")
        )
        top = summary.scopes[0] if summary.scopes else None
        stars = tuple(star.module for scope in summary.scopes for star in scope.star_imports)
        return cls(
            stars,
            values,
            tuple(star.module for star in top.star_imports) if top else (),
            tuple((b.name, b.value) for b in top.bindings if b.value[0] == "if") if top else (),
        )

    def module(self, stem: str) -> Of:
        found = self._of.get(stem)
        if found is None:
            bound = [value for value in self.values if binds_module(value, stem)]
            found = self._of[stem] = Of(
                any(stem in star for star in self.stars)
                or any(value[0] != "if" or value[3] == stem for value in bound),
                frozenset(value[3] for value in bound if value[0] == "if"),
                any(stem in star for star in self.top_stars),
                tuple(
                    (name, value[3]) for name, value in self.top_from if binds_module(value, stem)
                ),
            )
        return found


class Invalidation:
    """The edit path of Index: _replace and _remove, and what they ask."""

    binder: Binder
    _graph: Graph
    _sources: Sources
    _reparser: Reparser
    _hashes: dict[str, str]
    _facts: dict[str, FileFacts]
    # file -> the files whose facts name its scopes (a superset: a file whose facts no
    # longer do costs a renumbering a look); None until a renumbering asks, and again
    # whenever _facts is replaced as a whole
    _fact_holders: dict[str, set[str]] | None
    _ids: dict[str, list[str]]
    _interface_memo: dict[str, list[tuple[FileSummary, set[tuple[str, str]]]]]
    _import_memo: dict[str, tuple[FileSummary, Imports]]

    def ensure_engine(self) -> None:
        raise NotImplementedError  # Index's

    def _reresolve(
        self,
        paths: set[str],
        edited: tuple[str, BodyEdit] | None = None,
        passed_before: dict[str, dict] | None = None,
        found_before: dict[str, FileFacts] | None = None,
        start: dict | None = None,
    ) -> set[str]:
        raise NotImplementedError  # Index's

    def _remove(self, relpath: str) -> set[str]:
        self.ensure_engine()
        if relpath not in self.binder.summaries:
            return set()
        dependents = self._dependents(relpath, ())
        if states_a_root(relpath):  # a source root less: any absolute import may move
            dependents |= set(self.binder.summaries)
        before = self._edge_files(relpath)
        self.binder.drop_file(relpath)
        dependents |= self._dispatching_into(relpath, {relpath} | dependents)
        grown = self.binder.forget_contribution(relpath)
        dependents |= self._forget_values_into(relpath)
        self._sources.pop(relpath)
        self._reparser.forget(relpath)
        self._hashes.pop(relpath, None)
        self._facts.pop(relpath, None)
        if self._fact_holders is not None:
            self._fact_holders.pop(relpath, None)
        self._ids.pop(relpath, None)
        self._interface_memo.pop(relpath, None)
        self._import_memo.pop(relpath, None)
        self._graph.drop_file(relpath)
        redo = (dependents | {fn[0] for fn in grown}) - {relpath}
        return {relpath} | before | self._reresolve(redo)

    def _replace(
        self,
        summary: FileSummary,
        bodies: Sequence[Body],
        edited: tuple[int, int, Sequence[int] | None, Sequence[int] | None] | None = None,
    ) -> set[str]:
        """summary: unpacked, with its bodies; edited: the first line changed, the lines
        added, the scopes walked again and the old ones they replace, for an edit of a file
        the index held (see bodies.body_edit)."""
        self.ensure_engine()
        rel = summary.path
        old = self.binder.summaries.get(rel)
        line, delta, walked, replaced = edited if edited else (0, 0, None, None)
        # what an importer would have to name to see a change
        names: set[bytes] | None = None
        interface_changed = True
        if old is not None:
            interface_changed, names = self._interface_change(old, summary, walked, replaced)
        dependents = set()
        if old is not None and interface_changed:
            changed = _owners({n.decode() for n in names}, old, summary) if names else None
            dependents = self._dependents(rel, _defined(summary) - _defined(old), changed)
        if old is None:
            dependents = self._all_importers_of_new(rel)
            # A module that now passes on names of rel (a package, a star import, a
            # from-import) changes what its importers resolve to.
            for module in sorted(dependents):
                passed = self._passes_on(module, rel, None)
                if passed is None or passed:
                    self._through_reexports(module, passed, dependents)
            dependents.discard(rel)
        numbers: dict[int, int] = {}
        gone: set[int] = set()
        if old is not None and interface_changed:
            numbers, gone = renumbering(layout(old), layout(summary))
        moves = any(i != j for i, j in numbers.items())
        # Scopes other than at the same index before: what rel's own scopes found moves
        # with them (a def inserted above others, or renamed), unless the edit only added
        # definitions after the others or removed the last ones.
        shared = min(len(old.scopes), len(summary.scopes)) if old is not None else 0
        in_place = not interface_changed or all(numbers.get(i) == i for i in range(shared))
        edit = None
        if edited and old and self.binder.knows_scopes(rel):
            unread = self._unread_changes(old, summary, names, numbers) if names else frozenset()
            if not interface_changed or unread:
                old_bodies = self.binder.bodies(rel)
                edit = body_edit(
                    old,
                    old_bodies,
                    summary,
                    bodies,
                    line,
                    delta,
                    walked,
                    unread,
                    None if in_place else numbers,
                )
        # What the files to resolve again pass as they stand, in the present argument facts:
        # an edit propagates only what it changes of that (see _reresolve). rel's is found
        # before its scopes move, while the binder's facts and its summary agree; resolved
        # whole, all of its scopes, and the values they cached are forgotten (a module
        # read half-way through its own package's import of it stayed so: the dependents
        # resolved next missed util.* calls on pytest, and the edit resolved afresh).
        # Without that baseline, what the file found past the build's last round flowed
        # on as a change: on pytest an import added to src/_pytest/mark/structures.py
        # passed the MockConfig _for_parametrize learns last to get_empty_parameterset_mark,
        # and the rounds settled with a call of MockConfig.getini no build has.
        passed_before: dict[str, dict] = {}
        if edit is not None and interface_changed:
            if gone:  # what a scope kept found of a scope gone it finds no more
                edit.redo |= {numbers[i] for i in self._naming(rel, gone) if i in numbers}
            was_at = {j: i for i, j in numbers.items()}
            passed = self.binder.passed_now(rel, {was_at[j] for j in edit.redo if j in was_at})
            passed_before[rel] = moved_contribution(passed, rel, numbers, gone)
        elif edit is not None:
            passed_before[rel] = self.binder.passed_now(
                rel, edit.redo & set(range(len(old.scopes)))
            )
        elif old is not None and self.binder.knows_scopes(rel):
            passed = self.binder.passed_now(rel, set(range(len(old.scopes))))
            self.binder.forget_values()
            passed_before[rel] = (
                moved_contribution(passed, rel, numbers, gone) if interface_changed else passed
            )
        passers: set[str] = set()
        keep: Callable[[str], bool] = bool
        if old is not None and interface_changed:
            passers = self.binder.passers(rel)
            # Only files that name what changed, or that link to a changed definition, can
            # now resolve differently (and star importers).
            if names is not None:
                changed = {n.decode() for n in names}
                linked = self._linking_into(rel, (CALLS, INHERITS), lambda e: e.name in changed)
                holders = self._holders(rel, changed)
                keep = lambda d: d in linked or self._mentions(d, names, holders)  # noqa: E731
        # What each dependent finds and passes as it stands (see rounds.reresolve): in the
        # argument facts before the edit drops those naming rel's scopes gone (that is a
        # change it makes), and before rel's scopes move, while the binder's facts and its
        # summary agree.
        found_before: dict[str, FileFacts] = {}
        wanted = dependents | (self._forgetting_into(rel, gone) if gone else set())
        named_gone = bool(gone) and self._values_naming(rel, gone)
        for dep in sorted(d for d in wanted if keep(d)):
            summary_of_dep = self.binder.summaries.get(dep)
            if summary_of_dep is not None and self.binder.knows_scopes(dep):
                scopes = set(range(len(summary_of_dep.scopes)))
                found_before[dep], passed_before[dep] = self.binder.resolve_file(
                    dep, scopes, FileFacts()
                )
        if gone:  # facts naming a removed scope are dropped
            dependents |= self._forget_values_into(rel, gone)
        dependents = {d for d in dependents if keep(d)}
        found_before = {d: found for d, found in found_before.items() if d in dependents}
        if old is not None and interface_changed and not in_place:
            # Definitions moved: the others' facts follow their scope to its new index.
            # Only what names rel's scopes is rewritten: walking every file's facts and
            # argument facts took 2-4 s of a def added above others on Django.
            self.binder.renumber(rel, numbers, passers, gone, keep_own=edit is not None)
            for holder in self._facts_naming(rel) if moves else ():
                self._facts[holder].renumber(rel, numbers)
            if rel in self._facts and edit is not None:  # what they found follows them
                self._facts[rel].move_scopes(numbers)
            if moves or gone:  # a scope gone is named by no facts found after the edit
                now = {i: -1 - i for i in gone} | numbers
                for dep, found in found_before.items():
                    found.renumber(rel, now)
                    passed_before[dep] = moved_contribution(passed_before[dep], rel, numbers, gone)
        before = self._edge_files(rel)
        self.binder.put_file(summary, same_interface=not interface_changed, bodies=bodies)
        if interface_changed:
            dependents |= self._dispatching_into(rel, {rel} | dependents)
        self._ids[rel] = factlib.scope_ids(summary)
        self._graph.replace_file_entities(rel, factlib.entities(summary, self._ids[rel]))
        # the argument facts before the edit, unless it dropped values naming a scope gone
        # (a def removed that nothing passed on leaves them as they were: test_mark.py)
        start = None if named_gone else dict(self.binder.param_facts)
        edited_now = (rel, edit) if edit else None
        changed = self._reresolve(
            {rel} | dependents, edited_now, passed_before, found_before, start
        )
        if not interface_changed:  # the same ids: other files' tags move only with edges
            return {rel} | changed
        return {rel} | before | changed

    def _facts_naming(self, rel: str) -> list[str]:
        """The files whose facts may name rel's scopes (read off every file's facts the
        first time, then kept as facts change: see _note_facts)."""
        if self._fact_holders is None:
            self._fact_holders = defaultdict(set)
            for holder, facts in self._facts.items():
                for named in facts.named_paths():
                    self._fact_holders[named].add(holder)
        return sorted(h for h in self._fact_holders.get(rel, ()) if h in self._facts)

    def _note_facts(self, rel: str) -> None:
        """rel's facts were replaced: it may name other files' scopes now."""
        if self._fact_holders is not None:
            for named in self._facts[rel].named_paths():
                self._fact_holders[named].add(rel)

    def _unread_changes(
        self, old: FileSummary, new: FileSummary, names: set[bytes], numbers: dict[int, int]
    ) -> frozenset[str]:
        """The names of the definitions an edit added or removed, above the others or
        after them, when that is all it changed of the file's interface and no other code
        of the file reads those names (a function typed into a file and called from
        nowhere yet, or deleted again); else empty. numbers: where each old scope is now.

        Such an edit changes nothing the file's other scopes resolve to: only the added
        definitions and the scopes that bind them need resolving (see body_edit)."""
        kept = list(numbers.values())
        added = sorted(set(range(len(new.scopes))).difference(kept))
        if (not added and len(kept) == len(old.scopes)) or kept != sorted(kept):
            return frozenset()
        source = self._sources.get(new.path, keep=False)
        if source is None or b"\r" in source:
            return frozenset()
        lines = source.split(b"\n")
        for scope in (new.scopes[i] for i in added):  # the added definitions' own text
            lines[scope.start_line - 1 : scope.end_line] = [b""] * (
                scope.end_line - scope.start_line + 1
            )
        rest = b"\n".join(lines)
        if any(has_word(rest, name) for name in names):
            return frozenset()
        return frozenset(name.decode() for name in names)

    def _naming(self, rel: str, gone: Container[int]) -> set[int]:
        """The scopes of rel whose facts or argument values name one of its scopes gone
        (a value passed in from another file, and on)."""
        out: set[int] = set()
        facts = self._facts.get(rel)
        if facts is not None:
            for table in (facts.calls, facts.bases, facts.outside_bases):
                for key, values in table.items():
                    if any(names_scope(v, rel, gone) for v in values):
                        out.add(key if isinstance(key, int) else key[0])
            for keyed in (facts.sites, facts.via, facts.refs):
                out.update(key[0] for key in keyed if names_scope(key[1], rel, gone))
        for idx, contrib in self.binder.passed_by_scope().get(rel, {}).items():
            if names_scope(contrib, rel, gone) or any(
                fn[0] == rel and fn[1] in gone for fn in contrib
            ):
                out.add(idx)
        return out

    def _interface_items_of(self, summary: FileSummary) -> set[tuple[str, str]]:
        """The interface items of a summary, kept for the last two of its file: the one
        the index holds and the one replacing it (the next edit compares them)."""
        kept = self._interface_memo.setdefault(summary.path, [])
        found = next((items for s, items in kept if s is summary), None)
        if found is None:
            found = interface_items(summary)
            kept[:] = [*kept[-1:], (summary, found)]
        return found

    def _interface_change(
        self,
        old: FileSummary,
        new: FileSummary,
        walked: Sequence[int] | None,
        replaced: Sequence[int] | None,
    ) -> tuple[bool, set[bytes] | None]:
        """Whether what other files can see of a file changed between two versions, and
        the names whose meaning differs (what an importer would have to write to see the
        difference; None when that cannot be told).

        After a splice (new scopes walked replacing old ones replaced, see syntax.reparse)
        only those are compared: every other scope only moved, and items name definitions
        by qualname, not by the index that moved."""
        if walked is not None and replaced is not None:
            items = interface_items(old, replaced) ^ interface_items(new, walked)
        else:
            items = self._interface_items_of(old) ^ self._interface_items_of(new)
        if old.all_names != new.all_names:
            return True, None
        names = {name.encode() for name, _ in items} or None
        return names is not None or layout(old) != layout(new), names

    def _dispatching_into(self, rel: str, changed: set[str]) -> set[str]:
        """Refresh the class tables of the changed files; the files of the ancestors of a
        changed class that name what changed (a `self.name` there may reach other
        overrides now)."""
        ancestors = self.binder.refresh_classes(changed)
        return {
            path
            for path, names in ancestors.items()
            if path != rel and self._mentions(path, {n.encode() for n in names})
        }

    def _holders(self, rel: str, names: set[str]) -> set[str]:
        """The modules whose namespace can hold rel's definitions named names (what
        `import *` of them brings): rel, the modules that import those names from a holder
        or import `*` from one, and so on."""
        resolve = self.binder.modules.resolve
        out, todo = {rel}, [rel]
        while todo:
            held = todo.pop()
            for importer in self._graph.into(IMPORTS, held):
                summary = self.binder.summaries.get(importer)
                if importer in out or summary is None:
                    continue
                top = summary.scopes[0]
                if any(
                    resolve(module, level, importer) == held
                    for module, level, _pos in top.star_imports
                ) or any(
                    b.value[0] == "if"
                    and b.value[3] in names
                    and resolve(b.value[1], b.value[2], importer) == held
                    for b in top.bindings
                ):
                    out.add(importer)
                    todo.append(importer)
        return out

    def _linking_into(
        self, rel: str, kinds: tuple[str, ...], keep: Callable[[Entity], bool] = bool
    ) -> set[str]:
        """Files with an edge of one of kinds into a definition of rel that keep accepts."""
        out: set[str] = set()
        for ent in self._graph.file_entities(rel):
            if keep(ent):
                for kind in kinds:
                    out.update(path_of(src) for src in self._graph.into(kind, ent.id))
        return out

    def _mentions(
        self, rel: str, names: set[bytes], star_from: Container[str] | None = None
    ) -> bool:
        """Whether rel's text has one of the words names, or it imports `*` (from one of
        the modules star_from, when given)."""
        summary = self.binder.summaries.get(rel)
        if summary is None:
            return True
        if any(  # Python allows `*` at module level only
            star_from is None or self.binder.modules.resolve(module, level, rel) in star_from
            for module, level, _pos in summary.scopes[0].star_imports
        ):
            return True
        source = None
        if not summary.words:  # an edit's summary: sketched when first asked
            source = self._sources.get(rel, keep=False)
            if source is None:
                return True
            summary.words = words_sketch(source)
        maybe = [name for name in names if may_mention(summary.words, name)]
        if not maybe:  # ruled out by the sketch of its words, without reading it
            return False
        source = source or self._sources.get(rel, keep=False)
        return source is None or any(has_word(source, name) for name in maybe)

    def _forgetting_into(self, rel: str, gone: Container[int]) -> set[str]:
        """The files _forget_values_into(rel, gone) may return (a superset), before it."""
        out: set[str] = set()
        for src in self.binder.passers(rel):
            for fn, params in self.binder.passed(src).items():
                if (fn[0] == rel and fn[1] in gone) or any(
                    names_scope(v, rel, gone) for values in params.values() for v in values
                ):
                    out.update((src, fn[0]))
        out.discard(rel)
        return out

    def _values_naming(self, rel: str, gone: Container[int]) -> bool:
        """Whether an argument value any file passes names a scope of rel in gone."""
        return any(
            names_scope(v, rel, gone)
            for src in self.binder.passers(rel)
            for params in self.binder.passed(src).values()
            for values in params.values()
            for v in values
        )

    def _forget_values_into(self, rel: str, gone: Container[int] | None = None) -> set[str]:
        """Drop the argument facts that name rel's scopes (those in gone; None: all of
        them), keeping every other fact.

        Binder values say (path, scope index); once rel's definitions go, those indices are
        stale (out of range, or another definition). Returns the files to resolve again:
        the ones that passed such values, and those whose parameters changed.
        """
        sources: set[str] = set()
        grown: set[tuple[str, int]] = set()
        for src in self.binder.passers(rel):
            contrib = self.binder._contrib.get(src, {})
            kept: dict[tuple[str, int], dict[str, set]] = {}
            stale = False
            for fn, params in contrib.items():
                if fn[0] == rel and (gone is None or fn[1] in gone):
                    stale = True
                    continue
                kept[fn] = {}
                for name, values in params.items():
                    fresh = {v for v in values if not names_scope(v, rel, gone)}
                    stale = stale or len(fresh) != len(values)
                    kept[fn][name] = fresh
            if stale:
                sources.add(src)
                grown |= self.binder.set_contribution(src, kept)
        return (sources | {fn[0] for fn in grown}) - {rel}

    def _edge_files(self, rel: str) -> set[str]:
        """Files holding the other end of any edge that touches rel."""
        out = {path_of(edge.dst) for edge in self._graph.file_edges(rel)}
        out |= self._linking_into(rel, (CALLS, INHERITS, IMPORTS))
        out.discard(rel)
        return out

    def _dependents(
        self, rel: str, added: set[str] | tuple[()], changed: frozenset[str] | None = None
    ) -> set[str]:
        """Files whose resolution may read rel's new interface: edges into it, importers
        (of the names that changed, when known: only the files that name them are resolved
        again, and following every importer of django/db/models/query.py through the
        modules that pass its names on took 10-40 ms of each new def there), and files
        with unresolved sites calling a name rel now defines and did not (added: a call
        through a value typed elsewhere, `current_app.make_response()` with `current_app:
        Flask` in another module, has no edge or import to follow once the class was gone,
        and a fresh build resolves it when the class is back)."""
        out = self._linking_into(rel, (CALLS, INHERITS))
        self._through_reexports(rel, changed, out)
        for name in sorted(added):
            out.update(self._graph.files_missing(name))
        out.discard(rel)
        return out

    def _through_reexports(self, module: str, names: frozenset[str] | None, out: set[str]) -> None:
        """Add to out the importers of module, and those of every module that passes on
        names of it (None: all of them): a package's __init__.py, a star import, or a
        `from module import name` that its own importers take in turn (compat.py's
        `from _pure import parse`, chains of star imports)."""
        todo = [(module, names)]
        followed: dict[str, frozenset[str] | None] = {}
        while todo:
            module, names = todo.pop()
            for importer in self._graph.into(IMPORTS, module):
                if names is not None and not self._takes(importer, module, names):
                    continue  # it takes other names of the module that passes these on
                out.add(importer)
                passed = self._passes_on(importer, module, names)
                if passed is not None and not passed:
                    continue
                if importer in followed:
                    was = followed[importer]
                    if was is None or (passed is not None and passed <= was):
                        continue
                    passed = None if passed is None else passed | was
                followed[importer] = passed
                todo.append((importer, passed))

    def _takes(self, importer: str, module: str, names: frozenset[str]) -> bool:
        """Whether importer imports one of names from module, the module itself, or `*`."""
        imports = self._imports_of(importer)
        if imports is None:
            return True
        of = imports.module(_stem(module))
        return of.whole or not of.names.isdisjoint(names)

    def _passes_on(
        self, importer: str, module: str, names: frozenset[str] | None
    ) -> frozenset[str] | None:
        """The names of module (those in names; None: all) that importer's module scope
        binds for its own importers to take: None for all of them (a package's
        __init__.py, a star import), else those of its `from module import name`."""
        imports = self._imports_of(importer)
        if imports is None:
            return frozenset()
        if importer.endswith("__init__.py"):
            return names
        of = imports.module(_stem(module))
        if of.passes_all:
            return names
        return frozenset(bound for bound, taken in of.passes if names is None or taken in names)

    def _imports_of(self, rel: str) -> Imports | None:
        """The imports of rel's summary (kept with the summary they were read from)."""
        summary = self.binder.summaries.get(rel)
        if summary is None:
            return None
        kept = self._import_memo.get(rel)
        if kept is not None and kept[0] is summary:
            return kept[1]
        imports = Imports.of(summary)
        self._import_memo[rel] = (summary, imports)
        return imports

    def _all_importers_of_new(self, rel: str) -> set[str]:
        """A new file: whoever mentions its module name may now resolve into it.

        A new __init__.py is also what `from . import x` means inside its package.
        """
        stem = _stem(rel)
        is_package = rel.rpartition("/")[2] == "__init__.py"
        package = rel.removesuffix("__init__.py") if is_package else None
        if states_a_root(rel):  # a new source root: any absolute import may move
            return set(self.binder.summaries) - {rel}
        out = set()
        for path, summary in self.binder.summaries.items():
            if package is not None and path.startswith(package) and path != rel:
                out.add(path)
                continue
            for scope in summary.scopes:
                if any(binds_module(b.value, stem) for b in scope.bindings) or any(
                    stem in m for m, _level, _pos in scope.star_imports
                ):
                    out.add(path)
                    break
        return out


def _owners(names: set[str], *summaries: FileSummary) -> frozenset[str]:
    """The module-level names an importer takes to see a change of names: each name, and
    the top-level class of a method, class attribute or `self.name` so named (Foo for
    `Foo.x = B()`: `from lib import Foo` then `Foo.x.go()`)."""
    out = set(names)
    for summary in summaries:
        for scope in summary.scopes[1:]:
            top = scope.qualname.partition(".")[0]
            inner = {scope.name} | {a for _o, a, _v, _l in scope.attr_assigns}
            if scope.kind == "class":
                inner.update(b.name for b in scope.bindings)
            if not inner.isdisjoint(names):
                out.add(top)
    return frozenset(out)


def _defined(summary: FileSummary) -> set[str]:
    """The names of the definitions a file makes (functions, classes, methods)."""
    return {scope.name for scope in summary.scopes[1:]}


def _stem(rel: str) -> str:
    """The last part of the module name of rel (`pkg/sub/__init__.py`: `sub`)."""
    return rel[:-3].removesuffix("/__init__").replace("/", ".").rsplit(".", 1)[-1]
