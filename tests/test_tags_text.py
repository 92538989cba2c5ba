"""materialize, strip and check on bytes: placement, encodings, line ends, damage, agent edits."""

from __future__ import annotations

import ast
import codecs
import re

import pytest

from anchor_ls.index.model import Entity
from anchor_ls.tags.policy import TagField
from anchor_ls.tags.render import CLOSE, LEGACY_DELIMITER, OPEN, block_lines
from anchor_ls.tags.text import MODULE, check, materialize, strip

OPEN_B = OPEN.encode()
CLOSE_B = CLOSE.encode()


def blk(kind: str, ident: str, **fields: tuple[str, ...]) -> list[str]:
    path, _, qual = ident.partition(":")
    ent = Entity(ident, kind, path, qual.rpartition(".")[2] or path, 1, 1, 1, (0, 0, 0, 0))
    return block_lines(ent, [TagField(k, v, 0) for k, v in fields.items()])


def legacy(kind: str, ident: str, **fields: tuple[str, ...]) -> list[str]:
    """A block in the first format, as trees materialized before the current one hold it."""
    body = [f"# {k}: {', '.join(v)}" for k, v in fields.items()]
    return [LEGACY_DELIMITER, f"# {kind} {ident}", *body, LEGACY_DELIMITER]


MOD = blk("module", "m.py", IMPORTED_BY=("a.py", "b.py"))
F = blk("function", "m.py:f", CALLED_BY=("a.py:g",))
G = blk("function", "m.py:g", CALLS=("m.py:f",))
CLS = blk("class", "m.py:C", DERIVED=("a.py:D",))
METH = blk("method", "m.py:C.run", CALLED_BY=("a.py:main",))


def lines_of(data: bytes) -> list[bytes]:
    return re.split(rb"(?<=\r\n)|(?<=\n)(?<!\r\n)|(?<=\r)(?!\n)", data)


def tag(source: bytes, blocks: dict, names: dict | None = None, path: str = "m.py") -> bytes:
    result = materialize(source, blocks, names, path=path)
    assert result.problems == []
    assert strip(result.text, path).text == source  # every test also checks the round trip
    return result.text


# ----- placement --------------------------------------------------------------


def test_block_format_is_the_one_in_the_design() -> None:
    out = tag(b"def f():\n    pass\n", {MODULE: MOD, 1: F}, {1: "f"})
    assert out == (
        b"# === CodeAnchor m.py\n"
        b"# IMPORTED_BY: a.py, b.py\n"
        b"# ===\n"
        b"# === CodeAnchor m.py:f\n"
        b"# CALLED_BY: a.py:g\n"
        b"# ===\n"
        b"def f():\n    pass\n"
    )


@pytest.mark.parametrize(
    ("head", "kept"),
    [
        (b"#!/usr/bin/env python\n", 1),
        (b"# -*- coding: utf-8 -*-\n", 1),
        (b"#!/usr/bin/env python\n# vim: set fileencoding=utf-8 :\n", 2),
        (b"\n# coding=utf-8\n", 2),
        (b"# a comment\n# coding: utf-8\n", 2),
        (b"# just a comment\n", 0),
    ],
)
def test_module_block_goes_after_shebang_and_coding_lines(head: bytes, kept: int) -> None:
    source = head + b'"""Doc."""\nimport os\n'
    out = tag(source, {MODULE: MOD})
    got = lines_of(out)
    assert got[:kept] == lines_of(source)[:kept]
    assert got[kept] == b"# === CodeAnchor m.py\n"
    assert ast.get_docstring(ast.parse(out)) == "Doc."


def test_module_block_after_a_utf8_bom_keeps_the_bom_first() -> None:
    source = codecs.BOM_UTF8 + b"x = '\xc3\xa9'\n"
    out = tag(source, {MODULE: MOD})
    assert out.startswith(codecs.BOM_UTF8 + OPEN_B)
    ns: dict = {}
    exec(compile(out, "m.py", "exec"), ns)
    assert ns["x"] == "é"


def test_a_file_that_is_only_a_shebang_without_line_end_gets_no_module_block() -> None:
    result = materialize(b"#!/usr/bin/python", {MODULE: MOD}, path="m.py")
    assert result.text == b"#!/usr/bin/python"
    assert result.inserted == 0


