"""Property-based tests: generated sources with mixed line ends, tabs, BOMs and coding cookies."""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.codecs import ACCEPTED

from anchor_ls.index.model import Entity
from anchor_ls.syntax.encoding import declared_encoding
from anchor_ls.tags.policy import TagField
from anchor_ls.tags.render import LEGACY_DELIMITER, MARKER, block_header, block_lines, field_line
from anchor_ls.tags.scan import SourceError, ascii_compatible, layout, qualnames, split_lines
from anchor_ls.tags.text import MODULE, check, materialize, strip

pytestmark = pytest.mark.slow

_DEF = re.compile(r"[ \t\f]*(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)")

# Statement shapes, some spanning lines; `{i}` is the indentation of the line.
SNIPPETS = [
    "def f{n}(a, b=1):",
    "async def g{n}():",
    "class C{n}(Base):",
    "class K{n}: pass",
    "@decorator",
    "@decorator(\n{i}    arg)",
    "# a comment",
    "# === CodeAnchor === is written in docs like this",
    "# === CodeAnchor pkg/x.py:f opens a block",
    "# ===",
    "# CALLS: a user's note",
    "",
    "pass",
    "return x",
    "x = 1; y = 2",
    "s = 'caf\u00e9'",
    "s = '''\ndef hidden():\n    # === CodeAnchor ===\n'''",
    "s = '''\n# === CodeAnchor x.py:f\n# CALLS: y.py:g\n# ===\ndef shown(): pass\n'''",
    's = "a\\\nb"',
    "x = (1,\n{i}  2)",
    "y = 1 + \\\n{i}  2",
    "if x: z = 3",
    "from __future__ import annotations",
    '"""Docstring."""',
    "t = f'{{x!r}}'",
    "raise ValueError(\n{i}'unterminated?')",
]
INDENTS = ["", "    ", "\t", "  \t", "\f", "        "]
EOLS = ["\n", "\r\n", "\r"]
IDS = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), min_codepoint=32, max_codepoint=0x3000),
    min_size=1,
    max_size=12,
)


# Lines that look like tag blocks but are not where tags go: the user's text, always kept.
# `{path}` is the file's own id path, `{other}` another file's that ends like it.
LOOKALIKES = [
    "# === CodeAnchor my notes\n{i}# NOTE: mine\n{i}# ===\n{i}def f{n}(): pass",
    "# === CodeAnchor {other}:f{n}\n{i}# CALLS: {path}:g\n{i}# ===\n{i}def f{n}(): pass",
    "# === CodeAnchor {path}:elsewhere\n{i}# ===\n{i}@decorator\n{i}def f{n}(): pass",
    "# === CodeAnchor {path}:f{n}\n{i}# ===\n{i}x = 1\n{i}def f{n}(): pass",
    "# === CodeAnchor ===\n{i}# function {path}:elsewhere\n{i}# CALLS: x\n"
    "{i}# === CodeAnchor ===\n{i}def f{n}(): pass",
    "# === CodeAnchor {path}\n{i}# ===\n{i}y = 1",
    "# === CodeAnchor notes\n{i}x = 1",
    "s = '''\n# === CodeAnchor {path}:f{n}\n# ===\ndef f{n}(): pass\n'''",
    's = f"""{"""\n# === CodeAnchor {path}:f{n}\n# ===\ndef f{n}(): pass\n"""}"""',
    "s = rf'''{x:{'''\n# === CodeAnchor {path}:f{n}\n# ===\ndef f{n}(): pass\n'''}}'''",
    "L = [\n# === CodeAnchor {path}\n# ===\n{i}1]",
    "s = '\\u0041 \u4e2d \\u000a'",
]
BASIC = ["utf-8", "utf-8-sig", "latin-1", "cp1252"]
LOOKALIKE_PATHS = st.sampled_from(["pkg/m.py", "m.py", "deep/er/pkg/m.py"])


@st.composite
def sources(
    draw: st.DrawFn,
    encodings: Sequence[str] = BASIC,
    snippets: Sequence[str] = SNIPPETS,
    path: str = "pkg/m.py",
    first: str | None = None,
) -> tuple[bytes, str]:
    encoding = draw(st.sampled_from(encodings))
    head: list[str] = []
    if draw(st.booleans()):
        head.append("#!/usr/bin/env python")
    if encoding not in ("utf-8", "utf-8-sig") or draw(st.booleans()):
        head.append(f"# -*- coding: {encoding if encoding != 'utf-8-sig' else 'utf-8'} -*-")
    body = [first] if first is not None else []
    for _ in range(draw(st.integers(0, 25))):
        indent = draw(st.sampled_from(INDENTS))
        snippet = draw(st.sampled_from(snippets)).replace("{n}", str(len(body)))
        snippet = snippet.replace("{path}", path).replace("{other}", "other/" + path)
        body.append(indent + snippet.replace("{i}", indent))
    lines = "\n".join(head + body).split("\n")
    eols = [draw(st.sampled_from(EOLS)) for _ in lines]
    if draw(st.booleans()):
        eols[-1] = ""
    codec = encoding if encoding != "utf-8-sig" else "utf-8"
    data = b"".join(_encoded(c, codec) + e.encode() for c, e in zip(lines, eols, strict=True))
    if encoding == "utf-8-sig":
        data = b"\xef\xbb\xbf" + data
    return data, encoding


