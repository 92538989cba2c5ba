"""A Python file's encoding, and its bytes as the text an editor holds, in one place.

Three readers must agree on every rule here: the parser (which codec a file is read in),
the tags layer (strip and materialize write bytes back byte for byte) and the server (an
editor's buffer stands for bytes: indexed, compared with the file, transformed). The rules:
- the PEP 263 encoding is a UTF-8 BOM, else a coding cookie on line 1, or on line 2 after a
  blank or comment line 1, else UTF-8; lines end at CRLF, LF or a lone CR, as Python reads
  a file;
- a buffer is the decoded file with its line ends as they are; a BOM is U+FEFF at its start
  (an editor may also hide it: such a buffer still equals the file); bytes its codec cannot
  decode are surrogate escapes, so buffer -> bytes -> buffer gives back every character.
"""

from __future__ import annotations

import codecs
import re

# PEP 263: the coding declaration of a line (matched against one line, without its end).
COOKIE = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_COOKIE_BYTES = re.compile(COOKIE.pattern.encode("ascii"))
_BLANK_OR_COMMENT_BYTES = re.compile(rb"^[ \t\f]*(?:#|$)")
_FIRST_TWO_LINES = re.compile(rb"([^\r\n]*)(?:\r\n|\r|\n)?([^\r\n]*)")
BOM = codecs.BOM_UTF8
_ESCAPES = "surrogateescape"


def declared_encoding(data: bytes) -> str:
    """The PEP 263 encoding: "utf-8-sig" for a BOM, else a coding cookie's codec, else UTF-8."""
    return declared(data)[0]


def declared(data: bytes) -> tuple[str, str | None]:
    """(the encoding to read data in, why it is not the one declared when it is not).

    Python refuses a file whose cookie names no codec, or one that is no text encoding
    (`hex`, `rot13`, `undefined`); it is read as UTF-8 here, and that is reported as a
    decode problem, like undecodable bytes."""
    if data.startswith(BOM):
        return "utf-8-sig", None
    match = _FIRST_TWO_LINES.match(data)
    assert match is not None  # every part of the pattern may be empty
    first, second = match.groups()
    for line in (first, second) if _BLANK_OR_COMMENT_BYTES.match(first) else (first,):
        cookie = _COOKIE_BYTES.match(line)
        if cookie:
            name = cookie.group(1).decode("ascii", "replace")
            try:
                codec = codecs.lookup(name).name
            except LookupError:
                return "utf-8", f"unknown encoding {name!r} in the coding cookie; read as utf-8"
            try:  # `hex`, `rot13` (no text encodings), `undefined`: Python refuses the file
                b"#".decode(codec)
            except UnicodeDecodeError:
                pass  # a codec that reads text, not this byte (utf-16)
            except (LookupError, UnicodeError):
                why = f"encoding {name!r} in the coding cookie reads no text; read as utf-8"
                return "utf-8", why
            return codec, None
    return "utf-8", None


def written_codec(encoding: str) -> str:
    """The codec a file's text is written in: a BOM file's is plain UTF-8 after its BOM."""
    return "utf-8" if encoding == "utf-8-sig" else encoding


def buffer_text(data: bytes, *, encoding: str | None = None) -> str:
    """The bytes as an editor buffer: decoded in their declared codec (or `encoding`, the
    codec of the buffer they were made from), line ends as they are, a BOM as U+FEFF,
    undecodable bytes as surrogate escapes (so they come back)."""
    codec = encoding or written_codec(declared_encoding(data))
    return data.decode(codec, _ESCAPES)


def buffer_bytes(text: str) -> bytes:
    """The bytes a buffer stands for: its text in the codec its cookie (or BOM) declares.

    Raises UnicodeEncodeError for a character that codec cannot hold (Python would refuse
    the file too): a writer reports it, a reader that needs bytes anyway uses
    `buffer_bytes_or_utf8`."""
    utf8 = text.encode("utf-8", "surrogatepass")
    codec = written_codec(declared_encoding(utf8))
    return text.encode(codec, _ESCAPES)


def buffer_bytes_or_utf8(text: str) -> bytes:
    """`buffer_bytes`, or, for text its declared codec cannot hold, its UTF-8 (lone
    surrogates kept): the bytes are read, never written to the file."""
    try:
        return buffer_bytes(text)
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def buffer_matches(data: bytes, text: str) -> bool:
    """Whether a buffer holds exactly these bytes (a BOM the editor hides included)."""
    try:
        held = buffer_text(data)
    except LookupError:
        return False
    return held == text or (data.startswith(BOM) and held[1:] == text)


def is_cookie_line(line: str) -> bool:
    """Whether a line (text, without its end) reads as a PEP 263 coding declaration."""
    return COOKIE.match(line) is not None
