"""Physical lines of a source file and where comment lines may safely go.

Tags are whole comment lines; they are only ever inserted or removed at a line that
starts a logical line (not inside a string literal, brackets or a backslash
continuation). The scanner here decides that with a small, error-tolerant lexer
(strings, comments, brackets, continuations), so broken files are handled too.
Lines are split the way Python splits them: CRLF, LF and a lone CR each end a line.
"""

from __future__ import annotations

import codecs
import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass
from functools import cache

from anchor_ls.syntax.source import declared_encoding

_EOL_SPLIT = re.compile(rb"(\r\n|\r|\n)")
_TEXT_EOL_SPLIT = re.compile("(\r\n|\r|\n)")

# PEP 263: a coding declaration on line 1 or 2 (line 2 only after a blank or comment line 1).
COOKIE = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_BLANK_OR_COMMENT = re.compile(r"^[ \t\f]*(?:#|$)")
_INDENT = re.compile(rb"[ \t\f]*")

# Tokens that change the lexer state; everything else (names, numbers, operators) is skipped.
_TOKEN = re.compile(r"""[#'"()\[\]{}\\]""")
_STRING_END = {
    "'''": re.compile(r"[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''", re.S),
    '"""': re.compile(r'[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""', re.S),
    # A one-quote string ends at its quote or, unterminated, before the line end;
    # a backslash-newline inside it carries it on to the next line, as in Python.
    "'": re.compile(r"[^'\\\n]*(?:\\.[^'\\\n]*)*'?", re.S),
    '"': re.compile(r'[^"\\\n]*(?:\\.[^"\\\n]*)*"?', re.S),
}

# The start of a definition's logical line: a decorator, `def`, `async def` or `class`.
_DEF_START = re.compile(
    r"[ \t\f]*(?:(@)|(?:async[ \t\f]+)?def[ \t\f]+([^\s(\[:\\]+)|class[ \t\f]+([^\s(\[:\\]+))"
)
_ASCII_PROBE = "# === CodeAnchor === \t\r\n\"'\\()[]{}:,+abcXYZ_019"


class SourceError(ValueError):
    """Bytes this module will not lay tags into (an encoding that is not ASCII-compatible)."""


@cache
def ascii_compatible(encoding: str) -> bool:
    """Whether ASCII text (our tag lines, quotes, line ends) encodes to the same bytes."""
    try:
        return _ASCII_PROBE.encode(encoding) == _ASCII_PROBE.encode("ascii")
    except (LookupError, UnicodeError):
        return False


@dataclass(slots=True)
class Lines:
    """A file cut into physical lines; `b"".join` of bom + line + end for each gives it back."""

    bom: bytes
    lines: list[bytes]  # contents, without line ends
    ends: list[bytes]  # each line's end; b"" only for a last line that has none
    encoding: str  # the codec new text is written in (BOM files: "utf-8")

    @property
    def eol(self) -> bytes:
        """The dominant line end (LF when the file has none; ties go to LF, CRLF, CR)."""
        counts = {b"\n": 0, b"\r\n": 0, b"\r": 0}
        for end in self.ends:
            if end:
                counts[end] += 1
        return max(counts, key=lambda e: counts[e])  # max keeps the first of equal counts

    def join(self) -> bytes:
        return self.bom + b"".join(c + e for c, e in zip(self.lines, self.ends, strict=True))

    def indent(self, index: int) -> bytes:
        match = _INDENT.match(self.lines[index])
        return match.group() if match else b""


def split_lines(data: bytes) -> Lines:
    """Cut bytes into lines (CRLF, LF, lone CR), keeping the BOM and every byte."""
    bom = codecs.BOM_UTF8 if data.startswith(codecs.BOM_UTF8) else b""
    body = data[len(bom) :]
    parts = _EOL_SPLIT.split(body)
    lines = parts[0::2]
    ends = parts[1::2]
    if lines and lines[-1] == b"" and ends:
        lines.pop()  # the file ends with a line end: no empty last line
    else:
        ends.append(b"")
    if not body:
        lines, ends = [], []
    encoding = declared_encoding(data)
    if encoding == "utf-8-sig":
        encoding = "utf-8"
    return Lines(bom, lines, ends, encoding)


@dataclass(slots=True)
class Layout:
    """Per physical line: does it start inside a string, or continue a logical line?"""

    text: list[str]  # decoded line contents (undecodable bytes replaced)
    in_string: bytearray  # 1: the line starts inside a string literal
    continued: bytearray  # 1: inside brackets or after a backslash continuation
    open_string: int | None  # 0-based line where a string left open at EOF starts

    def starts_logical_line(self, index: int) -> bool:
        return not (self.in_string[index] or self.continued[index])

    def is_code_start(self, index: int) -> bool:
        """A logical line start holding code (not blank, not only a comment)."""
        return self.starts_logical_line(index) and not _BLANK_OR_COMMENT.match(self.text[index])


