"""Summaries of a file under edit, made from the tree and summary of its previous text.

A keystroke in a 100 KB file changes one function's body. tree-sitter parses again from
the previous tree (a millisecond instead of twenty), only that function is walked again
(instead of the whole file, 60 ms), and every other scope keeps what it had, moved by the
bytes and lines the edit added. The summary is the one summarize() makes of the new text;
the tests compare the two over edits of real code. (Its words sketch is left for the
index to make when another file's edit needs it: a few ms of every keystroke.)
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, NamedTuple

from tree_sitter import Node, Tree

from anchor_ls.syntax.parse import (
    end_line,
    main_blocks,
    note_free_calls,
    parser,
    read_source,
    rewalk_function,
    summary_lines,
    summary_of,
    text_point,
    walk_statements,
)
from anchor_ls.syntax.source import MAX_FILE_BYTES
from anchor_ls.syntax.summary import (
    AttrAssign,
    AttrRead,
    Binding,
    Body,
    CallSite,
    FileSummary,
    ModuleConstant,
    Mutation,
    Param,
    Scope,
    Span,
    StarImport,
    Use,
    scope_bodies,
)

KEEP = 4  # files under edit whose trees are kept (a 100 KB file's tree: a few MB)
_DEFINITIONS = ("function_definition", "class_definition")


class Reparsed(NamedTuple):
    summary: FileSummary
    bodies: Sequence[Body]  # each scope's (calls, attr_reads, uses), read before packing
    walked: Sequence[int] | None  # the scopes walked again; None: the whole file was
    replaced: Sequence[int] | None  # the previous summary's scopes they replace


class _Held(NamedTuple):
    text: bytes
    tree: Tree
    summary: FileSummary
    bodies: Sequence[Body]


class Reparser:
    """The trees of the last few files summarized here, for their next edit."""

    def __init__(self, keep: int = KEEP) -> None:
        self._held: OrderedDict[str, _Held] = OrderedDict()
        self._keep = keep

    def forget(self, relpath: str) -> None:
        self._held.pop(relpath, None)

    def hold(
        self, relpath: str, data: bytes, summary: FileSummary, bodies: Sequence[Body] | None = None
    ) -> None:
        """Keep the tree of data, whose summary (and its bodies, if the caller has them
        unpacked) the caller holds, for its first edit."""
        held = self._held.get(relpath)
        if held is not None and held.summary is summary:
            return
        _decoded, text = read_source(data, limit=len(data))
        bodies = scope_bodies(summary) if bodies is None else bodies
        self._keep_held(relpath, _Held(text, parser().parse(text), summary, bodies))

    def summarize(
        self,
        relpath: str,
        data: bytes,
        previous: FileSummary | None,
        *,
        limit: int = MAX_FILE_BYTES,
    ) -> Reparsed:
        """Summarize relpath's new bytes; previous is the summary the caller holds for it.
        Raises UnreadableSource as summarize() does."""
        held = self._held.pop(relpath, None)
        decoded, text = read_source(data, limit=limit)
        result: Reparsed | None = None
        if held is not None and held.summary is previous:
            tree, result = _reparse(held, text)
            if decoded.warning is not None:
                result = None
            if result is not None:  # a few top-level statements to look at: found again
                result.summary.main_blocks = main_blocks([tree.root_node], text)
        else:
            tree = parser().parse(text)
        if result is None:
            summary = summary_of(relpath, decoded, text, tree)
            result = Reparsed(summary, scope_bodies(summary), None, None)
        self._keep_held(relpath, _Held(text, tree, result.summary, result.bodies))
        return result

    def _keep_held(self, relpath: str, held: _Held) -> None:
        self._held.pop(relpath, None)
        self._held[relpath] = held
        while len(self._held) > self._keep:
            self._held.popitem(last=False)


def common_prefix(a: bytes, b: bytes) -> int:
    """The length of the longest common prefix, found by halves (memcmp, not a byte loop)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: bytes, b: bytes, most: int) -> int:
    lo, hi = 0, most
    la, lb = len(a), len(b)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[la - mid : la - lo] == b[lb - mid : lb - lo]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class _Move:
    """What lies after an edit in the old text moves: offsets from `cut` by `bytes`, rows
    from `row` by `rows`."""

    __slots__ = ("bytes", "cut", "row", "rows")

    def __init__(self, cut: int, nbytes: int, row: int, rows: int) -> None:
        self.cut, self.bytes, self.row, self.rows = cut, nbytes, row, rows

    def pos(self, pos: int) -> int:
        return pos + self.bytes if pos >= self.cut else pos

    def span(self, span: Span) -> Span:
        if not self.rows or span[0] < self.row:
            return span
        return (span[0] + self.rows, span[1], span[2] + self.rows, span[3])

    def line(self, line: int) -> int:
        """A 1-based line."""
        return line + self.rows if line - 1 >= self.row else line


