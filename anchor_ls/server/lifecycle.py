"""initialize/initialized, configuration, workspace folders, shutdown and exit."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path, uri_scheme

from anchor_ls.server import disk
from anchor_ls.server import settings as config
from anchor_ls.server.folders import Folder
from anchor_ls.server.roots import project_root
from anchor_ls.server.server import PYTHON_SUFFIXES, AnchorServer

log = logging.getLogger(__name__)

CONFIG_TIMEOUT = 5.0
WATCHERS = [
    types.FileSystemWatcher(glob_pattern="**/*.py"),
    types.FileSystemWatcher(glob_pattern="**/*.pyi"),
    # files that state source roots (a nested project's marker, pytest's pythonpath)
    types.FileSystemWatcher(glob_pattern="**/{pyproject.toml,setup.cfg,pytest.ini,tox.ini}"),
    # A folder deleted, or moved or copied in, arrives as one event for the folder, not
    # one per file.
    types.FileSystemWatcher(
        glob_pattern="**/*", kind=types.WatchKind.Create | types.WatchKind.Delete
    ),
]
OPENED = "opened file"  # a folder found from the first opened file (see roots.py)


def _folders(params: types.InitializeParams) -> list[Folder]:
    entries: list[str] = [f.uri for f in params.workspace_folders or []]
    origin = "workspace folder"
    if not entries and params.root_uri:
        entries, origin = [params.root_uri], "rootUri"
    found: list[Folder] = []
    for uri in entries:
        path = to_fs_path(uri) if uri.startswith("file:") else None
        if path and Path(path).is_dir():
            found.append(Folder(uri, Path(path).resolve(), origin))
        else:
            log.warning("ignoring workspace folder %s: not a local directory", uri)
    if not found and params.root_path and Path(params.root_path).is_dir():
        root = Path(params.root_path).resolve()
        found.append(Folder(root.as_uri(), root, "rootPath"))
    return found


def adopt_project(ls: AnchorServer, uri: str) -> None:
    """didOpen: while no folder is known, index the project of the opened Python file.

    Its build starts once `initialized` has the client's settings; requests for the
    file meanwhile wait for it like any first build's (features.py).
    """
    if ls.folders or not isinstance(uri, str) or uri_scheme(uri) != "file":
        return
    fs_path = to_fs_path(uri)
    if not fs_path or not fs_path.endswith(PYTHON_SUFFIXES):
        return
    root = project_root(Path(fs_path))
    if root.folder is None:
        ls.log_to_client(
            f"anchor-ls: no workspace folder, and none is indexed for {fs_path}: {root.how}; "
            "open its project folder instead",
            types.MessageType.Warning,
        )
        return
    folder = Folder(from_fs_path(str(root.folder)) or root.folder.as_uri(), root.folder, OPENED)
    ls.folders.append(folder)
    ls.log_to_client(
        f"anchor-ls: the client named no workspace folder; indexing {root.folder} ({root.how})"
    )

    async def build() -> None:
        await ls.configured.wait()
        await ls.build([folder])

    ls.background(build())


async def _pull_settings(ls: AnchorServer, base: config.Settings) -> config.Settings | None:
    """The anchorLs section from workspace/configuration, or None when the client has none."""
    if not ls.client_supports("workspace.configuration"):
        return None
    request = types.ConfigurationParams(items=[types.ConfigurationItem(section=config.SECTION)])
    try:
        values = await asyncio.wait_for(ls.workspace_configuration_async(request), CONFIG_TIMEOUT)
    except Exception as exc:
        ls.log_to_client(
            f"anchor-ls: workspace/configuration failed: {exc}", types.MessageType.Warning
        )
        return None
    value = values[0] if values else None
    if value is None:
        return None
    settings, problems = config.parse({config.SECTION: value}, base)
    for problem in problems:
        ls.tell_user(f"anchor-ls settings: {problem}")
    return settings


def _register_dynamic(ls: AnchorServer) -> None:
    """Ask for file-watcher events and configuration changes where the client can register."""
    registrations = []
    if ls.client_supports("workspace.did_change_watched_files.dynamic_registration"):
        registrations.append(
            types.Registration(
                id="anchor-ls-watch",
                method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=WATCHERS),
            )
        )
    if ls.client_supports("workspace.did_change_configuration.dynamic_registration"):
        registrations.append(
            types.Registration(
                id="anchor-ls-config",
                method=types.WORKSPACE_DID_CHANGE_CONFIGURATION,
                register_options=types.DidChangeConfigurationRegistrationOptions(
                    section=config.SECTION
                ),
            )
        )
    if not registrations:
        return
    future = ls.client_register_capability(types.RegistrationParams(registrations=registrations))

    def done(f: Any) -> None:
        if f.cancelled() or f.exception() is not None:
            log.warning(
                "client/registerCapability failed: %s", None if f.cancelled() else f.exception()
            )

    future.add_done_callback(done)


async def apply_settings(ls: AnchorServer, new: config.Settings) -> None:
    """Make new settings live: a rebuild when the index depends on them, else a refresh."""
    old, ls.settings = ls.settings, new
    if old.index_key() != new.index_key():
        await ls.build(ls.folders, title="Re-indexing")
        return
    if (old.policy, old.max_items) != (new.policy, new.max_items):
        for folder in ls.folders:
            await ls.mutate(folder.choose_policy, new)
    if old != new:
        ls.refresh()


def register(ls: AnchorServer) -> None:
    @ls.feature(types.INITIALIZE)
    def initialize(ls: AnchorServer, params: types.InitializeParams) -> None:
        ls.settings, problems = config.parse(params.initialization_options)
        ls.startup_problems = problems
        ls.folders = _folders(params)

    @ls.feature(types.INITIALIZED)
    async def initialized(ls: AnchorServer, params: types.InitializedParams) -> None:
        for problem in ls.startup_problems:
            ls.tell_user(f"anchor-ls settings: {problem}")
        _register_dynamic(ls)
        ls.disk_watch = await disk.start(ls)
        pulled = await _pull_settings(ls, ls.settings)
        if pulled is not None:
            ls.settings = pulled
        named = [f for f in ls.folders if f.origin != OPENED]
        ls.configured.set()
        if not ls.folders:
            ls.log_to_client(
                "anchor-ls: no workspace folder; the project of the first Python file "
                "opened will be indexed"
            )
        if named:
            await ls.build(named)

    @ls.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(
        ls: AnchorServer, params: types.DidChangeConfigurationParams
    ) -> None:
        with ls.settings_changing():  # ls.settings is new by the time requests go on
            pulled = await _pull_settings(ls, config.Settings())
            if pulled is None:
                pulled, problems = config.parse(params.settings, ls.settings)
                for problem in problems:
                    ls.tell_user(f"anchor-ls settings: {problem}")
            # scheduled before the waiting requests wake (FIFO): its first step makes them
            # ls.settings before any of those goes on
            applying = asyncio.ensure_future(apply_settings(ls, pulled))
        await applying

    @ls.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def did_change_folders(
        ls: AnchorServer, params: types.DidChangeWorkspaceFoldersParams
    ) -> None:
        removed = {f.uri for f in params.event.removed}
        ls.folders = [f for f in ls.folders if f.uri not in removed]
        known = {f.uri for f in ls.folders}
        fake = types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            workspace_folders=[f for f in params.event.added if f.uri not in known],
        )
        added = _folders(fake)
        ls.folders.extend(added)
        if added:
            await ls.build(added)
        else:
            ls.refresh()

    @ls.feature(types.SHUTDOWN)
    def shutdown(ls: AnchorServer, params: None) -> None:
        disk.stop(ls.disk_watch)
        ls.shutdown_workers()

    @ls.feature(types.EXIT)
    def exit_(ls: AnchorServer, params: None) -> None:
        # A build may still be running on the indexer thread; the SQLite cache is
        # transactional, so leaving without joining it loses nothing.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0 if ls.protocol._shutdown else 1)