def test_empty_file_gets_a_module_block_and_strips_back_to_empty() -> None:
    out = tag(b"", {MODULE: MOD})
    assert out.count(OPEN_B) == 1 and out.endswith(b"\n# ===\n")
    assert strip(out, "m.py").text == b""


def test_definition_block_goes_above_the_first_decorator_with_its_indentation() -> None:
    source = (
        b"class C:\n"
        b"\t@staticmethod\n"
        b"\t# a comment between decorators\n"
        b"\t@other(\n"
        b"\t    1,\n"
        b"\t)\n"
        b"\tdef run():\n"
        b"\t\tpass\n"
    )
    out = tag(source, {1: CLS, 7: METH}, {1: "C", 7: "run"})
    got = lines_of(out)
    assert got[0] == b"# === CodeAnchor m.py:C\n"
    assert got[4:7] == [
        b"\t# === CodeAnchor m.py:C.run\n",
        b"\t# CALLED_BY: a.py:main\n",
        b"\t# ===\n",
    ]
    assert got[7] == b"\t@staticmethod\n"
    compile(out, "m.py", "exec")


def test_async_def_and_form_feed_indentation() -> None:
    source = b"\x0cclass C:\n\x0c    async def run(self):\n        pass\n"
    out = tag(source, {1: CLS, 2: METH}, {1: "C", 2: "run"})
    assert b"\x0c    # === CodeAnchor m.py:C.run\n" in out
    compile(out, "m.py", "exec")


@pytest.mark.parametrize(
    ("source", "line"),
    [
        (b"x = 1\nclass A: pass\nif x: y = 2\n", 3),  # not a definition at all
        (b'x = """\ndef f():\n"""\n', 2),  # inside a string
        (b"x = (\n  1 if y else\n  2)\ndef f(): pass\n", 2),  # inside brackets
        (b"x = 1 + \\\n  2\n", 2),  # a backslash continuation
        (b"def f():\n    pass\n", 2),  # line number off by one
        (b"def g():\n    pass\n", 1),  # another name on that line
    ],
)
def test_no_block_where_no_definition_starts_the_line(source: bytes, line: int) -> None:
    result = materialize(source, {line: F}, {line: "f"}, path="m.py")
    assert result.text == source
    assert result.inserted == 0
    assert result.skipped and result.skipped[0][0] == line


def test_one_liner_class_at_line_start_gets_a_block() -> None:
    out = tag(b"class C: pass\n", {1: CLS}, {1: "C"})
    assert out.endswith(b"# ===\nclass C: pass\n")


def test_names_are_compared_after_nfkc_normalisation() -> None:
    source = "def ﬁle():\n    pass\n".encode()  # the parser reads the name as "file"
    out = tag(source, {1: blk("function", "m.py:file")}, {1: "file"})
    assert out.count(OPEN_B) == 1


# ----- line ends and encodings ---------------------------------------------------


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"])
def test_blocks_use_the_file_line_end(eol: bytes) -> None:
    source = eol.join([b"import os", b"def f():", b"    return 1", b""])
    out = tag(source, {MODULE: MOD, 2: F}, {2: "f"})
    assert out.count(CLOSE_B + eol) == 2 and out.count(OPEN_B) == 2
    assert b"\r" not in out.replace(eol, b"") and b"\n" not in out.replace(eol, b"")
    compile(out, "m.py", "exec")


def test_mixed_line_ends_use_the_dominant_one() -> None:
    source = b"a = 1\r\nb = 2\r\nc = 3\ndef f():\r\n    pass\r\n"
    out = tag(source, {2: F} | {4: F}, {4: "f"})
    assert b"# === CodeAnchor m.py:f\r\n" in out


def test_last_line_without_line_end_is_kept_so() -> None:
    source = b"import os\ndef f(): pass"
    out = tag(source, {MODULE: MOD, 2: F}, {2: "f"})
    assert out.endswith(b"\ndef f(): pass")


def test_latin1_file_gets_latin1_ids_and_escapes_the_rest() -> None:
    source = b"# -*- coding: latin-1 -*-\ns = '\xe9t\xe9'\ndef f():\n    return s\n"
    fields = blk("function", "m.py:f", CALLED_BY=("café.py:naïve", "中.py:g"))
    out = tag(source, {3: fields}, {3: "f"})
    assert b"# CALLED_BY: caf\xe9.py:na\xefve, \\u4e2d.py:g\n" in out
    ns: dict = {}
    exec(compile(out, "m.py", "exec"), ns)
    assert ns["s"] == "été"


