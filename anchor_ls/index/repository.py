"""The live index of one repository: build, warm start from cache, incremental update."""

from __future__ import annotations

import contextlib
import errno
import gc
import hashlib
import os
import pickle
import sqlite3
import stat
import threading
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from multiprocessing.context import BaseContext
from pathlib import Path
from typing import Any

from anchor_ls import __version__
from anchor_ls.index import facts as factlib
from anchor_ls.index.bind.rounds import reresolve, resolve_all
from anchor_ls.index.binder import Binder
from anchor_ls.index.bodies import BodyEdit, body_edit, first_changed_line
from anchor_ls.index.cache import Cache, content_hash, default_cache_dir
from anchor_ls.index.files import Skipped, is_excluded, python_files
from anchor_ls.index.model import CALLS, IMPORTS, INHERITS, Edge, Entity, Graph, path_of
from anchor_ls.index.mro import mro_of
from anchor_ls.index.shares import Shares
from anchor_ls.index.sources import Sources
from anchor_ls.index.state import FileFacts
from anchor_ls.index.stats import IndexStats, edge_counts, graph_figures
from anchor_ls.index.testcode import is_test_name, is_test_path
from anchor_ls.syntax.parse import has_word, may_mention, summarize, words_sketch
from anchor_ls.syntax.reparse import Reparser
from anchor_ls.syntax.source import MAX_FILE_BYTES, UnreadableSource, declared_encoding
from anchor_ls.syntax.summary import Body, FileSummary, pack_bodies
from anchor_ls.syspath import start_children_safe

