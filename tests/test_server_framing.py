"""Bytes that are not a well-framed message get an error with id null, and the server
goes on answering the next message; notifications do not pile up in memory.

A real `anchor-ls serve` process over stdio, fed raw bytes (a typed client always
frames its messages properly).
"""

from __future__ import annotations

import json
import queue
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

import pytest
from support.lsp import copy_example

TIMEOUT = 30.0
PARSE_ERROR = -32700
INVALID_REQUEST = -32600


class RawServer:
    """An `anchor-ls serve` process spoken to in raw bytes; its messages arrive on a queue."""

    def __init__(self, log: Path, tcp: bool = False) -> None:
        self.log_path = log
        self._log = log.open("wb")
        command = [sys.executable, "-m", "anchor_ls", "serve"]
        if tcp:
            port = free_port()
            command += ["--tcp", f"127.0.0.1:{port}"]
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log
        )
        if tcp:
            connection = connect(port, self.process)
            self._in, out = connection.makefile("wb"), connection.makefile("rb")
        else:
            assert self.process.stdin is not None and self.process.stdout is not None
            self._in, out = self.process.stdin, self.process.stdout
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        threading.Thread(target=self._read, args=(out,), daemon=True).start()

    def _read(self, stream: IO[bytes]) -> None:
        """Parse the server's frames (which are well formed) onto the queue."""
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    self.messages.put(None)
                    return
                if not line.strip():
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            assert length is not None
            self.messages.put(json.loads(stream.read(length)))

    def send(self, data: bytes) -> None:
        self._in.write(data)
        self._in.flush()

    def next(self) -> dict[str, Any]:
        """The next message from the server that is not a log or progress notification."""
        while True:
            message = self.messages.get(timeout=TIMEOUT)
            assert message is not None, "the server closed its output:\n" + self.log()
            if message.get("method") not in ("window/logMessage", "$/progress"):
                return message

    def answer(self, msg_id: Any) -> dict[str, Any]:
        """The next message, which must answer msg_id."""
        message = self.next()
        assert message.get("id") == msg_id, message
        return message

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def rss_kb(self) -> int:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(next(ln for ln in status.splitlines() if ln.startswith("VmRSS:")).split()[1])

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self._log.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def connect(port: int, process: subprocess.Popen[bytes]) -> socket.socket:
    """A connection to the server once it listens (it imports pygls first)."""
    for _attempt in range(600):
        assert process.poll() is None, "the server exited"
        try:
            return socket.create_connection(("127.0.0.1", port))
        except ConnectionRefusedError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on port {port}")


