"""The bytes of every indexed file, kept compressed.

An index reads them rarely and a few at a time (the dependents of an edit that name what
changed, the file a request is about, a materialize), but holds them all: Django's are
17 MB, 4.5 MB once compressed by zlib's fastest level (a tenth of a second for them
all). The files read last stay decompressed, the same bytes object each time (a
server's views of a file are kept while its source is the same object).
"""

from __future__ import annotations

import re
import zlib
from collections import OrderedDict
from collections.abc import Iterable, Iterator

RECENT = 64  # decompressed files kept
SKETCH_BITS = 4096  # a file's words hashed to bits: most files can be ruled out unread
_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


class Sources:
    def __init__(self) -> None:
        self._packed: dict[str, bytes] = {}
        self._sizes: dict[str, int] = {}
        self._sketches: dict[str, tuple[bool, int]] = {}  # (has `import *`, word bits)
        self._recent: OrderedDict[str, bytes] = OrderedDict()

    def __contains__(self, relpath: object) -> bool:
        return relpath in self._packed

    def __iter__(self) -> Iterator[str]:
        return iter(self._packed)

    def __len__(self) -> int:
        return len(self._packed)

    def put(self, relpath: str, data: bytes) -> None:
        self._packed[relpath] = zlib.compress(data, 1)
        self._sizes[relpath] = len(data)
        self._sketches.pop(relpath, None)
        self._remember(relpath, data)

    def size(self, relpath: str) -> int:
        """Bytes of relpath (0 when it is not indexed), without decompressing it."""
        return self._sizes.get(relpath, 0)

    def get(self, relpath: str, *, keep: bool = True) -> bytes | None:
        """keep: hold it decompressed among the files read last (not for one glance)."""
        data = self._recent.get(relpath)
        if data is not None:
            if keep:
                self._recent.move_to_end(relpath)
            return data
        packed = self._packed.get(relpath)
        if packed is None:
            return None
        data = zlib.decompress(packed)
        if keep:
            self._remember(relpath, data)
        return data

    def pop(self, relpath: str) -> None:
        self._packed.pop(relpath, None)
        self._sizes.pop(relpath, None)
        self._sketches.pop(relpath, None)
        self._recent.pop(relpath, None)

    def mentions(self, relpath: str, names: Iterable[bytes]) -> bool:
        """Whether relpath's text has one of the words names, or an `import *` (a file
        not held: True). An edit asks this of hundreds of importers: a sketch of each
        file's words, made the first time, rules most of them out without reading them."""
        sketch = self._sketches.get(relpath)
        if sketch is None:
            data = self.get(relpath, keep=False)
            if data is None:
                return True
            sketch = self._sketches[relpath] = _sketch(data)
        star, bits = sketch
        if star:
            return True
        maybe = [n for n in names if not _WORD.fullmatch(n) or bits >> _bit(n) & 1]
        if not maybe:
            return False
        data = self.get(relpath, keep=False)
        return data is None or any(re.search(rb"\b%s\b" % re.escape(n), data) for n in maybe)

    def _remember(self, relpath: str, data: bytes) -> None:
        self._recent[relpath] = data
        self._recent.move_to_end(relpath)
        while len(self._recent) > RECENT:
            self._recent.popitem(last=False)


def _sketch(data: bytes) -> tuple[bool, int]:
    bits = 0
    for word in set(_WORD.findall(data)):
        bits |= 1 << _bit(word)
    return b"import *" in data, bits


def _bit(word: bytes) -> int:
    return zlib.crc32(word) % SKETCH_BITS
