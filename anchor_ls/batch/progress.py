"""What a batch run shows while it runs: a bar on a terminal (tasks done, failed, rate,
ETA), one plain line per task otherwise (a log, a CI job)."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO


class Progress:
    def __init__(self, total: int, stream: TextIO | None = None, *, bar: bool | None = None):
        self.stream = stream or sys.stderr
        self.total = total
        self.done = 0
        self.failed = 0
        self._start = time.monotonic()
        if bar is None:
            bar = self.stream.isatty()
        self._bar: Any = None
        if bar:
            from tqdm import tqdm

            self._bar = tqdm(
                total=total,
                file=self.stream,
                unit="task",
                dynamic_ncols=True,
                smoothing=0.1,
            )

    def update(self, result: dict[str, Any]) -> None:
        self.done += 1
        status = result["status"]
        if status == "failed":
            self.failed += 1
        if self._bar is not None:
            self._bar.set_postfix_str(f"failed {self.failed}", refresh=False)
            self._bar.update(1)
            return
        elapsed = time.monotonic() - self._start
        rate = self.done / elapsed * 60 if elapsed > 0 else 0.0
        line = f"[{self.done}/{self.total}] {status} {result['id']}"
        if "seconds" in result:
            line += f" ({result['seconds']:.1f} s)"
        if status == "failed":
            line += f": {result.get('error', '')}"
        print(f"{line}  | failed {self.failed}, {rate:.1f} tasks/min", file=self.stream)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