def decode_lines(src: Lines) -> list[str]:
    """The decoded contents of each line; raise SourceError when lines would not line up."""
    if not ascii_compatible(src.encoding):
        raise SourceError(f"encoding {src.encoding} is not ASCII-compatible")
    body = b"".join(c + e for c, e in zip(src.lines, src.ends, strict=True))
    text = body.decode(src.encoding, "replace")
    parts = _TEXT_EOL_SPLIT.split(text)
    contents = parts[0::2]
    if len(parts) > 1 and contents[-1] == "":
        contents.pop()
    if not text:
        contents = []
    if len(contents) != len(src.lines):
        raise SourceError(f"lines do not line up after decoding as {src.encoding}")
    return contents


def layout(src: Lines) -> Layout:
    """Lex the file once and mark the lines where a comment line would not be a plain comment."""
    contents = decode_lines(src)
    n = len(contents)
    in_string = bytearray(n)
    continued = bytearray(n)
    text = "\n".join(contents)
    starts = [0]
    for c in contents[:-1]:
        starts.append(starts[-1] + len(c) + 1)

    def line_of(pos: int) -> int:
        return bisect_right(starts, pos) - 1

    def mark(flags: bytearray, first: int, last: int) -> None:
        if first <= last:
            flags[first : last + 1] = b"\x01" * (last - first + 1)

    open_string: int | None = None
    depth = 0
    opened = 0
    pos = 0
    size = len(text)
    search = _TOKEN.search
    find = text.find
    while True:
        m = search(text, pos)
        if m is None:
            break
        start = m.start()
        char = text[start]
        if char == "#":  # comment: skip to the line end
            nl = find("\n", start)
            pos = size if nl < 0 else nl
        elif char in "'\"":  # string literal
            quote = char * 3 if text.startswith(char * 3, start) else char
            end_match = _STRING_END[quote].match(text, start + len(quote))
            if end_match is None:  # an unterminated triple-quoted string runs to EOF
                end = size
                open_string = line_of(start)
            else:
                end = end_match.end()
            if find("\n", start, end) >= 0:
                mark(in_string, line_of(start) + 1, line_of(end - 1))
            pos = end
        elif char in "([{":
            if depth == 0:
                opened = start
            depth += 1
            pos = start + 1
        elif char in ")]}":
            if depth > 0:
                depth -= 1
                if depth == 0 and find("\n", opened, start) >= 0:
                    mark(continued, line_of(opened) + 1, line_of(start))
            pos = start + 1
        else:  # a backslash: a continuation when it ends the line
            pos = start + 1
            if text.startswith("\n", pos):
                line = line_of(start)
                if line + 1 < n:
                    continued[line + 1] = 1
                pos += 1
    if depth > 0:
        mark(continued, line_of(opened) + 1, n - 1)
    return Layout(contents, in_string, continued, open_string)


def module_insert_index(text: list[str]) -> int:
    """Where a module block goes: after a shebang and a PEP 263 coding line (lines 1-2)."""
    if not text:
        return 0
    if len(text) > 1 and COOKIE.match(text[1]) and _BLANK_OR_COMMENT.match(text[0]):
        return 2
    if text[0].startswith("#!") or COOKIE.match(text[0]):
        return 1
    return 0


def _same_name(found: str, wanted: str) -> bool:
    return found == wanted or unicodedata.normalize("NFKC", found) == unicodedata.normalize(
        "NFKC", wanted
    )


def definition_anchor(lay: Layout, def_index: int, name: str | None) -> int | None:
    """The line a definition's block goes above: its first decorator, or the def line itself.

    None when the line is no definition start (a one-liner after a colon, a stale line
    number, a name that differs, a line inside a string or a continued logical line).
    """
    if not 0 <= def_index < len(lay.text) or not lay.starts_logical_line(def_index):
        return None
    m = _DEF_START.match(lay.text[def_index])
    if m is None or m.group(1):
        return None
    found = m.group(2) or m.group(3)
    if name is not None and not _same_name(found, name):
        return None
    indent = _indent_text(lay.text[def_index])
    anchor = def_index
    i = def_index - 1
    while i >= 0:
        if not lay.is_code_start(i):
            i -= 1
            continue
        line = lay.text[i]
        d = _DEF_START.match(line)
        if d is None or not d.group(1):
            break
        if _indent_text(line) != indent:  # broken code: never put a block between decorators
            return None
        anchor = i
        i -= 1
    return anchor


def _indent_text(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t\f"))]
