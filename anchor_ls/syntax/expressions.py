"""The expressions of a file as the binder's small tuples, and the walker state they share
with statements (scopes, blocks, bindings, uses); statements.py walks the statements."""

from __future__ import annotations

import sys

from tree_sitter import Node

from anchor_ls.syntax.summary import (
    ATTR_READ,
    UNKNOWN,
    AnySlice,
    AttrAssign,
    Attribute,
    AttrRead,
    Binding,
    Call,
    CallSite,
    Constant,
    DictDisplay,
    Either,
    Element,
    Expr,
    Generic,
    ModuleConstant,
    Mutation,
    Name,
    Scope,
    SeqDisplay,
    Slice,
    Span,
    Starred,
    StringAnnotation,
    Subscript,
    Use,
)

CONSTANT_TYPES = frozenset(
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
_KEYED_NAMES = frozenset({"environ", "environb", "config"})
# How deep expressions nest before the walk leaves the inner part out (as unknown). Real
# code stays far below; CPython compiles `a.b.b.b...` or `- - - x` thousands deep, and the
# walk (and the binder after it) recurses once or thrice a level. Chains of `and`/`or` and
# of binary operators, which CPython takes at any length, are walked flat instead.
MAX_EXPR_DEPTH = 200


class ExpressionWalker:
    """Walks expressions into the summary's values; the statement walker builds on it."""

    def __init__(self, src: bytes, line_count: int) -> None:
        self.src = src
        module = Scope("module", "", "", -1, 1, line_count, 1, (0, 0, 0, 0))
        self.scopes: list[Scope] = [module]
        self.cur = 0
        self.blocks: tuple[int, ...] = ()
        self.block_counter = 0
        self.stmt_pos = 0
        self.all_names: list[str] | None = None
        self.constants: list[ModuleConstant] = []
        self.no_refs = False  # inside `isinstance(...)` arguments or an `except` clause
        self.name_exprs: dict[str, Expr] = {}
        self.depth = 0  # expressions (and targets, annotations) being walked, nested
        self.outline = False  # definitions only: function bodies are not walked
        self.cut: int | None = None  # the first line where an expression was too deep

    def may_bind(self, node: Node | None) -> bool:
        """Whether walking node may bind a name where it stands: a walrus does, and so
        does a comprehension's target (the walk binds it in the enclosing scope)."""
        if node is None:
            return False
        text = self.src[node.start_byte : node.end_byte]
        return b":=" in text or b"for" in text

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
            expr = self.name_exprs[name] = Name("n", sys.intern(name))
        return expr

    def use(self, tag: str, expr: Expr, node: Node) -> None:
        self.scope.uses.append(Use(tag, expr, node_span(node), node.start_byte, self.blocks))

    def value(self, node: Node | None) -> Expr:
        """An expression in a value position: a bare name or attribute there is a reference."""
        expr = self.expr(node)
        if node is not None and not self.no_refs:
            if node.type == "identifier":
                self.use("r", expr, node)
            elif node.type == "attribute" and expr[0] == "a":
                self.use("r", expr, node.child_by_field_name("attribute") or node)
        return expr

    def target(self, node: Node, value: Expr, pos: int) -> None:
        """Bind an assignment target (a comprehension's `for` target): statements.py."""
        raise NotImplementedError

    def protocol_call(self, value: Expr, node: Node | None, statement: Node, kind: str) -> None:
        """The calls `for`/`with` make without spelling them (`__iter__`, `__enter__`, ...)."""
        if node is not None and _may_be_instance(value):
            if any(c.type == "async" for c in statement.children):
                kind = "a" + kind
            self.add_call(value, (), (), node, node.start_byte, kind)

    def attr_access(self, value: Expr, attr: Node, node: Node, kind: str) -> None:
        """`obj.name` (value) read, assigned or deleted: a property's getter, setter or
        deleter runs there."""
        self.scope.attr_reads.append(
            AttrRead(value, node_span(attr), node.start_byte, self.blocks, kind)
        )

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
            value = Attribute("a", base, sys.intern(self.text(attr)))
            if read:
                self.attr_access(value, attr, node, ATTR_READ)
            return value
        if t == "call":
            return self.call(node)
        handler = _EXPRESSIONS.get(t)
        if handler is not None:
            return handler(self, node)
        if t in CONSTANT_TYPES:
            return Constant("k", _integer(self.text(node))) if t == "integer" else UNKNOWN
        if t == "unary_operator" and (number := _int_literal(node)) is not None:
            return Constant("k", number)  # `ls[-1]`
        if t in _COMPREHENSIONS:
            return self.comprehension(node)
        if t in _SEQUENCES:
            return SeqDisplay("l", tuple(self.value(c) for c in node.named_children))
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
                        args.append(Starred("*", self.expr(arg.named_children[0])))
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
        return Call("c", func, targs, tkwargs)

    def mutate(self, name: str, added: Expr, pos: int, replaces: bool = False) -> None:
        """replaces: `d[k] = v` or `d.update(...)` with constant keys, not under a condition
        or loop: the keys' earlier values are gone after it."""
        self.scope.mutations.append(Mutation(name, added, pos, replaces and not self.blocks))

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
            grown.append((SeqDisplay("l", (args[0],)), False))
        elif method == "insert" and len(args) > 1:
            grown.append((SeqDisplay("l", (args[1],)), False))
        elif method == "extend" and args:
            grown.append((args[0], False))
        elif method == "setdefault" and len(args) > 1:
            grown.append((DictDisplay("d", ((args[0], args[1]),)), False))
        elif method == "update":
            grown.extend((arg, arg[0] == "d") for arg in args)
            pairs = tuple((Constant("k", k), v) for k, v in kwargs if k != "**")
            if pairs:
                grown.append((DictDisplay("d", pairs), True))
        for added, replaces in grown:
            self.grow(target, added, pos, replaces)

    def grow(self, target: Expr, added: Expr, pos: int, replaces: bool = False) -> None:
        """What a name holds grows (see mutate); what an attribute holds grows as if it
        were assigned the addition too (attribute values are the union of what is
        assigned to them anywhere)."""
        if target[0] == "n":
            self.mutate(target[1], added, pos, replaces)
        elif target[0] == "a":
            self.scope.attr_assigns.append(AttrAssign(target[1], target[2], added, pos))

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
            CallSite(func, args, kwargs, node_span(span_node), pos, self.blocks, kind)
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
        return UNKNOWN if dynamic else Constant("k", "".join(parts))

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
        return DictDisplay("d", tuple(pairs))

    def e_subscript(self, node: Node) -> Expr:
        base = self.expr(node.child_by_field_name("value"))
        keys = []
        for k in node.children_by_field_name("subscript"):
            value = self.expr(k)
            keys.append(_slice_key(k) if k.type == "slice" else value)
        # `x[a, b]` is `x[(a, b)]`: a type expression's every argument (`Union[str, "Text"]`)
        key = keys[0] if len(keys) == 1 else SeqDisplay("l", tuple(keys)) if keys else UNKNOWN
        expr = Subscript("s", base, key)
        if key[0] == "k" and _keyed_base(base):
            self.use("s", expr, node.children_by_field_name("subscript")[0])
        return expr

    def e_parenthesized(self, node: Node) -> Expr:
        inner = node.named_children
        values = [self.expr(c) for c in inner]
        return values[0] if len(values) == 1 else UNKNOWN

    def e_either(self, node: Node) -> Expr:
        if node.type == "boolean_operator":
            return Either("or", tuple(self.chain(node)))
        values = [self.expr(c) for c in node.named_children]
        if node.type == "conditional_expression" and len(values) == 3:
            return Either("or", (values[0], values[2]))
        return Either("or", tuple(values))

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
            self.scope.yields.append(Element("it", values[0]) if is_from else values[0])
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
                    self.target(left, Element("it", iterable), pos)
        element = UNKNOWN
        for clause in node.named_children:
            if clause.type == "for_in_clause":
                continue
            if clause.type == "pair":
                key = self.expr(clause.child_by_field_name("key"))
                value = self.expr(clause.child_by_field_name("value"))
                element = DictDisplay("d", ((key if key[0] == "k" else UNKNOWN, value),))
            elif clause == body:
                element = self.expr(clause)
            else:
                self.expr(clause)
        self.blocks = saved
        return element if node.type == "dictionary_comprehension" else SeqDisplay("l", (element,))

    def type_expr(self, node: Node) -> Expr | None:
        """An annotation's expression; strings stay text for the binder to read."""
        t = node.type
        if t == "identifier":
            return Name("n", self.text(node))
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
            return (
                Attribute("a", base, self.text(attr))
                if base is not None and attr is not None
                else None
            )
        if t == "string":
            content = "".join(
                self.text(c) for c in node.named_children if c.type == "string_content"
            )
            return StringAnnotation("sa", content.strip())
        if t in ("subscript", "generic_type"):
            base_node = node.child_by_field_name("value") or node.named_children[0]
            base = self.type_expr(base_node)
            args_nodes = node.children_by_field_name("subscript")
            if not args_nodes and t == "generic_type":
                params = [c for c in node.named_children if c.type == "type_parameter"]
                args_nodes = [g for p in params for g in p.named_children]
            args = tuple(a for a in (self.type_expr(_unwrap_type(n)) for n in args_nodes) if a)
            return Generic("g", base, args) if base is not None else None
        if t == "binary_operator":
            parts = [self.type_expr(_unwrap_type(c)) for c in node.named_children]
            return Either("or", tuple(p for p in parts if p is not None))
        if t == "union_type":
            parts = [self.type_expr(_unwrap_type(c)) for c in node.named_children]
            return Either("or", tuple(p for p in parts if p is not None))
        if t == "type":
            return self.type_expr(node.named_children[0]) if node.named_children else None
        if t in ("tuple", "expression_list"):
            parts = [self.type_expr(_unwrap_type(c)) for c in node.named_children]
            return SeqDisplay("l", tuple(p for p in parts if p is not None))
        return None


def is_constant_name(name: str) -> bool:
    """UPPER_CASE, as PEP 8 names module constants (single letters are type variables)."""
    return len(name) > 1 and name.isupper() and not name.startswith("__")


def _slice_key(node: Node) -> Expr:
    """("sl", start, stop) for a slice by int literals (None where one is left out), else
    ("sl",): the binder reads `items[1:3]` of a literal list as those items."""
    bounds: list[int | None] = [None, None]
    part = 0
    for child in node.children:
        if child.type == ":":
            part += 1
            if part > 1:  # a step
                return AnySlice("sl")
        elif child.type != "comment":
            value = _int_literal(child)
            if value is None:
                return AnySlice("sl")
            bounds[part] = value
    return Slice("sl", *bounds)


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


def node_span(node: Node) -> Span:
    (r0, c0), (r1, c1) = node.start_point, node.end_point
    return (r0, c0, r1, c1)


_EXPRESSIONS = {
    "string": ExpressionWalker.e_string,
    "concatenated_string": ExpressionWalker.e_concatenated,
    "dictionary": ExpressionWalker.e_dictionary,
    "subscript": ExpressionWalker.e_subscript,
    "parenthesized_expression": ExpressionWalker.e_parenthesized,
    "conditional_expression": ExpressionWalker.e_either,
    "boolean_operator": ExpressionWalker.e_either,
    "binary_operator": ExpressionWalker.e_operator,
    "await": ExpressionWalker.e_await,
    "yield": ExpressionWalker.e_yield,
    "lambda": ExpressionWalker.e_lambda,
    "named_expression": ExpressionWalker.e_walrus,
    "keyword_argument": ExpressionWalker.e_keyword,
}
