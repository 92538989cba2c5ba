"""`anchor-ls mcp [PATH]`: the queries as MCP tools over stdio, on the official SDK.

One repository, one Index (the CLI's cache folder), built in the background while the
client connects; every tool call first brings the index up to date with the disk
(`Freshness.sync`), then answers one JSON object, as structured content and as its
text. A request that cannot be answered is an error result with the reason and the ids
to try; the server keeps serving whatever a call or a file in the repository does.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent

from anchor_ls import __version__
from anchor_ls.agent.freshness import Freshness
from anchor_ls.agent.queries import Queries, QueryError
from anchor_ls.index import Index

log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "The call, inheritance and import graph of one Python repository, resolved by "
    "anchor-ls's binder (not matched by bare name) and brought up to date with the disk "
    "before every answer. A symbol is an entity id (`pkg/mod.py:Class.method`, a module "
    "is its path) or a suffix of one (`Class.method`); a dotted Python path "
    "(`pkg.mod.Class`) and a pytest node id work too; find_symbol finds ids. Ask "
    "callers/impact before changing a signature, outline to learn a file, related_tests "
    "for what to run."
)


class Service:
    """The index, its freshness and its queries, answered one call at a time."""

    def __init__(self, index: Index, max_items: int) -> None:
        self.freshness = Freshness(index)
        self.queries = Queries(index, max_items=max_items)
        self._ready = threading.Event()
        self._failed: str | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Build in a thread: the client's handshake is answered meanwhile."""
        threading.Thread(target=self._build, name="anchor-ls-build", daemon=True).start()

    def _build(self) -> None:
        try:
            self.freshness.build()
        except Exception as err:  # reported by every call, never a dead server
            log.exception("building the index failed")
            self._failed = f"building the index failed: {err}"
        finally:
            self._ready.set()

    def answer(self, ask: Callable[[Queries], dict[str, Any]]) -> CallToolResult:
        self._ready.wait()
        if self._failed:
            return _result({"error": self._failed}, error=True)
        with self._lock:
            try:
                if self.freshness.sync():
                    self.queries.changed()
                return _result(ask(self.queries))
            except QueryError as err:
                return _result(err.as_dict(), error=True)
            except Exception as err:  # a bug must not end the session
                log.exception("a tool call failed")
                return _result({"error": f"internal error: {type(err).__name__}: {err}"}, True)

    def ready(self) -> bool:
        return self._ready.is_set()

    def updated(self) -> str | None:
        return self.freshness.updated_iso()


def _result(answer: dict[str, Any], error: bool = False) -> CallToolResult:
    text = json.dumps(answer, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=answer, is_error=error
    )


def build_server(service: Service) -> MCPServer:
    server: MCPServer = MCPServer(
        name="anchor-ls", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )

    async def run(ask: Callable[[Queries], dict[str, Any]]) -> CallToolResult:
        if service.ready():  # answers take milliseconds: a thread hop would double them
            return service.answer(ask)
        return await anyio.to_thread.run_sync(service.answer, ask)  # the build is on

    @server.tool()
    async def find_symbol(query: str, kind: str | None = None, limit: int = 20) -> CallToolResult:
        """Find definitions by id, qualified name or name: exact matches first, then id
        suffixes, then substrings. kind: module, class, function, method or constant.
        Each with id, kind, path, line and its one-line signature."""
        return await run(lambda q: q.find_symbol(query, kind, limit))

    @server.tool()
    async def callers(
        symbol: str, depth: int = 1, limit: int = 50, maybe: bool = False
    ) -> CallToolResult:
        """Who calls `symbol` (relation "call") or uses it as a value (relation
        "reference"; a constant's readers: "read"), level by level up to `depth`, each
        with its call-site lines and how the call was resolved (call_via). In each level
        test code comes last, marked "test" (limit cuts it first). `possible`: how many
        call sites the index could not resolve call a name like symbol's; maybe=true
        lists them as `maybe`."""
        return await run(lambda q: q.callers(symbol, depth, limit, maybe))

    @server.tool()
    async def callees(symbol: str, depth: int = 1, limit: int = 50) -> CallToolResult:
        """What `symbol` calls or uses as a value, level by level up to `depth`, each
        with the lines where it does."""
        return await run(lambda q: q.callees(symbol, depth, limit))

    @server.tool()
    async def impact(symbol: str, depth: int = 3, limit: int = 100) -> CallToolResult:
        """What can break if `symbol` changes: transitive callers and users, subclasses,
        overriding methods, importers of a module, readers of a constant, each with its
        distance and relation; and the tests that reach any of them."""
        return await run(lambda q: q.impact(symbol, depth, limit))

    @server.tool()
    async def hierarchy(symbol: str) -> CallToolResult:
        """A class's bases in MRO order and all its subclasses; a method's overridden
        definitions (nearest first) and the methods that override it."""
        return await run(lambda q: q.hierarchy(symbol))

    @server.tool()
    async def outline(path: str) -> CallToolResult:
        """Every definition in one file (a path relative to the repository): signature,
        lines, its CodeAnchor tag fields in short form (`:name` is the same file, `.name`
        the same class) and how many tests exercise it (related_tests lists them)."""
        return await run(lambda q: q.outline(path))

    @server.tool()
    async def tags(target: str, policy: str | None = None) -> CallToolResult:
        """The CodeAnchor block text the materializer would write above a definition
        (target: a symbol) or above each definition of a file (target: a path).
        policy: auto (default), topo, inv or dense."""
        return await run(lambda q: q.tags(target, policy))

    @server.tool()
    async def related_tests(symbol: str) -> CallToolResult:
        """Tests that exercise `symbol`, directly or through test helpers, with path
        and line: what to run after changing it."""
        return await run(lambda q: q.related_tests(symbol))

    @server.tool()
    async def stats() -> CallToolResult:
        """Files, entities and edges in the index, the tag policy auto picks, and when
        the index was last brought up to date with the disk."""
        return await run(lambda q: q.stats(service.updated()))

    return server


def serve(
    root: Path,
    *,
    cache_dir: str | None,
    exclude: tuple[str, ...],
    use_cache: bool = True,
    max_items: int,
    source_roots: tuple[str, ...] = (),
    python: str | None = None,
) -> int:
    """Serve one repository over stdio until the client closes the connection; python: the
    interpreter of the repository's environment (None: anchor-ls's own); use_cache=False
    (a folder without Python files): the index is kept in memory only."""
    index = Index(
        root,
        cache_dir=cache_dir,
        use_cache=use_cache,
        exclude=exclude,
        source_roots=source_roots,
        python=python,
    )
    try:  # an interpreter that cannot be used stops the server before a client connects
        log.info("libraries from %s", index.environment.python or "anchor-ls's environment")
    except BaseException:
        index.close()
        raise
    service = Service(index, max_items)
    service.start()
    try:
        anyio.run(build_server(service).run_stdio_async)
    finally:
        service.freshness.close()
        index.close()
    return 0