# progress(done, total, relpath)
Progress = Callable[[int, int, str], None]
_PARALLEL_MIN_FILES = 64
_SERVED_MIN_FILES = 200  # spawning workers (about a second) is worth it from about here


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
        max_file_bytes: int = MAX_FILE_BYTES,
        workers: int | None = None,
    ) -> None:
        self.root = Path(root).resolve()
        self.graph = Graph(str(self.root))
        self.problems: dict[str, Problem] = {}
        self.exclude = tuple(exclude)
        self.max_file_bytes = max_file_bytes
        self.workers = workers if workers is not None else min(2, os.cpu_count() or 1)
        self._cache_dir = Path(cache_dir) if cache_dir else None
        self._use_cache = use_cache
        self._cache: Cache | None = None
        self.binder = Binder()
        self._sources = Sources()
        self._reparser = Reparser()  # the trees of files under edit
        self._hashes: dict[str, str] = {}
        self._facts: dict[str, FileFacts] = {}
        self._interface_memo: dict[str, list[tuple[FileSummary, set[tuple[str, str]]]]] = {}
        self._ids: dict[str, list[str]] = {}
        # After a warm start, until the resolution state (facts, argument values) is read
        # from the cache: (paths, the fingerprint it is stored under, site counts, hashes).
        self._lazy: tuple[list[str], str, tuple[int, int, int], dict[str, str]] | None = None
        self._stats = IndexStats()
        self._built: str | None = None  # the fingerprint of the build, until a file changes
        self.lock = threading.RLock()  # serialises mutations

    # ----- paths ------------------------------------------------------------
    def relpath(self, path: str | Path) -> str | None:
        """`path` relative to root with '/' separators, or None when outside root."""
        try:
            rel = Path(os.path.abspath(path)).relative_to(self.root)
        except ValueError:
            try:
                rel = Path(path).resolve().relative_to(self.root)
            except (ValueError, OSError):
                return None
        text = rel.as_posix()
        return None if text in ("", ".") else text

    def is_indexable(self, relpath: str) -> bool:
        return relpath.endswith(".py") and not is_excluded(relpath, self.exclude)

    def source(self, relpath: str) -> bytes | None:
        """The bytes last indexed for relpath (an editor buffer or the disk)."""
        return self._sources.get(relpath)

    def source_size(self, relpath: str) -> int:
        """len(source(relpath)), without reading it (0 when it is not indexed)."""
        return self._sources.size(relpath)

    def source_is_ascii(self, relpath: str) -> bool:
        """Whether source(relpath) is all ASCII, without reading it."""
        return self._sources.is_ascii(relpath)

    def content_hash(self, relpath: str) -> str | None:
        return self._hashes.get(relpath)

    # ----- build --------------------------------------------------------------
    def build(self, progress: Progress | None = None) -> IndexStats:
        """Index every Python file under root, reusing cached summaries by content hash."""
        with self.lock, _gc_paused(settle=True):
            return self._build(progress)

    def _build(self, progress: Progress | None) -> IndexStats:
        self._built = None
        self.problems = {}
        self._sources, self._hashes = Sources(), {}
        # A full build starts from nothing: facts of an earlier build may name files now gone.
        self.binder = Binder()
        self._facts, self._ids = {}, {}
        self._lazy = None
        relpaths: list[str] = []
        for item in python_files(self.root, self.exclude):
            if isinstance(item, Skipped):
                self._problem(item.path, item.kind, item.message)
            else:
                relpaths.append(item)
        for rel in relpaths:
            data = self._read(rel)
            if data is not None:
                self._sources.put(rel, data, pack=False)  # packed once the build needs no more
                self._hashes[rel] = content_hash(data)
        cache = self._open_cache()
        fingerprint = self._fingerprint()
        if cache is not None:
            stored = cache.load_graph(fingerprint, _GRAPH)
            self._note_cache(cache)
            if stored is not None and self._restore(*stored, fingerprint):
                self._stats.from_cache = len(self._hashes)
                self._stats.reparsed = 0
                self._built = fingerprint
                if progress:
                    progress(len(self._hashes), len(self._hashes), "")
                return self.stats()
        summaries, fresh, cached = self._summaries(cache, progress)
        # SQLite writes the new summaries (0.1-0.3 s) while this thread reads them; done
        # before the workers start (a spawned one reads them from the cache, and a
        # process that runs a second thread is not forked)
        with ThreadPoolExecutor(1) as writer:
            stored = writer.submit(cache.store_summaries, fresh) if cache is not None else None
            self._sources.pack()
            self.binder.set_files(summaries, self.root.name)
            self._ids = {p: factlib.scope_ids(s) for p, s in summaries.items()}
            self.binder.warm()
            if stored is not None:
                stored.result()
        reparsed = len(fresh)
        self._resolve_all(sorted(summaries), progress)
        # What was evaluated, and the name tables read off the bodies, are the bulk of the
        # memory: the graph and the cache are built in their place (an edit evaluates again
        # only what it needs, as after a warm start).
        self.binder.clear_caches()
        self._rebuild_graph()
        self._stats = IndexStats(reparsed=reparsed, from_cache=cached)
        if cache is not None:
            cache.store_graph(fingerprint, *self._snapshot())
        self._note_cache(cache)
        self._built = fingerprint
        return self.stats()

    # ----- data derived from a build -------------------------------------
    def derived(self, name: str) -> memoryview | None:
        """What keep_derived() stored for a graph equal to this one (same files, same
        engine), if the index is still as built; else None."""
        with self.lock:
            cache = self._open_cache()
            if cache is None or self._built is None:
                return None
            return cache.load_derived(name, self._built)

    def keep_derived(self, name: str, blob: bytes) -> bool:
        """Store data a layer above derived from this graph (answers the next start
        would compute again); only while no file changed since the build."""
        with self.lock:
            cache = self._open_cache()
            if cache is None or self._built is None:
                return False
            cache.store_derived(name, self._built, blob)
            self._note_cache(cache)
            return True

    def _read(self, rel: str) -> bytes | None:
        # O_NONBLOCK: opening a FIFO named x.py must not wait for a writer forever.
        try:
            fd = os.open(self.root / rel, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except FileNotFoundError:
            self._problem(rel, "vanished", "deleted while indexing")
            return None
        except OSError as err:
            kind = "symlink-loop" if err.errno == errno.ELOOP else "unreadable"
            self._problem(rel, kind, err.strerror or str(err))
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                self._problem(rel, "unreadable", "not a regular file (a folder, pipe or device)")
                return None
            with os.fdopen(fd, "rb", closefd=False) as file:
                data = file.read(self.max_file_bytes + 1)  # the file may grow after fstat
        except OSError as err:
            self._problem(rel, "unreadable", err.strerror or str(err))
            return None
        finally:
            os.close(fd)
        if len(data) > self.max_file_bytes:
            size = max(info.st_size, len(data))
            self._problem(rel, "too-large", f"{size} bytes, over the limit; skipped")
            return None
        return data

    def _problem(self, path: str, kind: str, message: str) -> None:
        self.problems[path] = Problem(path, kind, message)

    def _open_cache(self) -> Cache | None:
        if not self._use_cache:
            return None
        if self._cache is None:
            folder = self._cache_dir or self.root / ".anchor-ls"
            try:
                folder = self._cache_dir or default_cache_dir(self.root)
                self._cache = Cache(folder)
            except (OSError, sqlite3.Error) as err:  # nowhere to write: index without a cache
                self._use_cache = False
                self._problem(str(folder), "cache", f"no cache ({err}); indexing without one")
                return None
        return self._cache

    def _note_cache(self, cache: Cache | None) -> None:
        """What the cache had to say since last asked (rebuilt, foreign rows ignored, a
        failed write: full disk, read-only folder) becomes one problem of its folder."""
        said = cache.take_problem() if cache is not None else None
        if said and cache is not None:
            old = self.problems.get(str(cache.folder))
            message = f"{old.message}; {said}" if old and old.kind == "cache" else said
            self._problem(str(cache.folder), "cache", message)

    def _fingerprint(self) -> str:
        h = hashlib.blake2b(digest_size=16)
        h.update(f"{__version__}\0{self.exclude}\0{self.max_file_bytes}".encode())
        for rel in sorted(self._hashes):
            h.update(f"\0{rel}\0{self._hashes[rel]}".encode("utf-8", "surrogateescape"))
        return h.hexdigest()

    def _summaries(
        self, cache: Cache | None, progress: Progress | None
    ) -> tuple[dict[str, FileSummary], list[tuple[str, str, bytes]], int]:
        """(summaries by relpath, the rows of those parsed now for the cache, the number of
        summaries from the cache): files == both."""
        blobs = cache.summaries(self._hashes) if cache is not None else {}
        summaries: dict[str, FileSummary] = {}
        for rel, blob in blobs.items():
            try:
                summaries[rel] = pickle.loads(blob)
            except Exception:  # a damaged row: parse the file again
                continue
        cached = len(summaries)
        todo = sorted(rel for rel in self._hashes if rel not in summaries)
        fresh: list[tuple[str, str, bytes]] = []
        total = len(self._hashes) * 2
        done = len(summaries)
        for rel, result in self._summarize_many(todo):
            done += 1
            if progress and (done % 50 == 0 or done == len(self._hashes)):
                progress(done, total, rel)
            if isinstance(result, Problem):
                self.problems[rel] = result
                self._sources.pop(rel)
                self._hashes.pop(rel, None)
                continue
            summary = pickle.loads(result)
            summaries[rel] = summary
            fresh.append((rel, self._hashes[rel], result))
        for summary in summaries.values():
            self._note_summary_problems(summary)
        return summaries, fresh, cached

    def _summarize_many(self, todo: list[str]) -> Iterable[tuple[str, bytes | Problem]]:
        """Summaries of todo, in order, parsed by `workers` processes when it pays.

        The processes are forked only when this process runs one thread (the CLI): forking
        a threaded process (the language server) can leave a child waiting forever on a
        lock another thread held. There each starts as a fresh interpreter (spawn), which
        costs a start-up (so it pays only for more files) and leaves no process behind.
        The order of results is the order of todo either way.
        """
        read = self._sources.get
        jobs = [(rel, read(rel, keep=False) or b"", self.max_file_bytes) for rel in todo]
        done = 0
        context = _pool_context(len(jobs)) if self.workers > 1 else None
        if context is not None:
            try:
                with ProcessPoolExecutor(self.workers, mp_context=context) as pool:
                    for rel, result in zip(
                        todo, pool.map(_summarize_job, jobs, chunksize=16), strict=True
                    ):
                        yield rel, result
                        done += 1
                return
            except (OSError, RuntimeError):
                pass  # no processes here (or one died): parse the rest in this process
        for job in jobs[done:]:
            yield job[0], _summarize_job(job)

    def _note_summary_problems(self, summary: FileSummary) -> None:
        for kind, message in summary.problems:
            self._problem(summary.path, kind, message)

    # ----- resolution -----------------------------------------------------
    def _resolve_all(self, paths: list[str], progress: Progress | None) -> None:
        """Rounds of resolution: each sees the argument facts of the rounds before it, and
        only the functions whose parameters learned new values are read again."""
        context = _pool_context(len(paths)) if self.workers > 1 else None
        cache = self._open_cache()
        origin = (cache.path.parent, dict(self._hashes), self.root.name) if cache else None
        n, done = len(paths), 0

        def on_file(rel: str) -> None:
            nonlocal done
            done += 1
            if progress and (done % 50 == 0 or done == n):
                progress(n + done, 2 * n, rel)

        with Shares(self.binder, context, origin) as rounds:
            resolve_all(self.binder, rounds, paths, self._facts, on_file)

    def _rebuild_graph(self) -> None:
        graph = Graph(str(self.root))
        with graph.lock:
            for rel, summary in self.binder.summaries.items():
                graph.replace_file_entities(rel, factlib.entities(summary, self._ids[rel]))
            graph.load_edges(self._file_edges_and_sites())
            for rel, summary in self.binder.summaries.items():
                graph.replace_file_bases(
                    rel, factlib.base_order(summary, self._facts[rel], self._ids)
                )
        self.graph = graph

    def _file_edges_and_sites(self) -> Iterator[tuple]:
        for rel, summary in self.binder.summaries.items():
            self._note_binder_errors(rel)
            yield (
                rel,
                *factlib.edges(
                    summary,
                    self._facts[rel],
                    self._ids,
                    self._calls_of,
                    partial(self.binder.bodies, rel),
                ),
            )

    # ----- incremental ----------------------------------------------------
    def update_file(self, relpath: str, text: str | bytes) -> set[str]:
        """Re-index one file from text in memory; returns the relpaths whose facts changed."""
        data = _encode_buffer(text) if isinstance(text, str) else text
        with self.lock, _gc_paused():
            self._built = None
            held = self.binder.summaries.get(relpath)
            try:
                parsed = self._reparser.summarize(relpath, data, held, limit=self.max_file_bytes)
            except UnreadableSource as err:
                self._problem(relpath, err.kind, str(err))
                return self._remove(relpath)
            except RecursionError:  # as in a build: reported, never raised to the caller
                self._problem(relpath, "too-deep", "nesting too deep to read; skipped")
                return self._remove(relpath)
            summary = parsed.summary
            self.problems.pop(relpath, None)
            self._note_summary_problems(summary)
            before = self._sources.get(relpath)
            self._sources.put(relpath, data)
            self._hashes[relpath] = content_hash(data)
            if before is None:
                return self._replace(summary, parsed.bodies)
            old, new = _python_lines(before), _python_lines(data)
            line = first_changed_line(old, new)
            delta = new.count(b"\n") - old.count(b"\n")
            edited = (line, delta, parsed.walked, parsed.replaced)
            return self._replace(summary, parsed.bodies, edited)

    def prepare_edits(self, relpath: str) -> None:
        """Parse relpath as indexed and keep its tree, so that even its first edit walks
        only what it changed (a server calls this when an editor opens the file)."""
        with self.lock:
            data, summary = self._sources.get(relpath), self.binder.summaries.get(relpath)
            if data is not None and summary is not None and not summary.problems:
                self._interface_items_of(summary)  # what the edit compares with, found now
                self._reparser.hold(relpath, data, summary, self.binder.bodies(relpath))

    def reload_file(self, relpath: str) -> set[str]:
        """Re-read one file from disk (a removal when it is gone)."""
        with self.lock:
            self._built = None
            data = self._read(relpath) if self.is_indexable(relpath) else None
            if data is None:
                gone = self.problems.get(relpath)
                if gone is not None and gone.kind == "vanished":  # deleted: not a problem
                    del self.problems[relpath]
                return self._remove(relpath)
            return self.update_file(relpath, data)

    def remove_file(self, relpath: str) -> set[str]:
        with self.lock, _gc_paused():
            self._built = None
            self.problems.pop(relpath, None)
            return self._remove(relpath)

    def _remove(self, relpath: str) -> set[str]:
        self.ensure_engine()
        if relpath not in self.binder.summaries:
            return set()
        dependents = self._dependents(relpath, interface_changed=True)
        before = self._edge_files(relpath)
        self.binder.drop_file(relpath)
        dependents |= self._dispatching_into(relpath, {relpath} | dependents)
        grown = self.binder.forget_contribution(relpath)
        dependents |= self._forget_values_into(relpath)
        self._sources.pop(relpath)
        self._reparser.forget(relpath)
        self._hashes.pop(relpath, None)
        self._facts.pop(relpath, None)
        self._ids.pop(relpath, None)
        self._interface_memo.pop(relpath, None)
        with self.graph.lock:
            self.graph.drop_file(relpath)
        redo = (dependents | {fn[0] for fn in grown}) - {relpath}
        return {relpath} | before | self._reresolve(redo)

    def _replace(
        self,
        summary: FileSummary,
        bodies: Sequence[Body],
        edited: tuple[int, int, Sequence[int] | None, Sequence[int] | None] | None = None,
    ) -> set[str]:
        """summary: unpacked, with its bodies; edited: the first line changed, the lines
        added, the scopes walked again and the old ones they replace, for an edit of a file
        the index held (see bodies.body_edit)."""
        self.ensure_engine()
        rel = summary.path
        old = self.binder.summaries.get(rel)
        line, delta, walked, replaced = edited if edited else (0, 0, None, None)
        # what an importer would have to name to see a change
        names: set[bytes] | None = None
        interface_changed = True
        if old is not None:
            interface_changed, names = self._interface_change(old, summary, walked, replaced)
        dependents = self._dependents(rel, interface_changed) if old is not None else set()
        if old is None:
            dependents = self._all_importers_of_new(rel)
            # A package that now re-exports from rel changes what its importers resolve to.
            todo = [d for d in dependents if d.endswith("__init__.py")]
            with self.graph.lock:
                while todo:
                    for importer in self.graph.into("imports", todo.pop()):
                        if importer not in dependents and importer != rel:
                            dependents.add(importer)
                            if importer.endswith("__init__.py"):
                                todo.append(importer)
        if old is not None and interface_changed:
            # Definitions added, removed or moved: facts naming a removed scope are dropped,
            # the others follow their scope to its new index.
            numbers, gone = _renumbering(_layout(old), _layout(summary))
            if gone:
                dependents |= self._forget_values_into(rel, gone)
            if any(i != j for i, j in numbers.items()):
                self.binder.renumber(rel, numbers)
                for facts in self._facts.values():
                    facts.renumber(rel, numbers)
            # Only files that name what changed, or that link to a changed definition, can
            # now resolve differently (and star importers).
            if names is not None:
                changed = {n.decode() for n in names}
                linked = self._linking_into(rel, (CALLS, INHERITS), lambda e: e.name in changed)
                holders = self._holders(rel, changed)
                dependents = {
                    d for d in dependents if d in linked or self._mentions(d, names, holders)
                }
        edit = None
        if edited and old and self.binder.knows_scopes(rel):
            unread = self._unread_changes(old, summary, names) if names else frozenset()
            if not interface_changed or unread:
                old_bodies = self.binder.bodies(rel)
                edit = body_edit(old, old_bodies, summary, bodies, line, delta, walked, unread)
        # What the files to resolve again pass as they stand, in the present argument facts:
        # an edit propagates only what it changes of that (see _reresolve).
        passed_before: dict[str, dict] = {}
        if edit is not None:
            redo = {i for i in edit.redo if i < len(old.scopes)}
            passed_before[rel] = self.binder.passed_now(rel, redo)
        for dep in sorted(dependents):
            summary_of_dep = self.binder.summaries.get(dep)
            if summary_of_dep is not None and self.binder.knows_scopes(dep):
                scopes = set(range(len(summary_of_dep.scopes)))
                passed_before[dep] = self.binder.passed_now(dep, scopes)
        before = self._edge_files(rel)
        self.binder.put_file(summary, same_interface=not interface_changed, bodies=bodies)
        if interface_changed:
            dependents |= self._dispatching_into(rel, {rel} | dependents)
        self._ids[rel] = factlib.scope_ids(summary)
        with self.graph.lock:
            self.graph.replace_file_entities(rel, factlib.entities(summary, self._ids[rel]))
        changed = self._reresolve({rel} | dependents, (rel, edit) if edit else None, passed_before)
        if not interface_changed:  # the same ids: other files' tags move only with edges
            return {rel} | changed
        return {rel} | before | changed

    def _unread_changes(
        self, old: FileSummary, new: FileSummary, names: set[bytes]
    ) -> frozenset[str]:
        """The names of the definitions an edit added after the others or removed from the
        end, when that is all it changed of the file's interface and no other code of the
        file reads those names (a function typed at the end of a file and called from
        nowhere yet, or deleted again); else empty.

        Such an edit changes nothing the file's other scopes resolve to: only the added
        definitions and the scopes that bind them need resolving (see body_edit)."""
        count, shared = len(old.scopes), min(len(old.scopes), len(new.scopes))
        if count == len(new.scopes) or _layout(old)[:shared] != _layout(new)[:shared]:
            return frozenset()
        source = self._sources.get(new.path, keep=False)
        if source is None or b"\r" in source:
            return frozenset()
        lines = source.split(b"\n")
        for scope in new.scopes[count:]:  # the added definitions' own text
            lines[scope.start_line - 1 : scope.end_line] = [b""] * (
                scope.end_line - scope.start_line + 1
            )
        rest = b"\n".join(lines)
        if any(has_word(rest, name) for name in names):
            return frozenset()
        return frozenset(name.decode() for name in names)

    def _interface_items_of(self, summary: FileSummary) -> set[tuple[str, str]]:
        """The interface items of a summary, kept for the last two of its file: the one
        the index holds and the one replacing it (the next edit compares them)."""
        kept = self._interface_memo.setdefault(summary.path, [])
        found = next((items for s, items in kept if s is summary), None)
        if found is None:
            found = _interface_items(summary)
            kept[:] = [*kept[-1:], (summary, found)]
        return found

    def _interface_change(
        self,
        old: FileSummary,
        new: FileSummary,
        walked: Sequence[int] | None,
        replaced: Sequence[int] | None,
    ) -> tuple[bool, set[bytes] | None]:
        """Whether what other files can see of a file changed between two versions, and
        the names whose meaning differs (what an importer would have to write to see the
        difference; None when that cannot be told).

        After a splice (new scopes walked replacing old ones replaced, see syntax.reparse)
        only those are compared: every other scope only moved, and items name definitions
        by qualname, not by the index that moved."""
        if walked is not None and replaced is not None:
            items = _interface_items(old, replaced) ^ _interface_items(new, walked)
        else:
            items = self._interface_items_of(old) ^ self._interface_items_of(new)
        if old.all_names != new.all_names:
            return True, None
        names = {name.encode() for name, _ in items} or None
        return names is not None or _layout(old) != _layout(new), names

    def _dispatching_into(self, rel: str, changed: set[str]) -> set[str]:
        """Refresh the class tables of the changed files; the files of the ancestors of a
        changed class that name what changed (a `self.name` there may reach other
        overrides now)."""
        ancestors = self.binder.refresh_classes(changed)
        return {
            path
            for path, names in ancestors.items()
            if path != rel and self._mentions(path, {n.encode() for n in names})
        }

    def _holders(self, rel: str, names: set[str]) -> set[str]:
        """The modules whose namespace can hold rel's definitions named names (what
        `import *` of them brings): rel, the modules that import those names from a holder
        or import `*` from one, and so on."""
        resolve = self.binder.modules.resolve
        out, todo = {rel}, [rel]
        with self.graph.lock:
            while todo:
                held = todo.pop()
                for importer in self.graph.into(IMPORTS, held):
                    summary = self.binder.summaries.get(importer)
                    if importer in out or summary is None:
                        continue
                    top = summary.scopes[0]
                    if any(
                        resolve(module, level, importer) == held
                        for module, level, _pos in top.star_imports
                    ) or any(
                        b.value[0] == "if"
                        and b.value[3] in names
                        and resolve(b.value[1], b.value[2], importer) == held
                        for b in top.bindings
                    ):
                        out.add(importer)
                        todo.append(importer)
        return out

    def _linking_into(
        self, rel: str, kinds: tuple[str, ...], keep: Callable[[Entity], bool] = bool
    ) -> set[str]:
        """Files with an edge of one of kinds into a definition of rel that keep accepts."""
        out: set[str] = set()
        with self.graph.lock:
            for ent in self.graph.file_entities(rel):
                if keep(ent):
                    for kind in kinds:
                        out.update(path_of(src) for src in self.graph.into(kind, ent.id))
        return out

    def _mentions(
        self, rel: str, names: set[bytes], star_from: Container[str] | None = None
    ) -> bool:
        """Whether rel's text has one of the words names, or it imports `*` (from one of
        the modules star_from, when given)."""
        summary = self.binder.summaries.get(rel)
        if summary is None:
            return True
        if any(  # Python allows `*` at module level only
            star_from is None or self.binder.modules.resolve(module, level, rel) in star_from
            for module, level, _pos in summary.scopes[0].star_imports
        ):
            return True
        source = None
        if not summary.words:  # an edit's summary: sketched when first asked
            source = self._sources.get(rel, keep=False)
            if source is None:
                return True
            summary.words = words_sketch(source)
        maybe = [name for name in names if may_mention(summary.words, name)]
        if not maybe:  # ruled out by the sketch of its words, without reading it
            return False
        source = source or self._sources.get(rel, keep=False)
        return source is None or any(has_word(source, name) for name in maybe)

    def _forget_values_into(self, rel: str, gone: Container[int] | None = None) -> set[str]:
        """Drop the argument facts that name rel's scopes (those in gone; None: all of
        them), keeping every other fact.

        Binder values say (path, scope index); once rel's definitions go, those indices are
        stale (out of range, or another definition). Returns the files to resolve again:
        the ones that passed such values, and those whose parameters changed.
        """
        sources: set[str] = set()
        grown: set[tuple[str, int]] = set()
        for src in self.binder.passers(rel):
            contrib = self.binder._contrib.get(src, {})
            kept: dict[tuple[str, int], dict[str, set]] = {}
            stale = False
            for fn, params in contrib.items():
                if fn[0] == rel and (gone is None or fn[1] in gone):
                    stale = True
                    continue
                kept[fn] = {}
                for name, values in params.items():
                    fresh = {v for v in values if not _names_scope(v, rel, gone)}
                    stale = stale or len(fresh) != len(values)
                    kept[fn][name] = fresh
            if stale:
                sources.add(src)
                grown |= self.binder.set_contribution(src, kept)
        return (sources | {fn[0] for fn in grown}) - {rel}

    def _reresolve(
        self,
        paths: set[str],
        edited: tuple[str, BodyEdit] | None = None,
        passed_before: dict[str, dict] | None = None,
    ) -> set[str]:
        """Resolve files again until argument flow settles (see rounds.reresolve); returns
        files whose tags moved."""
        touched: set[str] = set()
        calls_before: dict[str, dict[int, frozenset]] = {}

        def before_file(rel: str) -> None:
            if is_test_path(rel) and rel not in calls_before:
                calls_before[rel] = self._scope_calls(rel)

        def after_file(rel: str) -> None:
            touched.update(self._apply_edges(rel))

        resolved = reresolve(
            self.binder, self._facts, paths, edited, passed_before or {}, before_file, after_file
        )
        # A test exercises what the test helpers it calls call: its test_ref edges follow them.
        for rel in sorted(self._tests_calling_changed_helpers(calls_before) - resolved):
            touched |= self._apply_edges(rel)
        return touched

    def _scope_calls(self, rel: str) -> dict[int, frozenset]:
        """What each scope of rel calls, by the binder's present facts."""
        out: dict[int, set] = {}
        for (idx, kind), targets in self._facts.get(rel, FileFacts()).calls.items():
            if kind in ("call", "property"):
                out.setdefault(idx, set()).update(targets)
        return {idx: frozenset(targets) for idx, targets in out.items()}

    def _tests_calling_changed_helpers(self, before: dict[str, dict[int, frozenset]]) -> set[str]:
        """Test files calling a test helper (of the files in before) whose calls changed."""
        out: set[str] = set()
        with self.graph.lock:
            for rel, old in before.items():
                new, ids = self._scope_calls(rel), self._ids.get(rel, [])
                for idx in set(old) | set(new):
                    if old.get(idx) == new.get(idx) or idx >= len(ids):
                        continue
                    ent = self.graph.entities.get(ids[idx])
                    if ent and ent.kind in ("function", "method") and not is_test_name(ent.name):
                        out.update(path_of(src) for src in self.graph.into(CALLS, ent.id))
        return {p for p in out if is_test_path(p)}

    def _calls_of(self, path: str, idx: int) -> list[tuple[tuple, list]]:
        """What one scope calls (and the call spans), from the binder's facts."""
        facts = self._facts.get(path)
        if facts is None:
            return []
        return [
            (target, list(facts.call_spans((idx, target))))
            for kind in ("call", "property")
            for target in facts.calls.get((idx, kind), ())
        ]

    def _note_binder_errors(self, rel: str) -> None:
        errors = self._facts[rel].errors
        if errors:
            more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
            self._problem(rel, "internal", f"resolution failed in {errors[0]}{more}")

    def _apply_edges(self, rel: str) -> set[str]:
        self._note_binder_errors(rel)
        summary = self.binder.summaries[rel]
        facts = self._facts[rel]
        edges, sites, via, missed = factlib.edges(
            summary, facts, self._ids, self._calls_of, partial(self.binder.bodies, rel)
        )
        with self.graph.lock:
            old = self.graph.file_edges(rel)
            self.graph.replace_file_edges(rel, edges, sites, via=via, missed=missed)
            self.graph.replace_file_bases(rel, factlib.base_order(summary, facts, self._ids))
        moved = old ^ edges
        return {path_of(e.src) for e in moved} | {path_of(e.dst) for e in moved}

    def _edge_files(self, rel: str) -> set[str]:
        """Files holding the other end of any edge that touches rel."""
        with self.graph.lock:
            out = {path_of(edge.dst) for edge in self.graph.file_edges(rel)}
        out |= self._linking_into(rel, (CALLS, INHERITS, IMPORTS))
        out.discard(rel)
        return out

    def _dependents(self, rel: str, interface_changed: bool) -> set[str]:
        """Files whose resolution may read rel: edges into it, and importers on a new interface."""
        if not interface_changed:  # same names, bases, signatures and returns: nothing moves
            return set()
        out = self._linking_into(rel, (CALLS, INHERITS))
        with self.graph.lock:
            todo = [rel]
            while todo:
                module = todo.pop()
                for importer in self.graph.into(IMPORTS, module):
                    if importer not in out:
                        out.add(importer)
                        if importer.endswith("__init__.py"):
                            todo.append(importer)
        out.discard(rel)
        return out

    def _all_importers_of_new(self, rel: str) -> set[str]:
        """A new file: whoever mentions its module name may now resolve into it.

        A new __init__.py is also what `from . import x` means inside its package.
        """
        stem = rel[:-3].removesuffix("/__init__").replace("/", ".").rsplit(".", 1)[-1]
        is_package = rel.rpartition("/")[2] == "__init__.py"
        package = rel.removesuffix("__init__.py") if is_package else None
        out = set()
        for path, summary in self.binder.summaries.items():
            if package is not None and path.startswith(package) and path != rel:
                out.add(path)
                continue
            for scope in summary.scopes:
                if any(_mentions(b.value, stem) for b in scope.bindings) or any(
                    stem in m for m, _level, _pos in scope.star_imports
                ):
                    out.add(path)
                    break
        return out

    # ----- cache state ----------------------------------------------------
    def _snapshot(self) -> tuple[dict, Iterator[tuple[str, bytes]]]:
        """The cache's copy of the graph (light, read at every warm start) and of the
        resolution state (read only when a file changes): a small state, and parts.

        Pickled file by file, as the cache writes them: one pickle of everything keeps a
        memo entry for each of its millions of objects until it is done (measured: 110 MB
        more at Django's peak), and all the parts at once were its peak still (23 MB).
        """
        stats = self.stats()
        state = {
            "paths": sorted(self.binder.summaries),
            "counts": (stats.resolved_binder, stats.external, stats.unresolved),
            "problems": self.problems,
            "stats": self._stats,
        }
        return state, self._parts()

    def _parts(self) -> Iterator[tuple[str, bytes]]:
        graph = self.graph
        with graph.lock:
            for rel in sorted(self.binder.summaries):
                edges = sorted(graph.file_edges(rel))
                made = graph.file_sites(rel)
                sites = {tuple(e): made[e] for e in edges if e in made}
                entities = [astuple_entity(e) for e in graph.file_entities(rel)]
                bases = graph.file_bases(rel)
                codes = graph.file_via_map(rel)
                via = bytes(codes.get(e, 0) for e in edges)
                missed = graph.file_missed_packed(rel)
                part = (entities, [tuple(e) for e in edges], sites, bases, via, missed)
                yield _GRAPH + rel, _dump(part)
            for rel, facts in sorted(self._facts.items()):
                yield _FACTS + rel, _dump(facts)
            for rel, per_scope in sorted(self.binder.passed_by_scope().items()):
                yield _PASSED + rel, _dump(per_scope)

    def _restore(self, state: object, parts: dict[str, memoryview], fingerprint: str) -> bool:
        if not isinstance(state, dict) or "paths" not in state:
            return False
        paths = state["paths"]
        graph = Graph(str(self.root))
        try:
            files = {rel: pickle.loads(parts[_GRAPH + rel]) for rel in paths}
        except Exception:  # parts missing or damaged: build afresh
            return False
        # tuple.__new__ makes the hundreds of thousands of edges at half the cost of their
        # constructor; sites stay keyed by plain tuples, equal to their edges
        make = tuple.__new__
        with graph.lock:
            for rel, (entities, _edges, _sites, bases, _via, _missed) in files.items():
                graph.replace_file_entities(rel, [Entity(*e) for e in entities])
                graph.replace_file_bases(rel, bases)
            graph.load_edges(
                (
                    (rel, [make(Edge, e) for e in edges], sites, via, missed)
                    for rel, (_entities, edges, sites, _bases, via, missed) in files.items()
                ),
                ordered=True,
            )
        self.graph = graph
        # Only problems of the files read now: not old listing or cache problems.
        self.problems.update(
            (rel, problem) for rel, problem in state["problems"].items() if rel in self._hashes
        )
        for rel in set(self._hashes) - set(paths):
            self._sources.pop(rel)
            self._hashes.pop(rel, None)
        self._stats = state["stats"]
        # The hashes the cached summaries were stored under: an edit may change ours first.
        self._lazy = (paths, fingerprint, state["counts"], dict(self._hashes))
        return True

    def ensure_engine(self) -> None:
        """Load the resolver state a warm start deferred, and build the binder's
        repository-wide tables; a server calls it while idle.

        Otherwise the first change after a start pays for it.
        """
        with self.lock, _gc_paused(settle=True):
            self._ensure_engine()

    def _ensure_engine(self) -> None:
        self._sources.pack()  # a warm start left them as read
        if self._lazy is None:
            self.binder.warm()
            return
        paths, fingerprint, _counts, hashes = self._lazy
        self._lazy = None
        cache = self._open_cache()
        blobs = cache.summaries({rel: hashes[rel] for rel in paths}) if cache else {}
        try:
            if cache is None or set(blobs) != set(paths):
                raise ValueError("summaries missing from the cache")
            summaries = {rel: pickle.loads(blob) for rel, blob in blobs.items()}
            del blobs
            # read and unpickled row by row: the blobs of them all are never held at once
            facts = _unpickled(cache.graph_parts(_FACTS, fingerprint), _FACTS)
            contrib = _unpickled(cache.graph_parts(_PASSED, fingerprint), _PASSED)
            if set(facts) != set(paths) or set(contrib) != set(paths):
                raise ValueError("resolution state missing from the cache")
        except Exception:  # the cache changed under us: build from scratch
            if cache is not None:
                cache.store_graph("", {}, ())
            self._build(None)
            return
        self.binder = Binder()
        self.binder.set_files(summaries, self.root.name)
        self.binder.restore_passed(contrib)
        self._facts = facts
        self._ids = {p: factlib.scope_ids(s) for p, s in summaries.items()}
        self.binder.warm()

    # ----- queries ----------------------------------------------------------
    def mro(self, class_id: str) -> list[str]:
        """class_id and its repository bases in C3 order (ids; bases outside the repository
        are not in the index), each once: a cycle of bases repeats one where it is cut.
        Read from the graph, which keeps each class statement's order of bases: a warm
        start answers without loading the resolver state."""
        graph = self.graph
        with graph.lock:
            return list(dict.fromkeys(mro_of(class_id, graph.bases, {}, set())))

    # ----- figures ----------------------------------------------------------
    def stats(self) -> IndexStats:
        with self.graph.lock:
            mean, hubs = graph_figures(self.graph)
            stats = IndexStats(
                files=len(self._lazy[0]) if self._lazy else len(self.binder.summaries),
                entities=len(self.graph.entities),
                edges=edge_counts(self.graph),
                mean_out_degree=round(mean, 3),
                hub_share=round(hubs, 4),
                reparsed=self._stats.reparsed,
                from_cache=self._stats.from_cache,
            )
        if self._lazy is not None:
            stats.resolved_binder, stats.external, stats.unresolved = self._lazy[2]
        for facts in self._facts.values():
            stats.resolved_binder += facts.resolved
            stats.external += facts.external
            stats.unresolved += facts.unresolved
        stats.call_sites = stats.resolved_binder + stats.external + stats.unresolved
        counts: dict[str, int] = {}
        for problem in self.problems.values():
            counts[problem.kind] = counts.get(problem.kind, 0) + 1
        stats.problems = dict(sorted(counts.items()))
        return stats

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None


# cache part names: a prefix, then the relpath
_GRAPH, _FACTS, _PASSED = "graph\0", "facts\0", "passed\0"


def _dump(data: object) -> bytes:
    return pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)


