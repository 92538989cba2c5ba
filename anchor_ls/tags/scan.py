"""Physical lines of a source file and where comment lines may safely go.

Tags are whole comment lines; they are only ever inserted or removed at a line that
starts a logical line (not inside a string literal, brackets or a backslash
continuation). The scanner here decides that with a small, error-tolerant lexer
(strings, comments, brackets, continuations), so broken files are handled too.
Lines are split the way Python splits them: CRLF, LF and a lone CR each end a line.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from anchor_ls.syntax.encoding import BOM, declared_encoding, is_cookie_line, written_codec

_EOL_SPLIT = re.compile(rb"(\r\n|\r|\n)")
_TEXT_EOL_SPLIT = re.compile("(\r\n|\r|\n)")

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
# The same, matching only a string that is closed.
_STRING_CLOSED = {
    **{q: _STRING_END[q] for q in ("'''", '"""')},
    "'": re.compile(r"[^'\\\n]*(?:\\.[^'\\\n]*)*'", re.S),
    '"': re.compile(r'[^"\\\n]*(?:\\.[^"\\\n]*)*"', re.S),
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
    bom = BOM if data.startswith(BOM) else b""
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
    return Lines(bom, lines, ends, written_codec(declared_encoding(data)))


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
    """The decoded contents of each line; raise SourceError when lines would not line up.

    Besides an ASCII-compatible codec, every line must decode on its own to what it is
    in the whole text: codecs with shift states or escapes (`raw-unicode-escape` writing
    a line end as `\\u000a`, say) could otherwise make bytes that look like a comment
    line read as something else to Python.
    """
    if not ascii_compatible(src.encoding):
        raise SourceError(f"encoding {src.encoding} is not ASCII-compatible")
    body = b"".join(c + e for c, e in zip(src.lines, src.ends, strict=True))
    try:
        text = body.decode(src.encoding, "replace")
    except (UnicodeError, LookupError) as err:
        raise SourceError(f"cannot decode as {src.encoding}: {err}") from None
    parts = _TEXT_EOL_SPLIT.split(text)
    contents = parts[0::2]
    if len(parts) > 1 and contents[-1] == "":
        contents.pop()
    if not text:
        contents = []
    if len(contents) != len(src.lines):
        raise SourceError(f"lines do not line up after decoding as {src.encoding}")
    if src.encoding not in ("utf-8", "ascii"):
        for i, (raw, line) in enumerate(zip(src.lines, contents, strict=True)):
            if raw.decode(src.encoding, "replace") != line:
                raise SourceError(f"line {i + 1} reads differently on its own in {src.encoding}")
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
            prefix = _prefix(text, start)
            if prefix in _FORMATTED:
                try:
                    end = _FString(text, "r" in prefix).end(start + len(quote), quote)
                except (_Unclosed, RecursionError):
                    raise SourceError(
                        f"the f-string on line {line_of(start) + 1} does not close where "
                        "Python would close it"
                    ) from None
            else:
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


# String prefixes whose literals hold replacement fields (PEP 701 f-strings, PEP 750 t-strings).
_FORMATTED = frozenset({"f", "rf", "fr", "t", "rt", "tr"})


def _prefix(text: str, quote_at: int) -> str:
    """The string prefix before a quote, lowercased: the whole name that touches it."""
    k = quote_at
    while k > 0 and (text[k - 1].isalnum() or text[k - 1] == "_"):
        k -= 1
    return text[k:quote_at].lower()


class _Unclosed(Exception):
    """An f-string whose end Python's own tokenizer would not find where we would."""


