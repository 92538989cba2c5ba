"""Shared by tests that watch worker processes come and go (no tests here)."""

from __future__ import annotations

from pathlib import Path


def children() -> set[int]:
    """This process's child processes (Linux)."""
    found: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        try:
            found.update(int(c) for c in (task / "children").read_text().split())
        except FileNotFoundError:  # a thread that ended while we looked
            continue
    return found
