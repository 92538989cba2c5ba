"""DIR/results.jsonl and what a run finds already done in DIR.

A task is done when DIR/<id> exists: it is renamed into place only once complete, so its
presence alone says so, whatever happened to the run that wrote it. Every run appends a
line per task of its manifest (ok, failed with the error, or skipped as already done);
the last line of an id is its state.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
from pathlib import Path
from typing import IO, Any

from anchor_ls.batch.chain import PARTIAL
from anchor_ls.batch.manifest import RESULTS_FILE

RESULTS = RESULTS_FILE
LOCK = ".lock"


class Busy(Exception):
    """Another batch run writes into the same output folder."""


class Results:
    """The open results file of a run (and its lock on the output folder)."""

    def __init__(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.out = out
        self._lock: IO[bytes] = open(out / LOCK, "wb")  # noqa: SIM115  (held for the run)
        try:
            fcntl.flock(self._lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock.close()
            raise Busy(f"another batch run is writing into {out}") from None
        # What a run stopped in the middle of (killed before it could clean up) is garbage.
        shutil.rmtree(out / PARTIAL, ignore_errors=True)
        # backslashreplace: a lone surrogate (a path of bytes that are no UTF-8, in an
        # error) is written as its JSON escape, \udce9, not a crash of the run
        self._file = open(  # noqa: SIM115  (held for the run)
            out / RESULTS, "a", encoding="utf-8", errors="backslashreplace"
        )
        if not _ends_a_line(out / RESULTS):  # a run killed as it wrote: its line stays
            self._file.write("\n")  # damaged, the next one is whole
            self._file.flush()
        self.counts: dict[str, int] = {"ok": 0, "failed": 0, "skipped": 0}

    def done(self, ident: str) -> bool:
        return (self.out / ident).is_dir()

    def write(self, result: dict[str, Any]) -> None:
        """One line, flushed: a crash loses at most the line being written."""
        self._file.write(json.dumps(result, ensure_ascii=False) + "\n")
        self._file.flush()
        self.counts[result["status"]] = self.counts.get(result["status"], 0) + 1

    def close(self) -> None:
        self._file.close()
        with contextlib.suppress(OSError):
            (self.out / PARTIAL).rmdir()  # empty unless a worker still writes (or was killed)
        self._lock.close()  # the file stays: removing it would race with a run starting


def _ends_a_line(path: Path) -> bool:
    """Whether the file at path is empty or ends with a newline."""
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        if handle.tell() == 0:
            return True
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


def last_results(out: Path) -> dict[str, dict[str, Any]]:
    """The last line of each id in DIR/results.jsonl (damaged lines are passed over)."""
    found: dict[str, dict[str, Any]] = {}
    with contextlib.suppress(FileNotFoundError), open(out / RESULTS, encoding="utf-8") as handle:
        for line in handle:
            with contextlib.suppress(ValueError):
                item = json.loads(line)
                if isinstance(item, dict) and isinstance(item.get("id"), str):
                    found[item["id"]] = item
    return found
