"""Client locations of entities and call sites, as lsprotocol types (lenses, hierarchies)."""

from __future__ import annotations

from urllib.parse import quote

from lsprotocol import types

from anchor_ls.index import Entity, Span
from anchor_ls.server.folders import Folder
from anchor_ls.server.sources import JsonRange


def _range(r: JsonRange) -> types.Range:
    s, e = r["start"], r["end"]
    return types.Range(
        types.Position(s["line"], s["character"]), types.Position(e["line"], e["character"])
    )


class Locator:
    """Index spans as client ranges for one request (one folder, one position encoding)."""

    def __init__(self, folder: Folder, encoding: str) -> None:
        self.folder = folder
        self.encoding = encoding

    def uri(self, relpath: str) -> str:
        view = self.folder.view(relpath)
        return view.uri if view is not None else f"{self.folder.root_uri}/{quote(relpath)}"

    def range(self, relpath: str, span: Span) -> types.Range:
        view = self.folder.view(relpath)
        if view is None:
            sl, sc, el, ec = span
            return types.Range(types.Position(sl, sc), types.Position(el, ec))
        return _range(view.span(span, self.encoding))

    def name_location(self, entity: Entity) -> types.Location:
        return types.Location(self.uri(entity.path), self.range(entity.path, entity.name_span))

    def full_range(self, entity: Entity) -> types.Range:
        """From the first decorator line to the end of the last line of the entity."""
        first, last = entity.start_line - 1, entity.end_line - 1
        view = self.folder.view(entity.path)
        if view is None:
            return types.Range(types.Position(first, 0), types.Position(last, 0))
        return types.Range(types.Position(first, 0), view.table.line_end(last, self.encoding))