def _reparse(held: _Held, text: bytes) -> tuple[Tree, Reparsed | None]:
    """The new tree, and the summary when the edit lies inside one function's body or
    within top-level statements that change nothing else of the module."""
    old = held.text
    start = common_prefix(old, text)
    suffix = _common_suffix(old, text, min(len(old), len(text)) - start)
    old_end, new_end = len(old) - suffix, len(text) - suffix
    old_end_point = text_point(old, old_end)
    new_end_point = text_point(text, new_end)
    edited = held.tree.copy()  # the held tree stays that of the old text
    edited.edit(start, old_end, new_end, text_point(old, start), old_end_point, new_end_point)
    tree = parser().parse(text, edited)
    if tree.root_node.has_error or held.summary.problems:
        return tree, None
    grown = new_end - old_end
    rows = new_end_point[0] - old_end_point[0]
    before = _function_around(held.tree.root_node, start, old_end)
    if before is not None:
        after = _function_around(tree.root_node, start, new_end)
        if after is not None and (after.start_byte, after.end_byte) == (
            before.start_byte,
            before.end_byte + grown,
        ):
            move = _Move(old_end, grown, old_end_point[0] + 1, rows)
            spliced = _splice(held, text, after, move)
            if spliced is not None:
                return tree, spliced
    run = _top_level_run(old, held.tree.root_node, tree.root_node, start, old_end, grown)
    if run is None or (run.after_row == old_end_point[0] and old_end_point[1] != new_end_point[1]):
        return tree, None  # the next statement starts on the edit's last row, moved sideways
    # what follows the statements starts on a row of its own: it moves from the edit's row
    return tree, _splice_run(held, text, run, _Move(old_end, grown, old_end_point[0], rows))


def _function_around(root: Node, start: int, end: int) -> Node | None:
    """The innermost function definition whose body holds the bytes start..end."""
    # an insertion at the end of a node finds only its parent: take the byte before too
    node = root.descendant_for_byte_range(max(start - 1, 0), end)
    while node is not None:
        if node.type == "function_definition":
            body = node.child_by_field_name("body")
            if body is not None and body.start_byte <= start and end <= body.end_byte:
                return node
        node = node.parent
    return None


def _splice(held: _Held, text: bytes, node: Node, move: _Move) -> Reparsed | None:
    """The old summary with one function walked again and everything after it moved."""
    scopes = held.summary.scopes
    line = node.start_point[0] + 1
    idx = next((i for i, s in enumerate(scopes) if s.line == line and s.kind == "function"), -1)
    if idx < 0:
        return None
    end = idx + 1  # the definitions nested in the function follow it
    while end < len(scopes) and scopes[end].parent >= idx:
        end += 1
    if any(scopes[k].global_names for k in range(idx, end)):
        return None
    walked = rewalk_function(text, node, idx, scopes[idx])
    if walked is None or len(walked) != end - idx:
        return None
    ends = _enclosing_ends(scopes, idx, node)
    new_scopes: list[Scope] = []
    bodies: list[Body] = []
    lines = summary_lines(text)
    ends[0] = lines
    for k, scope in enumerate(scopes):
        if idx <= k < end:
            scope = walked[k - idx]
            body: Body = (scope.calls, scope.attr_reads, scope.uses)
        else:
            scope, body = _moved(scope, held.bodies[k], move, ends.get(k))
        new_scopes.append(scope)
        bodies.append(body)
    note_free_calls(new_scopes, range(idx, end))
    old = held.summary
    summary = FileSummary(
        old.path,
        new_scopes,
        lines,
        all_names=old.all_names,
        constants=[(n, move.line(a), move.line(b), move.span(s)) for n, a, b, s in old.constants],
        encoding=old.encoding,
    )
    return Reparsed(summary, bodies, range(idx, end), range(idx, end))


