"""Request handlers: inlay hints, code lenses, call and type hierarchy.

A request for a folder whose first build is still running waits for it, up to
FIRST_BUILD_WAIT seconds (the build puts its graph together at its end, so there
is nothing to answer from before); past that it answers from what the index knows
and says in the log that the answer is partial. After the first build each answers
from what the index knows now (a rebuild serves the old graph until the new one is
ready) and returns an empty result for a URI, position or item that is not ours.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from lsprotocol import types
from lsprotocol.converters import get_converter

from anchor_ls.server import hierarchy, warm
from anchor_ls.server.folders import READY, Folder
from anchor_ls.server.hints import resolve_hint
from anchor_ls.server.lenses import code_lenses, resolve_lens
from anchor_ls.server.locations import Locator
from anchor_ls.server.protocol import JsonText
from anchor_ls.server.server import AnchorServer

FIRST_BUILD_WAIT = 10.0  # seconds a request waits for its folder's first build


def _at(ls: AnchorServer, uri: str, position: types.Position, pick: Any) -> Any:
    """Reader thread: the entity `pick` finds under a request position, with its folder."""
    point = ls.point(uri, position)
    if point is None:
        return None
    folder, relpath, line, col = point
    graph = folder.graph
    if graph is None:
        return None
    entity = pick(graph, relpath, line, col)
    return (folder, entity) if entity is not None else None


def _prepare(ls: AnchorServer, uri: str, position: types.Position, types_only: bool) -> Any:
    found = _at(ls, uri, position, hierarchy.class_target if types_only else hierarchy.call_target)
    if found is None:
        return None
    folder, entity = found
    where = Locator(folder, ls.encoding)
    item = hierarchy.type_item(entity, where) if types_only else hierarchy.call_item(entity, where)
    return [item]


def _item(ls: AnchorServer, item: Any) -> tuple[Folder, Any] | None:
    """Reader thread: the folder and entity of a hierarchy item sent back by the client."""
    where = ls.locate(item.uri)
    data = item.data if isinstance(item.data, dict) else {}
    if where is None and isinstance(data.get("folder"), str):  # a library's definition
        outside = ls.folder_of_uri(data["folder"])
        where = (outside, "") if outside is not None else None
    if where is None:
        return None
    folder, relpath = where
    graph = folder.graph
    if graph is None:
        return None
    entity = hierarchy.item_entity(graph, relpath, item)
    return (folder, entity) if entity is not None else None


def _related(ls: AnchorServer, item: Any, which: str) -> list:
    found = _item(ls, item)
    if found is None:
        return []
    folder, entity = found
    if which in ("incoming", "outgoing"):
        return hierarchy.call_links(folder, entity, ls.encoding, which == "incoming")
    return hierarchy.related_types(folder, entity, ls.encoding, which == "supertypes")


def _resolve_hint(ls: AnchorServer, hint: types.InlayHint) -> types.InlayHint | JsonText:
    data = hint.data if isinstance(hint.data, dict) else {}
    uri, entity_id = data.get("uri"), data.get("id")
    where = ls.locate(uri) if isinstance(uri, str) else None
    found = None
    if where is not None and isinstance(entity_id, str):
        found = resolve_hint(where[0], entity_id, ls.hint_form())
    if found is None:
        return hint
    answer = get_converter().unstructure(hint, types.InlayHint)
    answer.update(found)
    return JsonText(json.dumps(answer))


def _lenses(ls: AnchorServer, uri: str) -> list[types.CodeLens]:
    where = ls.locate(uri)
    if where is None or not ls.settings.code_lens:
        return []
    folder, relpath = where
    return code_lenses(folder, relpath, uri, ls.settings)


def _resolve(ls: AnchorServer, lens: types.CodeLens) -> types.CodeLens:
    data = lens.data if isinstance(lens.data, dict) else {}
    where = ls.locate(data.get("uri", "")) if isinstance(data.get("uri"), str) else None
    if where is None:
        lens.command = types.Command(title="(not indexed)", command="")
        return lens
    return resolve_lens(where[0], lens, ls.encoding)


async def _indexed(ls: AnchorServer, uri: str, what: str) -> None:
    """Wait (bounded) for the first build of the folder of uri; log a partial answer."""
    where = ls.locate(uri) if isinstance(uri, str) else None
    waiter = where[0].first_build() if where is not None else None
    if where is None or waiter is None:
        return
    try:
        await asyncio.wait_for(waiter, FIRST_BUILD_WAIT)
    except TimeoutError:
        ls.log_to_client(
            f"anchor-ls: {what} for {where[1]} answered from a partial index: "
            f"{where[0].root} is still being indexed after {FIRST_BUILD_WAIT:g} s",
            types.MessageType.Warning,
        )


async def _settled(ls: AnchorServer, uri: str) -> None:
    """Let new settings being pulled, and a pending re-index of the document, land first
    (the latter unless a build is running)."""
    await ls.settings_settled()
    where = ls.locate(uri)
    if where is not None and where[0].state == READY:
        await ls.settled(uri)


# Hierarchy requests: prepare (types only or not), and what a related request lists.
PREPARE = {
    types.TEXT_DOCUMENT_PREPARE_CALL_HIERARCHY: False,
    types.TEXT_DOCUMENT_PREPARE_TYPE_HIERARCHY: True,
}
RELATED = {
    types.CALL_HIERARCHY_INCOMING_CALLS: "incoming",
    types.CALL_HIERARCHY_OUTGOING_CALLS: "outgoing",
    types.TYPE_HIERARCHY_SUPERTYPES: "supertypes",
    types.TYPE_HIERARCHY_SUBTYPES: "subtypes",
}


def _prepare_handler(types_only: bool) -> Callable[..., Awaitable[list | None]]:
    async def prepare(ls: AnchorServer, params: Any) -> list | None:
        await _indexed(
            ls, params.text_document.uri, "type hierarchy" if types_only else "call hierarchy"
        )
        await _settled(ls, params.text_document.uri)  # the position is in the buffer's text
        return await ls.read(_prepare, ls, params.text_document.uri, params.position, types_only)

    return prepare


def _related_handler(which: str) -> Callable[..., Awaitable[list]]:
    async def related(ls: AnchorServer, params: Any) -> list:
        await _indexed(ls, params.item.uri, f"{which} of {params.item.name}")
        await _settled(ls, params.item.uri)
        return await ls.read(_related, ls, params.item, which)

    return related


def register(ls: AnchorServer) -> None:
    @ls.feature(types.TEXT_DOCUMENT_INLAY_HINT, types.InlayHintOptions(resolve_provider=True))
    async def inlay_hint(ls: AnchorServer, params: types.InlayHintParams) -> JsonText:
        # JSON text, not lsprotocol objects: this answer is the hot path. Stored hints are
        # answered here; computing a file's hints goes to the reader pool.
        uri = params.text_document.uri
        await _indexed(ls, uri, "inlay hints")
        await _settled(ls, uri)
        where = ls.locate(uri)
        if where is None or not ls.settings.inlay_hints:
            return JsonText("[]")
        folder, relpath = where
        key = ls.hint_form()
        found = folder.hints.get(key, relpath)
        if found is None:
            found = await ls.read(warm.compute, folder, relpath, key)
        return found.within(params.range.start.line, params.range.end.line)

    @ls.feature(types.INLAY_HINT_RESOLVE)
    async def inlay_hint_resolve(
        ls: AnchorServer, hint: types.InlayHint
    ) -> types.InlayHint | JsonText:
        return await ls.read(_resolve_hint, ls, hint)

    @ls.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=True))
    async def code_lens(ls: AnchorServer, params: types.CodeLensParams) -> list[types.CodeLens]:
        await _indexed(ls, params.text_document.uri, "code lenses")
        await _settled(ls, params.text_document.uri)
        return await ls.read(_lenses, ls, params.text_document.uri)

    @ls.feature(types.CODE_LENS_RESOLVE)
    async def code_lens_resolve(ls: AnchorServer, lens: types.CodeLens) -> types.CodeLens:
        return await ls.read(_resolve, ls, lens)

    for method, types_only in PREPARE.items():
        ls.feature(method)(_prepare_handler(types_only))
    for method, which in RELATED.items():
        ls.feature(method)(_related_handler(which))
