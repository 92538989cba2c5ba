"""Which words a text holds, hashed small enough to keep for every file of a repository."""

from __future__ import annotations

import bisect
import functools
import re
import zlib
from array import array

_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


def words_sketch(text: bytes) -> bytes:
    """The CRC-32 of every distinct word of a text, sorted (four bytes a word): when an
    edit changes what a file defines, most of its hundreds of importers are ruled out by
    it, unread."""
    return array("I", sorted(map(zlib.crc32, set(_WORD.findall(text))))).tobytes()


def may_mention(words: bytes, name: bytes) -> bool:
    """False when a text whose sketch is words surely lacks the word name."""
    probe = _probe(name)
    if not words or probe is None:
        return True
    table = memoryview(words).cast("I")
    at = bisect.bisect_left(table, probe)
    return at < len(table) and table[at] == probe


def may_mention_of(words: bytes, names: list[tuple[str, bytes]]) -> set[str]:
    """The names of names ((name, its bytes), ...) that a text whose sketch is words may
    mention: one pass over the sketch for hundreds of names (may_mention each, asked of
    every file of a repository round after round, cost as much as reading their bodies)."""
    if not words:
        return {name for name, _b in names}
    table = set(memoryview(words).cast("I"))
    return {name for name, b in names if (p := _probe(b)) is None or p in table}


@functools.lru_cache(maxsize=4096)
def _probe(name: bytes) -> int | None:
    """A name's hash, asked of hundreds of sketches in a row."""
    return zlib.crc32(name) if _WORD.fullmatch(name) else None


def has_word(text: bytes, name: bytes) -> bool:
    """Whether name stands in text as a word of its own (not inside a longer one)."""
    return name in text and re.search(rb"\b%s\b" % re.escape(name), text) is not None
