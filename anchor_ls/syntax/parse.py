"""One file in, one summary out: a single walk over the tree-sitter tree.

tree-sitter recovers from syntax errors, so a broken file still yields every
definition and call outside the broken region (Python's `ast` would give none).
"""

from __future__ import annotations

import bisect
import functools
import re
import sys
import zlib
from array import array
from typing import NamedTuple

import tree_sitter_python
from tree_sitter import Language, Node, Parser, Range, Tree

from anchor_ls.syntax.source import MAX_FILE_BYTES, DecodedSource, decode_source
from anchor_ls.syntax.summary import (
    UNKNOWN,
    Binding,
    CallSite,
    Expr,
    FileSummary,
    Param,
    Scope,
    Span,
    local_names,
)

LANGUAGE = Language(tree_sitter_python.language())
_parser: Parser | None = None

_CONSTANT_TYPES = frozenset(
    {"integer", "float", "true", "false", "none", "ellipsis", "comment", "escape_sequence"}
)
_COMPREHENSIONS = frozenset(
    {"list_comprehension", "set_comprehension", "dictionary_comprehension", "generator_expression"}
)
_BUILTIN_ITERATORS = frozenset(
    {
        "range",
        "enumerate",
        "zip",
        "reversed",
        "sorted",
        "items",
        "keys",
        "values",
        "split",
        "splitlines",
        "open",
        "iter",
        "map",
        "filter",
        "list",
        "tuple",
        "set",
        "dict",
        "frozenset",
    }
)
_MUTATORS = frozenset({"append", "add", "insert", "extend", "update", "setdefault"})
_SEQUENCES = frozenset({"list", "tuple", "set", "expression_list", "pattern_list"})
# Builtins whose arguments are inspected, not kept: passing a class there is no reference.
_NOT_A_USE = frozenset(
    {"isinstance", "issubclass", "super", "hasattr", "getattr", "setattr", "delattr", "type"}
    | {"callable", "id", "repr", "print", "vars", "len"}
)
_TYPE_FACTORIES = frozenset({"TypeVar", "ParamSpec", "TypeVarTuple", "NewType"})
_KEYED_NAMES = frozenset({"environ", "environb", "config"})
_TARGET_SEQUENCES = frozenset({"pattern_list", "tuple_pattern", "list_pattern", "tuple", "list"})
# How deep expressions nest before the walk leaves the inner part out (as unknown). Real
# code stays far below; CPython compiles `a.b.b.b...` or `- - - x` thousands deep, and the
# walk (and the binder after it) recurses once or thrice a level. Chains of `and`/`or` and
# of binary operators, which CPython takes at any length, are walked flat instead.
MAX_EXPR_DEPTH = 200


def parser() -> Parser:
    global _parser
    if _parser is None:
        _parser = Parser(LANGUAGE)
    return _parser


def summarize(relpath: str, data: bytes, *, limit: int = MAX_FILE_BYTES) -> FileSummary:
    """Summarize one file; raises UnreadableSource for binaries and files over `limit`."""
    decoded, text = read_source(data, limit=limit)
    return summary_of(relpath, decoded, text, parser().parse(text))


def read_source(data: bytes, *, limit: int = MAX_FILE_BYTES) -> tuple[DecodedSource, bytes]:
    """The decoded source and the UTF-8 text the parser reads (every offset is into it)."""
    decoded = decode_source(data, limit=limit)
    return decoded, decoded.text.encode("utf-8", "surrogatepass")


def summary_lines(text: bytes) -> int:
    """A file's line count (the module scope's last line): at least 1."""
    return max(text.count(b"\n") + (0 if text.endswith(b"\n") else 1), 1)


def summary_of(relpath: str, decoded: DecodedSource, text: bytes, tree: Tree) -> FileSummary:
    """The summary of a parsed file: one walk over its tree."""
    lines = summary_lines(text)
    walker = _Walker(text, lines)
    roots = [tree.root_node]
    if tree.root_node.has_error:
        roots = _recovered_roots(text, tree.root_node)
    for root in roots:
        walker.module(root)
    note_free_calls(walker.scopes)
    summary = FileSummary(relpath, walker.scopes, lines, encoding=decoded.encoding)
    summary.words = words_sketch(text)
    summary.all_names = walker.all_names
    summary.constants = walker.constants
    if decoded.warning:
        summary.problems.append(("decode", decoded.warning))
    if walker.cut is not None:
        summary.problems.append(
            (
                "too-deep",
                f"an expression nested over {MAX_EXPR_DEPTH} deep at line {walker.cut} was "
                "read in part; the rest of the file was read",
            )
        )
    if tree.root_node.has_error:
        broken = next((r for r in roots if r.has_error), tree.root_node)
        summary.problems.append(("syntax", _first_error(broken)))
    return summary


_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


def words_sketch(text: bytes) -> bytes:
    """The CRC-32 of every distinct word of a text, sorted (four bytes a word): when an
    edit changes what a file defines, most of its hundreds of importers are ruled out by
    it, unread."""
    return array("I", sorted(map(zlib.crc32, set(_WORD.findall(text))))).tobytes()


