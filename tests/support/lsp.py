"""Shared pieces of the language-server tests (no tests here).

Every test talks to the real server process over stdio through pytest-lsp, on
a fresh copy of a repository, with the capabilities of a real editor: the
client side keeps its open documents, applies workspace edits the way an editor
does (refusing a stale version) and records refreshes, registrations and
progress.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import shutil
import sys
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "fixtures" / "example"
SERVER = [sys.executable, "-m", "anchor_ls.server"]
CONFIG = ClientServerConfig(server_command=SERVER)
PROFILES = ("neovim", "visual-studio-code")
TIMEOUT = 30.0

# Added to each copy of fixtures/example: non-ASCII names and a call after non-ASCII text,
# so that positions differ between UTF-8 and UTF-16 clients, and a header on three lines.
EXTRA: dict[str, str] = {
    "pkg/unicode.py": (
        "from pkg.service import checkout\n"
        "\n"
        "\n"
        "def größe(\n"
        "    repo,\n"
        "):\n"
        '    label = "😀 ü"; return checkout([label], repo, len)\n'
        "\n"
        "\n"
        "def größer(repo):\n"
        "    return größe(repo)\n"
    ),
}


def write_files(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))


def uri(path: Path) -> str:
    return from_fs_path(str(path)) or ""


def lsp_lines(text: str) -> list[str]:
    """Lines as LSP counts them (str.splitlines also splits at \f, U+2028, ...)."""
    return re.split(r"\r\n|\r|\n", text)


def line_of(text: str, needle: str) -> int:
    """0-based line of the first line containing needle."""
    for number, line in enumerate(lsp_lines(text)):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in text")


def column(line: str, chars: int, encoding: str) -> int:
    """`chars` characters into `line`, in the client's position units."""
    prefix = line[:chars]
    if encoding == "utf-8":
        return len(prefix.encode("utf-8"))
    if encoding == "utf-32":
        return len(prefix)
    return len(prefix.encode("utf-16-le")) // 2


def pos(text: str, needle: str, encoding: str, offset: int = 0) -> types.Position:
    """Position of the first occurrence of needle (plus offset characters) in the client's units."""
    number = line_of(text, needle)
    line = lsp_lines(text)[number]
    return types.Position(number, column(line, line.index(needle) + offset, encoding))


