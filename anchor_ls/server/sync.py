"""Keeping the index fresh: editor buffers, saves, closes, and changes made on disk."""

from __future__ import annotations

from lsprotocol import types

from anchor_ls.server.disk import apply_events, disk_changes
from anchor_ls.server.lifecycle import adopt_project
from anchor_ls.server.server import AnchorServer


def register(ls: AnchorServer) -> None:
    @ls.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: AnchorServer, params: types.DidOpenTextDocumentParams) -> None:
        adopt_project(ls, params.text_document.uri)
        ls.schedule_update(params.text_document.uri, delay=0)
        ls.prepare_edits_soon()

    @ls.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: AnchorServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule_update(params.text_document.uri)

    @ls.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: AnchorServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.schedule_update(params.text_document.uri, delay=0)
        await ls.flush(params.text_document.uri)

    @ls.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    async def did_close(ls: AnchorServer, params: types.DidCloseTextDocumentParams) -> None:
        # The buffer may have been thrown away unsaved: the disk is the truth again.
        uri = params.text_document.uri
        ls.cancel_update(uri)
        changed: set[str] = set()
        for folder, relpath in ls.locate_all(uri):
            changed |= await ls.mutate(disk_changes, folder, {relpath})
        ls.changed(changed)

    @ls.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def did_change_watched_files(
        ls: AnchorServer, params: types.DidChangeWatchedFilesParams
    ) -> None:
        await apply_events(ls, [(event.uri, event.type) for event in params.changes])
