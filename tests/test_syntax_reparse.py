"""Summaries of edited files made from the previous tree equal those of a fresh parse."""

from __future__ import annotations

import dataclasses
import random
import sysconfig
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from anchor_ls.syntax.parse import summarize
from anchor_ls.syntax.reparse import Reparsed, Reparser
from anchor_ls.syntax.source import UnreadableSource
from anchor_ls.syntax.summary import Body, FileSummary, pack_bodies

SOURCE = b"""\
import os


def first(x):
    return os.path.join(x, "a")


class Service:
    limit = 3

    def run(self, items):
        total = 0
        for item in items:
            total += first(item)

        def inner():
            return helper(total)

        return inner()

    def stop(self):
        self.run([])


def helper(v):
    return v
"""


def comparable(summary: FileSummary, bodies: list[Body]) -> tuple[Any, ...]:
    """Every field of a summary, lists and tuples alike (a packed summary holds tuples)."""
    scopes = []
    for scope, body in zip(summary.scopes, bodies, strict=True):
        fields = {
            f.name: tuple(v) if isinstance(v := getattr(scope, f.name), list) else v
            for f in dataclasses.fields(scope)
            if f.name not in ("calls", "attr_reads", "uses")
        }
        scopes.append((fields, tuple(tuple(part) for part in body)))
    constants = [tuple(c) for c in summary.constants]
    top = (summary.line_count, summary.all_names, constants, summary.problems, summary.encoding)
    top += (summary.main_blocks,)
    return (scopes, *top)  # the words sketch aside: an edit leaves it to the index


def fresh(data: bytes) -> tuple[Any, ...]:
    summary = summarize("m.py", data)
    return comparable(summary, [(s.calls, s.attr_reads, s.uses) for s in summary.scopes])


def edit_in_steps(steps: list[bytes]) -> list[Reparsed]:
    """Summarize each text as the next edit of the one before; check each against a fresh
    parse; the reparses."""
    reparser = Reparser()
    held = reparser.summarize("m.py", steps[0], None).summary
    pack_bodies(held)
    out = []
    for data in steps[1:]:
        result = reparser.summarize("m.py", data, held)
        assert comparable(result.summary, result.bodies) == fresh(data)
        held = pack_bodies(result.summary)
        out.append(result)
    return out


def scope_index(data: bytes, qualname: str) -> int:
    return [s.qualname for s in summarize("m.py", data).scopes].index(qualname)


def test_an_edit_in_a_method_body_walks_that_method_and_what_it_nests() -> None:
    edited = SOURCE.replace(b"        total = 0\n", b"        total = 0\n        os.sep\n\n")
    (result,) = edit_in_steps([SOURCE, edited])
    run = scope_index(SOURCE, "Service.run")
    assert result.walked == range(run, run + 2)  # run and run.inner
    assert result.summary.scopes[run + 1].qualname == "Service.run.inner"


def test_typing_inside_a_line_moves_offsets_but_no_line() -> None:
    steps = [SOURCE]
    for i in range(1, 4):  # a name typed letter by letter
        steps.append(SOURCE.replace(b"return v\n", b"return v" + b"x" * i + b"\n"))
    results = edit_in_steps(steps)
    last = len(results[0].summary.scopes) - 1
    assert [r.walked for r in results] == [range(last, last + 1)] * 3


SERVICE = ["Service.run", "Service.run.inner", "Service.stop"]
SERVICE_MORE = ["Service", "Service.run", "Service.run.inner", "Service.run.more", "Service.stop"]


@pytest.mark.parametrize(
    ("old", "new", "walked"),
    [
        (b"    limit = 3\n", b"    limit = 4\n    other = 5\n", ["Service", *SERVICE]),
        (b"def helper(v):", b"def helper(v, w=1):", ["helper"]),
        (b"        return inner()\n", b"        def more():\n            pass\n", SERVICE_MORE),
        (
            b"        total = 0\n",
            b"        global total\n        total = 0\n",
            ["Service", *SERVICE],
        ),
        (b"\n\ndef helper", b"\nhelper()\n\ndef helper", []),
        (b"\n\nclass Service:", b"\n\nnew = lambda: first\n\n\nclass Service:", ["new"]),
        (
            b"\n\nclass Service:",
            b"\n\n@first\ndef new(a=first):\n    pass\nclass Service:",
            ["new"],
        ),
        (b'\n\n\ndef first(x):\n    return os.path.join(x, "a")\n', b"\n", []),
    ],
)
def test_edits_outside_one_function_body_walk_the_top_level_statements_they_touch(
    old: bytes, new: bytes, walked: list[str]
) -> None:
    assert old in SOURCE
    (result,) = edit_in_steps([SOURCE, SOURCE.replace(old, new)])
    assert result.walked is not None
    assert [result.summary.scopes[i].qualname for i in result.walked] == ["", *walked]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (b"        total = 0\n", b"        total = (0\n"),  # a syntax error
        (b"\n\nclass Service:", b"\n\nx = [i for i in os.sep]\n\n\nclass Service:"),  # a block
        (b"\n\nclass Service:", b"\n\nif os.sep:\n    x = 1\n\n\nclass Service:"),
        (b"\n\nclass Service:", b"\n\n__all__ = ['first']\n\n\nclass Service:"),
    ],
)
def test_edits_that_change_the_rest_of_the_module_walk_the_whole_file(
    old: bytes, new: bytes
) -> None:
    assert old in SOURCE
    (result,) = edit_in_steps([SOURCE, SOURCE.replace(old, new)])
    assert result.walked is None