def test_shift_jis_file_round_trips() -> None:
    text = "# coding: shift_jis\ns = '表示'\ndef f():\n    return s\n"
    source = text.encode("shift_jis")
    out = tag(source, {MODULE: MOD, 3: F}, {3: "f"})
    assert out.decode("shift_jis").startswith("# coding: shift_jis\n# === CodeAnchor m.py\n")


def test_utf8_file_with_undecodable_bytes_is_tagged_around_them() -> None:
    source = b"x = b'\xff'  # \xfe\ndef f():\n    pass\n"
    out = tag(source, {2: F}, {2: "f"})
    assert b"\xff" in out and b"\xfe" in out


def test_an_encoding_that_is_not_ascii_compatible_is_left_alone() -> None:
    source = b"# coding: utf-16\ndef f(): pass\n"
    result = materialize(source, {2: F}, {2: "f"}, path="m.py")
    assert result.text == source
    assert result.problems and "ASCII" in result.problems[0][1]


def test_control_characters_in_ids_cannot_split_a_block() -> None:
    weird = blk("module", "we\nird\r.py\x00", IMPORTED_BY=("x\u2028y.py",))
    out = tag(b"pass\n", {MODULE: weird}, path="we\nird\r.py\x00")
    assert b"# === CodeAnchor we\\nird\\r.py\\x00\n" in out
    assert b"x\\u2028y.py" in out
    compile(out, "m.py", "exec")


def test_ids_with_odd_spaces_still_make_a_block() -> None:
    odd = blk("function", " sp ace.py:f", CALLED_BY=("a.py:g",))
    out = tag(b"def f(): pass\n", {1: odd}, {1: "f"}, path=" sp ace.py")
    assert out.startswith(b"# === CodeAnchor  sp ace.py:f\n")
    assert strip(out, " sp ace.py").blocks[0].header == " sp ace.py:f"


def test_a_module_id_that_reads_as_a_coding_line_is_not_written() -> None:
    odd = blk("module", "coding=latin1.py", CHILDREN=("x",))
    source = b"x = '\xc3\xa9'\n"
    result = materialize(source, {MODULE: odd}, path="coding=latin1.py")
    assert result.text == source
    assert "coding line" in result.problems[0][1]


# ----- what materialized code still is ------------------------------------------


def test_future_imports_docstrings_and_continuations_survive() -> None:
    source = (
        b'"""Module doc."""\n'
        b"from __future__ import annotations\n"
        b"x = 1 + \\\n"
        b"    2\n"
        b"class C:\n"
        b'    """Class doc."""\n'
        b"    def f(self) -> C:\n"
        b'        """Method doc."""\n'
        b"        return self\n"
    )
    method = blk("method", "m.py:C.f", CALLED_BY=("a.py:main",))
    out = tag(source, {MODULE: MOD, 5: CLS, 7: method}, {5: "C", 7: "f"})
    code = compile(out, "m.py", "exec", dont_inherit=True)
    assert code.co_flags & 0x1000000  # CO_FUTURE_ANNOTATIONS
    tree = ast.parse(out)
    assert ast.get_docstring(tree) == "Module doc."
    cls = tree.body[-1]
    assert isinstance(cls, ast.ClassDef)
    assert ast.get_docstring(cls) == "Class doc."
    assert ast.get_docstring(cls.body[1]) == "Method doc."  # type: ignore[arg-type]
    assert ast.dump(ast.parse(out)) == ast.dump(ast.parse(source))


# ----- strip ----------------------------------------------------------------------


def test_strip_leaves_blocks_inside_strings_alone() -> None:
    doc = "\n".join(blk("function", "m.py:f", CALLS=("m.py:g",))).encode()
    source = b'EXAMPLE = """\n' + doc + b'\n"""\n'
    result = strip(source, "m.py")
    assert result.text == source
    assert result.damaged == []


@pytest.mark.parametrize(
    "source",
    [
        b"# === CodeAnchor ===\nx = 1\n# module notes: this is not a block\n# CALLS: nothing\n",
        b"# === CodeAnchor notes\nx = 1\n",  # an opening line without its closing line
        b"# === CodeAnchor m.py:g\n# ===\ndef f(): pass\n",  # another definition's id
    ],
)
def test_strip_leaves_similar_user_comments_alone(source: bytes) -> None:
    result = strip(source, "m.py")
    assert result.text == source
    assert result.damaged == []  # they name nothing of this file: not damaged tags either