def body(msg_id: Any, method: str, params: Any = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if msg_id is not None:
        message["id"] = msg_id
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


def frame(data: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(data) + data


def initialize(msg_id: Any) -> bytes:
    return body(msg_id, "initialize", {"processId": None, "rootUri": None, "capabilities": {}})


def stats(msg_id: Any) -> bytes:
    return body(msg_id, "workspace/executeCommand", {"command": "anchor.stats", "arguments": []})


@pytest.fixture
def server(tmp_path: Path) -> Any:
    raw = RawServer(tmp_path / "server.log")
    yield raw
    raw.close()


def assert_serves(server: RawServer, msg_id: int) -> None:
    """A good request after bad bytes is answered with its result."""
    server.send(frame(stats(msg_id)))
    answer = server.answer(msg_id)
    assert "result" in answer and answer["result"]["folders"] == [], answer


BAD_FRAMES = {
    "huge length": b"Content-Length: 99999999999999\r\n\r\n" + stats(90),
    "length not a number": b"Content-Length: abc\r\n\r\n" + stats(91),
    "negative length": b"Content-Length: -5\r\n\r\n" + stats(92),
    "no length header": b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n"
    + stats(93),
    "no header at all": stats(94),
    "a line that is no header": b"hello\r\n",
}


@pytest.mark.parametrize("bad", list(BAD_FRAMES), ids=list(BAD_FRAMES))
def test_a_bad_frame_is_answered_and_the_next_message_served(server: RawServer, bad: str) -> None:
    server.send(frame(initialize(1)))
    assert "result" in server.answer(1)
    server.send(BAD_FRAMES[bad] + frame(stats(2)))
    error = server.answer(None)
    assert error["error"]["code"] == PARSE_ERROR, error
    assert server.answer(2)["result"]["folders"] == []
    assert_serves(server, 3)
    assert server.process.poll() is None
    assert "unreadable message" in server.log()


def test_a_bad_frame_before_initialize(server: RawServer) -> None:
    server.send(b"Content-Length: 99999999999999\r\n\r\n{}" + frame(initialize(1)))
    assert server.answer(None)["error"]["code"] == PARSE_ERROR
    assert "capabilities" in server.answer(1)["result"]


def test_header_names_are_case_insensitive(server: RawServer) -> None:
    data = initialize(1)
    server.send(b"content-length: %d\r\ncontent-type: x\r\n\r\n" % len(data) + data)
    assert "capabilities" in server.answer(1)["result"]
    data = stats(2)
    server.send(b"CONTENT-LENGTH:%d\r\n\r\n" % len(data) + data)
    assert server.answer(2)["result"]["folders"] == []
    assert "unreadable" not in server.log()


def test_tcp_reads_on_after_bad_frames(tmp_path: Path) -> None:
    server = RawServer(tmp_path / "server.log", tcp=True)
    try:
        server.send(b"Content-Length: 99999999999999\r\n\r\n{}" + frame(initialize(1)))
        assert server.answer(None)["error"]["code"] == PARSE_ERROR
        assert "capabilities" in server.answer(1)["result"]
        server.send(b"x" * 200_000 + b"\r\n" + frame(stats(2)))  # over asyncio's line limit
        assert server.answer(None)["error"]["code"] == PARSE_ERROR
        assert server.answer(2)["result"]["folders"] == []
        assert "overlong line" in server.log()
    finally:
        server.close()


@pytest.mark.parametrize("bad_id", [{"a": 1}, [1], 1.5, True, None], ids=repr)
def test_a_request_id_that_is_no_id_gets_invalid_request(server: RawServer, bad_id: Any) -> None:
    server.send(frame(initialize(1)))
    assert "result" in server.answer(1)
    message = json.loads(stats(0))
    message["id"] = bad_id
    server.send(frame(json.dumps(message).encode()))
    error = server.answer(None)
    assert error["error"]["code"] == INVALID_REQUEST, error
    assert_serves(server, 2)


@pytest.mark.parametrize(
    "data", [b"{not json", b"\xff\xfe\xfd", b"[1, 2]", b'"text"', b'{"id": 4}'], ids=repr
)
def test_a_body_that_is_no_message_is_answered(server: RawServer, data: bytes) -> None:
    server.send(frame(initialize(1)) + frame(data))
    assert "result" in server.answer(1)
    error = server.answer(None)
    assert error["error"]["code"] in (PARSE_ERROR, INVALID_REQUEST), error
    assert_serves(server, 2)


def test_notifications_do_not_pile_up(server: RawServer) -> None:
    """pygls 2.1.1 kept a future per didChange forever (about 2 KB each)."""
    server.send(frame(initialize(1)))
    assert "result" in server.answer(1)
    server.send(frame(body(None, "initialized", {})))
    doc = "file:///nowhere/x.py"
    opened = {"textDocument": {"uri": doc, "languageId": "python", "version": 0, "text": "x = 1"}}
    server.send(frame(body(None, "textDocument/didOpen", opened)))

    def changes(first: int, count: int) -> None:
        out = bytearray()
        for version in range(first, first + count):
            params = {
                "textDocument": {"uri": doc, "version": version},
                "contentChanges": [{"text": f"x = {version}\n"}],
            }
            out += frame(body(None, "textDocument/didChange", params))
        server.send(bytes(out))
        assert_serves(server, 1000 + first)  # every change before it is handled

    changes(1, 2000)
    before = server.rss_kb()
    changes(2001, 4000)
    grown = server.rss_kb() - before
    assert grown < 4000 * 2 // 4, f"RSS grew {grown} KB over 4000 didChange notifications"


def test_shutdown_answers_while_notifications_are_pending(
    server: RawServer, tmp_path: Path
) -> None:
    """pygls' shutdown cancels the pending handlers while it walks _request_futures: a
    handler's future must not leave the map right then, inside that walk."""
    root = copy_example(tmp_path)
    root_uri = root.as_uri()
    params = {"processId": None, "rootUri": root_uri, "capabilities": {}}
    doc = {"uri": f"{root_uri}/pkg/service.py"}
    opened = {"textDocument": {**doc, "languageId": "python", "version": 1, "text": "x = 1\n"}}
    server.send(
        frame(body(1, "initialize", params))
        + frame(body(None, "initialized", {}))
        + frame(body(None, "textDocument/didOpen", opened))
        + frame(body(None, "textDocument/didClose", {"textDocument": doc}))
        + frame(body(2, "shutdown"))
    )
    assert "result" in server.answer(1)
    answer = server.answer(2)
    assert "result" in answer and "error" not in answer, answer
