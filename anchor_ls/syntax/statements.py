"""The statements of a file walked into scopes: definitions, assignments, imports, and the
blocks (branches, loops) that decide which binding a use sees."""

from __future__ import annotations

import sys

from tree_sitter import Node

from anchor_ls.syntax.expressions import (
    CONSTANT_TYPES,
    MAX_EXPR_DEPTH,
    ExpressionWalker,
    end_line,
    is_constant_name,
    node_span,
)
from anchor_ls.syntax.summary import (
    ATTR_DELETE,
    ATTR_WRITE,
    UNKNOWN,
    AttrAssign,
    Attribute,
    Caught,
    DecoratorsFrom,
    Definition,
    DictDisplay,
    Either,
    Element,
    Entered,
    Expr,
    Import,
    ImportAs,
    ImportFrom,
    InstanceOf,
    Item,
    ModuleConstant,
    Name,
    Param,
    Scope,
    StarImport,
    StarredTarget,
)

_TYPE_FACTORIES = frozenset({"TypeVar", "ParamSpec", "TypeVarTuple", "NewType"})
# What `del` takes apart: `del a.x, b.y`, `del (a.x)`, `del [a.x, b.y]`
_DELETE_GROUPS = frozenset({"expression_list", "tuple", "list", "parenthesized_expression"})
_TARGET_SEQUENCES = frozenset({"pattern_list", "tuple_pattern", "list_pattern", "tuple", "list"})


def _is_type_variable(value: Expr) -> bool:
    return value[0] == "c" and value[1][-1] in _TYPE_FACTORIES