def _encoded(line: str, codec: str) -> bytes:
    """A line in `codec`, line by line as editors write files (ASCII where it cannot)."""
    try:
        return line.encode(codec, "replace")
    except UnicodeError:  # codecs without "replace" (idna)
        return line.encode("ascii", "replace")


PATHS = st.one_of(st.just("pkg/m.py"), IDS.map(lambda i: f"{i}.py"))
# Links outside the repository (`ext:<module>.<qualified name>`), and the fields that list them.
EXTERNAL_IDS = st.lists(IDS, min_size=1, max_size=4).map(lambda parts: "ext:" + ".".join(parts))
FIELDS = ["CALLS", "CALLED_BY", "BASE", "OVERRIDES", "OVERRIDDEN_BY", "CALLS_EXTERNAL"]


def _qualnames(data: bytes) -> dict[int, str]:
    """Each definition's qualified name by its 1-based line (none when tags refuse the file)."""
    try:
        lay = layout(split_lines(data))
    except SourceError:
        return {}
    return {i + 1: q for i, q in qualnames(lay).items()}


@st.composite
def requests(
    draw: st.DrawFn, data: bytes, path: str, legacy: bool = False
) -> tuple[dict[int, list[str]], dict[int, str]]:
    """Blocks for the definitions of `data` (and a few other lines); `legacy`: first format.

    Most blocks carry the id of the definition below them; a few name another one (those
    are skipped with a problem, never written).
    """
    lines = re.split(rb"\r\n|\r|\n", data)
    qual = _qualnames(data)
    blocks: dict[int, list[str]] = {}
    names: dict[int, str] = {}
    if draw(st.booleans()):
        blocks[MODULE] = _lines(draw, "module", path, "", legacy)
    for i, raw in enumerate(lines, 1):
        m = _DEF.match(raw.decode("latin-1"))
        if (m or draw(st.integers(0, 9)) == 0) and draw(st.integers(0, 4)) > 0:
            name = m.group(1) if m else "nothing"
            qualname = qual.get(i, name) if draw(st.integers(0, 9)) else "A." + name
            kind = "method" if draw(st.booleans()) else "function"
            blocks[i] = _lines(draw, kind, path, qualname, legacy)
            names[i] = name
    return blocks, names


def _lines(draw: st.DrawFn, kind: str, path: str, qualname: str, legacy: bool = False) -> list[str]:
    """A block for `qualname` in `path`, with links to other files and to its own file."""
    name = qualname.rpartition(".")[2]
    ident = f"{path}:{qualname}" if qualname else path
    links = st.one_of(
        IDS,
        IDS.map(lambda i: f"{path}:A.{i}"),
        IDS.map(lambda i: f"{path}:{i}"),
        EXTERNAL_IDS,
    )
    fields = [
        TagField(
            field, tuple(draw(st.lists(links, min_size=1, max_size=3))), draw(st.integers(0, 3))
        )
        for field in draw(st.lists(st.sampled_from(FIELDS), unique=True))
    ]
    ent = Entity(ident, kind, path, name or path, 1, 1, 1, (0, 0, 0, 0))
    if legacy:  # as trees materialized with the first format hold them
        body = [field_line(f) for f in fields]
        return [LEGACY_DELIMITER, f"# {kind} {ident}", *body, LEGACY_DELIMITER]
    return block_lines(ent, fields)


