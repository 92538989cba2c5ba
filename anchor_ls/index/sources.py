"""The bytes of every indexed file, kept compressed.

An index reads them rarely and a few at a time (the dependents of an edit that name what
changed, the file a request is about, a materialize), but holds them all: Django's are
17 MB, 4.5 MB once compressed by zlib's fastest level (a tenth of a second for them
all). The files read last stay decompressed: the file a request is about is read
again at once. A build reads every file before it knows whether the cache has the graph:
it keeps them as read until pack(), which a warm start leaves to when the server is idle.
"""

from __future__ import annotations

import zlib
from collections import OrderedDict

RECENT = 64  # decompressed files kept


class Sources:
    def __init__(self) -> None:
        self._packed: dict[str, bytes] = {}
        self._raw: dict[str, bytes] = {}  # put(pack=False), not compressed yet
        self._sizes: dict[str, int] = {}
        self._non_ascii: set[str] = set()
        self._recent: OrderedDict[str, bytes] = OrderedDict()

    def __contains__(self, relpath: object) -> bool:
        return relpath in self._packed or relpath in self._raw

    def __len__(self) -> int:
        return len(self._packed) + len(self._raw)

    def put(self, relpath: str, data: bytes, *, pack: bool = True) -> None:
        if pack:
            self._packed[relpath] = zlib.compress(data, 1)
            self._raw.pop(relpath, None)
        else:
            self._raw[relpath] = data
            self._packed.pop(relpath, None)
        self._sizes[relpath] = len(data)
        if data.isascii():
            self._non_ascii.discard(relpath)
        else:
            self._non_ascii.add(relpath)
        self._remember(relpath, data)

    def size(self, relpath: str) -> int:
        """Bytes of relpath (0 when it is not indexed), without decompressing it."""
        return self._sizes.get(relpath, 0)

    def pack(self) -> None:
        """Compress what put(pack=False) kept as read."""
        for relpath, data in self._raw.items():
            self._packed[relpath] = zlib.compress(data, 1)
        self._raw.clear()

    def is_ascii(self, relpath: str) -> bool:
        """Whether relpath's bytes are all ASCII (its byte columns are every encoding's
        code units), without decompressing it."""
        return relpath in self and relpath not in self._non_ascii

    def get(self, relpath: str, *, keep: bool = True) -> bytes | None:
        """keep: hold it decompressed among the files read last (not for one glance)."""
        data = self._recent.get(relpath)
        if data is not None:
            if keep:
                self._recent.move_to_end(relpath)
            return data
        data = self._raw.get(relpath)
        if data is None:
            packed = self._packed.get(relpath)
            if packed is None:
                return None
            data = zlib.decompress(packed)
        if keep:
            self._remember(relpath, data)
        return data

    def pop(self, relpath: str) -> None:
        self._packed.pop(relpath, None)
        self._raw.pop(relpath, None)
        self._sizes.pop(relpath, None)
        self._non_ascii.discard(relpath)
        self._recent.pop(relpath, None)

    def _remember(self, relpath: str, data: bytes) -> None:
        self._recent[relpath] = data
        self._recent.move_to_end(relpath)
        while len(self._recent) > RECENT:
            self._recent.popitem(last=False)
