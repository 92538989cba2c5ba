"""The live index of one repository: build, warm start from cache, incremental update."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from anchor_ls.index.model import Graph
from anchor_ls.index.stats import IndexStats

# progress(done, total, relpath)
Progress = Callable[[int, int, str], None]


@dataclass(frozen=True, slots=True)
class Problem:
    """A file that was read badly or not at all; reported, never fatal."""

    path: str
    kind: str  # syntax | decode | too-large | binary | unreadable | vanished | symlink-loop
    message: str


class Index:
    """Index(root).build() then query `index.graph` (under `index.graph.lock`)."""

    def __init__(
        self,
        root: str | Path,
        *,
        cache_dir: str | Path | None = None,
        exclude: Sequence[str] = (),
        use_cache: bool = True,
    ) -> None:
        self.root = Path(root).resolve()
        self.graph = Graph(str(self.root))
        self.problems: dict[str, Problem] = {}
        raise NotImplementedError

    def build(self, progress: Progress | None = None) -> IndexStats:
        """Index every Python file under root, reusing cached summaries by content hash."""
        raise NotImplementedError

    def update_file(self, relpath: str, text: str | bytes) -> set[str]:
        """Re-index one file from text in memory; returns the relpaths whose facts changed."""
        raise NotImplementedError

    def reload_file(self, relpath: str) -> set[str]:
        """Re-read one file from disk (a removal when it is gone)."""
        raise NotImplementedError

    def remove_file(self, relpath: str) -> set[str]:
        raise NotImplementedError

    def source(self, relpath: str) -> bytes | None:
        """The bytes last indexed for relpath (an editor buffer or the disk)."""
        raise NotImplementedError

    def relpath(self, path: str | Path) -> str | None:
        """`path` relative to root with '/' separators, or None when outside root."""
        raise NotImplementedError

    def stats(self) -> IndexStats:
        raise NotImplementedError
