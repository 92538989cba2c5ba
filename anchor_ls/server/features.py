"""Request handlers: inlay hints, code lenses, call and type hierarchy.

A request for a folder whose first build is still running waits for it, up to
FIRST_BUILD_WAIT seconds (the build puts its graph together at its end, so there
is nothing to answer from before); past that it answers from what the index knows
and says in the log that the answer is partial. A hierarchy request does not wait that
long: it is answered from a glimpse (server/glimpses.py), the index of the few files
that can hold its answer, at once on a cold start and once the build has run
GLIMPSE_AFTER seconds on a warm one; the log says that answer is partial too. After the
first build each answers from what the index knows now (a rebuild serves the old graph
until the new one is ready) and returns an empty result for a URI, position or item that
is not ours.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

from lsprotocol import types
from lsprotocol.converters import get_converter

from anchor_ls.server import hierarchy, warm
from anchor_ls.server.folders import READY, Folder
from anchor_ls.server.glimpses import Glimpses, entity_under
from anchor_ls.server.hints import resolve_hint
from anchor_ls.server.lenses import code_lenses, resolve_lens
from anchor_ls.server.locations import Locator
from anchor_ls.server.protocol import JsonText
from anchor_ls.server.server import AnchorServer
from anchor_ls.tags.policy import is_external

log = logging.getLogger(__name__)

FIRST_BUILD_WAIT = 10.0  # seconds a request waits for its folder's first build
# Seconds a first build from a cache runs before hierarchy requests take a glimpse rather
# than wait: a warm start (Django: 1 s) answers completely; a cold one (Django: 30 s) is
# answered from a glimpse at once.
GLIMPSE_AFTER = 1.0
_GLIMPSES_MADE = threading.Lock()


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
    return [_hierarchy_item(ls, folder, entity, types_only)]


def _hierarchy_item(ls: AnchorServer, folder: Folder, entity: Any, types_only: bool) -> Any:
    where = Locator(folder, ls.encoding)
    return hierarchy.type_item(entity, where) if types_only else hierarchy.call_item(entity, where)


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
    return _related_of(ls, folder, entity, which)


def _related_of(ls: AnchorServer, folder: Folder, entity: Any, which: str) -> list:
    if which in ("incoming", "outgoing"):
        return hierarchy.call_links(folder, entity, ls.encoding, which == "incoming")
    return hierarchy.related_types(folder, entity, ls.encoding, which == "supertypes")


def _glimpses(ls: AnchorServer, folder: Folder) -> Glimpses | None:
    """Reader thread: the folder's glimpses while its first build runs (None: it has
    ended)."""
    with _GLIMPSES_MADE:
        if folder.glimpses is None and folder.first_build_running():
            settings = ls.settings
            folder.glimpses = Glimpses(folder.root, settings.exclude, settings.source_roots)
        return folder.glimpses


def _glimpse_prepare(
    ls: AnchorServer, uri: str, position: types.Position, types_only: bool
) -> tuple[int, list] | None:
    """Reader thread: (files read, the item) for a definition named under the position,
    from a glimpse of its file as it is on disk (the item the build gives: it is made of
    that file alone); None when there is none (or the buffer is not the disk's text)."""
    point = ls.point(uri, position)
    glimpses = _glimpses(ls, point[0]) if point is not None else None
    if point is None or glimpses is None:
        return None
    _folder, relpath, line, col = point
    with glimpses.busy():  # the build waits on until the glimpse asked next is made
        seen = glimpses.of_file(relpath)
        opened = ls.open_text(uri)
        if (
            seen is None
            or seen.index is None
            or (opened is not None and opened[0].encode() != seen.index.source(relpath))
        ):
            return None
        entity = entity_under(seen, relpath, line, col)
        if entity is None or (types_only and entity.kind != "class"):
            return None
        # what a client asks next: the glimpse for it is made next
        ls.glimpser.submit(glimpses.soon(entity.id, "subtypes" if types_only else "incoming"))
    return seen.stats.files if seen.stats else 0, [_hierarchy_item(ls, seen, entity, types_only)]


def _glimpse_related(ls: AnchorServer, item: Any, which: str) -> tuple[int, list] | None:
    """Reader thread: (files read, the answer) of a related request from a glimpse."""
    where = ls.locate(item.uri)
    data = item.data if isinstance(item.data, dict) else {}
    entity_id = data.get("id")
    glimpses = _glimpses(ls, where[0]) if where is not None else None
    if glimpses is None or not isinstance(entity_id, str) or is_external(entity_id):
        return None
    seen = glimpses.for_request(entity_id, which)
    graph = seen.graph if seen is not None else None
    entity = graph.entity(entity_id) if graph is not None else None
    if seen is None or entity is None:
        return None
    return seen.stats.files if seen.stats else 0, _related_of(ls, seen, entity, which)


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


async def _indexed(
    ls: AnchorServer,
    uri: str,
    what: str,
    glimpse: Callable[..., tuple[int, Any] | None] | None = None,
    *args: Any,
    exact: bool = False,
) -> Any:
    """Wait (bounded) for the first build of the folder of uri; log a partial answer.

    With a glimpse: glimpse(*args) is begun at once on a reader, and its answer (files
    read, answer) is returned if it comes before the build ends: at once on a cold start,
    on a warm one (a cache was made before) once the build has run GLIMPSE_AFTER seconds.
    An answer not `exact` is logged as partial. None: answer from the folder's graph."""
    where = ls.locate(uri) if isinstance(uri, str) else None
    waiter = where[0].first_build() if where is not None else None
    if where is None or waiter is None:
        return None
    folder, relpath = where
    deadline = time.monotonic() + FIRST_BUILD_WAIT
    if glimpse is not None and await _glimpse_now(folder, waiter, deadline):
        early = asyncio.ensure_future(ls.loop.run_in_executor(ls.glimpser, glimpse, *args))
        early.add_done_callback(lambda f: f.cancelled() or f.exception())  # seen either way
        await asyncio.wait(
            {waiter, early},
            timeout=max(0.0, deadline - time.monotonic()),
            return_when=asyncio.FIRST_COMPLETED,
        )
        if early.done() and not waiter.done() and early.exception() is not None:
            log.error("a glimpse for %s failed", what, exc_info=early.exception())
        elif early.done() and not waiter.done() and early.result() is not None:
            files, answer = early.result()
            if not exact:
                ls.log_to_client(
                    f"anchor-ls: {what} for {relpath} answered from a partial index: a glimpse "
                    f"of {files} files, while {folder.root} is indexed for the first time "
                    "(calls whose receivers get their type in other files come with the whole "
                    "index)",
                    types.MessageType.Info,
                )
            return answer
    try:
        await asyncio.wait_for(waiter, max(0.0, deadline - time.monotonic()))
    except TimeoutError:
        ls.log_to_client(
            f"anchor-ls: {what} for {relpath} answered from a partial index: "
            f"{folder.root} is still being indexed after {FIRST_BUILD_WAIT:g} s",
            types.MessageType.Warning,
        )
    return None


async def _glimpse_now(folder: Folder, waiter: asyncio.Future[None], deadline: float) -> bool:
    """Whether a glimpse should answer: at once on a cold start (no cache was made
    before); on a warm one (or while it is not known yet) only once the build has run
    GLIMPSE_AFTER seconds, so that a build about to end answers completely and glimpses
    do not slow it meanwhile. False: the build ended first, or the deadline passed."""
    while not waiter.done() and time.monotonic() < deadline:
        index = folder.index
        if index is not None and index.cold:
            return True
        since = folder.building_since
        left = GLIMPSE_AFTER - (time.monotonic() - since) if since is not None else GLIMPSE_AFTER
        if left <= 0:
            return True
        await asyncio.wait({waiter}, timeout=min(left, 0.05))
    return False


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
        uri, what = params.text_document.uri, "type hierarchy" if types_only else "call hierarchy"
        early = await _indexed(
            ls, uri, what, _glimpse_prepare, ls, uri, params.position, types_only, exact=True
        )
        if early is not None:
            return early
        await _settled(ls, params.text_document.uri)  # the position is in the buffer's text
        return await ls.read(_prepare, ls, params.text_document.uri, params.position, types_only)

    return prepare


def _related_handler(which: str) -> Callable[..., Awaitable[list]]:
    async def related(ls: AnchorServer, params: Any) -> list:
        what = f"{which} of {params.item.name}"
        # outgoing calls wait for the build: their receivers' classes could be anywhere
        glimpse = _glimpse_related if which != "outgoing" else None
        early = await _indexed(ls, params.item.uri, what, glimpse, ls, params.item, which)
        if early is not None:
            return early
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