def may_mention(words: bytes, name: bytes) -> bool:
    """False when a text whose sketch is words surely lacks the word name."""
    probe = _probe(name)
    if not words or probe is None:
        return True
    table = memoryview(words).cast("I")
    at = bisect.bisect_left(table, probe)
    return at < len(table) and table[at] == probe


@functools.lru_cache(maxsize=4096)
def _probe(name: bytes) -> int | None:
    """A name's hash, asked of hundreds of sketches in a row."""
    return zlib.crc32(name) if _WORD.fullmatch(name) else None


def has_word(text: bytes, name: bytes) -> bool:
    """Whether name stands in text as a word of its own (not inside a longer one)."""
    return name in text and re.search(rb"\b%s\b" % re.escape(name), text) is not None


def rewalk_function(text: bytes, node: Node, idx: int, head: Scope) -> list[Scope] | None:
    """The scopes of one function definition walked again: the function (scope idx, its
    header kept from head) and the definitions nested in it, numbered on from idx+1.

    None when the body writes outside those scopes (`global x; x = ...` binds in the
    module): the whole file must be walked then.
    """
    walker = _Walker(text, 1)
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


def walk_statements(text: bytes, nodes: list[Node], first: int) -> Statements:
    """Some of a module's top-level statements walked as the whole file's walk would; their
    definitions are numbered from scope index first."""
    walker = _Walker(text, 1)
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


def _span(node: Node) -> Span:
    (r0, c0), (r1, c1) = node.start_point, node.end_point
    return (r0, c0, r1, c1)


