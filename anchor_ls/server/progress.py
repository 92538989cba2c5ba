"""Work-done progress ($/progress begin, report, end) fed from worker threads.

Reports are throttled (a new whole percent or a quarter second) and always
sent from the event loop, so a build thread never writes to the client itself.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid

from lsprotocol import types

from anchor_ls.server.hosts import ProgressHost

log = logging.getLogger(__name__)

CREATE_TIMEOUT = 5.0
MIN_INTERVAL = 0.25


class WorkProgress:
    """One progress bar in the client; a no-op when the client has none."""

    def __init__(
        self, server: ProgressHost, title: str, token: types.ProgressToken | None = None
    ) -> None:
        self._server = server
        self._loop = server.loop
        self.title = title
        self.token = token
        self._last_pct = -1
        self._last_time = 0.0
        self._lock = threading.Lock()

    async def begin(self, message: str = "") -> None:
        """Create the token (unless the client gave one) and open the bar."""
        server = self._server
        if self.token is None:
            if not server.client_supports("window.work_done_progress"):
                return
            token = f"anchor-ls/{uuid.uuid4().hex[:12]}"
            try:
                await asyncio.wait_for(
                    server.work_done_progress.create_async(token), CREATE_TIMEOUT
                )
            except Exception as exc:  # the client refused or never answered: no bar
                log.info("no work-done progress: %s", exc)
                return
            self.token = token
        server.work_done_progress.begin(
            self.token,
            types.WorkDoneProgressBegin(
                title=self.title, message=message or None, percentage=0, cancellable=False
            ),
        )

    def report(self, done: int, total: int, message: str = "") -> None:
        """Thread-safe; drops reports closer than a percent and a quarter second apart."""
        if self.token is None:
            return
        pct = 100 if total <= 0 else min(100, done * 100 // total)
        now = time.monotonic()
        with self._lock:
            if done < total and pct == self._last_pct and now - self._last_time < MIN_INTERVAL:
                return
            if done < total and now - self._last_time < MIN_INTERVAL / 5:
                return
            self._last_pct, self._last_time = pct, now
        value = types.WorkDoneProgressReport(message=message or f"{done}/{total}", percentage=pct)
        self._loop.call_soon_threadsafe(self._send, value)

    def _send(self, value: types.WorkDoneProgressReport) -> None:
        if self.token is not None:
            self._server.work_done_progress.report(self.token, value)

    def end(self, message: str = "") -> None:
        """Close the bar (on the event loop, after every queued report)."""
        if self.token is None:
            return
        token, self.token = self.token, None
        self._server.work_done_progress.end(
            token, types.WorkDoneProgressEnd(message=message or None)
        )


def indexing_message(done: int, total: int, relpath: str) -> str:
    """File counts for Index.build's progress(done, total, relpath).

    Index.build reports a warm start as one call with relpath "", and a cold build as
    two passes over n files (parse, then resolve) counted 1..2n.
    """
    if not relpath:
        return f"{total} files from the cache"
    files = max(total // 2, 1)
    if done <= files:
        return f"parsing {done}/{files} files"
    return f"resolving {done - files}/{files} files · {relpath}"
