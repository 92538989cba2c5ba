"""What the server's helpers need of the server, as protocols: progress bars and the hint
warmer are given the server but do not import it (the server imports them)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from pygls.progress import Progress
from pygls.workspace import Workspace

from anchor_ls.server.folders import Folder
from anchor_ls.server.hints import HintForm
from anchor_ls.server.settings import Settings

T = TypeVar("T")


class ProgressHost(Protocol):
    """A server that sends $/progress to its client."""

    @property
    def loop(self) -> asyncio.AbstractEventLoop: ...

    @property
    def work_done_progress(self) -> Progress: ...

    def client_supports(self, path: str) -> bool: ...


class WarmHost(Protocol):
    """A server whose folders' hint stores are filled between requests."""

    folders: list[Folder]
    settings: Settings

    @property
    def workspace(self) -> Workspace: ...

    def hint_form(self) -> HintForm: ...

    def quiet(self, seconds: float) -> bool: ...

    def locate(self, uri: str) -> tuple[Folder, str] | None: ...

    async def read(self, fn: Callable[..., T], *args: Any) -> T: ...