def test_a_lone_opening_line_naming_this_file_is_reported_as_damaged() -> None:
    source = b"# === CodeAnchor m.py:f\nx = 1\ndef f(): pass\n"
    result = strip(source, "m.py")
    assert result.text == source
    assert result.damaged == [(1, result.damaged[0][1])]


def test_a_lone_closing_line_or_field_line_is_a_plain_comment() -> None:
    source = b"# ===\nx = 1\n# CALLS: nothing\n# ===\ndef f(): pass\n"
    result = strip(source, "m.py")
    assert result.text == source and result.damaged == []


@pytest.mark.parametrize(
    ("damage", "line"),
    [
        (lambda ls: ls[:2] + ls[3:], 1),  # closing line deleted
        (lambda ls: [ls[0], b"x = 1\n", *ls[1:]], 1),  # code inside the block
        (lambda ls: [ls[0], b"    " + ls[1], *ls[2:]], 1),  # a field re-indented
        (lambda ls: [ls[0], ls[1], b"  " + ls[2], *ls[3:]], 1),  # closing line re-indented
        (lambda ls: [ls[0], b"# CALLS oops\n", *ls[2:]], 1),  # field line broken
    ],
)
def test_damaged_blocks_are_reported_and_left_as_they_are(damage, line: int) -> None:
    source = b"def f():\n    pass\n"
    tagged = tag(source, {1: F}, {1: "f"})
    broken = b"".join(damage(lines_of(tagged)))
    result = strip(broken, "m.py")
    assert result.text == broken
    assert result.damaged and result.damaged[0][0] == line
    again = materialize(broken, {1: F}, {1: "f"}, path="m.py")
    assert again.text == broken and again.problems  # materialize refuses too


def test_a_block_whose_opening_line_was_deleted_leaves_plain_comments() -> None:
    source = b"def f():\n    pass\n"
    orphan = b"".join(lines_of(tag(source, {1: F}, {1: "f"}))[1:])
    assert strip(orphan, "m.py").text == orphan and strip(orphan, "m.py").damaged == []
    again = materialize(orphan, {3: F}, {3: "f"}, path="m.py")
    assert strip(again.text, "m.py").text == orphan


def test_a_block_left_open_in_an_unterminated_string_is_reported() -> None:
    source = b"def f():\n    pass\n"
    tagged = tag(source, {1: F}, {1: "f"})
    broken = b'x = """\n' + tagged
    result = strip(broken, "m.py")
    assert result.text == broken
    assert "string" in result.damaged[0][1]


def test_strip_keeps_every_agent_edit() -> None:
    original = (
        b"import os\n"
        b"\n"
        b"def f(a):\n"
        b"    return a + 1\n"
        b"\n"
        b"class C:\n"
        b"    def run(self):\n"
        b"        return f(1)\n"
    )
    tagged = tag(original, {MODULE: MOD, 3: F, 6: CLS, 7: METH}, {3: "f", 6: "C", 7: "run"})
    # The agent edits code around and between the blocks, adds a function, edits a comment.
    edited = (
        tagged.replace(b"return a + 1", b"return a + 2  # fixed")
        .replace(b"import os\n", b"import os\nimport sys\n")
        .replace(
            b"        return f(1)\n", b"        return f(1)\n\n    def new(self):\n        pass\n"
        )
    )
    expected = (
        original.replace(b"return a + 1", b"return a + 2  # fixed")
        .replace(b"import os\n", b"import os\nimport sys\n")
        .replace(
            b"        return f(1)\n", b"        return f(1)\n\n    def new(self):\n        pass\n"
        )
    )
    result = strip(edited, "m.py")
    assert result.damaged == []
    assert result.text == expected


def test_strip_after_the_agent_deleted_a_function_with_its_block() -> None:
    original = b"def f():\n    pass\n\ndef g():\n    pass\n"
    tagged = tag(original, {1: F, 4: G}, {1: "f", 4: "g"})
    start = tagged.index(b"# === CodeAnchor m.py:g\n")
    edited = tagged[:start]  # g and its block are gone
    assert strip(edited, "m.py").text == b"def f():\n    pass\n\n"