class Editor:
    """The client side of a session: its documents, edits and what the server sent it."""

    def __init__(self, client: LanguageClient, root: Path, profile: str) -> None:
        self.client = client
        self.root = root
        self.profile = profile
        self.docs: dict[str, list[Any]] = {}  # uri -> [text, version]
        self.refreshes: list[str] = []
        self.registrations: list[types.Registration] = []
        self.applied: list[types.ApplyWorkspaceEditParams] = []
        self.encoding = "utf-16"
        self._refreshed = asyncio.Event()
        self._install()

    # ----- what the server asks of the client ---------------------------
    def _install(self) -> None:
        c = self.client

        @c.feature(types.WORKSPACE_INLAY_HINT_REFRESH)
        def inlay_refresh(client: LanguageClient, params: None) -> None:
            self.refreshes.append("inlayHint")
            self._refreshed.set()

        @c.feature(types.WORKSPACE_CODE_LENS_REFRESH)
        def lens_refresh(client: LanguageClient, params: None) -> None:
            self.refreshes.append("codeLens")
            self._refreshed.set()

        @c.feature(types.CLIENT_REGISTER_CAPABILITY)
        def register(client: LanguageClient, params: types.RegistrationParams) -> None:
            self.registrations.extend(params.registrations)

        @c.feature(types.WORKSPACE_APPLY_EDIT)
        def apply_edit(
            client: LanguageClient, params: types.ApplyWorkspaceEditParams
        ) -> types.ApplyWorkspaceEditResult:
            self.applied.append(params)
            return self._apply(params.edit)

    def _apply(self, edit: types.WorkspaceEdit) -> types.ApplyWorkspaceEditResult:
        """Apply like an editor: all or nothing, refusing edits for a version it no longer has."""
        work: list[tuple[str, list[types.TextEdit]]] = []
        for change in edit.document_changes or []:
            assert isinstance(change, types.TextDocumentEdit), change
            doc = self.docs.get(change.text_document.uri)
            want = change.text_document.version
            if want is not None and (doc is None or doc[1] != want):
                have = None if doc is None else doc[1]
                return types.ApplyWorkspaceEditResult(
                    applied=False, failure_reason=f"version {want} != {have}"
                )
            work.append((change.text_document.uri, list(change.edits)))
        work.extend((u, list(e)) for u, e in (edit.changes or {}).items())
        for doc_uri, edits in work:
            if doc_uri in self.docs:
                text = apply_text_edits(self.docs[doc_uri][0], edits, self.encoding)
                self.change(doc_uri, text)
            else:
                path = Path(pygls_path(doc_uri))
                raw = path.read_bytes().decode("utf-8")
                path.write_bytes(apply_text_edits(raw, edits, self.encoding).encode("utf-8"))
        return types.ApplyWorkspaceEditResult(applied=True)

    # ----- what the editor tells the server -----------------------------
    def path(self, rel: str) -> Path:
        return self.root / rel

    def uri(self, rel: str) -> str:
        return uri(self.root / rel)

    def text(self, rel: str) -> str:
        opened = self.docs.get(self.uri(rel))
        return opened[0] if opened else self.path(rel).read_text(encoding="utf-8")

    def open(self, rel: str) -> str:
        doc_uri = self.uri(rel)
        text = self.path(rel).read_text(encoding="utf-8")
        self.docs[doc_uri] = [text, 1]
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(uri=doc_uri, language_id="python", version=1, text=text)
            )
        )
        return doc_uri

    def change(self, doc_uri: str, text: str) -> None:
        doc = self.docs[doc_uri]
        doc[0], doc[1] = text, doc[1] + 1
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=doc_uri, version=doc[1]),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    def close(self, rel: str) -> None:
        doc_uri = self.uri(rel)
        self.docs.pop(doc_uri, None)
        self.client.text_document_did_close(
            types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(doc_uri))
        )

    # ----- requests ------------------------------------------------------
    async def hints(self, rel: str, first: int = 0, last: int = 10_000) -> list[types.InlayHint]:
        result = await self.client.text_document_inlay_hint_async(
            types.InlayHintParams(
                text_document=types.TextDocumentIdentifier(self.uri(rel)),
                range=types.Range(types.Position(first, 0), types.Position(last, 0)),
            )
        )
        return list(result or [])

    async def linked_hint(self, rel: str, line: int) -> types.InlayHint | None:
        """The hint on line with its name links: resolved when the client leaves the
        links to inlayHint/resolve (whose label must keep the parts the client shows)."""
        hint = hint_on(await self.hints(rel), line)
        if hint is None or not resolves(self.client, "label.location"):
            return hint
        assert not isinstance(hint.label, str)
        assert all(p.location is None for p in hint.label)
        values = [p.value for p in hint.label]
        hint = await self.client.inlay_hint_resolve_async(hint)
        assert not isinstance(hint.label, str) and [p.value for p in hint.label] == values
        return hint

    async def command(self, name: str, *args: Any) -> Any:
        return await self.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=name, arguments=list(args))
        )

    async def ready(self) -> dict[str, Any]:
        """Wait until every folder is indexed; returns anchor.stats."""
        deadline = asyncio.get_running_loop().time() + TIMEOUT
        while True:
            stats = await self.command("anchor.stats")
            states = [f["state"] for f in stats["folders"]]
            if states and all(s == "ready" for s in states):
                return stats
            assert "failed" not in states, stats
            assert asyncio.get_running_loop().time() < deadline, f"not indexed: {stats}"
            await asyncio.sleep(0.05)

    async def until(self, probe: Callable[[], Any], what: str) -> Any:
        """Poll an async probe until it returns something truthy (refreshes wake it early)."""
        deadline = asyncio.get_running_loop().time() + TIMEOUT
        while True:
            self._refreshed.clear()
            result = await probe()
            if result:
                return result
            assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._refreshed.wait(), 0.1)

    def raw_request(self, method: str, params: Any, msg_id: str | None = None) -> Any:
        """Send a request with params exactly as given (typed clients cannot send bad ones).

        Sent at once; returns an awaitable for the response.
        """
        protocol = self.client.protocol
        msg_id = msg_id or f"raw-{next(_RAW_IDS)}"
        future: Future[Any] = Future()
        protocol._request_futures[msg_id] = future
        protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return asyncio.wait_for(asyncio.wrap_future(future), TIMEOUT)


_RAW_IDS = itertools.count(1)


def pygls_path(doc_uri: str) -> str:
    from pygls.uris import to_fs_path

    return to_fs_path(doc_uri) or ""


def apply_text_edits(text: str, edits: list[types.TextEdit], encoding: str) -> str:
    """Apply non-overlapping LSP edits (positions in `encoding` units) to text."""
    spans = sorted(
        (
            offset_in(text, e.range.start, encoding),
            offset_in(text, e.range.end, encoding),
            e.new_text,
        )
        for e in edits
    )
    out, at = [], 0
    for start, end, new in spans:
        assert start >= at, "overlapping edits"
        out.append(text[at:start])
        out.append(new)
        at = end
    out.append(text[at:])
    return "".join(out)


def copy_example(tmp: Path) -> Path:
    """A private copy of fixtures/example (the server writes its cache into it)."""
    root = tmp / "repo"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".anchor-ls", "__pycache__"))
    write_files(root, EXTRA)
    return root


def editor_capabilities(profile: str) -> types.ClientCapabilities:
    """pytest-lsp's capabilities of an editor, with what VS Code declares since 1.67 (its
    profile is of 1.65, before inlay hints): hints it resolves, tooltips and name links."""
    caps = client_capabilities(profile)
    if profile == "visual-studio-code":
        assert caps.workspace is not None and caps.text_document is not None
        caps.workspace.inlay_hint = types.InlayHintWorkspaceClientCapabilities(refresh_support=True)
        caps.text_document.inlay_hint = types.InlayHintClientCapabilities(
            dynamic_registration=True,
            resolve_support=types.ClientInlayHintResolveOptions(
                properties=[
                    "tooltip",
                    "textEdits",
                    "label.tooltip",
                    "label.location",
                    "label.command",
                ]
            ),
        )
    return caps


