"""Library outlines read ahead, by a process of their own, while the repository resolves.

The first index on a machine reads every library file it reaches, and resolution reaches
them only while the graph is put together, in this process, one at a time (0.8 s of DRF's
1.6 s extra). The modules the repository imports are known as soon as its summaries are
in: a second process follows those names as Externals will (the same code, so the same
files) and writes the outlines it parsed to the library cache, in one transaction, while
this process resolves. Externals then finds them there; what the prefetch missed it
still reads itself. The prefetch only fills the cache: no answer depends on it.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterable
from multiprocessing.connection import Connection
from multiprocessing.context import BaseContext
from multiprocessing.process import BaseProcess

from anchor_ls.index.environment import Environment
from anchor_ls.index.externals import Externals
from anchor_ls.syntax.summary import FileSummary

__all__ = ["Prefetch", "imported_names", "prefetch_outlines"]


def imported_names(summaries: Iterable[FileSummary], internal: set[str]) -> list[str]:
    """The absolute names the files import (`django.db.models`, `os.path.join`) whose
    first part is none of the repository's own top-level modules (internal), sorted."""
    names: set[str] = set()
    for summary in summaries:
        for scope in summary.scopes:
            for binding in scope.bindings:
                value = binding.value
                tag = value[0]
                if tag in ("im", "ima") and not value[2]:
                    names.add(value[1])
                elif tag == "if" and not value[2] and value[1]:
                    names.add(f"{value[1]}.{value[3]}")
            for star in scope.star_imports:
                if not star.level and star.module:
                    names.add(star.module)
    return sorted(n for n in names if n.partition(".")[0] not in internal)


def prefetch_outlines(externals: Externals, names: Iterable[str]) -> int:
    """Follow each name as resolution will (the module, the definition, a class's bases)
    so that every library file on the way is read; returns how many were parsed (not
    found in the library cache)."""
    for name in names:
        try:
            if not externals.installed(name):
                continue
            module = externals.module(name)
            if module is not None:
                externals.summary(module)
            found = externals.target(name)
            if found is not None and externals.is_class(found):
                externals.mro(found)
        except Exception:  # a library the syntax layer or the walk cannot take: left lazy
            continue
    return externals.parsed


def _run(environment: Environment, names: list[str], report: Connection) -> None:
    """In the prefetch process: parse, save in one transaction, say how many."""
    gc.disable()  # short-lived: outlines are acyclic
    externals = Externals(environment)
    parsed = 0
    try:
        parsed = prefetch_outlines(externals, names)
    finally:
        externals.close()  # saves what was parsed
        with contextlib.suppress(OSError):
            report.send(parsed)
            report.close()


class Prefetch:
    """A running prefetch: wait() for it (and how many outlines it parsed) before the
    graph is put together."""

    def __init__(self, context: BaseContext, environment: Environment, names: list[str]):
        receive, send = context.Pipe(duplex=False)
        self._receive = receive
        self._process: BaseProcess | None = context.Process(  # type: ignore[attr-defined]
            target=_run, args=(environment, names, send), daemon=True
        )
        self._process.start()
        send.close()
        self.parsed = 0

    def wait(self) -> int:
        """The outlines the prefetch parsed (0 when it failed: Externals reads them)."""
        process, self._process = self._process, None
        if process is None:
            return self.parsed
        try:
            if self._receive.poll(None):
                self.parsed = int(self._receive.recv())
        except (EOFError, OSError, ValueError, TypeError):
            self.parsed = 0
        finally:
            self._receive.close()
            process.join()
        return self.parsed
