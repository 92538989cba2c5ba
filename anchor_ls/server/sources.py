"""What the server derives from one indexed source, computed once per source version.

A hint request names entities of many files; each file's URI, line table and the
client ranges of its definitions are kept here until the index holds new bytes for
that file (the cache is keyed by the content hash of the indexed source).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from anchor_ls.index import Entity, Span
from anchor_ls.server.positions import UTF8, LineTable, bytes_to_units
from anchor_ls.syntax.source import UnreadableSource, decode_source

JsonRange = dict[str, dict[str, int]]


def line_table(source: bytes) -> LineTable:
    """Lines of a source as the syntax layer counted them: decoded, '\\n' endings, UTF-8."""
    try:
        text = decode_source(source, limit=1 << 62).text
    except UnreadableSource:
        text = source.decode("utf-8", errors="replace")
    return LineTable.of(text.encode("utf-8", errors="surrogatepass"))


def json_range(sl: int, sc: int, el: int, ec: int) -> JsonRange:
    return {"start": {"line": sl, "character": sc}, "end": {"line": el, "character": ec}}


class SourceView:
    """`read` gives the source when the line table is needed: a hint links to names in
    hundreds of files, and in an ASCII file a name's byte span is its client range."""

    __slots__ = ("_json", "_names", "_read", "_table", "ascii", "headers", "uri", "uri_json")

    def __init__(self, root_uri: str, relpath: str, ascii: bool, read: Callable[[], bytes]) -> None:
        self._read = read
        self.uri = f"{root_uri}/{quote(relpath)}"  # what pygls' from_fs_path gives, cheaper
        self.uri_json = json.dumps(self.uri)
        # Byte columns are code units in every encoding when the text is ASCII.
        self.ascii = ascii
        self._table: LineTable | None = None
        self._names: dict[tuple[str, str], dict[str, Any]] = {}
        self._json: dict[tuple[str, str], str] = {}
        # (name span, encoding) -> (line, character) where its def/class header ends
        self.headers: dict[tuple[Span, str], tuple[int, int]] = {}

    @property
    def table(self) -> LineTable:
        table = self._table  # read once: another thread may drop it meanwhile
        if table is None:
            table = self._table = line_table(self._read())
        return table

    def drop_table(self) -> None:
        """Free the line table (made again when needed): what was read from it is kept."""
        self._table = None

    def units(self, span: Span, encoding: str) -> Span:
        """A byte span in the client's code units."""
        if encoding == UTF8 or self.ascii:
            return span
        sl, sc, el, ec = span
        line = self.table.line
        return (
            sl,
            bytes_to_units(line(sl), sc, encoding),
            el,
            bytes_to_units(line(el), ec, encoding),
        )

    def span(self, span: Span, encoding: str) -> JsonRange:
        """A byte span as a client range (JSON)."""
        return json_range(*self.units(span, encoding))

    def name_json(self, entity: Entity, label: str, encoding: str) -> str:
        """An inlay hint label part naming an entity of this file, linked to it (JSON)."""
        key = (entity.id, encoding)
        found = self._json.get(key)
        if found is None:
            sl, sc, el, ec = self.units(entity.name_span, encoding)
            found = self._json[key] = (
                f'{{"value": {json.dumps(label)}, "location": {{"uri": {self.uri_json}, '
                f'"range": {{"start": {{"line": {sl}, "character": {sc}}}, '
                f'"end": {{"line": {el}, "character": {ec}}}}}}}}}'
            )
        return found

    def name_location(self, entity: Entity, encoding: str) -> dict[str, Any]:
        """Where an entity of this file is named, as a JSON Location (cached)."""
        key = (entity.id, encoding)
        found = self._names.get(key)
        if found is None:
            found = {"uri": self.uri, "range": self.span(entity.name_span, encoding)}
            self._names[key] = found
        return found