# ----- materialize twice, refresh ------------------------------------------------


def test_materialize_refreshes_old_blocks_and_is_idempotent() -> None:
    source = b"def f():\n    pass\n\ndef g():\n    f()\n"
    first = tag(source, {1: F, 4: G}, {1: "f", 4: "g"})
    # In the tagged text the definitions sit 3 and 6 lines lower.
    newer = blk("function", "m.py:f", CALLED_BY=("m.py:g", "z.py:h"))
    second = materialize(first, {4: newer, 10: G}, {4: "f", 10: "g"}, path="m.py")
    assert second.removed == 2 and second.inserted == 2
    assert b"# CALLED_BY: :g, z.py:h\n" in second.text
    assert strip(second.text, "m.py").text == source
    third = materialize(second.text, {4: newer, 10: G}, {4: "f", 10: "g"}, path="m.py")
    assert third.text == second.text


def test_an_empty_request_strips_everything() -> None:
    tagged = tag(b"def f(): pass\n", {1: F}, {1: "f"})
    result = materialize(tagged, {}, path="m.py")
    assert result.text == b"def f(): pass\n"
    assert result.removed == 1


# ----- check ------------------------------------------------------------------------


def test_check_passes_fresh_tags_and_untagged_files() -> None:
    source = b"def f():\n    pass\n"
    tagged = tag(source, {1: F}, {1: "f"})
    assert check(tagged, {4: F}, {4: "f"}, path="m.py") == []
    assert check(source, {1: F}, {1: "f"}, path="m.py") == []  # no blocks present, none required


def test_check_finds_stale_malformed_and_missing_blocks() -> None:
    source = b"def f():\n    pass\n\ndef g():\n    f()\n"
    tagged = tag(source, {1: F}, {1: "f"})
    stale = blk("function", "m.py:f", CALLED_BY=("m.py:g",))
    findings = check(tagged, {4: stale, 7: G}, {4: "f", 7: "g"}, require=True, path="m.py")
    assert findings == [(1, "stale: m.py:f"), (7, "missing: m.py:g")]
    assert check(tagged, {4: stale, 7: G}, {4: "f", 7: "g"}, path="m.py") == [(1, "stale: m.py:f")]
    broken = tagged.replace(b"# ===\ndef", b"def")
    assert check(broken, {}, {}, path="m.py")[0][0] == 1


def test_check_flags_a_block_that_moved_or_is_no_longer_due() -> None:
    source = b"def f():\n    pass\n"
    tagged = tag(source, {1: F}, {1: "f"})
    assert check(tagged, {}, {}, path="m.py") == [(1, "stale (no block is due here): m.py:f")]
    # A block no longer directly above its definition is the user's text, and f lacks one.
    moved = tagged.replace(b"def f():\n    pass\n", b"x = 1\ndef f():\n    pass\n")
    assert check(moved, {5: F}, {5: "f"}, path="m.py") == []
    assert check(moved, {5: F}, {5: "f"}, require=True, path="m.py") == [(5, "missing: m.py:f")]


def test_check_notices_a_changed_line_end() -> None:
    tagged = tag(b"def f():\r\n    pass\r\n", {1: F}, {1: "f"})
    assert check(tagged, {4: F}, {4: "f"}, path="m.py") == []
    crlf_block_as_lf = tagged.replace(b"m.py:f\r\n", b"m.py:f\n", 1)
    assert check(crlf_block_as_lf, {4: F}, {4: "f"}, path="m.py") != []


def test_no_block_between_a_misindented_decorator_and_its_def() -> None:
    source = b"@deco\n  def f():\n    pass\n"  # does not compile; must not get worse
    result = materialize(source, {2: F}, {2: "f"}, path="m.py")
    assert result.text == source


# ----- blocks of the first format ----------------------------------------------------


LEGACY_SOURCE = b"class C:\r\n\t@staticmethod\r\n\tdef run():\r\n\t\tpass\r\n"


def with_legacy_blocks() -> bytes:
    """LEGACY_SOURCE as a tree materialized with the first format holds it (CRLF, tabs)."""
    module = legacy("module", "m.py", IMPORTED_BY=("a.py",))
    cls = legacy("class", "m.py:C", DERIVED=("a.py:D",))
    meth = ["\t" + line for line in legacy("method", "m.py:C.run", CALLED_BY=("a.py:main",))]
    lines = [*module, *cls, "class C:", *meth, "\t@staticmethod", "\tdef run():", "\t\tpass"]
    return "".join(line + "\r\n" for line in lines).encode()