def _compiles(data: bytes) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(data, "<generated>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def _moved(tagged: bytes, keys: dict[int, list[str]], path: str) -> dict[int, int]:
    stripped = strip(tagged, path)
    where: dict[int, int] = {}
    for t in range(1, len(re.split(rb"\r\n|\r|\n", tagged)) + 1):
        clean = stripped.new_line(t)
        if clean is not None:
            where.setdefault(clean, t)
    return {k: (MODULE if k == MODULE else where[k]) for k in keys}


def _clean(source: bytes, path: str) -> bool:
    """Sources that hold no block of their own (the generator may write a stray delimiter)."""
    first = strip(source, path)
    return first.removed == 0 and not first.damaged


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(st.data())
def test_strip_undoes_materialize_byte_for_byte(data: st.DataObject) -> None:
    source, _encoding = data.draw(sources())
    path = data.draw(PATHS)
    blocks, names = data.draw(requests(source, path))
    result = materialize(source, blocks, names, path=path)
    back = strip(result.text, path)
    if _clean(source, path):
        assert back.text == source
        assert back.damaged == []
        assert back.removed == result.inserted
    assert _compiles(result.text) == _compiles(source)


@SETTINGS
@given(st.data())
def test_materialize_is_idempotent_and_checks_clean(data: st.DataObject) -> None:
    source, _encoding = data.draw(sources())
    path = data.draw(PATHS)
    blocks, names = data.draw(requests(source, path))
    first = materialize(source, blocks, names, path=path)
    if strip(source, path).damaged:
        assert first.text == source  # damaged input is never touched
        return
    if not _clean(source, path):  # blocks already there: only blocks change
        assert strip(first.text, path).text == strip(source, path).text
        return
    for _, message in first.problems:
        assert "coding line" in message or "does not name" in message
    if any("coding line" in message for _, message in first.problems):
        return
    moved = _moved(first.text, blocks, path)
    again_blocks = {moved[k]: v for k, v in blocks.items()}
    again_names = {moved[k]: v for k, v in names.items()}
    second = materialize(first.text, again_blocks, again_names, path=path)
    assert second.text == first.text
    assert second.removed == second.inserted == first.inserted
    assert check(first.text, again_blocks, again_names, require=True, path=path) == []
    assert check(source, blocks, names, path=path) == []


@SETTINGS
@given(st.data())
def test_inserted_lines_are_comments_in_the_file_encoding(data: st.DataObject) -> None:
    source, _encoding = data.draw(sources())
    path = data.draw(PATHS)
    blocks, names = data.draw(requests(source, path))
    if not _clean(source, path):
        return
    result = materialize(source, blocks, names, path=path)
    codec = declared_encoding(result.text)
    assert codec == declared_encoding(source)
    codec = "utf-8" if codec == "utf-8-sig" else codec
    bom = b"\xef\xbb\xbf" if source.startswith(b"\xef\xbb\xbf") else b""
    new_lines = re.split(r"\r\n|\r|\n", result.text[len(bom) :].decode(codec, "replace"))
    old_lines = re.split(r"\r\n|\r|\n", source[len(bom) :].decode(codec, "replace"))
    inserted = {i for b in strip(result.text, path).blocks for i in range(b.start, b.end)}
    assert [ln for i, ln in enumerate(new_lines) if i not in inserted] == old_lines
    written = {
        line.encode(codec, "backslashreplace").decode(codec) for b in blocks.values() for line in b
    }
    for i in inserted:
        assert new_lines[i].lstrip(" \t\f") in written


@SETTINGS
@given(st.data())
def test_blocks_of_the_first_format_strip_and_are_replaced(data: st.DataObject) -> None:
    source, _encoding = data.draw(sources())
    path = data.draw(PATHS)
    if not _clean(source, path):
        return
    old_blocks, names = data.draw(requests(source, path, legacy=True))
    old = materialize(source, old_blocks, names, path=path)
    if old.problems:
        return
    assert strip(old.text, path).text == source
    new_blocks = {
        k: _lines(data.draw, "function", path, block_header(v)[len(path) + 1 :])
        for k, v in old_blocks.items()
    }
    fresh = materialize(source, new_blocks, names, path=path)
    if fresh.problems:
        return
    moved = _moved(old.text, new_blocks, path)
    replaced = materialize(
        old.text,
        {moved[k]: v for k, v in new_blocks.items()},
        {moved[k]: v for k, v in names.items()},
        path=path,
    )
    assert replaced.removed == old.inserted
    assert replaced.text == fresh.text


@SETTINGS
@given(st.data())
def test_user_lookalike_blocks_are_never_stripped_reported_or_replaced(
    data: st.DataObject,
) -> None:
    path = data.draw(LOOKALIKE_PATHS)
    snippets = [*SNIPPETS, *LOOKALIKES, *LOOKALIKES]
    source, _encoding = data.draw(sources(snippets=snippets, path=path, first="x = 0"))
    result = strip(source, path)
    assert result.text == source
    assert result.damaged == [] and result.removed == 0
    assert check(source, {}, {}, path=path) == []
    blocks, names = data.draw(requests(source, path))
    tagged = materialize(source, blocks, names, path=path)
    assert strip(tagged.text, path).text == source


@SETTINGS
@given(st.data())
def test_every_encoding_python_accepts_round_trips_or_is_left_alone(data: st.DataObject) -> None:
    path = data.draw(LOOKALIKE_PATHS)
    snippets = [*SNIPPETS, *LOOKALIKES]
    source, _codec = data.draw(
        sources(encodings=ACCEPTED, snippets=snippets, path=path, first="x = 0")
    )
    blocks, names = data.draw(requests(source, path))
    result = materialize(source, blocks, names, path=path)
    stripped = strip(source, path)
    assert stripped.text == source  # only the user's lookalikes in it
    try:
        layout(split_lines(source))
    except SourceError:
        assert result.text == source and result.problems
        if MARKER in source:
            assert [line for line, _ in stripped.damaged] == [0]
        return
    assert stripped.damaged == []
    assert strip(result.text, path).text == source


def test_the_encodings_tags_read_and_the_ones_they_refuse() -> None:
    for codec in ("utf-7", "shift_jis_2004", "shift_jisx0213", "unicode-escape"):
        assert codec in ACCEPTED and not ascii_compatible(codec)
    for codec in ("utf-8", "iso8859-1", "cp1252", "shift_jis", "gb18030", "big5", "euc_jp"):
        assert codec in ACCEPTED and ascii_compatible(codec)
    assert "raw-unicode-escape" in ACCEPTED and "utf-16" not in ACCEPTED
