"""What the command line tells a person at a terminal while it works: a progress bar.

The bar goes to stderr and only when stderr is a terminal, so piped output and logs get
nothing extra; `quiet` turns it off there too. Every long command of the CLI (and any
later one) takes its callback from `progress`.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from tqdm import tqdm

from anchor_ls.index.repository import Progress

FALLBACK_SIZE = (80, 24)  # columns, rows
REDRAW_SECONDS = 0.1  # a tree of thousands of files redraws ten times a second, not per file


def _columns(stream: TextIO) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 0


def _silent(done: int, total: int, relpath: str) -> None:
    return None


def shows_progress(stream: TextIO, quiet: bool) -> bool:
    """Whether a bar belongs on stream: a terminal, and not asked to be quiet."""
    if quiet:
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


@contextmanager
def progress(
    label: str, *, quiet: bool = False, stream: TextIO | None = None
) -> Iterator[Progress]:
    """A progress(done, total, relpath) callback drawing one bar labelled `label` on stderr
    (or `stream`), cleared when the block ends; a callback that does nothing when the
    stream is not a terminal or `quiet` is set. `total` may change between calls (a
    build counts parsing and resolving as two halves; a warm start only files)."""
    out = sys.stderr if stream is None else stream
    if not shows_progress(out, quiet):
        yield _silent
        return
    wide = _columns(out) > 0  # a terminal that says its width (a fresh pty says 0)
    bar = tqdm(
        total=0,
        desc=label,
        unit="file",
        file=out,
        leave=False,
        dynamic_ncols=wide,
        ncols=None if wide else FALLBACK_SIZE[0],
        nrows=None if wide else FALLBACK_SIZE[1],  # tqdm hides a bar below the last row
    )

    shown = [0.0]  # when the bar was last drawn

    def update(done: int, total: int, relpath: str) -> None:
        if total != bar.total:
            bar.total = total
        bar.n = min(done, total) if total else done
        bar.set_postfix_str(relpath, refresh=False)
        now = time.monotonic()
        if done >= total or now - shown[0] >= REDRAW_SECONDS:  # the end is always drawn
            bar.refresh()
            shown[0] = now

    try:
        yield update
    finally:
        bar.close()
