"""Reading LSP messages off a byte stream, surviving any bytes a client may send.

pygls 2.x reads frames in pygls.io_.run_async, which matches only the exact header
`Content-Length: <digits>\\r\\n`: a lowercase, negative, non-numeric or missing length
leaves it waiting for a header that never comes, and a huge one asks the stream for
that many bytes at once (MemoryError, the server dies). Here a bad frame is answered
with a JSON-RPC error whose id is null (the answer to a message that cannot be
read), logged once, and skipped up to the next Content-Length header.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from concurrent.futures import Executor
from typing import BinaryIO, Protocol

from lsprotocol import types

from anchor_ls.server.protocol import AnchorProtocol

log = logging.getLogger(__name__)

# The largest message read (a didOpen carries a whole file; the index skips files
# over 2 MiB anyway). A longer one is refused without reading its body.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
MAX_HEADER_LINE = 64 * 1024  # a longer line is not a header: read and dropped in pieces
PARSE_ERROR = types.ErrorCodes.ParseError.value
_LENGTH = b"content-length"  # header names are case-insensitive, as in HTTP
_HEADER = re.compile(rb"[A-Za-z0-9!#$%&'*+.^_`|~-]+[ \t]*:")  # an HTTP token, then a colon


class LineReader(Protocol):
    async def readline(self) -> bytes:
        """A line of at most MAX_HEADER_LINE bytes (a longer one comes in pieces without
        its newline); b"" at the end of the stream."""
        ...

    async def readexactly(self, n: int) -> bytes:
        """n bytes, or fewer at the end of the stream."""
        ...


class StdinLines:
    """A LineReader on a blocking binary stream, read on an executor thread."""

    def __init__(self, stream: BinaryIO, executor: Executor) -> None:
        self._stream = stream
        self._executor = executor

    async def readline(self) -> bytes:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._stream.readline, MAX_HEADER_LINE)

    async def readexactly(self, n: int) -> bytes:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._stream.read, n)


class StreamLines:
    """A LineReader on an asyncio stream (a TCP connection)."""

    def __init__(self, stream: asyncio.StreamReader) -> None:
        self._stream = stream

    async def readline(self) -> bytes:
        try:
            return await self._stream.readline()
        except ValueError:  # longer than the stream's limit: asyncio dropped it
            return b"\0"  # a piece of a line that is not a header

    async def readexactly(self, n: int) -> bytes:
        try:
            return await self._stream.readexactly(n)
        except asyncio.IncompleteReadError as err:
            return err.partial


def length_header(line: bytes) -> tuple[int, bytes] | None:
    """(where a Content-Length header starts in line, its value) or None when line has none.

    The last one counts: after a body sent without a header, the next header follows
    the body on the same line.
    """
    at = line.lower().rfind(_LENGTH)
    if at < 0:
        return None
    name_rest, colon, value = line[at + len(_LENGTH) :].partition(b":")
    if not colon or name_rest.strip(b" \t"):
        return None
    return at, value.strip()


def _is_header(line: bytes) -> bool:
    """Whether line is some header ('Name: value'), e.g. Content-Type."""
    return _HEADER.match(line) is not None


class Framer:
    """The state of the header reader: the header block being read, or bytes being dropped."""

    def __init__(self, protocol: AnchorProtocol) -> None:
        self.protocol = protocol
        self.length: int | None = None
        self.problem: str | None = None  # what is wrong with this block's Content-Length
        self.started = False  # a header of this block was read
        self.dropping = False  # skipping bytes up to the next Content-Length header

    def drop(self, reason: str) -> None:
        """Skip what follows up to the next Content-Length header; answer and log once."""
        self._reset()
        if self.dropping:
            return
        self.dropping = True
        log.warning("unreadable message (%s): skipped up to the next Content-Length header", reason)
        self.protocol.send_error_without_id(PARSE_ERROR, f"unreadable message: {reason}")

    def _reset(self) -> None:
        self.length, self.problem, self.started = None, None, False

    def header_line(self, line: bytes) -> int | None:
        """Take one line of a header block; the body length once the block is complete."""
        complete = line.endswith(b"\n")
        if complete and not line.strip():  # the blank line that ends a header block
            if not self.started:
                return None  # a stray blank line between messages, or dropped bytes
            if self.problem is not None:
                self.drop(self.problem)
            elif self.length is None:
                self.drop("a header block without Content-Length")
            else:
                length = self.length
                self._reset()
                return length
            return None
        found = length_header(line) if complete else None
        if found is not None:
            at, value = found
            if line[:at].strip():
                self.drop(f"{at} bytes that are not a header")
            self._reset()
            self.dropping = False
            self.started = True
            if not value.isdigit() or len(value) > 20:
                self.problem = f"Content-Length {value[:40].decode('latin-1')!r} is not a length"
            elif int(value) > MAX_MESSAGE_BYTES:
                self.problem = (
                    f"Content-Length {int(value)} is over the {MAX_MESSAGE_BYTES}-byte limit"
                )
            else:
                self.length = int(value)
            return None
        if self.dropping:
            return None
        if complete and _is_header(line):
            self.started = True  # Content-Type and the like: nothing to do with them
            return None
        self.drop(f"{len(line)} bytes that are not a header" if complete else "an overlong line")
        return None


async def serve(stop: threading.Event, reader: LineReader, protocol: AnchorProtocol) -> None:
    """Read messages and hand them to the protocol until the stream ends or stop is set."""
    framer = Framer(protocol)
    while not stop.is_set():
        line = await reader.readline()
        if not line:
            break
        length = framer.header_line(line)
        if length is None:
            continue
        body = await reader.readexactly(length)
        if len(body) < length:
            log.warning("the stream ended inside a message (%d of %d bytes)", len(body), length)
            break
        try:
            message = json.loads(body, object_hook=protocol.structure_message)
        except ValueError as err:  # not JSON, or not in a Unicode encoding
            log.warning("a message that is not JSON: %s", err)
            protocol.send_error_without_id(PARSE_ERROR, f"message is not JSON: {err}")
            continue
        except Exception as err:  # pygls could not structure it (e.g. a response)
            log.exception("unable to read a message")
            protocol.report_error(err)
            continue
        try:
            protocol.handle_message(message)
        except Exception as err:
            log.exception("unable to handle a message")
            protocol.report_error(err)
