"""Which scopes an edit inside bodies touched, so that only they are resolved again.

An edit that leaves a file's definitions as they were (its interface) changes the
bodies of a few scopes; every scope below it only moves down or up by some lines.
Resolving a 100 KB file again costs about 100 ms; its edited function alone, a few.
"""

from __future__ import annotations

from collections.abc import Sequence

from anchor_ls.index.interface import renumbered_definitions
from anchor_ls.syntax.reparse import common_prefix
from anchor_ls.syntax.summary import Body, FileSummary, Scope, Span, local_names

_IMPORTS = ("im", "ima", "if")


class BodyEdit:
    """The scopes to resolve again and those gone (removed from the end); every other span
    at or below `line` moves by `delta`."""

    __slots__ = ("delta", "gone", "line", "redo")

    def __init__(self, redo: set[int], line: int, delta: int, gone: set[int]) -> None:
        self.redo = redo
        self.line = line
        self.delta = delta
        self.gone = gone


def body_edit(
    old: FileSummary,
    old_bodies: Sequence[Body],
    new: FileSummary,
    new_bodies: Sequence[Body],
    line: int,
    delta: int,
    walked: Sequence[int] | None = None,
    unread: frozenset[str] = frozenset(),
    numbers: dict[int, int] | None = None,
) -> BodyEdit | None:
    """What an edit changed in the scopes of a file, given the first line it changed and
    the lines it added (negative: removed), and the scopes walked again when the others
    were only moved (see syntax.reparse); None when the whole file must be resolved again
    (imports inside a function changed, a `global` is involved, or a changed scope adds to
    a name of an enclosing scope: `TABLE[k] = f` in a function changes what every reader
    of TABLE sees).

    The file's definitions stayed the same, or (unread) new ones were added after them or
    the last ones removed, under names no other code of the file reads: the added ones
    are resolved, and a scope that binds only those names otherwise changes nothing for
    the functions nested in it.

    numbers: where each old scope is now (see interface.renumbering), when unread ones
    were added or removed above others. The scopes gone are then none of the edit's:
    the caller drops what they found as it moves the others' to their new indices."""
    count = len(old.scopes)
    if len(new.scopes) != count and not unread:
        return None
    shifted = numbers is not None and any(i != j for i, j in numbers.items())
    if numbers is None:
        numbers = {i: i for i in range(min(count, len(new.scopes)))}
        gone = set(range(len(new.scopes), count))
        removed = gone
    else:
        gone, removed = set(), set(range(count)).difference(numbers)
    was_at = {j: i for i, j in numbers.items()}  # new index -> old
    redo = set(range(len(new.scopes))).difference(was_at)
    if any(_reaches_out(new.scopes[i]) for i in redo) or any(
        _reaches_out(old.scopes[i]) for i in removed
    ):
        return None
    seen_inside: set[int] = set(redo)  # redone scopes whose change nested functions may see
    for i in walked if walked is not None else range(len(new.scopes)):
        k = was_at.get(i)
        if k is None:  # added (in redo already) or gone
            continue
        was = _shape(old.scopes[k], old_bodies[k], line, delta)
        if shifted:
            was = renumbered_definitions(was, numbers)  # type: ignore[assignment]
        now = _shape(new.scopes[i], new_bodies[i], line, 0)
        if was == now:
            continue
        redo.add(i)
        if unread and _binds_otherwise_only(was, now, unread):
            continue  # it binds the definitions added or gone, which nothing nested reads
        if _reaches_out(old.scopes[k]) or _reaches_out(new.scopes[i]):
            return None
        seen_inside.add(i)
    # A scope's names are seen by the functions nested in it.
    scopes = new.scopes
    for i in range(len(scopes)):
        parent = scopes[i].parent
        while parent >= 0 and parent not in seen_inside:
            parent = scopes[parent].parent
        if parent >= 0:
            redo.add(i)
    return BodyEdit(redo, line, delta, gone)


def _binds_otherwise_only(was: tuple, now: tuple, names: frozenset[str]) -> bool:
    """Whether two shapes of a scope differ only in bindings of names, none of them an
    import (a shape: calls, attribute reads, uses, bindings, mutations; see _shape)."""
    if was[:3] != now[:3] or was[4] != now[4]:
        return False
    if any(b[0] in names and b[1][0] in _IMPORTS for b in (*was[3], *now[3])):
        return False
    return [b for b in was[3] if b[0] not in names] == [b for b in now[3] if b[0] not in names]


def _shape(scope: Scope, body: Body, line: int, delta: int) -> tuple:
    """A scope's body and local names without byte offsets, lines from `line` on moved."""
    calls, attr_reads, uses = body
    return (
        [(c.func, c.args, c.kwargs, moved(c.span, line, delta), c.blocks, c.kind) for c in calls],
        [(expr, moved(span, line, delta), blocks, k) for expr, span, _pos, blocks, k in attr_reads],
        [(t, expr, moved(span, line, delta), blocks) for t, expr, span, _pos, blocks in uses],
        [(b.name, b.value, b.blocks) for b in scope.bindings],
        [(name, added, replaces) for name, added, _pos, replaces in scope.mutations],
    )


def moved(span: Span, line: int, delta: int) -> Span:
    """A span of the text before an edit, in the text after it (outside what it changed)."""
    if not delta or span[2] < line:
        return span
    if span[0] >= line:
        return (span[0] + delta, span[1], span[2] + delta, span[3])
    return (span[0], span[1], span[2] + delta, span[3])


def _reaches_out(scope: Scope) -> bool:
    """Whether resolving scope alone may leave other scopes stale."""
    if scope.global_names or any(b.value[0] in _IMPORTS for b in scope.bindings):
        return True
    local = local_names(scope)
    return any(name not in local for name, _added, _pos, _replaces in scope.mutations)


def first_changed_line(old: bytes, new: bytes) -> int:
    """The 0-based line of the first byte where two texts differ."""
    return old.count(b"\n", 0, common_prefix(old, new))
