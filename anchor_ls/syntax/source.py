"""Turn a file's bytes into text the parser can read, the way Python itself would decode it."""

from __future__ import annotations

from dataclasses import dataclass

from anchor_ls.syntax.encoding import declared

MAX_FILE_BYTES = 2 * 1024 * 1024


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


def decode_source(data: bytes, *, limit: int = MAX_FILE_BYTES) -> DecodedSource:
    """Decode Python source bytes; raise UnreadableSource for binaries and huge files."""
    if len(data) > limit:
        raise UnreadableSource("too-large", f"{len(data)} bytes, over the {limit}-byte limit")
    if b"\0" in data[:8192]:
        raise UnreadableSource("binary", "NUL bytes: not Python source")
    encoding, warning = declared(data)
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
