"""Column conversions between the index (UTF-8 byte columns) and the client.

LSP positions count code units of the negotiated encoding: UTF-16 by default,
UTF-8 or UTF-32 when the client offers them. Spans in the index are UTF-8 byte
columns of the source that was indexed; buffers in the editor are text. Every
conversion lives here so that no other module counts characters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lsprotocol import types

UTF8 = types.PositionEncodingKind.Utf8.value
UTF16 = types.PositionEncodingKind.Utf16.value
UTF32 = types.PositionEncodingKind.Utf32.value

# LSP line endings: \r\n, \n, \r. str.splitlines also splits on \f, \v, \x1c, U+2028 and
# more, which Python source may hold (form feeds between sections, in the stdlib too).
LINE_ENDING = re.compile(r"\r\n|\r|\n")


def _units(text: str, encoding: str) -> int:
    """Code units `text` takes in `encoding`."""
    if encoding == UTF32:
        return len(text)
    if encoding == UTF8:
        return len(text.encode("utf-8", errors="surrogatepass"))
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def bytes_to_units(line: bytes, byte_col: int, encoding: str) -> int:
    """A UTF-8 byte column of `line` as a client column."""
    byte_col = max(0, min(byte_col, len(line)))
    if encoding == UTF8 or line.isascii():
        return byte_col
    return _units(line[:byte_col].decode("utf-8", errors="replace"), encoding)


def units_to_bytes(line: str, col: int, encoding: str) -> int:
    """A client column of text `line` as a UTF-8 byte column (clamped to the line)."""
    if line.isascii():
        return max(0, min(col, len(line)))
    if encoding == UTF8:
        raw = line.encode("utf-8", errors="surrogatepass")
        col = max(0, min(col, len(raw)))
        # Never split a character: back off to its first byte.
        while 0 < col < len(raw) and (raw[col] & 0xC0) == 0x80:
            col -= 1
        return col
    units = 0
    for index, ch in enumerate(line):
        if units >= col:
            return len(line[:index].encode("utf-8", errors="surrogatepass"))
        units += 2 if encoding == UTF16 and ord(ch) > 0xFFFF else 1
    return len(line.encode("utf-8", errors="surrogatepass"))


def text_lines(text: str) -> list[str]:
    """Lines of an editor buffer without their endings, as LSP counts them."""
    return LINE_ENDING.split(text)


@dataclass(frozen=True, slots=True)
class LineTable:
    """The lines of one indexed source, to turn byte spans into client ranges."""

    lines: list[bytes]

    @classmethod
    def of(cls, source: bytes) -> LineTable:
        return cls(source.split(b"\n"))

    @property
    def line_count(self) -> int:
        return len(self.lines)

    def line(self, line: int) -> bytes:
        """Line `line` (0-based) without its ending; b'' beyond the end."""
        if not 0 <= line < len(self.lines):
            return b""
        return self.lines[line].rstrip(b"\r")

    def line_end(self, line: int, encoding: str) -> types.Position:
        """The position just after the last character of `line`."""
        text = self.line(line)
        return types.Position(
            line=max(line, 0), character=bytes_to_units(text, len(text), encoding)
        )


def position_to_bytes(
    lines: list[str], position: types.Position, encoding: str
) -> tuple[int, int] | None:
    """A client position in a buffer as (line, UTF-8 byte column); None past the last line.

    A character past the end of its line means the end of the line, as the spec says.
    """
    if not 0 <= position.line < len(lines):
        return None
    line = lines[position.line]
    return position.line, units_to_bytes(line, max(position.character, 0), encoding)