class _Walker:
    def __init__(self, src: bytes, line_count: int) -> None:
        self.src = src
        module = Scope("module", "", "", -1, 1, line_count, 1, (0, 0, 0, 0))
        self.scopes: list[Scope] = [module]
        self.cur = 0
        self.blocks: tuple[int, ...] = ()
        self.block_counter = 0
        self.stmt_pos = 0
        self.all_names: list[str] | None = None
        self.constants: list[tuple[str, int, int, Span]] = []
        self.no_refs = False  # inside `isinstance(...)` arguments or an `except` clause
        self.name_exprs: dict[str, Expr] = {}
        self.depth = 0  # expressions (and targets, annotations) being walked, nested
        self.cut: int | None = None  # the first line where an expression was too deep

    def too_deep(self, node: Node) -> Expr:
        """What an expression nested past MAX_EXPR_DEPTH stands for: unknown, unread."""
        if self.cut is None:
            self.cut = node.start_point[0] + 1
        return UNKNOWN

    # ----- helpers ------------------------------------------------------
    def text(self, node: Node) -> str:
        return self.src[node.start_byte : node.end_byte].decode("utf-8", "replace")

    @property
    def scope(self) -> Scope:
        return self.scopes[self.cur]

    def new_block(self) -> tuple[int, ...]:
        self.block_counter += 1
        return (*self.blocks, self.block_counter)

    def bind(self, name: str, value: Expr, pos: int) -> None:
        name = sys.intern(name)
        scope = self.scope
        if name in scope.global_names and scope.kind != "module":
            # `global x; x = ...` binds in the module, but never dominates its uses there.
            self.scopes[0].bindings.append(Binding(name, value, pos, (-1,)))
            return
        scope.bindings.append(Binding(name, value, pos, self.blocks))

    def name_expr(self, name: str) -> Expr:
        """One shared ("n", name) per name and file: a summary holds thousands of `self`."""
        expr = self.name_exprs.get(name)
        if expr is None:
            expr = self.name_exprs[name] = ("n", sys.intern(name))
        return expr

    def use(self, tag: str, expr: Expr, node: Node) -> None:
        self.scope.uses.append((tag, expr, _span(node), node.start_byte, self.blocks))

    def value(self, node: Node | None) -> Expr:
        """An expression in a value position: a bare name or attribute there is a reference."""
        expr = self.expr(node)
        if node is not None and not self.no_refs:
            if node.type == "identifier":
                self.use("r", expr, node)
            elif node.type == "attribute" and expr[0] == "a":
                self.use("r", expr, node.child_by_field_name("attribute") or node)
        return expr

    def in_block(self, node: Node | None, blocks: tuple[int, ...] | None = None) -> None:
        if node is None:
            return
        saved = self.blocks
        self.blocks = blocks if blocks is not None else self.new_block()
        self.body(node)
        self.blocks = saved

    # ----- statements ---------------------------------------------------
    def module(self, root: Node) -> None:
        self.body(root)

    def body(self, node: Node) -> None:
        for child in node.named_children:
            self.stmt(child)

    def stmt(self, node: Node) -> None:
        t = node.type
        self.stmt_pos = node.start_byte
        handler = _STATEMENTS.get(t)
        if handler is not None:
            handler(self, node)
        elif t in _CONSTANT_TYPES:
            return
        else:
            self.expr(node)

    def s_expression_statement(self, node: Node) -> None:
        for child in node.named_children:
            if child.type == "assignment":
                self.assignment(child)
            elif child.type == "augmented_assignment":
                self.augmented(child)
            else:
                self.expr(child)

    def s_block(self, node: Node) -> None:
        self.body(node)

    def s_error(self, node: Node) -> None:
        for child in node.named_children:
            self.stmt(child)

    def s_decorated(self, node: Node) -> None:
        definition = node.child_by_field_name("definition")
        decorators = [c for c in node.named_children if c.type == "decorator"]
        if definition is None:
            for child in node.named_children:
                self.expr(child)
            return
        self.definition(definition, decorators, node)

    def s_function(self, node: Node) -> None:
        self.definition(node, [], node)

    def s_if(self, node: Node) -> None:
        self.expr(node.child_by_field_name("condition"))
        self.in_block(node.child_by_field_name("consequence"))
        for alt in node.children_by_field_name("alternative"):
            if alt.type == "elif_clause":
                self.expr(alt.child_by_field_name("condition"))
                self.in_block(alt.child_by_field_name("consequence"))
            else:
                self.in_block(alt.child_by_field_name("body"))

    def s_for(self, node: Node) -> None:
        right = node.child_by_field_name("right")
        iterable = self.expr(right)
        self.protocol_call(iterable, right, node, "iter")
        saved = self.blocks
        self.blocks = self.new_block()
        left = node.child_by_field_name("left")
        if left is not None:
            self.target(left, ("it", iterable), node.start_byte)
        self.body_of(node.child_by_field_name("body"))
        self.blocks = saved
        alt = node.child_by_field_name("alternative")
        if alt is not None:
            self.in_block(alt.child_by_field_name("body"))

    def body_of(self, node: Node | None) -> None:
        if node is not None:
            self.body(node)

    def s_while(self, node: Node) -> None:
        self.expr(node.child_by_field_name("condition"))
        self.in_block(node.child_by_field_name("body"))
        alt = node.child_by_field_name("alternative")
        if alt is not None:
            self.in_block(alt.child_by_field_name("body"))

    def s_try(self, node: Node) -> None:
        self.in_block(node.child_by_field_name("body"))
        for child in node.named_children:
            t = child.type
            if t in ("except_clause", "except_group_clause"):
                saved = self.blocks
                self.blocks = self.new_block()
                for part in child.named_children:
                    if part.type == "block":
                        self.body(part)
                    elif part.type == "as_pattern":
                        self.no_refs = True
                        caught = self.expr(part.named_children[0])
                        self.no_refs = False
                        alias = part.child_by_field_name("alias")
                        if alias is not None:
                            self.target(alias, ("ex", caught), child.start_byte)
                    else:
                        self.no_refs = True
                        self.expr(part)
                        self.no_refs = False
                self.blocks = saved
            elif t in ("else_clause", "finally_clause"):
                body = child.child_by_field_name("body")
                self.in_block(body if body is not None else child)

    def s_with(self, node: Node) -> None:
        for clause in node.named_children:
            if clause.type != "with_clause":
                continue
            for item in clause.named_children:
                value = item.child_by_field_name("value")
                if value is not None and value.type == "as_pattern":
                    entered = self.expr(value.named_children[0])
                    self.protocol_call(entered, value.named_children[0], node, "with")
                    alias = value.child_by_field_name("alias")
                    if alias is not None:
                        self.target(alias, ("en", entered), node.start_byte)
                else:
                    self.protocol_call(self.expr(value), value, node, "with")
        self.body_of(node.child_by_field_name("body"))

    def s_raise(self, node: Node) -> None:
        """`raise E` instantiates the class E: a call of E that the code does not spell."""
        for i, child in enumerate(node.named_children):
            value = self.expr(child)
            if i == 0 and child.type in ("identifier", "attribute"):
                self.add_call(value, (), (), child, node.start_byte, "raise")

    def protocol_call(self, value: Expr, node: Node | None, statement: Node, kind: str) -> None:
        """The calls `for`/`with` make without spelling them (`__iter__`, `__enter__`, ...)."""
        if node is not None and _may_be_instance(value):
            if any(c.type == "async" for c in statement.children):
                kind = "a" + kind
            self.add_call(value, (), (), node, node.start_byte, kind)

    def s_match(self, node: Node) -> None:
        for child in node.named_children:
            if child.type == "block":
                for case in child.named_children:
                    self.in_block(case.child_by_field_name("consequence"))
            elif child.type == "case_clause":
                self.in_block(child.child_by_field_name("consequence"))
            else:
                self.expr(child)

    def s_return(self, node: Node) -> None:
        for child in node.named_children:
            self.scope.return_values.append(self.value(child))

    def s_global(self, node: Node) -> None:
        for child in node.named_children:
            if child.type == "identifier":
                self.scope.global_names |= {self.text(child)}

    def s_nonlocal(self, node: Node) -> None:
        return None

    def s_skip(self, node: Node) -> None:
        return None

    def s_import(self, node: Node) -> None:
        pos = node.start_byte
        for name in node.children_by_field_name("name"):
            if name.type == "aliased_import":
                dotted = self.text(name.child_by_field_name("name"))
                alias = name.child_by_field_name("alias")
                self.bind(self.text(alias), ("ima", dotted, 0), pos)
            else:
                dotted = self.text(name)
                self.bind(dotted.split(".")[0], ("im", dotted, 0), pos)

    def s_import_from(self, node: Node) -> None:
        pos = node.start_byte
        module_node = node.child_by_field_name("module_name")
        module, level = "", 0
        if module_node is not None:
            if module_node.type == "relative_import":
                for part in module_node.named_children:
                    if part.type == "import_prefix":
                        level = self.text(part).count(".")
                    else:
                        module = self.text(part)
            else:
                module = self.text(module_node)
        if any(c.type == "wildcard_import" for c in node.named_children):
            self.scope.star_imports.append((module, level, pos))
            return
        for name in node.children_by_field_name("name"):
            if name.type == "aliased_import":
                imported = self.text(name.child_by_field_name("name"))
                bound = self.text(name.child_by_field_name("alias"))
            else:
                imported = bound = self.text(name)
            self.bind(bound, ("if", module, level, imported), pos)

    # ----- definitions --------------------------------------------------
    def definition(self, node: Node, decorators: list[Node], start: Node) -> None:
        if node.type == "class_definition":
            kind = "class"
        elif node.type == "function_definition":
            kind = "function"
        else:
            self.stmt(node)
            return
        name_node = node.child_by_field_name("name")
        name = self.text(name_node) if name_node is not None else "<anonymous>"
        idx = self.new_scope(kind, name, node, start, name_node)
        scope = self.scopes[idx]
        decorators = [d for d in decorators if d.named_children]
        for k, dec in enumerate(decorators, 1):
            expr_node = dec.named_children[0]
            value = self.expr(expr_node)
            scope.decorators.append(value)
            target = expr_node.child_by_field_name("function") if expr_node.type == "call" else None
            # each decorator gets what the ones below it made of the definition
            arg = ("dw", idx, k) if k < len(decorators) else ("f", idx)
            self.add_call(value, (arg,), (), target or expr_node, dec.start_byte, "decorator")
        if kind == "class":
            supers = node.child_by_field_name("superclasses")
            if supers is not None:
                for arg in supers.named_children:
                    if arg.type == "keyword_argument":
                        value = self.expr(arg.child_by_field_name("value"))
                        keyword = arg.child_by_field_name("name")
                        if keyword is not None and self.text(keyword) == "metaclass":
                            scope.metaclass = value
                    else:
                        scope.bases.append(self.expr(arg))
        else:
            scope.is_async = any(c.type == "async" for c in node.children)
            scope.params = self.params(node.child_by_field_name("parameters"))
            scope.returns = self.annotation(node.child_by_field_name("return_type"))
        self.bind(name, ("f", idx), start.start_byte)
        self.enter(idx, node.child_by_field_name("body"))

    def new_scope(
        self, kind: str, name: str, node: Node, start: Node, name_node: Node | None
    ) -> int:
        parent = self.scope
        qualname = f"{parent.qualname}.{name}" if parent.qualname else name
        scope = Scope(
            kind,
            name,
            qualname,
            self.cur,
            node.start_point[0] + 1,
            end_line(node),
            start.start_point[0] + 1,
            _span(name_node) if name_node is not None else _span(node),
        )
        self.scopes.append(scope)
        return len(self.scopes) - 1

    def enter(self, idx: int, body: Node | None) -> None:
        # Blocks are numbered scope by scope: an edit in one function renumbers no other.
        saved = (self.cur, self.blocks, self.stmt_pos, self.block_counter)
        self.cur, self.blocks, self.block_counter = idx, (), 0
        if body is not None:
            if body.type == "block":
                self.body(body)
            else:  # a lambda body is one expression
                value = self.expr(body)
                self.scope.return_values.append(value)
        self.cur, self.blocks, self.stmt_pos, self.block_counter = saved

    def params(self, node: Node | None) -> list[Param]:
        params: list[Param] = []
        if node is None:
            return params
        kind = "pos"
        for child in node.named_children:
            t = child.type
            if t == "identifier":
                params.append(Param(self.text(child), kind, None, None))
            elif t in ("typed_parameter", "typed_default_parameter", "default_parameter"):
                name_node = child.child_by_field_name("name")
                if name_node is None:  # typed_parameter holds its name as first child
                    name_node = child.named_children[0]
                ann = self.annotation(child.child_by_field_name("type"))
                default = child.child_by_field_name("value")
                value = self.value(default) if default is not None else None
                if name_node.type == "list_splat_pattern":
                    params.append(Param(self.text(name_node).lstrip("*"), "star", ann, None))
                    kind = "kwonly"
                elif name_node.type == "dictionary_splat_pattern":
                    params.append(Param(self.text(name_node).lstrip("*"), "starstar", ann, None))
                else:
                    params.append(Param(self.text(name_node), kind, ann, value))
            elif t == "list_splat_pattern":
                params.append(Param(self.text(child).lstrip("*"), "star", None, None))
                kind = "kwonly"
            elif t == "dictionary_splat_pattern":
                params.append(Param(self.text(child).lstrip("*"), "starstar", None, None))
            elif t == "keyword_separator":
                kind = "kwonly"
            elif t == "positional_separator":
                params = [p._replace(kind="posonly") if p.kind == "pos" else p for p in params]
        return params

    def annotation(self, node: Node | None) -> Expr | None:
        """An annotation as an expression, without recording calls (it is not run)."""
        if node is None:
            return None
        if node.type == "type" and node.named_children:
            node = node.named_children[0]
        return self.type_expr(node)

    # ----- assignments --------------------------------------------------
    def assignment(self, node: Node) -> Expr:
        left = node.child_by_field_name("left")
        right = node.child_by_field_name("right")
        ann = self.annotation(node.child_by_field_name("type"))
        pos = node.end_byte
        if right is None:
            value: Expr = UNKNOWN
        elif right.type == "assignment":
            value = self.assignment(right)
        elif right.type == "lambda" and left is not None and left.type == "identifier":
            value = self.named_lambda(right, self.text(left))
        elif left is not None and (left.type != "identifier" or self.scope.kind == "class"):
            value = self.value(right)  # `obj.handler = f`, `registry[k] = f`, `form_class = F`
        else:
            value = self.expr(right)
        if ann is not None:
            value = ("or", (value, ("an", ann))) if right is not None else ("an", ann)
        if left is not None:
            if left.type == "identifier" and self.cur == 0:
                name = self.text(left)
                if name == "__all__":
                    self.record_all(value)
                elif is_constant_name(name) and not _is_type_variable(value):
                    self.constants.append(
                        (name, node.start_point[0] + 1, end_line(node), _span(left))
                    )
            self.target(left, value, pos)
        return value

    def named_lambda(self, node: Node, name: str) -> Expr:
        idx = self.new_scope("lambda", name, node, node, None)
        self.scopes[idx].params = self.params(node.child_by_field_name("parameters"))
        self.enter(idx, node.child_by_field_name("body"))
        return ("f", idx)

    def record_all(self, value: Expr) -> None:
        if value[0] == "l" and all(item[0] == "k" for item in value[1]):
            self.all_names = [str(item[1]) for item in value[1]]

    def augmented(self, node: Node) -> None:
        left = node.child_by_field_name("left")
        right = self.expr(node.child_by_field_name("right"))
        if left is not None and left.type == "identifier":
            if (
                self.text(left) == "__all__"
                and self.cur == 0
                and self.all_names is not None
                and right[0] == "l"
                and all(item[0] == "k" for item in right[1])
            ):
                self.all_names.extend(str(item[1]) for item in right[1])
            name = self.text(left)
            self.bind(name, ("or", (("n", name), right)), node.end_byte)
        elif left is not None:
            self.expr(left)

    def target(self, node: Node, value: Expr, pos: int) -> None:
        t = node.type
        if t == "identifier":
            self.bind(self.text(node), value, pos)
            return
        if self.depth >= MAX_EXPR_DEPTH:
            self.too_deep(node)
            return
        self.depth += 1
        self.nested_target(node, t, value, pos)
        self.depth -= 1

    def nested_target(self, node: Node, t: str, value: Expr, pos: int) -> None:
        """target() of what is not a name, one level deeper."""
        if t == "attribute":
            obj = self.expr(node.child_by_field_name("object"))
            attr = node.child_by_field_name("attribute")
            if attr is not None:
                self.scope.attr_assigns.append((obj, self.text(attr), value, pos))
        elif t in _TARGET_SEQUENCES:
            items = node.named_children
            star = next(
                (
                    i
                    for i, it in enumerate(items)
                    if it.type in ("list_splat_pattern", "list_splat")
                ),
                None,
            )
            for i, item in enumerate(items):
                if i == star:
                    inner = item.named_children
                    if inner:
                        rest = ("st", value, i, len(items) - i - 1)
                        self.target(inner[0], rest, pos)
                elif star is not None and i > star:
                    self.target(item, ("ix", value, i - len(items)), pos)
                else:
                    self.target(item, ("ix", value, i), pos)
        elif t in ("parenthesized_expression", "as_pattern_target"):
            for child in node.named_children:
                self.target(child, value, pos)
        elif t == "subscript":
            base = node.child_by_field_name("value")
            keys = node.children_by_field_name("subscript")
            key = self.expr(keys[0]) if keys else UNKNOWN
            added: Expr = ("d", ((key, value),))
            replaces = key[0] == "k"
            depth = self.depth
            while base is not None and base.type == "subscript":  # d["a"]["b"] = v
                depth += 1
                if depth >= MAX_EXPR_DEPTH:
                    self.too_deep(node)
                    return
                keys = base.children_by_field_name("subscript")
                added = ("d", ((self.expr(keys[0]) if keys else UNKNOWN, added),))
                base, replaces = base.child_by_field_name("value"), False
            if base is not None and base.type == "identifier":
                self.mutate(self.text(base), added, pos, replaces)
            else:
                # `self.registry[k] = v` is not growth: recorded, it put a fifth on Django's
                # peak memory for a hundred edges
                self.expr(node)
        else:
            self.expr(node)

    # ----- expressions --------------------------------------------------
    def expr(self, node: Node | None, read: bool = True) -> Expr:
        """Convert an expression, recording the calls and attribute reads inside it."""
        if node is None:
            return UNKNOWN
        t = node.type
        if t == "identifier":
            value = self.name_expr(self.text(node))
            if read and is_constant_name(value[1]):
                self.use("n", value, node)
            return value
        if self.depth >= MAX_EXPR_DEPTH:
            return self.too_deep(node)
        self.depth += 1
        value = self.nested_expr(node, t, read)
        self.depth -= 1
        return value

    def nested_expr(self, node: Node, t: str, read: bool) -> Expr:
        """expr() of what is not a name, one level deeper."""
        if t == "attribute":
            attr = node.child_by_field_name("attribute")
            base = self.expr(node.child_by_field_name("object"))
            if attr is None:
                return UNKNOWN
            value = ("a", base, sys.intern(self.text(attr)))
            if read:
                self.scope.attr_reads.append((value, _span(attr), node.start_byte, self.blocks))
            return value
        if t == "call":
            return self.call(node)
        handler = _EXPRESSIONS.get(t)
        if handler is not None:
            return handler(self, node)
        if t in _CONSTANT_TYPES:
            return ("k", _integer(self.text(node))) if t == "integer" else UNKNOWN
        if t == "unary_operator" and (number := _int_literal(node)) is not None:
            return ("k", number)  # `ls[-1]`
        if t in _COMPREHENSIONS:
            return self.comprehension(node)
        if t in _SEQUENCES:
            return ("l", tuple(self.value(c) for c in node.named_children))
        for child in node.named_children:
            self.expr(child)
        return UNKNOWN

    def call(self, node: Node) -> Expr:
        func_node = node.child_by_field_name("function")
        func = self.expr(func_node, read=False)
        args: list[Expr] = []
        kwargs: list[tuple[str, Expr]] = []
        arguments = node.child_by_field_name("arguments")
        saved_no_refs = self.no_refs
        if func[0] == "n" and func[1] in _NOT_A_USE:
            self.no_refs = True
        if arguments is not None:
            if arguments.type == "generator_expression":
                args.append(self.expr(arguments))
            else:
                for arg in arguments.named_children:
                    at = arg.type
                    if at == "keyword_argument":
                        name = arg.child_by_field_name("name")
                        value = self.value(arg.child_by_field_name("value"))
                        if name is not None:
                            kwargs.append((self.text(name), value))
                    elif at == "list_splat":
                        args.append(("*", self.expr(arg.named_children[0])))
                    elif at == "dictionary_splat":
                        kwargs.append(("**", self.expr(arg.named_children[0])))
                    elif at != "comment":
                        args.append(self.value(arg))
        self.no_refs = saved_no_refs
        targs, tkwargs = tuple(args), tuple(kwargs)
        if func[0] == "a" and func[1][0] in ("n", "a") and func[2] in _MUTATORS:
            self.mutation_call(func[1], func[2], targs, tkwargs, node.end_byte)
        span_node = func_node
        if func_node is not None and func_node.type == "attribute":
            span_node = func_node.child_by_field_name("attribute") or func_node
        self.add_call(func, targs, tkwargs, span_node or node, node.start_byte, "call")
        return ("c", func, targs, tkwargs)

    def mutate(self, name: str, added: Expr, pos: int, replaces: bool = False) -> None:
        """replaces: `d[k] = v` or `d.update(...)` with constant keys, not under a condition
        or loop: the keys' earlier values are gone after it."""
        self.scope.mutations.append((name, added, pos, replaces and not self.blocks))

    def mutation_call(
        self,
        target: Expr,
        method: str,
        args: tuple[Expr, ...],
        kwargs: tuple[tuple[str, Expr], ...],
        pos: int,
    ) -> None:
        """`x.append(f)`, `x.update({...})`, `x.setdefault(k, f)`: what x holds grows.
        target: a name, or an attribute (`self.handlers.append(f)`)."""
        grown: list[tuple[Expr, bool]] = []  # (what is added, whether its keys replace)
        if method in ("append", "add") and args:
            grown.append((("l", (args[0],)), False))
        elif method == "insert" and len(args) > 1:
            grown.append((("l", (args[1],)), False))
        elif method == "extend" and args:
            grown.append((args[0], False))
        elif method == "setdefault" and len(args) > 1:
            grown.append((("d", ((args[0], args[1]),)), False))
        elif method == "update":
            grown.extend((arg, arg[0] == "d") for arg in args)
            pairs = tuple((("k", k), v) for k, v in kwargs if k != "**")
            if pairs:
                grown.append((("d", pairs), True))
        for added, replaces in grown:
            self.grow(target, added, pos, replaces)

    def grow(self, target: Expr, added: Expr, pos: int, replaces: bool = False) -> None:
        """What a name holds grows (see mutate); what an attribute holds grows as if it
        were assigned the addition too (attribute values are the union of what is
        assigned to them anywhere)."""
        if target[0] == "n":
            self.mutate(target[1], added, pos, replaces)
        elif target[0] == "a":
            self.scope.attr_assigns.append((target[1], target[2], added, pos))

    def add_call(
        self,
        func: Expr,
        args: tuple[Expr, ...],
        kwargs: tuple[tuple[str, Expr], ...],
        span_node: Node,
        pos: int,
        kind: str,
    ) -> None:
        self.scope.calls.append(
            CallSite(func, args, kwargs, _span(span_node), pos, self.blocks, kind)
        )

    def e_string(self, node: Node) -> Expr:
        parts = []
        dynamic = False
        for child in node.named_children:
            if child.type == "string_content":
                parts.append(self.text(child))
            elif child.type == "interpolation":
                dynamic = True
                for part in child.named_children:
                    self.expr(part)
        return UNKNOWN if dynamic else ("k", "".join(parts))

    def e_concatenated(self, node: Node) -> Expr:
        for child in node.named_children:
            self.expr(child)
        return UNKNOWN

    def e_dictionary(self, node: Node) -> Expr:
        pairs = []
        for child in node.named_children:
            if child.type == "pair":
                key = self.expr(child.child_by_field_name("key"))
                pairs.append((key, self.value(child.child_by_field_name("value"))))
            else:
                self.expr(child)
        return ("d", tuple(pairs))

    def e_subscript(self, node: Node) -> Expr:
        base = self.expr(node.child_by_field_name("value"))
        keys = []
        for k in node.children_by_field_name("subscript"):
            value = self.expr(k)
            keys.append(_slice_key(k) if k.type == "slice" else value)
        # `x[a, b]` is `x[(a, b)]`: a type expression's every argument (`Union[str, "Text"]`)
        key = keys[0] if len(keys) == 1 else ("l", tuple(keys)) if keys else UNKNOWN
        expr = ("s", base, key)
        if key[0] == "k" and _keyed_base(base):
            self.use("s", expr, node.children_by_field_name("subscript")[0])
        return expr

    def e_parenthesized(self, node: Node) -> Expr:
        inner = node.named_children
        values = [self.expr(c) for c in inner]
        return values[0] if len(values) == 1 else UNKNOWN

    def e_either(self, node: Node) -> Expr:
        if node.type == "boolean_operator":
            return ("or", tuple(self.chain(node)))
        values = [self.expr(c) for c in node.named_children]
        if node.type == "conditional_expression" and len(values) == 3:
            return ("or", (values[0], values[2]))
        return ("or", tuple(values))

    def e_operator(self, node: Node) -> Expr:
        self.chain(node)
        return UNKNOWN

    def chain(self, node: Node) -> list[Expr]:
        """The operands of a chain of node's operator type nested on the left (`a and b and
        c`, `a + b + c`), walked in source order without a level of recursion per operator
        (CPython compiles thousands of them); an inner chain's operands are the outer's."""
        spine = [node]
        while (first := spine[-1].named_children) and first[0].type == node.type:
            spine.append(first[0])
        values = [self.expr(c) for c in spine.pop().named_children]
        while spine:
            values.extend(self.expr(c) for c in spine.pop().named_children[1:])
        return values

    def e_await(self, node: Node) -> Expr:
        values = [self.expr(c) for c in node.named_children]
        return values[0] if values else UNKNOWN

    def e_yield(self, node: Node) -> Expr:
        values = [self.expr(c) for c in node.named_children]
        if values:
            is_from = any(c.type == "from" for c in node.children)
            self.scope.yields.append(("it", values[0]) if is_from else values[0])
        return UNKNOWN

    def e_lambda(self, node: Node) -> Expr:
        # An anonymous lambda's calls belong to the enclosing scope; its
        # parameters are unknown values there, which keeps them unresolved.
        params = node.child_by_field_name("parameters")
        if params is not None:
            for p in params.named_children:
                default = p.child_by_field_name("value")
                if default is not None:
                    self.expr(default)
        self.expr(node.child_by_field_name("body"))
        return UNKNOWN

    def e_walrus(self, node: Node) -> Expr:
        value = self.expr(node.child_by_field_name("value"))
        name = node.child_by_field_name("name")
        if name is not None:
            self.bind(self.text(name), value, node.end_byte)
        return value

    def e_keyword(self, node: Node) -> Expr:
        return self.expr(node.child_by_field_name("value"))

    def comprehension(self, node: Node) -> Expr:
        saved = self.blocks
        self.blocks = self.new_block()
        pos = node.start_byte
        body = node.child_by_field_name("body")
        for clause in node.named_children:
            if clause.type == "for_in_clause":
                right = clause.child_by_field_name("right")
                iterable = self.expr(right)
                self.protocol_call(iterable, right, clause, "iter")
                for left in clause.children_by_field_name("left"):
                    self.target(left, ("it", iterable), pos)
        element = UNKNOWN
        for clause in node.named_children:
            if clause.type == "for_in_clause":
                continue
            if clause.type == "pair":
                key = self.expr(clause.child_by_field_name("key"))
                value = self.expr(clause.child_by_field_name("value"))
                element = ("d", ((key if key[0] == "k" else UNKNOWN, value),))
            elif clause == body:
                element = self.expr(clause)
            else:
                self.expr(clause)
        self.blocks = saved
        return element if node.type == "dictionary_comprehension" else ("l", (element,))

    def type_expr(self, node: Node) -> Expr | None:
        """An annotation's expression; strings stay text for the binder to read."""
        t = node.type
        if t == "identifier":
            return ("n", self.text(node))
        if self.depth >= MAX_EXPR_DEPTH:
            self.too_deep(node)
            return None
        self.depth += 1
        value = self.nested_type_expr(node, t)
        self.depth -= 1
        return value

    def nested_type_expr(self, node: Node, t: str) -> Expr | None:
        """type_expr() of what is not a name, one level deeper."""
        if t == "attribute":
            base = self.type_expr(node.child_by_field_name("object"))
            attr = node.child_by_field_name("attribute")
            return ("a", base, self.text(attr)) if base is not None and attr is not None else None
        if t == "string":
            content = "".join(
                self.text(c) for c in node.named_children if c.type == "string_content"
            )
            return ("sa", content.strip())
        if t in ("subscript", "generic_type"):
            base_node = node.child_by_field_name("value") or node.named_children[0]
            base = self.type_expr(base_node)
            args_nodes = node.children_by_field_name("subscript")
            if not args_nodes and t == "generic_type":
                params = [c for c in node.named_children if c.type == "type_parameter"]
                args_nodes = [g for p in params for g in p.named_children]
            args = tuple(a for a in (self.type_expr(_unwrap_type(n)) for n in args_nodes) if a)
            return ("g", base, args) if base is not None else None
        if t == "binary_operator":
            parts = [self.type_expr(_unwrap_type(c)) for c in node.named_children]
            return ("or", tuple(p for p in parts if p is not None))
        if t == "union_type":
            parts = [self.type_expr(_unwrap_type(c)) for c in node.named_children]
            return ("or", tuple(p for p in parts if p is not None))
        if t == "type":
            return self.type_expr(node.named_children[0]) if node.named_children else None
        if t in ("tuple", "expression_list"):
            parts = [self.type_expr(_unwrap_type(c)) for c in node.named_children]
            return ("l", tuple(p for p in parts if p is not None))
        return None


