"""Turn a file's bytes into text the parser can read, the way Python itself would decode it."""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

MAX_FILE_BYTES = 2 * 1024 * 1024
_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_BLANK_OR_COMMENT = re.compile(rb"^[ \t\f]*(?:[#\r\n]|$)")


class UnreadableSource(Exception):
    """Bytes that are not Python source at all (binary, over the size limit)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True, slots=True)
class DecodedSource:
    text: str  # line endings normalised to "\n" (a lone CR is a line break, as in Python)
    encoding: str
    warning: str | None  # set when bytes had to be replaced to decode


def declared_encoding(data: bytes) -> str:
    """The PEP 263 encoding: BOM, else a coding cookie on line 1 or 2, else UTF-8."""
    return _declared(data)[0]


def _declared(data: bytes) -> tuple[str, str | None]:
    """(the encoding to read data in, why it is not the one declared when it is not).

    Python refuses a file whose cookie names no codec; it is read as UTF-8 here, and
    that is reported as a decode problem, like undecodable bytes."""
    if data.startswith(codecs.BOM_UTF8):
        return "utf-8-sig", None
    lines = data.split(b"\n", 2)[:2]
    for i, line in enumerate(lines):
        match = _COOKIE.match(line)
        if match:
            name = match.group(1).decode("ascii", "replace")
            try:
                return codecs.lookup(name).name, None
            except LookupError:
                return "utf-8", f"unknown encoding {name!r} in the coding cookie; read as utf-8"
        if i == 0 and not _BLANK_OR_COMMENT.match(line):
            break
    return "utf-8", None


def decode_source(data: bytes, *, limit: int = MAX_FILE_BYTES) -> DecodedSource:
    """Decode Python source bytes; raise UnreadableSource for binaries and huge files."""
    if len(data) > limit:
        raise UnreadableSource("too-large", f"{len(data)} bytes, over the {limit}-byte limit")
    if b"\0" in data[:8192]:
        raise UnreadableSource("binary", "NUL bytes: not Python source")
    encoding, warning = _declared(data)
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as err:
        text = data.decode(encoding, "replace")
        replaced = f"undecodable bytes for {encoding} at offset {err.start}; replaced"
        warning = replaced if warning is None else f"{warning}; {replaced}"
    if "\0" in text:
        raise UnreadableSource("binary", "NUL bytes: not Python source")
    if encoding == "utf-8-sig" and text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return DecodedSource(text, encoding, warning)