class Walker(ExpressionWalker):
    """One walk over a tree (or some of its statements) into the scopes of a summary."""

    stores = True  # the targets being walked get a value (not `obj.x: int` alone)

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
        elif t in CONSTANT_TYPES:
            return
        else:
            self.expr(node)

    def s_expression_statement(self, node: Node) -> None:
        for child in node.named_children:
            if child.type == "assignment":
                self.assignment(child)
            elif child.type == "augmented_assignment":
                self.augmented(child)
            elif not self.outline or self.may_bind(child):  # a docstring, a call: not kept
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
        condition = node.child_by_field_name("condition")
        if not self.outline or self.may_bind(condition):  # an outline keeps the branches'
            self.expr(condition)
        self.in_block(node.child_by_field_name("consequence"))
        for alt in node.children_by_field_name("alternative"):
            if alt.type == "elif_clause":
                condition = alt.child_by_field_name("condition")
                if not self.outline or self.may_bind(condition):
                    self.expr(condition)
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
            self.target(left, Element("it", iterable), node.start_byte)
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
                            self.target(alias, Caught("ex", caught), child.start_byte)
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
                        self.target(alias, Entered("en", entered), node.start_byte)
                else:
                    self.protocol_call(self.expr(value), value, node, "with")
        self.body_of(node.child_by_field_name("body"))

    def s_raise(self, node: Node) -> None:
        """`raise E` instantiates the class E: a call of E that the code does not spell."""
        for i, child in enumerate(node.named_children):
            value = self.expr(child)
            if i == 0 and child.type in ("identifier", "attribute"):
                self.add_call(value, (), (), child, node.start_byte, "raise")

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
                self.bind(self.text(alias), ImportAs("ima", dotted, 0), pos)
            else:
                dotted = self.text(name)
                self.bind(dotted.split(".")[0], Import("im", dotted, 0), pos)

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
            self.scope.star_imports.append(StarImport(module, level, pos))
            return
        for name in node.children_by_field_name("name"):
            if name.type == "aliased_import":
                imported = self.text(name.child_by_field_name("name"))
                bound = self.text(name.child_by_field_name("alias"))
            else:
                imported = bound = self.text(name)
            self.bind(bound, ImportFrom("if", module, level, imported), pos)

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
        # an outline keeps no decorators, parameters or class keywords: walked only where
        # they may bind a name (a third of a library file's walk)
        lean = self.outline
        decorators = [d for d in decorators if d.named_children and (not lean or self.may_bind(d))]
        for k, dec in enumerate(decorators, 1):
            expr_node = dec.named_children[0]
            value = self.expr(expr_node)
            scope.decorators.append(value)
            target = expr_node.child_by_field_name("function") if expr_node.type == "call" else None
            # each decorator gets what the ones below it made of the definition
            arg = DecoratorsFrom("dw", idx, k) if k < len(decorators) else Definition("f", idx)
            self.add_call(value, (arg,), (), target or expr_node, dec.start_byte, "decorator")
        if kind == "class":
            supers = node.child_by_field_name("superclasses")
            if supers is not None:
                for arg in supers.named_children:
                    if arg.type == "keyword_argument":
                        if lean and not self.may_bind(arg):
                            continue
                        value = self.expr(arg.child_by_field_name("value"))
                        keyword = arg.child_by_field_name("name")
                        if keyword is not None and self.text(keyword) == "metaclass":
                            scope.metaclass = value
                    else:
                        scope.bases.append(self.expr(arg))
        else:
            first = node.child(0)  # `async` comes first (no list of every child)
            scope.is_async = first is not None and first.type == "async"
            parameters = node.child_by_field_name("parameters")
            if not lean or self.may_bind(parameters):
                scope.params = self.params(parameters)
            scope.returns = self.annotation(node.child_by_field_name("return_type"))
        self.bind(name, Definition("f", idx), start.start_byte)
        if kind == "function" and self.outline:
            return
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
            node_span(name_node) if name_node is not None else node_span(node),
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
            value = (
                Either("or", (value, InstanceOf("an", ann)))
                if right is not None
                else InstanceOf("an", ann)
            )
        if left is not None:
            stores, self.stores = self.stores, right is not None  # `obj.x: int` stores nothing
            if left.type == "identifier" and self.cur == 0:
                name = self.text(left)
                if name == "__all__":
                    self.record_all(value)
                elif is_constant_name(name) and not _is_type_variable(value):
                    self.constants.append(
                        ModuleConstant(
                            name, node.start_point[0] + 1, end_line(node), node_span(left)
                        )
                    )
            self.target(left, value, pos)
            self.stores = stores
        return value

    def named_lambda(self, node: Node, name: str) -> Expr:
        idx = self.new_scope("lambda", name, node, node, None)
        self.scopes[idx].params = self.params(node.child_by_field_name("parameters"))
        self.enter(idx, node.child_by_field_name("body"))
        return Definition("f", idx)

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
            self.bind(name, Either("or", (Name("n", name), right)), node.end_byte)
        elif left is not None:
            value = self.expr(left)
            attr = left.child_by_field_name("attribute") if left.type == "attribute" else None
            if attr is not None and value[0] == "a":  # `obj.p += 1` reads p, then assigns it
                self.attr_access(value, attr, left, ATTR_WRITE)

    def s_delete(self, node: Node) -> None:
        """`del obj.p` runs a property's deleter; the other targets are walked as before
        (their names and attributes read)."""
        todo = list(reversed(node.named_children))
        while todo:
            child = todo.pop()
            if child.type in _DELETE_GROUPS:
                todo.extend(reversed(child.named_children))
                continue
            attr = child.child_by_field_name("attribute") if child.type == "attribute" else None
            value = self.expr(child, read=attr is None)
            if attr is not None and value[0] == "a":
                self.attr_access(value, attr, child, ATTR_DELETE)

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
                name = sys.intern(self.text(attr))
                self.scope.attr_assigns.append(AttrAssign(obj, name, value, pos))
                if self.stores:
                    self.attr_access(Attribute("a", obj, name), attr, node, ATTR_WRITE)
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
                        rest = StarredTarget("st", value, i, len(items) - i - 1)
                        self.target(inner[0], rest, pos)
                elif star is not None and i > star:
                    self.target(item, Item("ix", value, i - len(items)), pos)
                else:
                    self.target(item, Item("ix", value, i), pos)
        elif t in ("parenthesized_expression", "as_pattern_target"):
            for child in node.named_children:
                self.target(child, value, pos)
        elif t == "subscript":
            base = node.child_by_field_name("value")
            keys = node.children_by_field_name("subscript")
            key = self.expr(keys[0]) if keys else UNKNOWN
            added: Expr = DictDisplay("d", ((key, value),))
            replaces = key[0] == "k"
            depth = self.depth
            while base is not None and base.type == "subscript":  # d["a"]["b"] = v
                depth += 1
                if depth >= MAX_EXPR_DEPTH:
                    self.too_deep(node)
                    return
                keys = base.children_by_field_name("subscript")
                added = DictDisplay("d", ((self.expr(keys[0]) if keys else UNKNOWN, added),))
                base, replaces = base.child_by_field_name("value"), False
            if base is not None and base.type == "identifier":
                self.mutate(self.text(base), added, pos, replaces)
            else:
                # `self.registry[k] = v` is not growth: recorded, it put a fifth on Django's
                # peak memory for a hundred edges
                self.expr(node)
        else:
            self.expr(node)


class OutlineWalker(Walker):
    """The walk of an outline (parse.summarize(outline=True)): definitions, bindings of
    modules and classes, bases and annotations; the calls and uses it meets are not kept."""

    def add_call(self, *args: object) -> None:
        return None

    def use(self, *args: object) -> None:
        return None


_STATEMENTS = {
    "expression_statement": Walker.s_expression_statement,
    "function_definition": Walker.s_function,
    "class_definition": Walker.s_function,
    "decorated_definition": Walker.s_decorated,
    "if_statement": Walker.s_if,
    "for_statement": Walker.s_for,
    "while_statement": Walker.s_while,
    "try_statement": Walker.s_try,
    "with_statement": Walker.s_with,
    "match_statement": Walker.s_match,
    "raise_statement": Walker.s_raise,
    "delete_statement": Walker.s_delete,
    "return_statement": Walker.s_return,
    "global_statement": Walker.s_global,
    "nonlocal_statement": Walker.s_nonlocal,
    "import_statement": Walker.s_import,
    "import_from_statement": Walker.s_import_from,
    "future_import_statement": Walker.s_skip,
    "pass_statement": Walker.s_skip,
    "break_statement": Walker.s_skip,
    "continue_statement": Walker.s_skip,
    "type_alias_statement": Walker.s_skip,
    "block": Walker.s_block,
    "ERROR": Walker.s_error,
}
