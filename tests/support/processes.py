"""Shared by tests that watch worker processes come and go (no tests here)."""

from __future__ import annotations

from pathlib import Path


def children(pid: int | str = "self") -> set[int]:
    """The child processes of pid, this process by default (Linux)."""
    found: set[int] = set()
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except FileNotFoundError:  # the process has ended
        return found
    for task in tasks:
        try:
            found.update(int(c) for c in (task / "children").read_text().split())
        except FileNotFoundError:  # a thread that ended while we looked
            continue
    return found
