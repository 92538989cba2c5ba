"""One file in, one summary out: a single walk over the tree-sitter tree.

tree-sitter recovers from syntax errors, so a broken file still yields every
definition and call outside the broken region (Python's `ast` would give none).
The walk itself is statements.py (over expressions.py); `is_constant_name`, `has_word` and
`may_mention` are re-exported for the index, which imports them from here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

import tree_sitter_python
from tree_sitter import Language, Node, Parser, Range, Tree

from anchor_ls.syntax.expressions import MAX_EXPR_DEPTH, end_line
from anchor_ls.syntax.expressions import is_constant_name as is_constant_name
from anchor_ls.syntax.source import MAX_FILE_BYTES, DecodedSource, decode_source
from anchor_ls.syntax.statements import OutlineWalker, Walker
from anchor_ls.syntax.summary import (
    FileSummary,
    Problem,
    Scope,
    Span,
    local_names,
)
from anchor_ls.syntax.words import has_word as has_word
from anchor_ls.syntax.words import may_mention as may_mention
from anchor_ls.syntax.words import words_sketch

LANGUAGE = Language(tree_sitter_python.language())
_parser: Parser | None = None


def parser() -> Parser:
    global _parser
    if _parser is None:
        _parser = Parser(LANGUAGE)
    return _parser


def summarize(
    relpath: str, data: bytes, *, limit: int = MAX_FILE_BYTES, outline: bool = False
) -> FileSummary:
    """Summarize one file; raises UnreadableSource for binaries and files over `limit`.
    outline: its definitions, bindings of modules and classes, bases and return
    annotations only: no function bodies, parameters, decorators or calls (what a library
    file is read for: a third of the time)."""
    decoded, text = read_source(data, limit=limit)
    return summary_of(relpath, decoded, text, parser().parse(text), outline=outline)


def read_source(data: bytes, *, limit: int = MAX_FILE_BYTES) -> tuple[DecodedSource, bytes]:
    """The decoded source and the UTF-8 text the parser reads (every offset is into it)."""
    decoded = decode_source(data, limit=limit)
    return decoded, decoded.text.encode("utf-8", "surrogatepass")


def summary_lines(text: bytes) -> int:
    """A file's line count (the module scope's last line): at least 1."""
    return max(text.count(b"\n") + (0 if text.endswith(b"\n") else 1), 1)


def summary_of(
    relpath: str, decoded: DecodedSource, text: bytes, tree: Tree, *, outline: bool = False
) -> FileSummary:
    """The summary of a parsed file: one walk over its tree."""
    lines = summary_lines(text)
    walker = OutlineWalker(text, lines) if outline else Walker(text, lines)
    walker.outline = outline
    roots = [tree.root_node]
    if tree.root_node.has_error:
        roots = _recovered_roots(text, tree.root_node)
    for root in roots:
        walker.module(root)
    note_free_calls(walker.scopes)
    summary = FileSummary(relpath, walker.scopes, lines, encoding=decoded.encoding)
    summary.words = b"" if outline else words_sketch(text)
    summary.all_names = walker.all_names
    summary.constants = walker.constants
    summary.main_blocks = [] if outline else main_blocks(roots, text)
    if decoded.warning:
        summary.problems.append(Problem("decode", decoded.warning))
    if walker.cut is not None:
        summary.problems.append(
            Problem(
                "too-deep",
                f"an expression nested over {MAX_EXPR_DEPTH} deep at line {walker.cut} was "
                "read in part; the rest of the file was read",
            )
        )
    if tree.root_node.has_error:
        broken = next((r for r in roots if r.has_error), tree.root_node)
        summary.problems.append(Problem("syntax", _first_error(broken)))
    return summary


def rewalk_function(text: bytes, node: Node, idx: int, head: Scope) -> list[Scope] | None:
    """The scopes of one function definition walked again: the function (scope idx, its
    header kept from head) and the definitions nested in it, numbered on from idx+1.

    None when the body writes outside those scopes (`global x; x = ...` binds in the
    module): the whole file must be walked then.
    """
    walker = Walker(text, 1)
    module = walker.scopes[0]
    scope = Scope(
        head.kind,
        head.name,
        head.qualname,
        head.parent,
        head.line,
        end_line(node),
        head.start_line,
        head.name_span,
        decorators=head.decorators,
        bases=head.bases,
        metaclass=head.metaclass,
        params=head.params,
        returns=head.returns,
        is_async=head.is_async,
    )
    walker.scopes = [module] * idx + [scope]
    walker.enter(idx, node.child_by_field_name("body"))
    if module.bindings or walker.cut is not None:  # the whole walk reports the cut
        return None
    return walker.scopes[idx:]


class Statements(NamedTuple):
    """Top-level statements walked on their own (see walk_statements)."""

    module: Scope  # what they add to the module scope
    scopes: list[Scope]  # the definitions in them, numbered on from the first index given
    constants: list[tuple[str, int, int, Span]]
    apart: bool  # they change nothing else of the module: no block, `global` or `__all__`


_MAIN_TESTS = frozenset(
    f"{a}=={b}".encode()
    for q in "'\""
    for a, b in (("__name__", f"{q}__main__{q}"), (f"{q}__main__{q}", "__name__"))
)


def main_blocks(roots: Sequence[Node], text: bytes) -> list[Span]:
    """The module-level `if __name__ == "__main__":` statements (`and` another test too),
    each from its `if` to the end of its body (an `else` runs on import: it is not the
    script's part)."""
    found: list[Span] = []
    for root in roots:
        for node in root.named_children:
            if node.type != "if_statement":
                continue
            test = node.child_by_field_name("condition")
            body = node.child_by_field_name("consequence")
            if test is not None and body is not None and _main_test(test, text):
                found.append((node.start_point[0], node.start_point[1], *body.end_point))
    return found


def _main_test(test: Node, text: bytes) -> bool:
    """`__name__ == "__main__"`, either way round, maybe one operand of an `and`."""
    while test.type == "parenthesized_expression" and test.named_child_count == 1:
        test = test.named_children[0]
    if test.type == "boolean_operator":
        operator = test.child_by_field_name("operator")
        if operator is None or operator.type != "and":
            return False
        return any(_main_test(side, text) for side in test.named_children)
    if test.type != "comparison_operator":
        return False
    return b"".join(text[test.start_byte : test.end_byte].split()) in _MAIN_TESTS


def walk_statements(text: bytes, nodes: list[Node], first: int) -> Statements:
    """Some of a module's top-level statements walked as the whole file's walk would; their
    definitions are numbered from scope index first."""
    walker = Walker(text, 1)
    module = walker.scopes[0]
    walker.scopes = [module] * first
    for node in nodes:
        walker.stmt(node)
    apart = walker.block_counter == 0 and walker.all_names is None and not module.global_names
    apart = apart and walker.cut is None  # the whole walk reports the cut
    apart = apart and not any(b"__all__" in text[n.start_byte : n.end_byte] for n in nodes)
    return Statements(module, walker.scopes[first:], walker.constants, apart)


_TOP_LEVEL_DEF = re.compile(rb"^(?:@|(?:async[ \t]+)?(?:def|class)[ \t])", re.MULTILINE)


def _recovered_roots(text: bytes, whole: Node) -> list[Node]:
    """Parse a broken file again one top-level definition at a time.

    tree-sitter's recovery can swallow every definition after an unclosed
    bracket; cutting the file at column-0 `def`/`class`/`@` lines (decorators
    stay with their definition) confines an error to its own definition.
    Positions stay those of the whole file (the parser's included ranges).
    """
    starts = [0]
    open_decorator = False
    for match in _TOP_LEVEL_DEF.finditer(text):
        pos = match.start()
        node = whole.descendant_for_byte_range(pos, pos + 1)
        if node is not None and _in_string(node):
            continue
        is_decorator = text[pos : pos + 1] == b"@"
        if not open_decorator and pos > 0:
            starts.append(pos)
        open_decorator = is_decorator
    if len(starts) == 1:
        return [whole]
    ends = [*starts[1:], len(text)]
    recovery = Parser(LANGUAGE)
    roots = []
    for start, end in zip(starts, ends, strict=True):
        recovery.included_ranges = [
            Range(text_point(text, start), text_point(text, end), start, end)
        ]
        roots.append(recovery.parse(text).root_node)
    return roots


def _in_string(node: Node) -> bool:
    current: Node | None = node
    while current is not None:
        if current.type in ("string", "string_content", "comment"):
            return True
        current = current.parent
    return False


def text_point(text: bytes, pos: int) -> tuple[int, int]:
    """tree-sitter's point of a byte offset: (row, byte column)."""
    row = text.count(b"\n", 0, pos)
    return row, pos - (text.rfind(b"\n", 0, pos) + 1)


def _first_error(root: Node) -> str:
    node = root
    while True:
        for child in node.children:
            if child.type == "ERROR" or child.is_missing:
                row, col = child.start_point
                what = f"missing {child.type}" if child.is_missing else "invalid syntax"
                return f"{what} at line {row + 1}, column {col + 1}; the rest was read"
            if child.has_error:
                node = child
                break
        else:
            row, col = node.start_point
            return f"invalid syntax at line {row + 1}, column {col + 1}; the rest was read"


def note_free_calls(scopes: list[Scope], among: range | None = None) -> None:
    """What each nested function calls by a name of an enclosing function (a wrapper calling
    what its decorator was given), and which parameters each function calls, itself or
    through a nested one: kept outside the packed bodies for the binder."""
    chosen = range(len(scopes)) if among is None else among
    for i in chosen:
        scope = scopes[i]
        if scope.parent < 0 or scopes[scope.parent].kind != "function" or not scope.calls:
            continue
        called = {c.func[1] for c in scope.calls if c.func[0] == "n"}
        if not called:
            continue
        called -= local_names(scope)
        outer: set[str] = set()
        up = scope.parent
        while up >= 0 and scopes[up].kind == "function":
            outer |= local_names(scopes[up])
            up = scopes[up].parent
        if called & outer:
            scope.free_calls = frozenset(called & outer)
    owners = set(chosen)
    for i in chosen:  # what a nested function calls is what its enclosing ones call too
        up = scopes[i].parent
        while up > 0 and scopes[up].kind == "function":
            owners.add(up)
            up = scopes[up].parent
    for i in sorted(owners):
        scope = scopes[i]
        if scope.kind != "function" or not scope.params:
            continue
        names = {p.name for p in scope.params}
        called = {c.func[1] for c in scope.calls if c.func[0] == "n"} & names
        j = i + 1
        while j < len(scopes) and scopes[j].parent >= i:  # the scopes nested in it
            called |= scopes[j].free_calls & names
            j += 1
        if called != scope.called_params:
            scope.called_params = frozenset(called)
