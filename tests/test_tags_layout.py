"""Where strings are: PEP 701 f-strings, and encodings whose lines the tags layer cannot read."""

from __future__ import annotations

import pytest

from anchor_ls.tags.scan import SourceError, layout, split_lines
from anchor_ls.tags.text import check, materialize, strip

PATH = "m.py"
BLOCK = ["# === CodeAnchor m.py:f", "# CALLS: a.py:b", "# ==="]


def lines(*rows: str) -> str:
    return "".join(row + "\n" for row in rows)


# Valid since Python 3.12: a replacement field may hold the f-string's own quotes.
NESTED = [
    lines('s = f"""{"""', *BLOCK, "def f(): pass", '"""}"""'),
    lines("s = f'''{'''", *BLOCK, "def f(): pass", "'''}'''"),
    lines('s = rf"""{f"""{"""', *BLOCK, "def f(): pass", '"""}"""}"""'),
    lines('s = f"""{x:{"""', *BLOCK, "def f(): pass", '"""}}"""'),
    lines('s = f"{', "  1 + 2", '}"', *BLOCK, "def f(): pass"),  # a field over lines
]


@pytest.mark.parametrize("source", NESTED[:4])
def test_lines_inside_nested_f_strings_stay(source: str) -> None:
    data = source.encode()
    assert list(layout(split_lines(data)).in_string) == [0, 1, 1, 1, 1, 1]
    result = strip(data, PATH)
    assert result.text == data and result.damaged == []
    placed = materialize(data, {5: BLOCK}, {5: "f"}, path=PATH)
    assert placed.text == data  # `def f` is inside the string: no block goes there


def test_a_block_after_a_multi_line_replacement_field_is_found() -> None:
    data = NESTED[4].encode()
    assert list(layout(split_lines(data)).in_string) == [0, 1, 1, 0, 0, 0, 0]
    assert strip(data, PATH).text == lines('s = f"{', "  1 + 2", '}"', "def f(): pass").encode()


@pytest.mark.parametrize(
    "source",
    [
        'x = f"{1 + \n' + lines(*BLOCK, "def f(): pass"),  # a field that never closes
        "x = f'''{'''\n" + lines(*BLOCK, "def f(): pass"),  # nor does this string
    ],
)
def test_an_f_string_that_does_not_close_is_refused(source: str) -> None:
    data = source.encode()
    with pytest.raises(SourceError, match="f-string on line 1"):
        layout(split_lines(data))
    result = strip(data, PATH)
    assert result.text == data
    assert result.damaged and result.damaged[0][0] == 0 and "f-string" in result.damaged[0][1]


# Encodings CPython accepts whose lines the tags layer cannot lay out for certain.
REFUSED = [
    ("utf-7", lines("# coding: utf-7", 's = """', *BLOCK, "def f(): pass", '"""')),
    # `\u000a` is a line end to Python here: the block is inside the string
    (
        "raw-unicode-escape",
        lines("# coding: raw-unicode-escape", 's = """\\u000a', *BLOCK, "def f(): pass", '"""'),
    ),
    ("idna", lines("# coding: idna", *BLOCK, "def f(): pass")),
]


@pytest.mark.parametrize(("encoding", "source"), REFUSED)
def test_a_file_whose_strings_cannot_be_placed_is_refused(encoding: str, source: str) -> None:
    data = source.encode("ascii")
    compile(data, "m.py", "exec", dont_inherit=True)  # Python reads it
    result = strip(data, PATH)
    assert result.text == data
    assert [line for line, _ in result.damaged] == [0]
    assert "cannot tell where its strings are" in result.damaged[0][1]
    tagged = materialize(data, {4: BLOCK}, {4: "f"}, path=PATH)
    assert tagged.text == data and tagged.problems
    with pytest.raises(SourceError):  # not stale: unread (check exits 2 for it)
        check(data, {}, {}, path=PATH)


def test_escapes_that_open_a_string_are_read_as_python_reads_them() -> None:
    # `\u0022\u0022\u0022` is `"""` to Python: the block and `def f` are inside a string
    source = lines(
        "# coding: raw-unicode-escape", "s = \\u0022\\u0022\\u0022", *BLOCK, "def f(): pass", '"""'
    )
    data = source.encode("ascii")
    compile(data, "m.py", "exec", dont_inherit=True)
    result = strip(data, PATH)
    assert result.text == data and result.damaged == []
    assert materialize(data, {6: BLOCK}, {6: "f"}, path=PATH).text == data
