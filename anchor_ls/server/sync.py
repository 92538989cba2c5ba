"""Keeping the index fresh: editor buffers, saves, closes, and changes made on disk."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pygls.uris import to_fs_path, uri_scheme

from anchor_ls.index.files import python_files
from anchor_ls.server.folders import Folder
from anchor_ls.server.lifecycle import adopt_project
from anchor_ls.server.server import AnchorServer


def _disk_change(folder: Folder, relpath: str, deleted: bool) -> set[str]:
    """Indexer thread: pick up one file as it now is on disk."""
    if deleted:
        return folder.remove(relpath)
    return folder.reload(relpath)


def _folder_removed(folder: Folder, prefix: str) -> set[str]:
    """Indexer thread: drop every indexed file under a deleted directory."""
    graph = folder.graph
    if graph is None:
        return set()
    gone = [p for p in graph.files() if p.startswith(prefix + "/")]
    changed: set[str] = set()
    for relpath in gone:
        changed |= folder.remove(relpath)
    return changed


def _folder_added(folder: Folder, prefix: str, opened: set[str]) -> set[str]:
    """Indexer thread: index the files of a folder moved or copied into the tree (the
    watcher names the folder alone), except those open in the editor."""
    index = folder.index
    if index is None or not index.is_indexable(f"{prefix}/__init__.py"):
        return set()  # a folder a build leaves out (a .venv being made, an excluded one)
    changed: set[str] = set()
    for item in python_files(folder.root / prefix):
        relpath = f"{prefix}/{item}" if isinstance(item, str) else None
        if relpath is not None and relpath not in opened:
            changed |= folder.reload(relpath)
    return changed


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
            changed |= await ls.mutate(_disk_change, folder, relpath, False)
        ls.changed(changed)

    @ls.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def did_change_watched_files(
        ls: AnchorServer, params: types.DidChangeWatchedFilesParams
    ) -> None:
        changed: set[str] = set()
        for event in params.changes:
            deleted = event.type == types.FileChangeType.Deleted
            if event.uri in ls.workspace.text_documents:
                continue  # the open buffer, not the disk, is what the user sees
            located = ls.locate_all(event.uri)
            for folder, relpath in located:
                changed |= await ls.mutate(_disk_change, folder, relpath, deleted)
            if located:
                continue
            path = Path(to_fs_path(event.uri) or "/") if uri_scheme(event.uri) == "file" else None
            created = event.type == types.FileChangeType.Created
            if path is None or not (deleted or (created and path.is_dir())):
                continue  # a file created that is not Python
            for folder in ls.folders:
                prefix = folder.relpath(path)
                if not prefix:
                    continue
                if deleted:
                    changed |= await ls.mutate(_folder_removed, folder, prefix)
                else:
                    opened = {
                        rel
                        for u in ls.workspace.text_documents
                        for each, rel in ls.locate_all(u)
                        if each is folder
                    }
                    changed |= await ls.mutate(_folder_added, folder, prefix, opened)
        ls.changed(changed)
