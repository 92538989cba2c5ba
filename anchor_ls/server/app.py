"""Entry point: build the server with every feature registered, then serve stdio or TCP."""

from __future__ import annotations

import logging
import os
import sys
from typing import BinaryIO

from anchor_ls.server import commands, features, lifecycle, sync
from anchor_ls.server.server import AnchorServer


def create_server() -> AnchorServer:
    server = AnchorServer()
    for module in (lifecycle, sync, features, commands):
        module.register(server)
    return server


def _protocol_streams() -> tuple[BinaryIO, BinaryIO]:
    """The LSP stream on private copies of fds 0 and 1; sys.stdin and sys.stdout go elsewhere.

    A stray print() then cannot corrupt the protocol, and nothing else ever waits on
    the lock of the stream pygls' reader thread blocks in.
    """
    stdin = os.fdopen(os.dup(0), "rb")
    stdout = os.fdopen(os.dup(1), "wb")
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    sys.stdout = sys.stderr
    return stdin, stdout


def run(tcp: tuple[str, int] | None = None) -> None:
    """Serve one client over stdio (tcp None) or on HOST:PORT; returns when it disconnects."""
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.WARNING,
        format="anchor-ls %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("anchor_ls").setLevel(os.environ.get("ANCHOR_LS_LOG", "WARNING").upper())
    # Requests hand the GIL between the event loop, the readers and a busy indexer
    # thread; a shorter switch interval keeps answers quick while an index builds.
    sys.setswitchinterval(0.001)
    server = create_server()
    if tcp is None:
        server.start_io(*_protocol_streams())
    else:
        server.start_tcp(*tcp)
    # A build may still be running on the indexer thread; do not wait for it.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
