"""pygls' protocol with two changes.

A request whose params do not parse gets an InvalidParams error naming the problem
(stock pygls logs it and never answers, so the client waits forever); a malformed
notification is logged and ignored. And a JsonList result skips the cattrs pass.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.protocol import LanguageServerProtocol

log = logging.getLogger(__name__)


class JsonList(list):
    """A result that is JSON already: sent as is, without pygls' (slow) cattrs pass."""


@dataclass(frozen=True, slots=True)
class Malformed:
    """A message whose params failed to structure into the method's types."""

    id: Any
    method: str
    reason: str


def _reason(exc: BaseException) -> str:
    cause = exc.__cause__ or exc
    text = str(cause).strip() or type(cause).__name__
    subs = getattr(cause, "exceptions", None)
    if subs:
        text = f"{text}: " + "; ".join(str(e) for e in subs[:3])
    return text[:500]


class AnchorProtocol(LanguageServerProtocol):
    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if "jsonrpc" in data and "method" in data:
                return Malformed(data.get("id"), str(data["method"]), _reason(exc))
            raise

    def _send_response(
        self, msg_id: Any, result: Any = None, error: types.ResponseError | None = None
    ) -> None:
        if error is None and isinstance(result, JsonList):
            self._send_data({"jsonrpc": "2.0", "id": msg_id, "result": result})
            return
        super()._send_response(msg_id, result, error)

    def handle_message(self, message: Any) -> None:
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