def is_constant_name(name: str) -> bool:
    """UPPER_CASE, as PEP 8 names module constants (single letters are type variables)."""
    return len(name) > 1 and name.isupper() and not name.startswith("__")


def _is_type_variable(value: Expr) -> bool:
    return value[0] == "c" and value[1][-1] in _TYPE_FACTORIES


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


def _slice_key(node: Node) -> Expr:
    """("sl", start, stop) for a slice by int literals (None where one is left out), else
    ("sl",): the binder reads `items[1:3]` of a literal list as those items."""
    bounds: list[int | None] = [None, None]
    part = 0
    for child in node.children:
        if child.type == ":":
            part += 1
            if part > 1:  # a step
                return ("sl",)
        elif child.type != "comment":
            value = _int_literal(child)
            if value is None:
                return ("sl",)
            bounds[part] = value
    return ("sl", *bounds)


def _int_literal(node: Node) -> int | None:
    sign = 1
    while node.type == "unary_operator" and node.child_count == 2 and node.children[0].type == "-":
        sign, node = -sign, node.children[1]
    if node.type == "integer":
        value = _integer(node.text.decode() if node.text else "")
        return sign * value if isinstance(value, int) else None
    return None


def _integer(text: str) -> int | str:
    """An int literal's value (`d[1]` and `d["1"]` are different keys); odd forms stay text."""
    try:
        return int(text, 0)
    except ValueError:
        return text