def resolves(client: LanguageClient, prop: str) -> bool:
    """Whether the client leaves an inlay hint property to inlayHint/resolve."""
    inlay = client.capabilities.text_document.inlay_hint  # type: ignore[union-attr]
    support = inlay.resolve_support if inlay is not None else None
    return support is not None and prop in support.properties


async def start(
    client: LanguageClient,
    root: Path,
    profile: str,
    options: dict[str, Any] | None = None,
    configuration: dict[str, Any] | None = None,
    drop: Callable[[types.ClientCapabilities], None] | None = None,
) -> Editor:
    """Initialize a session on root with an editor's capabilities and wait for the index."""
    caps = editor_capabilities(profile)
    if drop is not None:
        drop(caps)
    if configuration is not None:
        client.set_configuration(configuration)
    editor = Editor(client, root, profile)
    result = await client.initialize_session(
        types.InitializeParams(
            capabilities=caps,
            root_uri=uri(root),
            workspace_folders=[types.WorkspaceFolder(uri=uri(root), name=root.name)],
            initialization_options=options,
        )
    )
    encoding = result.capabilities.position_encoding
    editor.encoding = str(getattr(encoding, "value", encoding) or "utf-16")
    editor.capabilities = result.capabilities  # type: ignore[attr-defined]
    return editor


async def example_session(client: LanguageClient, tmp: Path) -> Editor:
    """A session of `client` (the `lsp` fixture) on a fresh copy of fixtures/example, indexed."""
    editor = await start(client, copy_example(tmp), client.profile)  # type: ignore[attr-defined]
    await editor.ready()
    return editor


def label_text(hint: types.InlayHint) -> str:
    if isinstance(hint.label, str):
        return hint.label
    return "".join(part.value for part in hint.label)


def hint_on(hints: list[types.InlayHint], line: int) -> types.InlayHint | None:
    found = [h for h in hints if h.position.line == line]
    assert len(found) <= 1, found
    return found[0] if found else None


def dump(value: Any) -> str:
    return json.dumps(value, default=str, indent=1)


@pytest_lsp.fixture(config=CONFIG, params=PROFILES)
async def lsp(lsp_client: LanguageClient, request: Any) -> Any:
    """A server process and the name of the client profile; the test initializes it."""
    lsp_client.profile = request.param  # type: ignore[attr-defined]
    yield
    server = lsp_client._server
    if server is not None and server.returncode is None:
        with contextlib.suppress(JsonRpcException, TimeoutError, RuntimeError):
            await asyncio.wait_for(lsp_client.shutdown_session(), 10)


def shared_session(
    make_root: Callable[[Path], Path],
    options: Callable[[Path], dict[str, Any]] | None = None,
) -> tuple[Any, Any]:
    """Module-scoped fixtures `session` and `ed`: one server per client profile, indexed,
    on the repository that make_root(an empty folder) writes; for read-only tests. With
    options, its initializationOptions are options(that folder), called after make_root.

    Assign them at module level under those names: `session, ed = shared_session(...)`.
    """

    @pytest_lsp.fixture(config=CONFIG, params=PROFILES, scope="module")
    async def session(lsp_client: LanguageClient, request: Any, tmp_path_factory: Any) -> Any:
        work = tmp_path_factory.mktemp("session")
        root = make_root(work)
        init = options(work) if options is not None else None
        editor = await start(lsp_client, root, request.param, options=init)
        await editor.ready()
        lsp_client.editor = editor  # type: ignore[attr-defined]
        yield
        await lsp_client.shutdown_session()

    @pytest.fixture(scope="module")
    def ed(session: LanguageClient) -> Editor:
        return session.editor  # type: ignore[attr-defined]

    return session, ed


def expected_edges(kind: str) -> set[tuple[str, str]]:
    """Edges fixtures/example/expected.json requires, plus those EXTRA adds."""
    data = json.loads((EXAMPLE / "expected.json").read_text(encoding="utf-8"))
    edges = {(src, dst) for src, dst in data[kind]}
    if kind == "calls":
        edges |= {
            ("pkg/unicode.py:größe", "pkg/service.py:checkout"),
            ("pkg/unicode.py:größer", "pkg/unicode.py:größe"),
        }
    return edges


def offset_in(text: str, position: types.Position, encoding: str) -> int:
    """A client position as an index into text."""
    lines = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z", text)
    start = sum(len(line) for line in lines[: position.line])
    line = lines[position.line].rstrip("\r\n") if position.line < len(lines) else ""
    units = 0
    for i, ch in enumerate(line):
        if units >= position.character:
            return start + i
        units += column(ch, 1, encoding)
    return start + len(line)


def text_at(text: str, rng: types.Range, encoding: str) -> str:
    return text[offset_in(text, rng.start, encoding) : offset_in(text, rng.end, encoding)]
