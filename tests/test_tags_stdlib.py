"""The materialize/strip invariants over every Python file of this interpreter's standard library.

Definitions come from `ast` (independent of the tag scanner), so the test also checks that
every definition of a file that parses gets its block. Files that do not parse (the
standard library ships a few on purpose) are tagged at every line that looks like a def.
Work is spread over two processes; one pass feeds every assertion below.
"""

from __future__ import annotations

import ast
import os
import re
import sysconfig
import types
import warnings
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from anchor_ls.index.model import Entity
from anchor_ls.tags.policy import TagField
from anchor_ls.tags.render import block_lines
from anchor_ls.tags.text import MODULE, StripResult, materialize, strip

pytestmark = pytest.mark.slow

STDLIB = Path(sysconfig.get_paths()["stdlib"])
_LINE_SPLIT = re.compile(rb"\r\n|\r|\n")
_DEF_LIKE = re.compile(rb"[ \t\f]*(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)")
# Non-ASCII ids: latin-1 files must write é as é and escape the CJK one.
_FIELDS = [
    TagField("CALLS", ("pkg/café.py:naïve", "pkg/中文.py:f"), 2),
    TagField("CALLED_BY", ("pkg/a.py:A.b",), 0),
]


def stdlib_files() -> list[Path]:
    found = []
    for folder, dirs, files in os.walk(STDLIB):
        dirs[:] = sorted(d for d in dirs if d not in ("site-packages", "dist-packages"))
        found.extend(Path(folder, f) for f in sorted(files) if f.endswith(".py"))
    return found


@dataclass(frozen=True, slots=True)
class Outcome:
    path: str
    round_trip: bool
    parses: bool
    expected_blocks: int  # definitions (+ module) ast found
    inserted: int
    compiles_before: bool
    compiles_after: bool
    same_code: bool
    idempotent: bool
    problems: tuple[tuple[int, str], ...]


def _block(relpath: str, kind: str, qualname: str, line: int) -> list[str]:
    ident = f"{relpath}:{qualname}" if qualname else relpath
    ent = Entity(ident, kind, relpath, qualname or relpath, line, line, line, (0, 0, 0, 0))
    return block_lines(ent, _FIELDS)


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _definitions(
    tree: ast.Module,
) -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, str]]:
    """Every def and class with its qualified name (enclosing defs and classes, dotted):
    they are statements, so walking statement lists finds them all."""
    found = []
    todo: list[tuple[list[ast.stmt], str]] = [(tree.body, "")]
    while todo:
        body, outer = todo.pop()
        for stmt in body:
            inside = outer
            if isinstance(stmt, _DEFS):
                inside = f"{outer}.{stmt.name}" if outer else stmt.name
                found.append((stmt, inside))
            for name in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, name, None)
                if inner:
                    todo.append((inner, inside if name == "body" else outer))
            for handler in getattr(stmt, "handlers", ()):
                todo.append((handler.body, outer))
            for case in getattr(stmt, "cases", ()):
                todo.append((case.body, outer))
    return found


