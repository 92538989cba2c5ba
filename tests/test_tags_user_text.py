"""Lines that look like tag blocks but are not where tags go are the user's: they stay."""

from __future__ import annotations

import pytest

from anchor_ls.index.model import Entity
from anchor_ls.tags.policy import TagField
from anchor_ls.tags.render import LEGACY_DELIMITER, block_lines
from anchor_ls.tags.text import MODULE, check, materialize, strip

PATH = "pkg/m.py"


def blk(ident: str, kind: str = "function") -> list[str]:
    path, _, qual = ident.partition(":")
    ent = Entity(ident, kind, path, qual.rpartition(".")[2] or path, 1, 1, 1, (0, 0, 0, 0))
    return block_lines(ent, [TagField("CALLED_BY", ("a.py:g",), 0)])


def text(*lines: str) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


def kept(source: bytes, path: str = PATH) -> None:
    """strip, check and a materialize that adds nothing all leave `source` as it is."""
    result = strip(source, path)
    assert result.text == source
    assert result.damaged == [] and result.removed == 0
    assert check(source, {}, {}, path=path) == []
    assert materialize(source, {}, path=path).text == source


HAND_WRITTEN = text(
    "# === CodeAnchor my notes",
    "# NOTE: mine",
    "# ===",
    "def f(): ...",
)


@pytest.mark.parametrize(
    "source",
    [
        HAND_WRITTEN,
        text("x = 0", *blk("pkg/m.py:g"), "def f(): ..."),  # another definition's id
        text("x = 0", *blk("other/pkg/m.py:f"), "def f(): ..."),  # another file's id
        text("x = 0", *blk("pkg/m.py:f"), "", "def f(): ..."),  # not directly above
        text("class C:", *("    " + s for s in blk("pkg/m.py:run")), "    def run(self): ..."),
        text("def f():", *("    " + s for s in blk("pkg/m.py:g")), "    def g(): ..."),
        text("x = 0", *blk("pkg/m.py", "module"), "y = 1"),  # a module id below the top
        text("x = [", *blk("pkg/m.py", "module"), "]"),  # inside brackets
        text("@decorator", *blk("pkg/m.py:f"), "def f(): ..."),  # between a decorator and def
        text(
            "x = 0",
            LEGACY_DELIMITER,
            "# function pkg/m.py:g",
            "# CALLS: a.py:b",
            LEGACY_DELIMITER,
            "def f(): ...",
        ),
        text('DOC = """', *blk("pkg/m.py:f"), "def f(): ...", '"""'),
    ],
)
def test_lookalike_blocks_are_the_users_text(source: bytes) -> None:
    kept(source)


def test_tagging_a_file_with_a_hand_written_block_keeps_it() -> None:
    result = materialize(HAND_WRITTEN, {4: blk("pkg/m.py:f")}, {4: "f"}, path=PATH)
    assert result.problems == [] and result.inserted == 1
    assert result.text == HAND_WRITTEN.replace(
        b"def f", "\n".join(blk("pkg/m.py:f")).encode() + b"\ndef f"
    )
    back = strip(result.text, PATH)
    assert back.text == HAND_WRITTEN and back.removed == 1


@pytest.mark.parametrize(
    ("lines", "ident"),
    [
        (["def f(): ..."], "pkg/m.py:f"),
        (["@dec", "@dec2(1,", "  2)", "def f(): ..."], "pkg/m.py:f"),
        (["class C:", "    x = 1", "    def run(self): ..."], "pkg/m.py:C.run"),
        (["def f():", "    if x:", "        def inner(): ..."], "pkg/m.py:f.inner"),
        (["class C:", "\tclass D:", "\t\tasync def g(self): ..."], "pkg/m.py:C.D.g"),
    ],
)
def test_a_block_directly_above_the_definition_it_names_is_a_tag(
    lines: list[str], ident: str
) -> None:
    clean = text(*lines)
    n = len(lines)
    name = ident.rpartition(".")[2].rpartition(":")[2]
    result = materialize(clean, {n: blk(ident)}, {n: name}, path=PATH)
    assert result.problems == [] and result.inserted == 1
    assert strip(result.text, PATH).text == clean
    # A snapshot stripped from a folder below its root sees a longer path; the id still names it.
    assert strip(result.text, "/tmp/snap/" + PATH).text == clean
    assert strip(result.text, "m.py").text == result.text  # but a shorter one does not


def test_a_block_naming_another_definition_is_not_written() -> None:
    clean = text("class C:", "    def run(self): ...")
    result = materialize(clean, {2: blk("pkg/m.py:run")}, {2: "run"}, path=PATH)
    assert result.text == clean
    assert result.problems == [(2, "pkg/m.py:run does not name line 2 (pkg/m.py:C.run); skipped")]


def test_the_module_block_is_a_tag_only_where_the_module_block_goes() -> None:
    clean = text("#!/usr/bin/env python", "import os")
    tagged = materialize(clean, {MODULE: blk(PATH, "module")}, path=PATH)
    assert tagged.inserted == 1 and strip(tagged.text, PATH).text == clean
    # The same block above the shebang is not where materialize puts it.
    moved = text(*blk(PATH, "module"), "#!/usr/bin/env python", "import os")
    kept(moved)


def test_a_module_block_over_a_users_block_and_a_tag_both_strip() -> None:
    clean = text("# === CodeAnchor my notes", "# ===", "def f(): ...")
    blocks = {MODULE: blk(PATH, "module"), 3: blk("pkg/m.py:f")}
    tagged = materialize(clean, blocks, {3: "f"}, path=PATH)
    assert tagged.problems == [] and tagged.inserted == 2
    assert strip(tagged.text, PATH).text == clean


def test_first_format_blocks_strip_only_above_the_definition_they_name() -> None:
    first = [LEGACY_DELIMITER, "# function pkg/m.py:f", "# CALLS: a.py:b", LEGACY_DELIMITER]
    source = text("x = 0", *first, "def f(): ...")
    assert strip(source, PATH).text == text("x = 0", "def f(): ...")
    kept(text("x = 0", *first, "", "def f(): ..."))
