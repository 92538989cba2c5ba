"""The rounds of resolution: argument facts flow one call deeper per round, and only
the scopes that read facts that changed are resolved again, until they settle or the
rounds run out. A build's rounds (resolve_all) and an edit's (reresolve).

Plain functions over a binder and the facts of each file; they never read files (the
index hands them the binder with the summaries in it) and keep no state between calls.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import partial

from anchor_ls.index.bind import lookup
from anchor_ls.index.binder import Binder
from anchor_ls.index.bodies import BodyEdit, moved
from anchor_ls.index.shares import Shares, Todo
from anchor_ls.index.state import FileFacts, Function
from anchor_ls.syntax.words import may_mention

MAX_ROUNDS = 4  # argument facts flow one call deeper per round


def resolve_all(
    binder: Binder,
    rounds: Shares,
    paths: Iterable[str],
    facts: dict[str, FileFacts],
    on_file: Callable[[str], None] | None,
) -> None:
    """Rounds of resolution: each sees the argument facts of the rounds before it, and
    only the functions whose parameters learned new values are read again.

    What the last round's files pass is not taken into the argument facts: no round is
    left to read it, and the facts stay those every file was last resolved in, so that
    a file resolved again in them (an edit's dependent) finds what the build found.
    Taken in, they reached one call further than any file had read: resolved again with
    no edit, 49 of sphinx's 772 files passed other values than the build had them pass
    (8 found other calls), against 38 (3) now; an edit's dependent settled with edges no
    build has (see tests/test_index_incremental.py)."""
    todo: Todo = dict.fromkeys(paths)
    for round_ in range(MAX_ROUNDS):
        last = round_ == MAX_ROUNDS - 1
        held: dict[str, dict] = {}
        if last:
            known = binder.scope_contributions(p for p in todo if binder.knows_scopes(p))
            held = {rel: dict(per_scope) for rel, per_scope in known.items()}
        resolved = rounds.resolve(todo, facts, None if round_ else on_file)
        passed = sorted((rel, contrib) for rel, _facts, contrib in resolved)
        grown: set[tuple[str, int]] = set()
        for rel, file_facts, _contrib in resolved:
            facts[rel] = file_facts
        if last:  # what they pass stays as it was (see above)
            binder.adopt({rel: held.get(rel, {}) for rel in todo})
            break
        before = dict(binder.param_facts)
        for rel, contrib in passed:
            grown |= binder.set_contribution(rel, contrib)
        if not grown:
            break
        evaluated = rounds.learn(passed, grown)
        returning, storing, filled = binder.results_changed(grown, before, evaluated)
        by_file = _scopes_by_file(binder, facts, grown, returning, storing)
        for rel, scopes in _reading_names(binder, filled).items():
            by_file.setdefault(rel, set()).update(scopes)
        todo = dict(sorted(by_file.items()))
        binder.forget_values()  # every share starts from empty caches


def reresolve(
    binder: Binder,
    facts: dict[str, FileFacts],
    paths: Iterable[str],
    edited: tuple[str, BodyEdit] | None,
    baselines: dict[str, dict],
    before_file: Callable[[str], None],
    after_file: Callable[[str], None],
    as_found: dict[str, FileFacts] | None = None,
    start: dict | None = None,
) -> tuple[set[str], bool]:
    """Resolve files again until argument flow settles; returns the files resolved, and
    whether it settled (False: the rounds ran out with files still to resolve, or a file
    of as_found cannot tell what a build would leave it with: see _as_built).

    edited: a file whose first resolution here needs only the scopes an edit touched.
    baselines: what files of paths passed before the edit, resolved in the present
    argument facts. Only what the edit changes of that flows on to other files: for the
    functions it did not change, what the file passes stays as held (taken in, what a
    file found past the build's last round moved the facts the files after it in the
    round read, and they passed other values than their baselines: on sphinx an import
    added to sphinx/util/docutils.py grew 7 functions' facts in other files).
    before_file and after_file are called around each file resolved.

    as_found: what files of paths found before the edit, resolved in the present argument
    facts, as baselines are what they passed. Such a file, resolved whole in any round,
    keeps the facts it held for every scope that finds what it found before the edit,
    and takes the new ones only for the scopes the edit changed (see _as_built).
    start: the argument facts before the edit (None: not known). A file a later round
    reaches is first resolved in them too, and what it finds and passes there is its
    baseline, as if in as_found and baselines: resolved whole in the facts an edit's
    round grew, a file the build left with facts its later rounds did not read again
    found and passed more than the edit changed (sphinx/util/inspect.py, reached from an
    edit of sphinx/ext/autodoc/_dynamic/_type_comments.py: its own functions grew round
    after round until the rounds ran out, and the repository was resolved afresh).

    A build stops after MAX_ROUNDS with argument facts still growing (Django's fourth
    round resolves 1,334 files again). Without that baseline, the first edit of a file
    whose parameters grew after its last round carried the growth on: an edit and its
    undo in django/contrib/admin/utils.py resolved 100 files for 3 s and left 1,228
    edges other than a fresh build's.

    Unsettled, the facts are not a build's: a retraction dropped facts that later rounds
    had no turn left to derive again, or growth reached deeper than a build's rounds
    (an edit of django/db/models/expressions.py, 5.1 to 5.1.1, cycles around
    SQLCompiler.compile and as_sql: 604 edges lost, 897 more). The caller resolves
    the whole repository again then."""
    todo = sorted(p for p in paths if p in binder.summaries)
    # file -> what it found and passed before the edit, and its facts and what it passed
    # as the build left them (see _as_built and _as_held)
    before_facts = dict(as_found or {})
    before_passed = {rel: baselines[rel] for rel in before_facts if rel in baselines}
    held_facts = {rel: facts[rel] for rel in before_facts if rel in facts}
    held_passed = {rel: binder.passed(rel) for rel in before_passed}
    resolved: set[str] = set()
    binder.shrunk.clear()
    for round_ in range(MAX_ROUNDS + 1):  # as many rounds as a build: no stale facts
        grown: set[tuple[str, int]] = set()
        reached = [rel for rel in todo if rel not in resolved and binder.knows_scopes(rel)]
        if round_ and reached and start is not None:
            with _facts_as(binder, start):
                for rel in reached:
                    if rel in facts:
                        n = len(binder.summaries[rel].scopes)
                        before_facts[rel], before_passed[rel] = binder.resolve_file(
                            rel, set(range(n)), FileFacts()
                        )
                        held_facts[rel], held_passed[rel] = facts[rel], binder.passed(rel)
        resolved.update(todo)
        for rel in todo:
            before_file(rel)
            previous = facts.get(rel)
            baseline = baselines.get(rel) if round_ == 0 else None
            if edited and round_ == 0 and rel == edited[0] and previous is not None:
                edit = edited[1]
                previous.move_lines(partial(moved, line=edit.line, delta=edit.delta))
                scopes = edit.redo | edit.gone
                file_facts, contrib = binder.resolve_file(rel, scopes, previous)
            else:
                file_facts, contrib = binder.resolve_file(rel)
                if rel in held_facts:
                    scopes = range(len(binder.summaries[rel].scopes))
                    kept = _as_built(file_facts, scopes, held_facts[rel], before_facts[rel])
                    if kept is None:  # no fresh build's facts to keep, none to take
                        return resolved, False
                    file_facts = kept
            facts[rel] = file_facts
            if rel in before_passed:  # what the edit did not change is passed as held
                differing = _differing(before_passed[rel], contrib)
                contrib = _as_held(contrib, held_passed[rel], differing)
            elif baseline is not None:
                contrib = _as_held(contrib, binder.passed(rel), _differing(baseline, contrib))
            grown |= binder.set_contribution(rel, contrib)
            after_file(rel)
        redo = {fn[0] for fn in grown}
        # the module names those functions fill (a registry) may hold something else too
        filled = {(fn[0], name) for fn in grown | binder.shrunk for name in _fills(binder, fn)}
        redo.update(_reading_names(binder, filled))
        if binder.shrunk:  # facts went away: re-derive what flowed from them
            redo |= binder.retract(set(binder.shrunk))
        elif grown:  # values read the argument facts before
            binder.forget_values()
        todo = sorted(p for p in redo if p in binder.summaries)
        if not todo:
            return resolved, True
    return resolved, False


@contextmanager
def _facts_as(binder: Binder, param_facts: dict) -> Iterator[None]:
    """The binder evaluates in other argument facts for a while."""
    now = dict(binder.param_facts)
    binder.param_facts.clear()
    binder.param_facts.update(param_facts)
    binder.forget_values()
    try:
        yield
    finally:
        binder.param_facts.clear()
        binder.param_facts.update(now)
        binder.forget_values()


def _scopes_by_file(
    binder: Binder,
    facts: dict[str, FileFacts],
    fns: set[tuple[str, int]],
    returning: set[tuple[str, int]],
    storing: dict[tuple[str, int], set[str]],
) -> dict[str, set[int]]:
    """The scopes to resolve again once fns' parameters learned new values: the scopes
    that read those parameters (and, for the methods of storing, which set something
    else on `self` now, the methods of the class that read it, and the scopes of any
    class that read it on an instance of theirs), and the callers of those (returning)
    that now return or yield something else, or set something else on `self`."""
    out: dict[str, set[int]] = {}
    for fn in sorted(fns):  # in one order: the bases of a class are evaluated
        if fn[0] in binder.summaries:
            for path, readers in binder.scopes_reading(fn, storing.get(fn, ())).items():
                out.setdefault(path, set()).update(readers)
    wanted = {Function(path, idx) for path, idx in returning}
    for rel, file_facts in facts.items():
        for (idx, _kind), targets in file_facts.calls.items():
            if not wanted.isdisjoint(targets):
                out.setdefault(rel, set()).add(idx)
    # what a method stores on `self` is read outside its class tree too (`e.msg` of an
    # exception caught): pytest's import_plugin read Skipped's msg so, and no round read
    # it again once OutcomeException.__init__ learned msg
    stored: dict[str, set[tuple[str, int]]] = {}
    for (path, idx), names in storing.items():
        for name in names:
            stored.setdefault(name, set()).add((path, binder.scope(path, idx).parent))
    for path, readers in binder.scopes_reading_attributes(stored, out).items():
        out.setdefault(path, set()).update(readers)
    return out


def _reading_names(binder: Binder, filled: set[tuple[str, str]]) -> dict[str, set[int]]:
    """The scopes that read the module names filled, which hold more now (a registry a
    function fills with what it is passed: `REG[name] = c()`): in their module, and in
    any module that may import them (or a module that re-exports them)."""
    out: dict[str, set[int]] = {}
    if not filled:
        return out
    names = {name for _path, name in filled}
    paths = {path for path, _name in filled}
    for rel, summary in binder.summaries.items():
        wanted = {
            n
            for n in names
            if rel in paths or (summary.words and may_mention(summary.words, n.encode()))
        }
        if wanted:
            bodies = binder.bodies(rel)
            readers = {
                idx
                for idx, scope in enumerate(summary.scopes)
                if _mentions(
                    (bodies[idx], scope.bindings, scope.return_values, scope.yields), wanted
                )
            }
            if readers:
                out[rel] = readers
    return out


def _mentions(value: object, names: set[str]) -> bool:
    """Whether a name of names is read anywhere in value (expressions, or sequences of them)."""
    if isinstance(value, tuple):
        if len(value) == 2 and value[0] == "n" and value[1] in names:
            return True
        return any(_mentions(item, names) for item in value if isinstance(item, tuple | list))
    if isinstance(value, list):
        return any(_mentions(item, names) for item in value)
    return False


def _fills(binder: Binder, fn: tuple[str, int]) -> list[str]:
    return lookup.module_names_grown(binder, *fn) if fn[0] in binder.summaries else []


def _as_built(
    found: FileFacts, scopes: Iterable[int], held: FileFacts, before: FileFacts
) -> FileFacts | None:
    """A file's facts after an edit: found (a resolution of its scopes, whole), but for the
    scopes whose resolution found what it found before the edit (before), what held (its
    facts as the build left them) holds for them. None when a scope the edit changed held
    other than before: what a build would find for it is neither.

    A build's facts are not always what resolving the file again in the facts its rounds
    ended with finds: a value stored on an attribute after the build last resolved a
    scope that reads it through what a function returns, a function whose parameters did
    not grow (its callers are not read again), is seen by no build, and by every
    resolution after (sphinx's cpp domain read env.current_document.cpp_last_symbol so
    from outside the storing class, before the rounds read such readers again). Taken
    whole, an edit of another file settled with edges no build has (71 calls edges of
    AliasTransform._render_symbol on sphinx); the whole repository was resolved afresh
    for it then, as costly as a build."""
    changed = before.scopes_differing(found)
    if changed and not changed.isdisjoint(before.scopes_differing(held)):
        return None
    same = set(scopes) - changed
    if same:
        found.replace_scopes(same, held.of_scopes(same))
    return found


def _as_held(contrib: dict, held: dict, differing: set[tuple[str, int]]) -> dict:
    """What a file passes, as held for the functions to which the edit did not change what
    it passes (differing: those it did)."""
    out = {fn: params for fn, params in held.items() if fn not in differing}
    out.update((fn, params) for fn, params in contrib.items() if fn in differing)
    return out


def _differing(before: dict, after: dict) -> set[tuple[str, int]]:
    """The functions two contributions of one file pass different argument values to."""

    def plain(contrib: dict, fn: tuple[str, int]) -> dict:
        return {k: set(v) for k, v in contrib.get(fn, {}).items()}

    return {fn for fn in set(before) | set(after) if plain(before, fn) != plain(after, fn)}