class _Run(NamedTuple):
    """The top-level statements an edit touched: old ones out, new ones in. The old ones
    and the edit start at byte lo of the old text; the old ones lie on rows rows[0] to
    rows[1]."""

    old: list[Node]
    new: list[Node]
    lo: int
    rows: tuple[int, int]
    after_row: int  # the row where the next statement starts (-1: none)


_RUN_STATEMENTS = frozenset(
    {
        "function_definition",
        "class_definition",
        "decorated_definition",
        "expression_statement",
        "import_statement",
        "import_from_statement",
        "pass_statement",
        "comment",
    }
)


def _top_level_run(
    old_text: bytes, old_root: Node, new_root: Node, start: int, end: int, grown: int
) -> _Run | None:
    """The top-level statements that the old bytes start..end and their replacement touch,
    when the statements around them are the same in both trees and on rows of their own."""
    olds, news = old_root.named_children, new_root.named_children
    lo, hi = start, end
    while True:
        # a statement that starts where an insertion ends changed only if its node did
        o = [n for n in olds if n.end_byte >= lo and n.start_byte < hi]
        w = [n for n in news if n.end_byte >= lo and n.start_byte < hi + grown]
        wider_lo = min([lo] + [n.start_byte for n in o + w])
        wider_hi = max([hi] + [n.end_byte for n in o] + [n.end_byte - grown for n in w])
        if (wider_lo, wider_hi) == (lo, hi):
            break
        lo, hi = wider_lo, wider_hi
    ahead = sum(n.end_byte < lo for n in olds)
    if ahead != sum(n.end_byte < lo for n in news) or len(olds) - len(o) != len(news) - len(w):
        return None
    if any(n.type not in _RUN_STATEMENTS for n in o + w):
        return None
    for a, b in zip(olds[:ahead], news[:ahead], strict=True):
        if (a.type, a.start_byte, a.end_byte) != (b.type, b.start_byte, b.end_byte):
            return None
    rest = olds[ahead + len(o) :]
    for a, b in zip(rest, news[ahead + len(w) :], strict=True):
        if (a.type, a.start_byte + grown, a.end_byte + grown) != (b.type, b.start_byte, b.end_byte):
            return None
    lo_row = text_point(old_text, lo)[0]
    rows = (lo_row, o[-1].end_point[0] if o else lo_row - 1)  # none: an insertion
    if ahead and olds[ahead - 1].end_point[0] >= rows[0]:
        return None
    if rest and rest[0].start_point[0] <= rows[1]:
        return None
    return _Run(o, w, lo, rows, rest[0].start_point[0] if rest else -1)