def astuple_entity(e: Entity) -> tuple:
    return (e.id, e.kind, e.path, e.name, e.line, e.end_line, e.start_line, e.name_span)


def _unpickled(rows: Iterable[tuple[str, memoryview]], prefix: str) -> dict[str, Any]:
    return {name.removeprefix(prefix): pickle.loads(blob) for name, blob in rows}


def _encode_buffer(text: str) -> bytes:
    """Editor text as the bytes its file holds: in the encoding its coding cookie declares."""
    utf8 = text.encode("utf-8", "surrogatepass")
    encoding = declared_encoding(utf8)
    if encoding in ("utf-8", "utf-8-sig"):
        return utf8
    try:
        return text.encode(encoding)
    except UnicodeError:  # text the declared encoding cannot hold: Python would refuse it too
        return utf8


@contextlib.contextmanager
def _gc_paused(*, settle: bool = False) -> Iterator[None]:
    """Building allocates millions of small tuples and frees none: the cyclic GC only
    rescans them (measured: unpickling Django's summaries 9.4 s with it, 1.7 s without).

    settle: what was built lives as long as the index, so it goes to the collector's
    permanent generation; else the first full collection after it, which lands in some
    later edit, scans it all (measured: 1.0-1.4 s on Django). A new build first takes
    it back (the old index's objects may be garbage now).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    if settle:
        gc.unfreeze()
    try:
        yield
    finally:
        if settle:
            gc.freeze()
        if was_enabled:
            gc.enable()


def _pool_context(files: int) -> BaseContext | None:
    """How to start parse workers for `files` files, or None to parse in this process.

    A started (not forked) worker is a fresh `python -c` in this process's working
    directory, often the repository: PYTHONSAFEPATH=1 in this process's environment, which
    the workers inherit, keeps that directory off their sys.path."""
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    if threading.active_count() == 1 and "fork" in methods:
        return multiprocessing.get_context("fork") if files >= _PARALLEL_MIN_FILES else None
    if files < _SERVED_MIN_FILES:
        return None
    for method in ("spawn", "forkserver"):
        if method in methods:
            start_children_safe()
            return multiprocessing.get_context(method)
    return None


def _summarize_job(job: tuple[str, bytes, int]) -> bytes | Problem:
    gc.disable()  # a worker process: summaries are short-lived acyclic data
    rel, data, limit = job
    try:
        summary = summarize(rel, data, limit=limit)
    except UnreadableSource as err:
        return Problem(rel, err.kind, str(err))
    except RecursionError:
        return Problem(rel, "too-deep", "nesting too deep to read; skipped")
    return pickle.dumps(pack_bodies(summary), protocol=pickle.HIGHEST_PROTOCOL)


def _python_lines(data: bytes) -> bytes:
    """data with every line ending a "\n", as Python (and the summaries) count lines: a
    lone CR ends a line too."""
    return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n") if b"\r" in data else data


def _interface_items(
    summary: FileSummary, among: Iterable[int] | None = None
) -> set[tuple[str, str]]:
    """(name, what it is) for each thing another file can see (of the scopes among, else
    of all); scope indices, which shift when a definition is inserted, are written as
    qualnames (and which of the definitions of a qualname, if there are several)."""
    scopes = summary.scopes
    twins = _twins(scopes)

    def show(value: tuple) -> str:
        """value's repr, with definitions by qualname (values are tuples all the way down
        once a summary's lists are made tuples, packed or not)."""
        text = repr(value)
        return repr(_by_qualname(value, scopes, twins)) if "('f', " in text else text

    items: set[tuple[str, str]] = set()
    for i in range(len(scopes)) if among is None else among:
        scope = scopes[i]
        tail = scope.qualname.rpartition(".")[2]
        shape = (
            scope.kind,
            scope.qualname,
            twins.get(i, 0),
            tuple(scope.decorators),
            tuple(scope.bases),
            tuple((p.name, p.kind, p.annotation) for p in scope.params),
            tuple(sorted(scope.free_calls)),
            tuple(sorted(scope.called_params)),
            scope.returns,
            tuple(scope.return_values),
            tuple(scope.yields),
        )
        items.add((tail, show(shape)))
        if scope.kind in ("module", "class"):
            items.update((b.name, show((scope.qualname, b.value))) for b in scope.bindings)
        items.update((a, show((scope.qualname, o, v))) for o, a, v, _ in scope.attr_assigns)
        items.update((m, show((scope.qualname, m, lv))) for m, lv, _ in scope.star_imports)
    return items


