"""Library outlines read ahead, by a process of its own, while the repository resolves.

The first index on a machine reads every library file it reaches, and resolution reaches
them only while the graph is put together, in this process, one at a time (0.8 s of DRF's
1.6 s extra). The modules the repository imports are known as soon as its summaries are
in: one process follows them as Externals will (the same code, so the same files) and
writes the outlines it parsed to the library cache in one transaction while the
repository resolves. Externals then finds them there; what the prefetch missed it still
reads itself. The prefetch only fills the cache: no answer depends on it.

One process, not one per core: resolution already keeps the cores busy, and two would
each find the names and parse the files every package leads to (`builtins.pyi`, `typing`):
a quarter more CPU for DRF's 194 outlines, in a build that is CPU-bound throughout.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
from collections.abc import Iterable, Iterator
from multiprocessing.connection import Connection
from multiprocessing.context import BaseContext
from multiprocessing.process import BaseProcess
from multiprocessing.sharedctypes import Synchronized
from typing import NamedTuple

from anchor_ls.index.environment import Environment
from anchor_ls.index.externals import Externals, Learned
from anchor_ls.syntax.summary import Expr, FileSummary, scope_bodies

__all__ = ["Prefetch", "imported_names", "prefetch_outlines"]

STALL_SECONDS = 1.0  # a prefetch that follows no name for this long is ended


def imported_names(
    summaries: Iterable[FileSummary], internal: set[str], *, calls: bool = False
) -> list[str]:
    """The absolute names the files import (`django.db.models`, `os.path.join`) whose
    first part is none of the repository's own top-level modules (internal), sorted.
    calls: and what their bodies reach through an imported name, called or read
    (`asyncio.sleep(1)`, `except json.JSONDecodeError` after `import asyncio, json`),
    which reads every body of the files."""
    names: set[str] = set()
    for summary in summaries:
        imported: dict[str, str] = {}  # a name an import binds in the file -> what
        for scope in summary.scopes:
            for binding in scope.bindings:
                value = binding.value
                tag = value[0]
                if tag == "im" and not value[2]:
                    names.add(value[1])
                    imported[binding.name] = binding.name  # `import a.b` binds a
                elif tag == "ima" and not value[2]:
                    names.add(value[1])
                    imported[binding.name] = value[1]
                elif tag == "if" and not value[2] and value[1]:
                    full = f"{value[1]}.{value[3]}"
                    names.add(full)
                    imported.setdefault(binding.name, full)
            for star in scope.star_imports:
                if not star.level and star.module:
                    names.add(star.module)
        if calls and imported:
            for sites, reads, uses in scope_bodies(summary):
                exprs = [site.func for site in sites]
                exprs += [read.expr for read in reads]
                exprs += [use.expr for use in uses if use.kind == "r"]
                for expr in exprs:
                    found = _dotted(expr, imported)
                    if found is not None:
                        names.add(found)
    return sorted(n for n in names if n.partition(".")[0] not in internal)


def _dotted(expr: Expr, imported: dict[str, str], depth: int = 0) -> str | None:
    """`asyncio.sleep`, `models.Manager().get`: a call's function as a dotted name from
    an imported name, as the binder names what lies outside; else None."""
    tag = expr[0]
    if depth > 16:
        return None
    if tag == "n":
        return imported.get(expr[1])
    if tag == "a":
        base = _dotted(expr[1], imported, depth + 1)
        return f"{base}.{expr[2]}" if base is not None else None
    if tag == "c":
        base = _dotted(expr[1], imported, depth + 1)
        return f"{base}()" if base is not None else None
    return None


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
                for source in externals.star_sources(module):  # names asked of it are there
                    externals.summary(source)
            found = externals.target(name)
            if found is not None and externals.is_class(found):
                externals.mro(found)
        except Exception:  # a library the syntax layer or the walk cannot take: left lazy
            continue
    return externals.parsed


class Names(NamedTuple):
    """What the prefetch process reads: the names the files import, found in the process
    (a forked one has the summaries: reading every body of them is work the build
    process need not wait for), else as given."""

    given: list[str]
    summaries: dict[str, FileSummary] | None
    internal: set[str]

    def names(self) -> list[str]:
        if self.summaries is None:
            return self.given
        return imported_names(self.summaries.values(), self.internal, calls=True)


def _counted(names: Iterable[str], followed: Synchronized[int]) -> Iterator[str]:
    """The names, each counted in followed once taken: the build sees the prefetch move."""
    for name in names:
        followed.value += 1
        yield name


def _run(
    environment: Environment, job: Names, report: Connection, followed: Synchronized[int]
) -> None:
    """In the prefetch process: parse, save in one transaction, say how many and hand
    over the names followed (the build follows none of them again, and reads the
    outlines back from the library cache as it asks for them).

    On a machine that was not busy, it runs only on a core nothing else wants
    (SCHED_IDLE): resolution is not slowed by it (DRF's first index: 0.3 s of its 1.2 s),
    and it has the cores while the build waits for it, unless other programs keep them
    busy (see Prefetch.wait)."""
    gc.disable()  # short-lived: outlines are acyclic
    _yield_cores()
    externals = Externals(environment)
    parsed = 0
    try:
        parsed = prefetch_outlines(externals, _counted(job.names(), followed))
    finally:
        externals.close()  # saves what was parsed
        with contextlib.suppress(OSError):
            report.send((parsed, externals.handover()))
            report.close()


def _yield_cores() -> None:
    """Run this process only when a core is idle (Linux's SCHED_IDLE; elsewhere at the
    lowest priority), unless other work already kept every core busy (the load average
    over the last minute): an idle-priority process would then not run at all, and the
    build would end it and read the libraries itself, one at a time (DRF beside three
    busy loops: 11-14 s, 5-6 s at normal priority)."""
    with contextlib.suppress(AttributeError, OSError):
        if os.getloadavg()[0] >= (os.cpu_count() or 1):
            return
    with contextlib.suppress(AttributeError, OSError):
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        return
    with contextlib.suppress(AttributeError, OSError):
        os.nice(19)


class Prefetch:
    """The running prefetch process: wait() for it (and how many outlines it parsed)
    before the graph is put together."""

    def __init__(
        self,
        context: BaseContext,
        environment: Environment,
        summaries: dict[str, FileSummary],
        internal: set[str],
    ):
        self.parsed = 0
        self.learned: Learned | None = None  # what the prefetch found, once waited for
        forked = context.get_start_method() == "fork"
        given = [] if forked else imported_names(summaries.values(), internal)
        job = Names(given, summaries if forked else None, internal)
        receive, send = context.Pipe(duplex=False)
        self._followed: Synchronized[int] = context.Value("q", 0)  # type: ignore[attr-defined]
        process = context.Process(  # type: ignore[attr-defined]
            target=_run, args=(environment, job, send, self._followed), daemon=True
        )
        try:
            process.start()
        except BaseException:
            receive.close()
            raise
        finally:
            send.close()
        self._running: tuple[BaseProcess, Connection] | None = (process, receive)

    def done(self) -> bool:
        """Whether wait() would return at once: the prefetch answered, ended or was waited for."""
        running = self._running
        return running is None or running[1].poll(0)

    def wait(self) -> int:
        """The outlines the prefetch parsed (if it failed, none: Externals reads them);
        what it found is in learned then."""
        running, self._running = self._running, None
        if running is None:
            return self.parsed
        process, receive = running
        try:
            if self._answers(process, receive):
                parsed, learned = receive.recv()
                self.parsed = int(parsed)
                self.learned = learned if isinstance(learned, Learned) else None
        except (EOFError, OSError, ValueError, TypeError, pickle.UnpicklingError):
            pass
        finally:
            receive.close()
            process.join()
        return self.parsed

    def _answers(self, process: BaseProcess, receive: Connection) -> bool:
        """Whether the prefetch answers (or ends). A prefetch that follows no name for
        STALL_SECONDS is ended instead: other programs keep every core busy, so it does
        not run (SCHED_IDLE), and the build reads the rest lazily at its own priority."""
        followed = self._followed.value
        while not receive.poll(STALL_SECONDS):
            if self._followed.value == followed:
                process.kill()
                return False
            followed = self._followed.value
        return True