def _may_be_instance(value: Expr) -> bool:
    """Whether iterating or entering value may run repository code: not a literal, not a
    call of a builtin iterator (`range(n)`, `d.items()`); keeps the summaries small."""
    tag = value[0]
    if tag in ("l", "d", "k", "u"):
        return False
    if tag == "c":
        func = value[1]
        if func[0] == "n":
            return func[1] not in _BUILTIN_ITERATORS
        if func[0] == "a":
            return func[2] not in _BUILTIN_ITERATORS
    return True


def _keyed_base(base: Expr) -> bool:
    """`os.environ[...]`, `environ[...]`, `app.config[...]`: the subscripts dense facts read."""
    if base[0] == "a":
        return base[2] in _KEYED_NAMES
    return base[0] == "n" and base[1] in _KEYED_NAMES


def end_line(node: Node) -> int:
    row, col = node.end_point
    return row + 1 if col > 0 or row == node.start_point[0] else row


def _unwrap_type(node: Node) -> Node:
    while node.type == "type" and node.named_children:
        node = node.named_children[0]
    return node


_STATEMENTS = {
    "expression_statement": _Walker.s_expression_statement,
    "function_definition": _Walker.s_function,
    "class_definition": _Walker.s_function,
    "decorated_definition": _Walker.s_decorated,
    "if_statement": _Walker.s_if,
    "for_statement": _Walker.s_for,
    "while_statement": _Walker.s_while,
    "try_statement": _Walker.s_try,
    "with_statement": _Walker.s_with,
    "match_statement": _Walker.s_match,
    "raise_statement": _Walker.s_raise,
    "return_statement": _Walker.s_return,
    "global_statement": _Walker.s_global,
    "nonlocal_statement": _Walker.s_nonlocal,
    "import_statement": _Walker.s_import,
    "import_from_statement": _Walker.s_import_from,
    "future_import_statement": _Walker.s_skip,
    "pass_statement": _Walker.s_skip,
    "break_statement": _Walker.s_skip,
    "continue_statement": _Walker.s_skip,
    "type_alias_statement": _Walker.s_skip,
    "block": _Walker.s_block,
    "ERROR": _Walker.s_error,
}

_EXPRESSIONS = {
    "string": _Walker.e_string,
    "concatenated_string": _Walker.e_concatenated,
    "dictionary": _Walker.e_dictionary,
    "subscript": _Walker.e_subscript,
    "parenthesized_expression": _Walker.e_parenthesized,
    "conditional_expression": _Walker.e_either,
    "boolean_operator": _Walker.e_either,
    "binary_operator": _Walker.e_operator,
    "await": _Walker.e_await,
    "yield": _Walker.e_yield,
    "lambda": _Walker.e_lambda,
    "named_expression": _Walker.e_walrus,
    "keyword_argument": _Walker.e_keyword,
}