def _splice_run(held: _Held, text: bytes, run: _Run, move: _Move) -> Reparsed | None:
    """The old summary with a run of top-level statements walked again, the definitions
    after them numbered on and moved."""
    scopes = held.summary.scopes
    lo_row, hi_row = run.rows
    first = next((i for i in range(1, len(scopes)) if scopes[i].line - 1 >= lo_row), len(scopes))
    was = walk_statements(held.text, run.old, first)
    now = walk_statements(text, run.new, first)
    if not (was.apart and now.apart):
        return None
    end = first + len(was.scopes)
    if any(not lo_row <= scopes[k].line - 1 <= hi_row for k in range(first, end)):
        return None
    if end < len(scopes) and scopes[end].line - 1 <= hi_row:
        return None
    shift = len(now.scopes) - len(was.scopes)
    renumber = _Renumber(end, shift) if shift else None
    module = _module_spliced(scopes[0], held.bodies[0], now.module, run, move, renumber)
    if module is None:
        return None
    lines = summary_lines(text)
    new_scopes: list[Scope] = [module[0]]
    bodies: list[Body] = [module[1]]
    for k in range(1, first):
        scope, body = _moved(scopes[k], held.bodies[k], move, None)
        new_scopes.append(scope)
        bodies.append(body)
    for scope in now.scopes:
        new_scopes.append(scope)
        bodies.append((scope.calls, scope.attr_reads, scope.uses))
    for k in range(end, len(scopes)):
        scope, body = _moved(scopes[k], held.bodies[k], move, None, renumber)
        new_scopes.append(scope)
        bodies.append(body)
    new_scopes[0].end_line = lines
    walked = range(first, first + len(now.scopes))
    note_free_calls(new_scopes, walked)
    old = held.summary
    constants = [c for c in old.constants if c[1] - 1 < lo_row]
    constants += now.constants
    for n, a, b, span in old.constants:
        if a - 1 > hi_row:
            constants.append(ModuleConstant(n, move.line(a), move.line(b), move.span(span)))
    summary = FileSummary(
        old.path,
        new_scopes,
        lines,
        all_names=old.all_names,
        constants=constants,
        encoding=old.encoding,
    )
    return Reparsed(summary, bodies, [0, *walked], [0, *range(first, end)])


_MODULE_LISTS = (("bindings", 2), ("attr_assigns", 3), ("mutations", 2), ("star_imports", 2))
_BODY_POSITIONS = (4, 2, 3)  # where calls, attribute reads and uses hold their byte offset


def _module_spliced(
    module: Scope, body: Body, added: Scope, run: _Run, move: _Move, renumber: _Renumber | None
) -> tuple[Scope, Body] | None:
    """The module scope with what the run's old statements put in it replaced by added."""
    held_end = run.old[-1].end_byte if run.old else run.lo - 1  # their items lie lo..held_end
    rest = object.__new__(Scope)
    rest.__dict__.update(module.__dict__)
    cuts: dict[str, int] = {}
    for name, pos_at in _MODULE_LISTS:
        items = getattr(module, name)
        cut = _cut(items, pos_at, run.lo, held_end)
        if cut is None:
            return None
        cuts[name] = cut[0]
        setattr(rest, name, [*items[: cut[0]], *items[cut[1] :]])
    at: list[int] = []
    rest_body = []
    for items, pos_at in zip(body, _BODY_POSITIONS, strict=True):
        cut = _cut(items, pos_at, run.lo, held_end)
        if cut is None:
            return None
        at.append(cut[0])
        rest_body.append([*items[: cut[0]], *items[cut[1] :]])
    calls, attr_reads, uses = rest_body
    scope, moved_body = _moved(rest, (calls, attr_reads, uses), move, module.end_line, renumber)
    for name, _pos_at in _MODULE_LISTS:
        items = list(getattr(scope, name))
        items[cuts[name] : cuts[name]] = getattr(added, name)
        setattr(scope, name, items)
    new_body = []
    for k, items, new in zip(
        at, moved_body, (added.calls, added.attr_reads, added.uses), strict=True
    ):
        items = list(items)
        items[k:k] = new
        new_body.append(items)
    scope.calls, scope.attr_reads, scope.uses = new_body
    return scope, (scope.calls, scope.attr_reads, scope.uses)


def _cut(items: Sequence[tuple], pos_at: int, lo: int, hi: int) -> tuple[int, int] | None:
    """(a, b): items[:a] lie before byte lo, items[a:b] within lo..hi, the rest after hi;
    None when they are not in that order."""
    sides = [0 if item[pos_at] < lo else 1 if item[pos_at] <= hi else 2 for item in items]
    if sides != sorted(sides):
        return None
    return sides.count(0), len(sides) - sides.count(2)


