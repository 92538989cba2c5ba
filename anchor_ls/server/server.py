"""The language server object: folders, settings, and where work runs.

Three places run code. The event loop answers messages and never waits on the
index. One indexer thread runs every index mutation (builds, re-indexing from
buffers or disk, loading the resolver state a warm start deferred, exports), which
serializes them. A small reader pool computes answers from the index's latest
snapshot, so a slow query never stalls the loop and never waits for a change; between
requests it fills the hint stores (warm.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from lsprotocol import types
from pygls.capabilities import get_capability
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path, uri_scheme

from anchor_ls import __version__
from anchor_ls.server import framing
from anchor_ls.server.folders import READY, Folder
from anchor_ls.server.hints import HintForm
from anchor_ls.server.positions import UTF16, position_to_bytes, text_lines
from anchor_ls.server.progress import WorkProgress, indexing_message
from anchor_ls.server.protocol import AnchorProtocol
from anchor_ls.server.settings import Settings
from anchor_ls.server.warm import HintWarmer
from anchor_ls.syntax.encoding import buffer_matches
from anchor_ls.syntax.reparse import KEEP

log = logging.getLogger(__name__)
T = TypeVar("T")

DEBOUNCE_SECONDS = 0.15
ENGINE_QUIET = 0.3  # seconds without requests before the deferred resolver state loads
ENGINE_WAIT = 0.05
SETTINGS_WAIT = 5.0  # seconds a request waits for settings being pulled from the client
PYTHON_SUFFIXES = (".py", ".pyi")
# Problems that leave a file out of the index (no hints at all): told in a message.
# A decode problem (the file is read with replacements) goes to the client's log.
UNINDEXED = frozenset({"too-large", "binary", "too-deep", "unreadable", "symlink-loop"})


class AnchorServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "anchor-ls",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=AnchorProtocol,
        )
        self.settings = Settings()
        self.folders: list[Folder] = []
        self.configured = asyncio.Event()  # initialized has the client's settings (lifecycle)
        self.indexer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="anchor-index")
        self.readers = ThreadPoolExecutor(max_workers=2, thread_name_prefix="anchor-read")
        # glimpses (server/glimpses.py), one at a time: a glimpse takes seconds, and the
        # readers must stay free for the requests the build's graph answers
        self.glimpser = ThreadPoolExecutor(max_workers=1, thread_name_prefix="anchor-glimpse")
        self._pending_text: dict[str, str] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._settled: dict[str, asyncio.Future[None]] = {}
        # settings being pulled after workspace/didChangeConfiguration: requests that show
        # them wait (see settings_changing)
        self._settings_pending = 0
        self._settings_ready = asyncio.Event()
        self._settings_ready.set()
        self._in_flight: dict[str, int] = {}  # uri -> buffer updates queued or running
        self._told: dict[str, str] = {}  # uri -> the kind of its problem the user was told
        self._loop: asyncio.AbstractEventLoop | None = None
        self.startup_problems: list[str] = []
        self.warmer = HintWarmer(self)
        self._background: set[asyncio.Future[Any]] = set()
        self._preparing: asyncio.Future[None] | None = None
        self.disk_watch: asyncio.Task[None] | None = None  # the server's own (server/disk.py)
        self._prepare_again = False

    # ----- transports ---------------------------------------------------
    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        """pygls' start_io, reading messages with framing.serve (it survives bad frames)."""
        self._stop_event = stop = threading.Event()
        reader = framing.StdinLines(stdin or sys.stdin.buffer, self.thread_pool)
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        try:
            asyncio.run(framing.serve(stop, reader, self.protocol))
        except BrokenPipeError:
            log.error("the connection to the client is lost: shutting down")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()

    def start_tcp(self, host: str, port: int) -> None:
        """pygls' start_tcp, reading messages with framing.serve; serves one client."""
        self._stop_event = stop = threading.Event()

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.protocol.set_writer(writer)  # type: ignore[arg-type]
            await framing.serve(stop, framing.StreamLines(reader), self.protocol)
            self.shutdown()

        async def listen() -> None:
            self._server = await asyncio.start_server(connection, host, port)
            async with self._server:
                await self._server.serve_forever()

        with contextlib.suppress(asyncio.CancelledError):
            asyncio.run(listen())

    # ----- plumbing -----------------------------------------------------
    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    @property
    def encoding(self) -> str:
        enc = self.workspace.position_encoding
        return str(getattr(enc, "value", enc) or UTF16)

    def client_supports(self, path: str) -> bool:
        """A client capability by dotted snake_case path, e.g. 'workspace.apply_edit'."""
        return bool(get_capability(self.client_capabilities, path, False))

    def quiet(self, seconds: float) -> bool:
        """Whether the client has had no request open or answered for `seconds`."""
        protocol = self.protocol
        return not isinstance(protocol, AnchorProtocol) or protocol.quiet(seconds)

    def hint_form(self) -> HintForm:
        """What a file's hints depend on besides the index: fields, encoding, and what the
        client resolves (left out of the hints: smaller answers)."""
        support = get_capability(
            self.client_capabilities, "text_document.inlay_hint.resolve_support"
        )
        resolved = (support.properties or ()) if support is not None else ()
        return HintForm(
            self.settings.hint_fields,
            self.encoding,
            "tooltip" in resolved,
            "label.location" in resolved,
        )

    def prepare_edits_soon(self) -> None:
        """Once the client is quiet, keep the trees of the documents opened last, so that
        a keystroke there walks only what it changed (see Index.prepare_edits).

        Parsing a large file holds the interpreter for tens of milliseconds: done when a
        file opens, it would slow the hints the editor asks for next."""
        self._prepare_again = True
        if self._preparing is None or self._preparing.done():
            self._preparing = asyncio.ensure_future(self._prepare_edits())

    async def _prepare_edits(self) -> None:
        while self._prepare_again:
            self._prepare_again = False
            for uri in reversed(list(self.workspace.text_documents)[-KEEP:]):
                where = self.locate(uri)
                if where is None:
                    continue
                while not self.quiet(ENGINE_QUIET):
                    await asyncio.sleep(ENGINE_WAIT)
                try:
                    await self.mutate(where[0].prepare_edits, where[1])
                except Exception:  # the first edit parses the whole file instead
                    log.exception("parsing %s ahead of its edits failed", uri)

    def background(self, work: Any) -> None:
        """Run a coroutine without waiting for it (kept referenced until it ends)."""
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a query on the reader pool (it reads a snapshot: no lock)."""
        return await self.loop.run_in_executor(self.readers, fn, *args)

    async def mutate(self, fn: Callable[..., T], *args: Any) -> T:
        """Run an index mutation on the single indexer thread, after those queued before it."""
        return await self.loop.run_in_executor(self.indexer, fn, *args)

    def log_to_client(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        log.log(logging.WARNING if kind <= types.MessageType.Warning else logging.INFO, message)
        self.window_log_message(types.LogMessageParams(type=kind, message=message))

    def tell_user(self, message: str, kind: types.MessageType = types.MessageType.Warning) -> None:
        log.warning(message)
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Errors go to the log, not to pop-ups: one bad message must not nag the user."""
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)
        try:
            self.window_log_message(
                types.LogMessageParams(type=types.MessageType.Error, message=f"anchor-ls: {error}")
            )
        except Exception:
            log.debug("could not forward the error to the client", exc_info=True)

    # ----- documents and folders ---------------------------------------
    def locate(self, uri: str) -> tuple[Folder, str] | None:
        """The folder and relpath of a Python file URI, or None when it is not ours: of
        nested folders, the innermost answers for it."""
        found = self.locate_all(uri)
        return found[0] if found else None

    def locate_all(self, uri: str) -> list[tuple[Folder, str]]:
        """Every folder whose index holds a Python file URI, innermost first: nested
        workspace folders each index it, and a change to it is a change in each."""
        if not isinstance(uri, str) or uri_scheme(uri) != "file":
            return []
        fs_path = to_fs_path(uri)
        if not fs_path or not fs_path.endswith(PYTHON_SUFFIXES):
            return []
        path = Path(fs_path)
        found = [(f, rel) for f in self.folders if (rel := f.relpath(path)) is not None]
        return sorted(found, key=lambda where: -len(where[0].root.parts))

    def folder_of_uri(self, uri: str) -> Folder | None:
        fs_path = to_fs_path(uri) if uri_scheme(uri) == "file" else None
        if not fs_path:
            return None
        path = Path(fs_path).resolve()
        for folder in self.folders:
            if folder.root == path:
                return folder
        return None

    def open_text(self, uri: str) -> tuple[str, int | None] | None:
        """(text, version) of a document open in the editor, else None."""
        doc = self.workspace.text_documents.get(uri)
        if doc is None:
            return None
        return doc.source, doc.version

    def point(self, uri: str, position: types.Position) -> tuple[Folder, str, int, int] | None:
        """A request position as (folder, relpath, line, UTF-8 byte column), or None."""
        where = self.locate(uri)
        if where is None:
            return None
        folder, relpath = where
        opened = self.open_text(uri)
        if opened is not None:
            lines = text_lines(opened[0])
        else:
            view = folder.view(relpath)
            if view is None:
                return None
            table = view.table
            lines = [table.line(i).decode("utf-8", "replace") for i in range(table.line_count)]
        at = position_to_bytes(lines, position, self.encoding)
        if at is None:
            return None
        return folder, relpath, at[0], at[1]

    # ----- freshness ----------------------------------------------------
    def schedule_update(self, uri: str, delay: float = DEBOUNCE_SECONDS) -> None:
        """Re-index an open buffer once typing pauses for `delay` seconds."""
        opened = self.open_text(uri)
        if opened is None or self.locate(uri) is None:
            return
        self._pending_text[uri] = opened[0]
        if uri not in self._settled:
            self._settled[uri] = self.loop.create_future()
        timer = self._timers.pop(uri, None)
        if timer is not None:
            timer.cancel()
        self._timers[uri] = self.loop.call_later(
            delay, lambda: asyncio.ensure_future(self.flush(uri))
        )

    def cancel_update(self, uri: str) -> None:
        timer = self._timers.pop(uri, None)
        if timer is not None:
            timer.cancel()
        self._pending_text.pop(uri, None)
        self._told.pop(uri, None)  # closed: its problem is told again when it reopens
        self._settle(uri)

    def _settle(self, uri: str) -> None:
        if uri not in self._pending_text:
            waiter = self._settled.pop(uri, None)
            if waiter is not None and not waiter.done():
                waiter.set_result(None)

    @contextlib.contextmanager
    def settings_changing(self) -> Iterator[None]:
        """While new settings are pulled from the client, requests whose answer shows them
        (hints, lenses, hierarchies) wait: answered with the settings before, a hint request
        VS Code sent with the change was kept by the editor (its refresh reached no visible
        editor) and the old hint stayed after the setting changed."""
        self._settings_pending += 1
        self._settings_ready.clear()
        try:
            yield
        finally:
            self._settings_pending -= 1
            if not self._settings_pending:
                self._settings_ready.set()

    async def settings_settled(self) -> None:
        """Wait (bounded) for settings being pulled; see settings_changing."""
        if not self._settings_ready.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._settings_ready.wait(), SETTINGS_WAIT)

    async def settled(self, uri: str) -> None:
        """Wait until the buffer of `uri` is indexed (a no-op when no update is pending).

        A request for a document being edited then answers for the text the user sees;
        the client may cancel it while it waits.
        """
        waiter = self._settled.get(uri)
        if waiter is not None:
            await asyncio.shield(waiter)

    async def flush(self, uri: str) -> None:
        """Index the latest pending text of `uri` now (a no-op when nothing is pending)."""
        timer = self._timers.pop(uri, None)
        if timer is not None:
            timer.cancel()
        text = self._pending_text.pop(uri, None)
        located = self.locate_all(uri)
        try:
            if text is None or not located:
                return
            folder, relpath = located[0]
            if uri not in self._in_flight and all(_indexed_as(f, r, text) for f, r in located):
                self.tell_problem(uri, folder, relpath)
                return  # e.g. a document opened as it is on disk: nothing to queue or wait for
            started = self.loop.time()
            self._in_flight[uri] = self._in_flight.get(uri, 0) + 1
            changed: set[str] = set()
            try:
                for each, rel in located:
                    changed |= await self.mutate(_apply_buffer, each, rel, text)
            finally:
                if self._in_flight[uri] == 1:
                    del self._in_flight[uri]
                else:
                    self._in_flight[uri] -= 1
            log.info(
                "re-indexed %s in %.0f ms (queue included): %d files changed",
                relpath,
                (self.loop.time() - started) * 1000,
                len(changed),
            )
            self.tell_problem(uri, folder, relpath)
            self.changed(changed)
        except Exception as exc:  # the index failed on this text: say so, keep serving
            log.exception("re-indexing %s failed", uri)
            self.log_to_client(
                f"anchor-ls: re-indexing {uri} failed: {type(exc).__name__}: {exc}",
                types.MessageType.Error,
            )
        finally:
            self._settle(uri)

    def tell_problem(self, uri: str, folder: Folder, relpath: str) -> None:
        """Say why an open file has no hints (too large, binary...), or is read with
        replacements (decode); once per file and kind of problem, not at every edit."""
        index = folder.index
        problem = index.problems.get(relpath) if index is not None else None
        told = self._told.pop(uri, None)
        if problem is None or problem.kind not in UNINDEXED | {"decode"}:
            return
        self._told[uri] = problem.kind
        if problem.kind == told:
            return
        if problem.kind == "decode":
            self.log_to_client(
                f"anchor-ls: {relpath}: {problem.message}", types.MessageType.Warning
            )
        else:
            self.tell_user(f"anchor-ls: no hints for {relpath}: {problem.message}")

    async def flush_all(self, uris: Iterable[str] | None = None) -> None:
        for uri in list(self._pending_text if uris is None else uris):
            await self.flush(uri)

    def changed(self, relpaths: set[str]) -> None:
        """Ask the client to re-request hints and lenses after the facts changed."""
        if relpaths:
            self.refresh()

    def refresh(self) -> None:
        self.warmer.kick()
        if self.client_supports("workspace.inlay_hint.refresh_support"):
            self.workspace_inlay_hint_refresh(None)
        if self.client_supports("workspace.code_lens.refresh_support"):
            self.workspace_code_lens_refresh(None)

    # ----- indexing -----------------------------------------------------
    async def build(self, folders: list[Folder], title: str = "Indexing") -> None:
        """Build folders one after another on the indexer thread, with one progress bar each."""
        shared = self.settings.cache_dir is not None and len(self.folders) > 1
        for folder in folders:
            progress = WorkProgress(self, f"anchor-ls: {title} {folder.root.name}")
            await progress.begin("scanning")

            def on_progress(
                done: int, total: int, relpath: str, p: WorkProgress = progress
            ) -> None:
                p.report(done, total, indexing_message(done, total, relpath))

            await self.mutate(folder.build, self.settings, shared, on_progress)
            if folder.environment_problem is not None:
                self.tell_user(f"anchor-ls: {folder.environment_problem}")
            if folder.state == READY and folder.stats is not None:
                s = folder.stats
                summary = (
                    f"{s.files} files, {s.entities} entities, "
                    f"{sum(s.edges.values())} edges ({s.from_cache} from cache)"
                )
                progress.end(summary)
                self.log_to_client(f"anchor-ls: indexed {folder.root}: {summary}")
                for problem in folder.index.problems.values() if folder.index else ():
                    if problem.kind == "cache":  # rebuilt, foreign rows, writes failing
                        self.tell_user(f"anchor-ls: {problem.message}")
            else:
                progress.end(f"failed: {folder.error}")
                self.tell_user(f"anchor-ls: indexing {folder.root} failed: {folder.error}")
            await self.reapply_buffers(folder)
        self.refresh()
        self.background(self.load_engines(folders))

    async def load_engines(self, folders: list[Folder]) -> None:
        """After a warm start: load the deferred resolver state on the indexer thread.

        It goes after the first pass of the hint warmer (what the editor shows first),
        and behind the re-application of open buffers; an edit made meanwhile loads it
        itself, as without this. Requests are not held up: they only share the
        interpreter with it.
        """
        await self.warmer.settled()
        for folder in folders:
            while not self.quiet(ENGINE_QUIET):  # it cannot pause once it has started
                await asyncio.sleep(ENGINE_WAIT)
            started = self.loop.time()
            try:
                await self.mutate(folder.load_engine)
            except Exception:  # the first edit loads it (or reports the failure) instead
                log.exception("loading the resolver state of %s failed", folder.root)
                continue
            log.info(
                "resolver state of %s ready after %.0f ms (queue included)",
                folder.root.name,
                (self.loop.time() - started) * 1000,
            )
            self.prepare_edits_soon()  # the documents opened before it was there

    async def reapply_buffers(self, folder: Folder) -> None:
        """After a build from disk, put the unsaved buffers of open documents back."""
        for uri in list(self.workspace.text_documents):
            if any(each is folder for each, _ in self.locate_all(uri)):
                self.schedule_update(uri, delay=0)

    def shutdown_workers(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        for waiter in self._settled.values():
            waiter.cancel()
        self.indexer.shutdown(wait=False, cancel_futures=True)
        self.readers.shutdown(wait=False, cancel_futures=True)
        self.glimpser.shutdown(wait=False, cancel_futures=True)


def _apply_buffer(folder: Folder, relpath: str, text: str) -> set[str]:
    """Indexer thread: re-index relpath from a buffer unless the index already has that text."""
    index = folder.index
    if index is None or not index.is_indexable(relpath):
        return set()  # excluded files stay out even when opened
    if _indexed_as(folder, relpath, text):
        return set()
    return folder.update(relpath, text)


def _indexed_as(folder: Folder, relpath: str, text: str) -> bool:
    """Whether the index holds this text for relpath already (cheap enough for the loop)."""
    index = folder.index
    if index is None:
        return False
    source = index.source(relpath)
    return source is not None and buffer_matches(source, text)