def _requests(
    relpath: str, data: bytes
) -> tuple[dict[int, list[str]], dict[int, str], ast.Module | None]:
    blocks = {MODULE: _block(relpath, "module", "", 1)}
    names: dict[int, str] = {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(data)
    except (SyntaxError, ValueError):
        for i, line in enumerate(_LINE_SPLIT.split(data), 1):
            m = _DEF_LIKE.match(line)
            if m:
                blocks[i] = _block(relpath, "function", m.group(1).decode(), i)
                names[i] = m.group(1).decode()
        return blocks, names, None
    for node, qualname in _definitions(tree):
        kind = "class" if isinstance(node, ast.ClassDef) else "function"
        blocks[node.lineno] = _block(relpath, kind, qualname, node.lineno)
        names[node.lineno] = node.name
    return blocks, names, tree


def _compile(data: bytes | ast.Module) -> types.CodeType | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return compile(data, "<stdlib>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return None


def _same_code(a: types.CodeType, b: types.CodeType) -> bool:
    """Same bytecode, constants, names and flags at every level; line numbers aside."""
    if (a.co_code, a.co_names, a.co_varnames, a.co_flags, a.co_name) != (
        b.co_code,
        b.co_names,
        b.co_varnames,
        b.co_flags,
        b.co_name,
    ):
        return False
    if len(a.co_consts) != len(b.co_consts):
        return False
    for x, y in zip(a.co_consts, b.co_consts, strict=True):
        if isinstance(x, types.CodeType):
            if not isinstance(y, types.CodeType) or not _same_code(x, y):
                return False
        elif type(x) is not type(y) or (x != y and x == x):  # NaN compares unequal to itself
            return False
    return True


def _tagged_keys(
    tagged: bytes, stripped: StripResult, keys: dict[int, list[str]]
) -> dict[int, int]:
    """Where each requested line of the clean text is in the tagged text."""
    where: dict[int, int] = {}
    n = len(_LINE_SPLIT.split(tagged))
    for t in range(1, n + 1):
        clean = stripped.new_line(t)
        if clean is not None:
            where.setdefault(clean, t)
    return {k: (MODULE if k == MODULE else where.get(k, -1)) for k in keys}


def examine(path: Path) -> Outcome:
    data = path.read_bytes()
    relpath = path.relative_to(STDLIB).as_posix()
    blocks, names, tree = _requests(relpath, data)
    result = materialize(data, blocks, names, path=relpath)
    back = strip(result.text, relpath)
    # A tree that parsed can still fail to compile (a misplaced __future__ import...).
    before = _compile(tree) if tree is not None else _compile(data)
    after = _compile(result.text)
    same = before is not None and after is not None and _same_code(before, after)
    moved = _tagged_keys(result.text, back, blocks)
    again = materialize(
        result.text,
        {moved[k]: v for k, v in blocks.items()},
        {moved[k]: v for k, v in names.items()},
        path=relpath,
    )
    return Outcome(
        relpath,
        back.text == data and not back.damaged,
        tree is not None,
        len(blocks),
        result.inserted,
        before is not None,
        after is not None,
        same,
        again.text == result.text,
        tuple(result.problems),
    )


@pytest.fixture(scope="module")
def outcomes() -> list[Outcome]:
    files = stdlib_files()
    assert len(files) > 500, f"expected the standard library under {STDLIB}"
    with ProcessPoolExecutor(max_workers=2) as pool:
        return list(pool.map(examine, files, chunksize=16))


def test_strip_of_materialize_is_identity_for_every_stdlib_file(outcomes: list[Outcome]) -> None:
    broken = [o.path for o in outcomes if not o.round_trip]
    assert broken == []


def test_every_definition_of_a_parsing_file_gets_its_block(outcomes: list[Outcome]) -> None:
    short = [
        (o.path, o.expected_blocks, o.inserted, o.problems)
        for o in outcomes
        if o.parses and o.inserted != o.expected_blocks
    ]
    assert short == []


def test_tagged_code_compiles_exactly_where_the_original_did(outcomes: list[Outcome]) -> None:
    differs = [o.path for o in outcomes if o.compiles_before != o.compiles_after]
    assert differs == []
    assert sum(o.compiles_before for o in outcomes) > 500


def test_tagged_code_compiles_to_the_same_bytecode(outcomes: list[Outcome]) -> None:
    changed = [o.path for o in outcomes if o.compiles_before and not o.same_code]
    assert changed == []


def test_materialize_is_idempotent_on_tagged_stdlib_files(outcomes: list[Outcome]) -> None:
    assert [o.path for o in outcomes if not o.idempotent] == []


def test_the_stdlib_holds_the_hard_cases(outcomes: list[Outcome]) -> None:
    """The invariants above only mean something if these inputs were among them.

    (The standard library has no tab-indented code: test_tags_text and test_tags_props cover tabs.)
    """
    datas = [(STDLIB / o.path).read_bytes() for o in outcomes]
    assert any(d.startswith(b"\xef\xbb\xbf") for d in datas), "a BOM file"
    assert any(b"\r\n" in d for d in datas), "a CRLF file"
    assert any(re.search(rb"^#.*coding[:=]\s*(latin|iso-8859)", d, re.M) for d in datas)
    assert any(not o.parses for o in outcomes), "a file that does not parse"