def test_a_statement_sharing_a_row_with_an_edited_one_keeps_its_facts() -> None:
    source = SOURCE.replace(b"import os\n", b"import os\nx = 1; LIMIT = 2\n")
    (result,) = edit_in_steps([source, source.replace(b"x = 1;", b"x = 3;")])
    assert [c[0] for c in result.summary.constants] == ["LIMIT"]


def _random_edits(data: bytes, rnd: random.Random) -> list[bytes]:
    """Six edits in a row at random lines: a statement or a loop inserted at that line's
    indentation, a line deleted, a letter typed, a nested def added."""
    steps = [data]
    for _ in range(6):
        lines = steps[-1].split(b"\n")
        i = rnd.randrange(len(lines))
        indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
        kind = rnd.randrange(5)
        if kind == 0:
            lines.insert(i, indent + b"_x = foo(1)")
        elif kind == 1:
            del lines[i]
        elif kind == 2 and lines[i].strip():
            j = rnd.randrange(len(lines[i]))
            lines[i] = lines[i][:j] + b"z" + lines[i][j:]
        elif kind == 3:
            lines[i:i] = [indent + b"def inner():", indent + b"    return bar()"]
        else:
            lines[i:i] = [indent + b"for q in self.items:", indent + b"    q.run()", b""]
        steps.append(b"\n".join(lines))
    return steps


def stdlib_reparses(
    edits: Callable[[bytes, random.Random], list[bytes]], seed: int
) -> list[Reparsed]:
    """The reparses of 30 standard library files under edits, each checked against a
    fresh parse (see edit_in_steps)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"]).glob("*.py")
    files = sorted(p for p in stdlib if p.stat().st_size < 60_000)
    rnd = random.Random(seed)
    out: list[Reparsed] = []
    for path in rnd.sample(files, 30):
        try:
            out += edit_in_steps(edits(path.read_bytes(), rnd))
        except (UnreadableSource, RecursionError):
            continue
    return out


def test_random_edits_of_standard_library_files_give_the_fresh_summaries() -> None:
    results = stdlib_reparses(_random_edits, 7)
    # the comparison covered many one-function walks
    assert sum(r.walked is not None for r in results) > 20


def _top_level_edits(data: bytes, rnd: random.Random) -> list[bytes]:
    """Six edits in a row between top-level statements: a definition inserted (decorated,
    with a named lambda, or a class), one removed, a call added, a header changed."""
    steps = [data]
    for _ in range(6):
        lines = steps[-1].split(b"\n")
        tops = [i for i, line in enumerate(lines) if line.startswith((b"def ", b"class "))]
        if not tops:
            break
        i = rnd.choice(tops)
        while i > 0 and lines[i - 1].startswith(b"@"):
            i -= 1
        kind = rnd.randrange(5)
        if kind == 0:
            new = [b"@wraps(f)", b"def _added(a=len):", b"    return _added(a)", b"", b""]
            lines[i:i] = new
        elif kind == 1:
            lines[i:i] = [b"_pick = lambda v: sorted(v)", b"class _Kind(dict):", b"    x = 1"]
        elif kind == 2:  # the definition removed, to the next top-level line
            j = i + 1
            while j < len(lines) and (not lines[j] or lines[j][:1] in (b" ", b"\t", b"#")):
                j += 1
            del lines[i:j]
        elif kind == 3:
            lines[i:i] = [b"print(_helper(1))", b""]
        else:
            j = next(k for k in range(i, len(lines)) if lines[k].startswith((b"def ", b"class ")))
            lines[j] = lines[j].replace(b"(", b"(_new_arg, ", 1)
        steps.append(b"\n".join(lines))
    if not steps[-1].endswith(b"\n"):
        steps.append(steps[-1] + b"\n")
    steps.append(steps[-1] + b"\n\ndef _appended():\n    return _appended()\n")
    return steps


def test_top_level_edits_of_standard_library_files_give_the_fresh_summaries() -> None:
    results = stdlib_reparses(_top_level_edits, 11)
    # most edits walked only the statements they touched
    assert sum(r.walked is not None and 0 in r.walked for r in results) > 150