def _by_qualname(value: object, scopes: list, twins: dict[int, int]) -> object:
    if isinstance(value, tuple):
        if len(value) == 2 and value[0] == "f" and isinstance(value[1], int):
            return ("f", scopes[value[1]].qualname, twins.get(value[1], 0))
        return tuple(_by_qualname(v, scopes, twins) for v in value)
    return value


def _twins(scopes: list) -> dict[int, int]:
    """index -> which definition of its kind and qualname it is, for those defined more
    than once (a property and its setter)."""
    seen: dict[tuple[str, str], list[int]] = {}
    for i, scope in enumerate(scopes):
        seen.setdefault((scope.kind, scope.qualname), []).append(i)
    return {i: k for same in seen.values() if len(same) > 1 for k, i in enumerate(same)}


def _layout(summary: FileSummary) -> list[tuple[str, str]]:
    """What a scope index means in this file: binder values refer to scopes by index."""
    return [(scope.kind, scope.qualname) for scope in summary.scopes]


def _renumbering(
    old: list[tuple[str, str]], new: list[tuple[str, str]]
) -> tuple[dict[int, int], set[int]]:
    """(old scope index -> new index for each scope still there, old indices gone). A scope
    is known by kind and qualname; a name defined twice (a property and its setter) by order.
    """

    def numbered(layout: list[tuple[str, str]]) -> list[tuple[str, str, int]]:
        seen: dict[tuple[str, str], int] = {}
        out = []
        for key in layout:
            seen[key] = seen.get(key, -1) + 1
            out.append((*key, seen[key]))
        return out

    where = {key: i for i, key in enumerate(numbered(new))}
    numbers: dict[int, int] = {}
    gone: set[int] = set()
    for i, key in enumerate(numbered(old)):
        if key in where:
            numbers[i] = where[key]
        else:
            gone.add(i)
    return numbers, gone


def _names_scope(data: object, rel: str, gone: Container[int] | None) -> bool:
    """Whether a binder value (nested tuples, sets and dicts of them) names a scope of file
    rel that is in gone (None: any): ("f"|"b"|"c"|"i"|"I"|"S"|"g", rel, index)."""
    if isinstance(data, tuple):
        if len(data) == 3 and data[1] == rel and isinstance(data[2], int):
            return gone is None or data[2] in gone
        return any(_names_scope(item, rel, gone) for item in data)
    if isinstance(data, dict):
        return any(_names_scope(v, rel, gone) for v in data.values())
    if isinstance(data, frozenset | set | list):
        return any(_names_scope(item, rel, gone) for item in data)
    return False


def _mentions(value: tuple, stem: str) -> bool:
    return value[0] in ("im", "ima", "if") and (
        stem in value[1] or (value[0] == "if" and value[3] == stem)
    )
