"""One set of encoding rules: the cookie as Python reads it, and a buffer as the bytes it
stands for, exactly, in every codec the project writes tags in."""

from __future__ import annotations

import codecs

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.codecs import SUPPORTED

from anchor_ls.syntax.encoding import (
    BOM,
    buffer_bytes,
    buffer_bytes_or_utf8,
    buffer_matches,
    buffer_text,
    declared_encoding,
)
from anchor_ls.tags.scan import module_insert_index

EOLS = ["\n", "\r\n", "\r"]


def test_every_codec_python_reads_without_a_shift_state_is_supported() -> None:
    for codec in ("utf-8", "iso8859-1", "cp1252", "shift_jis", "gb18030", "big5", "koi8-r"):
        assert codec in SUPPORTED
    assert "utf-7" not in SUPPORTED and "utf-16" not in SUPPORTED


@pytest.mark.parametrize("eol", EOLS)
def test_a_cookie_below_line_two_is_not_read_whatever_the_line_ends(eol: str) -> None:
    """Python reads this file as UTF-8 (its cookie is on line 3), and the tags layer puts
    the module block below line 1: the parser must read it as UTF-8 too."""
    lines = ["#!/usr/bin/env python", "", "# coding: latin-1", 'x = "é"']
    data = eol.join(lines).encode("latin-1")
    assert declared_encoding(data) == "utf-8"
    assert module_insert_index(lines) == 1


@pytest.mark.parametrize("eol", EOLS)
def test_a_cookie_on_line_two_is_read_whatever_the_line_ends(eol: str) -> None:
    lines = ["#!/usr/bin/env python", "# coding: latin-1", 'x = "é"']
    assert declared_encoding(eol.join(lines).encode("latin-1")) == "iso8859-1"
    assert module_insert_index(lines) == 2


def test_a_buffer_that_shows_the_bom_is_the_file_with_its_bom() -> None:
    data = BOM + b"x = 1\r\n"
    assert buffer_text(data) == "\ufeffx = 1\r\n"
    assert buffer_bytes("\ufeffx = 1\r\n") == data
    assert buffer_matches(data, "\ufeffx = 1\r\n")


def test_a_buffer_that_hides_the_bom_still_equals_the_file() -> None:
    assert buffer_matches(BOM + b"x = 1\n", "x = 1\n")
    assert not buffer_matches(b"x = 1\n", "\ufeffx = 1\n")


def test_bytes_the_codec_cannot_decode_come_back_from_the_buffer() -> None:
    data = "# coding: latin-1\nx = 'é'\n".encode("latin-1")
    utf8_with_stray = b"x = '\xe9'\n"
    for raw in (data, utf8_with_stray):
        assert buffer_bytes(buffer_text(raw)) == raw
        assert buffer_matches(raw, buffer_text(raw))


def test_text_the_declared_codec_cannot_hold_is_refused_or_read_as_utf8() -> None:
    text = "# coding: latin-1\nx = '€'\n"
    with pytest.raises(UnicodeEncodeError):
        buffer_bytes(text)
    assert buffer_bytes_or_utf8(text) == text.encode("utf-8")


def _holds(codec: str, ch: str) -> bool:
    try:
        return ch.encode(codec).decode(codec) == ch
    except UnicodeError:
        return False


@st.composite
def buffers(draw: st.DrawFn) -> tuple[str, str]:
    """(codec, buffer text): a cookie (or a BOM), lines of characters the codec holds,
    non-ASCII ones first among them, each line ending in CRLF, LF or a lone CR."""
    codec = draw(st.sampled_from([*SUPPORTED, "utf-8-sig"]))
    written = "utf-8" if codec == "utf-8-sig" else codec
    chars = st.characters(
        blacklist_categories=("Cs",), blacklist_characters="\r\n\x00\ufeff", max_codepoint=0x2FFFF
    ).filter(lambda c: _holds(written, c))
    words = st.text(chars, max_size=12)
    lines = draw(st.lists(words.map(lambda w: f"s = {w!r}  # {w}"), max_size=8))
    if codec == "utf-8-sig":
        head = ["\ufeff#!/usr/bin/env python"] if draw(st.booleans()) else ["\ufeff"]
    else:
        head = ["#!/usr/bin/env python"] if draw(st.booleans()) else []
        head.append(f"# -*- coding: {codec} -*-")
    body = head + lines
    eols = [draw(st.sampled_from(EOLS)) for _ in body]
    if draw(st.booleans()):
        eols[-1] = ""
    return codec, "".join(line + eol for line, eol in zip(body, eols, strict=True))


@settings(max_examples=400, deadline=None)
@given(buffers())
def test_buffer_to_bytes_to_buffer_is_exact_in_every_supported_codec(
    drawn: tuple[str, str],
) -> None:
    codec, text = drawn
    data = buffer_bytes(text)
    assert codecs.lookup(declared_encoding(data)).name == codecs.lookup(codec).name
    assert buffer_text(data) == text
    assert buffer_matches(data, text)
    assert buffer_bytes_or_utf8(text) == data
    if data.startswith(BOM):
        assert buffer_matches(data, text[1:])  # an editor that hides the BOM