class _FString:
    """Where an f-string ends, by the rules of PEP 701 (Python 3.12).

    Replacement fields may hold any string, the f-string's own quotes included, and
    span lines; the literal parts of a one-quote f-string may not. Older Pythons accept
    a subset of these strings and end each of them at the same place.
    """

    def __init__(self, text: str, raw: bool) -> None:
        self.text = text
        self.raw = raw

    def end(self, i: int, quote: str) -> int:
        """Just past the closing quote of the literal whose body starts at i."""
        text, n = self.text, len(self.text)
        while i < n:
            c = text[i]
            if text.startswith(quote, i):
                return i + len(quote)
            if c == "\\":
                if not self.raw and text.startswith("N{", i + 1):  # a named escape, no field
                    close = text.find("}", i)
                    i = n if close < 0 else close + 1
                elif text.startswith("{", i + 1):
                    i += 1
                else:
                    i += 2
            elif c == "\n" and len(quote) == 1:
                raise _Unclosed
            elif c == "{":
                i = i + 2 if text.startswith("{{", i) else self.field(i + 1, quote)
            else:
                i += 1
        raise _Unclosed

    def field(self, i: int, quote: str) -> int:
        """Just past the `}` that closes the replacement field whose expression starts at i."""
        text, n = self.text, len(self.text)
        depth = 0
        while i < n:
            c = text[i]
            if c in "'\"":
                inner = c * 3 if text.startswith(c * 3, i) else c
                prefix = _prefix(text, i)
                if prefix in _FORMATTED:
                    i = _FString(text, "r" in prefix).end(i + len(inner), inner)
                else:
                    m = _STRING_CLOSED[inner].match(text, i + len(inner))
                    if m is None:
                        raise _Unclosed
                    i = m.end()
            elif c == "#":
                newline = text.find("\n", i)
                i = n if newline < 0 else newline
            elif c in "([{":
                depth += 1
                i += 1
            elif c in ")]}":
                if c == "}" and depth == 0:
                    return i + 1
                depth = max(depth - 1, 0)
                i += 1
            elif c == ":" and depth == 0:
                return self.spec(i + 1, quote)
            elif c == "\\":
                i += 2
            else:
                i += 1
        raise _Unclosed

    def spec(self, i: int, quote: str) -> int:
        """Just past the `}` that closes a format spec starting at i (fields may nest)."""
        text, n = self.text, len(self.text)
        while i < n:
            c = text[i]
            if c == "{":
                i = self.field(i + 1, quote)
            elif c == "}":
                return i + 1
            elif text.startswith(quote, i) or (c == "\n" and len(quote) == 1):
                raise _Unclosed
            else:
                i += 2 if c == "\\" else 1
        raise _Unclosed


def module_insert_index(text: list[str]) -> int:
    """Where a module block goes: after a shebang and a PEP 263 coding line (lines 1-2)."""
    if not text:
        return 0
    if len(text) > 1 and is_cookie_line(text[1]) and _BLANK_OR_COMMENT.match(text[0]):
        return 2
    if text[0].startswith("#!") or is_cookie_line(text[0]):
        return 1
    return 0


def qualnames(lay: Layout) -> dict[int, str]:
    """Each definition's qualified name by its 0-based def/class line, as the parser writes
    them: the names of the definitions around it by indentation, joined by dots."""
    found: dict[int, str] = {}
    stack: list[tuple[int, str | None]] = []  # (indentation width, def/class name or None)
    for i, line in enumerate(lay.text):
        if not lay.is_code_start(i):
            continue
        width = _width(line)
        while stack and stack[-1][0] >= width:
            stack.pop()
        m = _DEF_START.match(line)
        name = (m.group(2) or m.group(3)) if m is not None and not m.group(1) else None
        if name is not None:
            found[i] = ".".join([*(s for _, s in stack if s is not None), name])
        stack.append((width, name))
    return found


def definition_below(lay: Layout, anchor: int) -> int | None:
    """The def/class line whose block goes above line `anchor` (its first decorator or itself)."""
    i = anchor
    while i < len(lay.text):
        if lay.is_code_start(i):
            m = _DEF_START.match(lay.text[i])
            if m is None:
                return None
            if not m.group(1):
                return i if definition_anchor(lay, i, None) == anchor else None
        i += 1
    return None


def definitions_below(lay: Layout) -> Callable[[int], int | None]:
    """`definition_below` for many anchors of one layout, each in constant time.

    The lines are read once: a stack of blocks a blank line or a decorator apart made
    each call walk to the definition at the bottom again (quadratic in the stack).
    """
    n = len(lay.text)
    next_code = [n] * (n + 1)  # the first code line at or after each line (n: none)
    chain = [-1] * (n + 1)  # for a code line: the def its decorator chain ends in (-1: none)
    for i in range(n - 1, -1, -1):
        if not lay.is_code_start(i):
            next_code[i] = next_code[i + 1]
            continue
        next_code[i] = i
        m = _DEF_START.match(lay.text[i])
        if m is not None:
            chain[i] = chain[next_code[i + 1]] if m.group(1) else i
    anchors: dict[int, int | None] = {}

    def below(anchor: int) -> int | None:
        if not 0 <= anchor < n:
            return None
        found = chain[next_code[anchor]]
        if found < 0:
            return None
        if found not in anchors:
            anchors[found] = definition_anchor(lay, found, None)
        return found if anchors[found] == anchor else None

    return below


def _width(line: str) -> int:
    """The indentation's width as Python's tokenizer counts it (tabs to multiples of 8)."""
    col = 0
    for ch in line:
        if ch == " ":
            col += 1
        elif ch == "\t":
            col = (col // 8 + 1) * 8
        elif ch == "\f":
            col = 0
        else:
            break
    return col


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
