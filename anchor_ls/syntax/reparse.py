"""Summaries of a file under edit, made from the tree and summary of its previous text.

A keystroke in a 100 KB file changes one function's body. tree-sitter parses again from
the previous tree (a millisecond instead of twenty), only that function is walked again
(instead of the whole file, 60 ms), and every other scope keeps what it had, moved by the
bytes and lines the edit added. The summary is the one summarize() makes of the new text;
the tests compare the two over edits of real code.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple

from tree_sitter import Node, Tree

from anchor_ls.syntax.parse import (
    end_line,
    note_free_calls,
    parser,
    read_source,
    rewalk_function,
    summary_lines,
    summary_of,
    text_point,
    words_sketch,
)
from anchor_ls.syntax.source import MAX_FILE_BYTES
from anchor_ls.syntax.summary import (
    Binding,
    Body,
    CallSite,
    FileSummary,
    Scope,
    Span,
    scope_bodies,
)

KEEP = 4  # files under edit whose trees are kept (a 100 KB file's tree: a few MB)
_DEFINITIONS = ("function_definition", "class_definition")


class Reparsed(NamedTuple):
    summary: FileSummary
    bodies: list[Body]  # each scope's (calls, attr_reads, uses), read before packing
    walked: range | None  # the scopes walked again; None: the whole file was


class _Held(NamedTuple):
    text: bytes
    tree: Tree
    summary: FileSummary
    bodies: list[Body]


class Reparser:
    """The trees of the last few files summarized here, for their next edit."""

    def __init__(self, keep: int = KEEP) -> None:
        self._held: OrderedDict[str, _Held] = OrderedDict()
        self._keep = keep

    def forget(self, relpath: str) -> None:
        self._held.pop(relpath, None)

    def hold(self, relpath: str, data: bytes, summary: FileSummary) -> None:
        """Keep the tree of data, whose summary the caller holds, for its first edit."""
        held = self._held.get(relpath)
        if held is not None and held.summary is summary:
            return
        _decoded, text = read_source(data, limit=len(data))
        self._keep_held(relpath, _Held(text, parser().parse(text), summary, scope_bodies(summary)))

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
        else:
            tree = parser().parse(text)
        if result is None:
            summary = summary_of(relpath, decoded, text, tree)
            result = Reparsed(summary, scope_bodies(summary), None)
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
    """The new tree, and the summary when the edit lies inside one function's body."""
    old = held.text
    start = common_prefix(old, text)
    suffix = _common_suffix(old, text, min(len(old), len(text)) - start)
    old_end, new_end = len(old) - suffix, len(text) - suffix
    before = _function_around(held.tree.root_node, start, old_end)
    extent = (before.start_byte, before.end_byte) if before is not None else None
    old_end_point = text_point(old, old_end)
    new_end_point = text_point(text, new_end)
    held.tree.edit(start, old_end, new_end, text_point(old, start), old_end_point, new_end_point)
    tree = parser().parse(text, held.tree)
    if extent is None or tree.root_node.has_error or held.summary.problems:
        return tree, None
    after = _function_around(tree.root_node, start, new_end)
    grown = new_end - old_end
    if after is None or (after.start_byte, after.end_byte) != (extent[0], extent[1] + grown):
        return tree, None
    move = _Move(old_end, grown, old_end_point[0] + 1, new_end_point[0] - old_end_point[0])
    return tree, _splice(held, text, after, move)


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
        words=words_sketch(text),
    )
    return Reparsed(summary, bodies, range(idx, end))


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


def _moved(scope: Scope, body: Body, move: _Move, end_line: int | None) -> tuple[Scope, Body]:
    """A scope outside the edit, with what lies after the edit moved; end_line: its new
    last line when it encloses the edit."""
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
    new.attr_reads = [(e, span(s), pos(p), b) for e, s, p, b in attr_reads]
    new.uses = [(t, e, span(s), pos(p), b) for t, e, s, p, b in uses]
    new.bindings = tuple(Binding(b.name, b.value, pos(b.pos), b.blocks) for b in scope.bindings)
    new.attr_assigns = tuple((o, a, v, pos(p)) for o, a, v, p in scope.attr_assigns)
    new.mutations = tuple((n, a, pos(p), r) for n, a, p, r in scope.mutations)
    new.star_imports = tuple((m, lv, pos(p)) for m, lv, p in scope.star_imports)
    if end_line is not None:
        new.end_line = end_line
    else:
        new.line, new.start_line = move.line(scope.line), move.line(scope.start_line)
        new.end_line = move.line(scope.end_line)
        new.name_span = span(scope.name_span)
    return new, (new.calls, new.attr_reads, new.uses)