class _Renumber:
    """Definitions from scope index `cut` on renumbered by `shift`: Definition and
    DecoratorsFrom values, and parents."""

    __slots__ = ("cut", "shift")

    def __init__(self, cut: int, shift: int) -> None:
        self.cut, self.shift = cut, shift

    def __call__(self, expr: Any) -> Any:
        if not isinstance(expr, tuple) or not expr:
            return expr
        head = expr[0]
        if (head == "f" or head == "dw") and expr[1].__class__ is int:
            if expr[1] >= self.cut:
                return expr._replace(scope=expr[1] + self.shift)
            return expr
        parts = tuple(self(part) for part in expr)
        if all(a is b for a, b in zip(parts, expr, strict=True)):
            return expr
        return parts if expr.__class__ is tuple else expr._make(parts)  # a kind: its type

    def scope(self, scope: Scope) -> None:
        """Renumber a scope copy's fields in place (its body aside)."""
        if scope.parent >= self.cut:
            scope.parent += self.shift
        scope.decorators = [self(e) for e in scope.decorators]
        scope.bases = [self(e) for e in scope.bases]
        scope.metaclass = self(scope.metaclass)
        scope.returns = self(scope.returns)
        scope.params = [
            Param(p.name, p.kind, self(p.annotation), self(p.default)) for p in scope.params
        ]
        scope.bindings = [b._replace(value=self(b.value)) for b in scope.bindings]
        scope.return_values = [self(e) for e in scope.return_values]
        scope.yields = [self(e) for e in scope.yields]
        scope.attr_assigns = [
            AttrAssign(self(o), a, self(v), p) for o, a, v, p in scope.attr_assigns
        ]
        scope.mutations = [Mutation(n, self(a), p, r) for n, a, p, r in scope.mutations]

    def body(self, body: Body) -> Body:
        calls, attr_reads, uses = body
        return (
            [
                c._replace(func=self(c.func), args=self(c.args), kwargs=self(c.kwargs))
                for c in calls
            ],
            [r._replace(expr=self(r.expr)) for r in attr_reads],
            [u._replace(expr=self(u.expr)) for u in uses],
        )


def _enclosing_ends(scopes: list[Scope], idx: int, node: Node) -> dict[int, int]:
    """The new last lines of the scopes that enclose scope idx, the module's aside."""
    ends: dict[int, int] = {}
    k = scopes[idx].parent
    up = node.parent
    while k > 0 and up is not None:
        if up.type in _DEFINITIONS:
            ends[k] = end_line(up)
            k = scopes[k].parent
        up = up.parent
    return ends


def _moved(
    scope: Scope,
    body: Body,
    move: _Move,
    end_line: int | None,
    renumber: _Renumber | None = None,
) -> tuple[Scope, Body]:
    """A scope outside the edit, with what lies after the edit moved; end_line: its new
    last line when it encloses the edit; renumber: when definitions before it were added
    or removed."""
    new = object.__new__(Scope)
    new.__dict__.update(scope.__dict__)
    if end_line is None and scope.end_line <= move.row:  # above the edit: nothing moves
        new.calls, new.attr_reads, new.uses = body
        return new, body
    pos, span = move.pos, move.span
    calls, attr_reads, uses = body
    new.calls = [
        CallSite(c.func, c.args, c.kwargs, span(c.span), pos(c.pos), c.blocks, c.kind)
        for c in calls
    ]
    new.attr_reads = [AttrRead(e, span(s), pos(p), b, k) for e, s, p, b, k in attr_reads]
    new.uses = [Use(t, e, span(s), pos(p), b) for t, e, s, p, b in uses]
    new.bindings = tuple(Binding(b.name, b.value, pos(b.pos), b.blocks) for b in scope.bindings)
    new.attr_assigns = tuple(AttrAssign(o, a, v, pos(p)) for o, a, v, p in scope.attr_assigns)
    new.mutations = tuple(Mutation(n, a, pos(p), r) for n, a, p, r in scope.mutations)
    new.star_imports = tuple(StarImport(m, lv, pos(p)) for m, lv, p in scope.star_imports)
    if end_line is not None:
        new.end_line = end_line
    else:
        new.line, new.start_line = move.line(scope.line), move.line(scope.start_line)
        new.end_line = move.line(scope.end_line)
        new.name_span = span(scope.name_span)
    if renumber is not None:
        renumber.scope(new)
        new.calls, new.attr_reads, new.uses = renumber.body((new.calls, new.attr_reads, new.uses))
    return new, (new.calls, new.attr_reads, new.uses)
