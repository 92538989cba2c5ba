"""pygls' protocol with these changes.

A request whose params do not parse gets an InvalidParams error naming the problem
(stock pygls logs it and never answers, so the client waits forever); a malformed
notification is logged and ignored. A message that is not a request at all (an id
that is an object, an array or a fraction; no "jsonrpc") gets an InvalidRequest
error with id null. A JsonList or JsonText result skips the cattrs pass (and
JsonText the JSON encoder too). And a handler's future leaves `_request_futures`
once it is done (see _execute_handler).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.protocol import LanguageServerProtocol

log = logging.getLogger(__name__)
_WRITES: set[asyncio.Future[Any]] = set()
BUSY_LIMIT = 1.0


class JsonList(list):
    """A result that is JSON already: sent as is, without pygls' (slow) cattrs pass."""


class JsonText(str):
    """A result that is encoded JSON text already (ASCII, as json.dumps writes it)."""


@dataclass(frozen=True, slots=True)
class Malformed:
    """A message whose params failed to structure into the method's types."""

    id: Any
    method: str
    reason: str


@dataclass(frozen=True, slots=True)
class Invalid:
    """A message that is not a JSON-RPC request, notification or response."""

    reason: str


def valid_id(value: Any) -> bool:
    """Whether value can be a request id: LSP allows an integer or a string."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _call_soon(loop: asyncio.AbstractEventLoop, fn: Callable[..., Any], *args: Any) -> None:
    """Run fn on the event loop, later. A done callback runs in the thread that finished
    the future, and inside cancel() itself: pygls' shutdown cancels futures while it
    iterates over _request_futures, which must not change meanwhile."""
    with contextlib.suppress(RuntimeError):  # the loop is closed: the server is going away
        loop.call_soon_threadsafe(fn, *args)


def _reason(exc: BaseException) -> str:
    cause = exc.__cause__ or exc
    text = str(cause).strip() or type(cause).__name__
    subs = getattr(cause, "exceptions", None)
    if subs:
        text = f"{text}: " + "; ".join(str(e) for e in subs[:3])
    return text[:500]


class AnchorProtocol(LanguageServerProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._answering: dict[Any, float] = {}  # request id -> when it came
        self._last_answer = 0.0

    def quiet(self, seconds: float) -> bool:
        """Whether no client request is open, nor was answered in the last `seconds`.

        Background work waits for this: a Python thread working in the background slows
        every other thread down, answers included. A request open for longer than
        BUSY_LIMIT no longer counts.
        """
        now = time.monotonic()
        for msg_id, since in list(self._answering.items()):
            if now - since > BUSY_LIMIT:
                self._answering.pop(msg_id, None)
        return not self._answering and now - self._last_answer >= seconds

    def structure_message(self, data: dict[str, Any]) -> Any:
        if "jsonrpc" in data and "method" in data and "id" in data and not valid_id(data["id"]):
            return Invalid(f"a request id must be an integer or a string: {data['id']!r}"[:200])
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if "jsonrpc" in data and "method" in data:
                return Malformed(data.get("id"), str(data["method"]), _reason(exc))
            raise

    def _send_response(
        self, msg_id: Any, result: Any = None, error: types.ResponseError | None = None
    ) -> None:
        self._answering.pop(msg_id, None)
        self._last_answer = time.monotonic()
        if error is None and isinstance(result, JsonText):
            self._result_types.pop(msg_id, None)
            self._send_text(f'{{"jsonrpc": "2.0", "id": {json.dumps(msg_id)}, "result": {result}}}')
            return
        if error is None and isinstance(result, JsonList):
            self._result_types.pop(msg_id, None)
            self._send_data({"jsonrpc": "2.0", "id": msg_id, "result": result})
            return
        super()._send_response(msg_id, result, error)

    def _send_text(self, body: str) -> None:
        """What pygls' _send_data does after json.dumps, for a body that is JSON already."""
        if self.writer is None:
            log.error("no transport to send a response on")
            return
        data = body.encode(self.CHARSET)
        if self._include_headers:
            header = (
                f"Content-Length: {len(data)}\r\n"
                f"Content-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n"
            )
            data = header.encode("ascii") + data
        try:
            written = self.writer.write(data)
            if inspect.isawaitable(written):  # an async transport: keep the task alive
                task = asyncio.ensure_future(written)
                _WRITES.add(task)
                task.add_done_callback(_WRITES.discard)
        except BrokenPipeError:
            log.exception("sending a response failed: the client is gone")
            raise

    def send_error_without_id(self, code: int, message: str) -> None:
        """The answer to a message whose id cannot be known: an error with id null (lsprotocol
        leaves a null id out, which makes it no answer at all)."""
        self._send_data({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}})

    def report_error(self, error: Exception) -> None:
        """An error of no request's: logged, and told to the client's log."""
        self._server._report_server_error(error, JsonRpcException)

    def _execute_handler(
        self,
        msg_id: Any,
        handler: Any,
        callback: Any,
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> None:
        """pygls' own, then the handler's future is dropped from _request_futures when done.

        pygls 2.1.1 keeps in `_request_futures` the future of every notification run by
        a coroutine, a thread or a generator (every didOpen/didChange/didClose goes
        through pygls' builtin generators) under a fresh uuid, and only a request's
        answer removes its entry: about 2 KB per notification, for the life of the server.
        """
        super()._execute_handler(msg_id, handler, callback, args, kwargs)
        future = self._request_futures.get(msg_id)
        if future is not None:
            loop = asyncio.get_running_loop()
            future.add_done_callback(lambda done: _call_soon(loop, self._forget, msg_id, done))

    def _forget(self, msg_id: Any, future: Any) -> None:
        if self._request_futures.get(msg_id) is future:
            del self._request_futures[msg_id]

    def handle_message(self, message: Any) -> None:
        if isinstance(message, Invalid | dict | list | str | int | float | None):
            # Plain JSON: structure_message leaves an object without "jsonrpc" as it is.
            reason = message.reason if isinstance(message, Invalid) else "not a JSON-RPC message"
            log.warning("invalid request: %s", reason)
            self.send_error_without_id(
                types.ErrorCodes.InvalidRequest.value, f"invalid request: {reason}"
            )
            return
        if getattr(message, "method", None) and getattr(message, "id", None) is not None:
            self._answering[message.id] = time.monotonic()
        if isinstance(message, Malformed):
            if message.id is None:
                log.warning(
                    "ignoring malformed %s notification: %s", message.method, message.reason
                )
                return
            self._send_response(
                message.id,
                error=types.ResponseError(
                    code=types.ErrorCodes.InvalidParams,
                    message=f"invalid params for {message.method}: {message.reason}",
                ),
            )
            return
        super().handle_message(message)