def test_strip_removes_blocks_of_the_first_format_byte_for_byte() -> None:
    result = strip(with_legacy_blocks(), "m.py")
    assert result.text == LEGACY_SOURCE
    assert result.damaged == [] and result.removed == 3
    assert [b.header for b in result.blocks] == ["m.py", "m.py:C", "m.py:C.run"]


def test_materialize_replaces_blocks_of_the_first_format() -> None:
    old = with_legacy_blocks()
    lines = {9: CLS, 15: METH}  # where C and run are in the text with the old blocks
    result = materialize(old, {MODULE: MOD} | lines, {9: "C", 15: "run"}, path="m.py")
    assert result.removed == 3 and result.inserted == 3 and result.problems == []
    assert LEGACY_DELIMITER.encode() not in result.text
    assert b"\t# === CodeAnchor m.py:C.run\r\n\t# CALLED_BY: a.py:main\r\n\t# ===\r\n" in (
        result.text
    )
    assert strip(result.text, "m.py").text == LEGACY_SOURCE


def test_check_calls_blocks_of_the_first_format_stale_but_not_missing() -> None:
    old = with_legacy_blocks()
    findings = check(old, {9: CLS}, {9: "C"}, require=True, path="m.py")
    assert (5, "stale: m.py:C") in findings
    assert not any("missing" in message for _, message in findings)


def test_damaged_blocks_of_the_first_format_are_still_reported() -> None:
    block = legacy("function", "m.py:f", CALLED_BY=("a.py:g",))
    source = ("\n".join(block[:-1]) + "\ndef f(): pass\n").encode()  # closing line deleted
    result = strip(source, "m.py")
    assert result.text == source and result.damaged[0][0] == 1
    # Without its header nothing says whose block it was: the user's comments now.
    source = ("\n".join([block[0], *block[2:]]) + "\ndef f(): pass\n").encode()
    result = strip(source, "m.py")
    assert result.text == source and result.damaged == []


def test_prose_about_the_first_format_opens_no_block() -> None:
    source = b"# === CodeAnchor === is how blocks used to open\n# ===\nx = 1\n"
    result = strip(source, "m.py")
    assert result.text == source and result.damaged == [] and result.removed == 0


def test_a_file_whose_name_starts_with_an_equals_sign_is_tagged_and_stripped() -> None:
    # "=.py" is a legal file name; only the first format's delimiter (an id "===") is not
    source = b"def run():\n    pass\n"
    block = ["# === CodeAnchor =.py:run", "# CALLS: a.py:b", "# ==="]
    tagged = materialize(source, {1: block}, path="=.py")
    assert tagged.problems == [] and tagged.inserted == 1
    assert b"# === CodeAnchor =.py:run\n" in tagged.text
    assert strip(tagged.text, "=.py").text == source


@pytest.mark.parametrize(
    "unit, removed",
    [
        (b"# === CodeAnchor m.py:f\n# ===\n", 20_000),  # stacked above the def
        (b"# === CodeAnchor m.py\n# ===\n", 20_000),  # stacked at the top
        (b"# === CodeAnchor m.py:f\n# ===\n\n", 0),  # a blank line apart: the user's
        (b"# === CodeAnchor m.py:f\n# ===\n@d\n", 1),  # between decorators: the first is a tag
    ],
)
def test_a_stack_of_thousands_of_blocks_strips_in_linear_time(unit: bytes, removed: int) -> None:
    # each block walked the blocks below (or above) it again, and the module blocks took
    # one pass each: 8,000 stacked blocks (200 KB) took 37 s to strip, 50,000 some 25 min;
    # blocks a blank line or a decorator apart each walked down to the def (and back up
    # its decorators): 8,000 of them took 85 s
    import time

    source = unit * 20_000 + b"def f(): pass\n"
    started = time.perf_counter()
    result = strip(source, "m.py")
    assert result.removed == removed and result.damaged == []
    assert materialize(source, {}, path="m.py").text == result.text
    check(source, {}, path="m.py")
    assert time.perf_counter() - started < 10  # about 0.5 s; quadratic: hours
