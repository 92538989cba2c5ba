"""The live index of one repository: build, warm start from cache, incremental update."""

from __future__ import annotations

import itertools
import os
import pickle
import sqlite3
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

from anchor_ls.index import facts as factlib
from anchor_ls.index.bind.rounds import MAX_ROUNDS, reresolve, resolve_all
from anchor_ls.index.binder import Binder
from anchor_ls.index.bodies import BodyEdit, first_changed_line
from anchor_ls.index.cache import Cache, cache_dir_made, content_hash, default_cache_dir
from anchor_ls.index.environment import Asking, Environment, asking
from anchor_ls.index.externals import LIBRARY_CACHE, Externals, library_cache_folder
from anchor_ls.index.files import (
    Problem,
    Skipped,
    exclude_patterns,
    is_listed,
    python_files,
    read_file,
)
from anchor_ls.index.invalidation import Imports, Invalidation
from anchor_ls.index.model import (
    CALLS,
    EXTERNAL,
    INHERITS,
    OVERRIDES,
    Graph,
    Snapshot,
    path_of,
)
from anchor_ls.index.mro import mro_of
from anchor_ls.index.overrides import MethodNames, below, overrides_by_file
from anchor_ls.index.persistence import (
    FACTS,
    GRAPH,
    PASSED,
    astuple_entity,
    cache_rows,
    fingerprint,
    restore_graph,
    unpickled,
)
from anchor_ls.index.prefetch import Prefetch
from anchor_ls.index.roots import (
    configures_roots,
    folders_of,
    project_roots,
    stated_by_files,
    states_a_root,
    user_roots,
)
from anchor_ls.index.shares import Shares
from anchor_ls.index.sources import Sources
from anchor_ls.index.state import FileFacts
from anchor_ls.index.stats import IndexStats, edge_counts, graph_figures
from anchor_ls.index.testcode import is_test_name, is_test_path
from anchor_ls.index.workers import gc_paused, prefetch_context, summarize_many
from anchor_ls.index.workers import pool_context as _pool_context  # the rounds' name for it
from anchor_ls.syntax.encoding import buffer_bytes_or_utf8
from anchor_ls.syntax.reparse import Reparser
from anchor_ls.syntax.source import MAX_FILE_BYTES, UnreadableSource
from anchor_ls.syntax.summary import FileSummary, pack_bodies

__all__ = ["Index", "Problem", "Progress"]

# When this many files or more change at once, every file is resolved again rather
# than each changed one updated (Index.reload_files).
AFRESH_MIN_FILES = 5
PAUSE_EVERY = 50  # files between a build's calls of its pause (Index(pause=...))

# progress(done, total, relpath)
Progress = Callable[[int, int, str], None]
_generations = itertools.count(1)  # of snapshots, across indexes: a new index's are later


class Index(Invalidation):
    """Index(root).build(), then read `index.snapshot().graph` (or `index.graph`, the
    graph of the latest snapshot): a frozen graph, for any thread, without a lock."""

    def __init__(
        self,
        root: str | Path,
        *,
        cache_dir: str | Path | None = None,
        exclude: Sequence[str] = (),
        use_cache: bool = True,
        max_file_bytes: int = MAX_FILE_BYTES,
        workers: int | None = None,
        source_roots: Sequence[str] = (),
        python: str | Path | Environment | None = None,
        only: Collection[str] | None = None,
        wanted: Collection[str] | None = None,
        listed: Sequence[str] | None = None,
        pause: Callable[[], None] | None = None,
    ) -> None:
        """only: the relpaths to index of those listed (a glimpse, index/glimpse.py); the
        source roots are still those of the whole listing, so module names stay the same.
        wanted: resolve only the call sites and references that mention one of these names
        (a glimpse of who uses a function), in this process.
        listed: the repository's files as a glimpse's corpus listed them (not walked again).
        pause: called by a build between files (every PAUSE_EVERY): a host may hold the
        build meanwhile (a language server, while it makes a glimpse).
        source_roots: folders absolute imports start from that no file states (relative
        to root, or absolute inside it); those the files state are found (index/roots.py).
        python: the interpreter whose installed packages the code uses (index/environment.py):
        None for the one anchor-ls runs in; a named one is asked for its search path while
        the first build reads the files. EnvironmentProblem when it cannot be used: here
        when that is plain at once (no such file), else from build() or `environment`."""
        self.root = Path(root).resolve()
        self._environment: Environment | Asking = asking(python, self.root)
        self._graph = Graph(str(self.root))  # what mutations change (under self.lock)
        self._published = self._snapshot_now(rebuilt=True)
        self.problems: dict[str, Problem] = {}
        self._bases_moved: set[str] = set()  # files whose inherits edges an edit moved
        self.exclude = exclude_patterns(exclude)
        self.source_roots = tuple(source_roots)
        self.only = only
        self.listed = listed
        self.pause = pause
        self.wanted = frozenset(wanted) if wanted is not None else None
        # The source roots of the last build that pyproject.toml, setup.cfg, pytest's
        # pythonpath and the user state (the module table adds the repository root and those
        # of setup.py and conftest.py files, which come and go with the files).
        self.roots: tuple[str, ...] = ()
        self.max_file_bytes = max_file_bytes
        self.workers = workers if workers is not None else min(2, os.cpu_count() or 1)
        if self.wanted is not None:  # the binder's processes resolve every site
            self.workers = 1
        self._cache_dir = Path(cache_dir) if cache_dir else None
        self._use_cache = use_cache
        self._cache: Cache | None = None
        # What the names the binder leaves outside are in the environment (None: none, or
        # not built yet)
        self.externals: Externals | None = None
        self._method_names: MethodNames | None = None  # of the graph, for overrides
        self.binder = Binder()
        self._sources = Sources()
        self._reparser = Reparser()  # the trees of files under edit
        self._hashes: dict[str, str] = {}
        self._facts: dict[str, FileFacts] = {}
        self._fact_holders: dict[str, set[str]] | None = None  # see Invalidation._facts_naming
        self._interface_memo: dict[str, list[tuple[FileSummary, set[tuple[str, str]]]]] = {}
        self._import_memo: dict[str, tuple[FileSummary, Imports]] = {}
        self._ids: dict[str, list[str]] = {}
        # After a warm start, until the resolution state (facts, argument values) is read
        # from the cache: (paths, the fingerprint it is stored under, site counts, hashes).
        self._lazy: tuple[list[str], str, tuple[int, int, int], dict[str, str]] | None = None
        self._stats = IndexStats()
        self._prefetch: Prefetch | None = None  # library outlines being read ahead
        self._prefetched = 0  # outlines the last build's prefetch parsed
        self._built: str | None = None  # the fingerprint of the build, until a file changes
        self.lock = threading.RLock()  # serialises mutations
        # No cache folder was made before this index: its first build parses every file
        # (a cold start), it cannot find a stored graph.
        self.cold = not (use_cache and self._cache_made())

    @property
    def environment(self) -> Environment:
        """The environment libraries are read from; a named interpreter's answer is waited
        for here (EnvironmentProblem: it cannot be used)."""
        found = self._environment
        if isinstance(found, Asking):
            self._environment = found = found.environment()
        return found

    @property
    def python(self) -> str | None:
        """The interpreter the user named (None: anchor-ls's own), its answer not waited
        for: what a status report shows while a build waits for it."""
        return self._environment.python

    # ----- what readers see -------------------------------------------------
    @property
    def graph(self) -> Graph:
        """The graph of the latest snapshot (frozen)."""
        return self._published.graph

    def snapshot(self) -> Snapshot:
        """The graph as the last build or change left it, frozen, with its generation:
        it never changes, so a reader holds it as long as it likes, while the index
        changes on another thread."""
        return self._published

    def _publish(self, *, rebuilt: bool = False) -> None:
        """Readers see the graph as it now is (a complete build or change only)."""
        if rebuilt or self._graph.changed:
            self._published = self._snapshot_now(rebuilt=rebuilt)

    def _snapshot_now(self, *, rebuilt: bool) -> Snapshot:
        generation = next(_generations)
        built = generation if rebuilt else self._published.built
        return Snapshot(self._graph.frozen(), generation, built)

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
        """Whether a build lists relpath (left out: excluded, in a virtual environment)."""
        return is_listed(self.root, relpath, self.exclude)

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
        with self.lock, gc_paused(settle=True):
            return self._build(progress)

    def _build(self, progress: Progress | None) -> IndexStats:
        self._built = None
        self.problems = {}
        self._sources, self._hashes = Sources(), {}
        # A full build starts from nothing: facts of an earlier build may name files now gone.
        self.binder = Binder()
        self._facts, self._ids, self._fact_holders = {}, {}, None
        self._lazy = None
        if self.externals is not None:  # a library may have changed since the last build
            self.externals.close()
            self.externals = None
        relpaths: list[str] = []
        listing = python_files(self.root, self.exclude) if self.listed is None else self.listed
        for done, item in enumerate(listing):
            self._between_files(done)
            if isinstance(item, Skipped):
                self._problem(item.path, item.kind, item.message)
            else:
                relpaths.append(item)
        self.roots = self._find_roots(relpaths)
        if self.only is not None:
            relpaths = [rel for rel in relpaths if rel in self.only]
        for done, rel in enumerate(relpaths):
            self._between_files(done)
            data = self._read(rel)
            if data is not None:
                self._sources.put(rel, data, pack=False)  # packed once the build needs no more
                self._hashes[rel] = content_hash(data)
        # A named interpreter's answer may still be on its way: the files are parsed
        # meanwhile. A cache that holds no graph cannot hold this one, so the answer is
        # not needed before; and none is made before it came (it may be a refusal).
        pending = isinstance(self._environment, Asking) and not self._cache_made()
        cache = None if pending else self._open_cache()
        listed = dict(self._hashes)  # the files a stored graph must name (the parse may drop some)
        if cache is not None and cache.holds_graph():
            stamp = self._with_environment(listed)
            stored = cache.load_graph(stamp, GRAPH)
            self._note_cache(cache)
            if stored is not None and self._restore(*stored, stamp):
                self._stats.from_cache = len(self._hashes)
                self._stats.reparsed = 0
                self._built = stamp
                if progress:
                    progress(len(self._hashes), len(self._hashes), "")
                return self.stats()
        summaries, fresh, cached = self._summaries(cache, progress)
        stamp = self._with_environment(listed)
        cache = self._open_cache()
        self._prefetch = self._start_prefetch(summaries)
        # SQLite writes the new summaries (0.1-0.3 s) while this thread reads them; done
        # before the workers start (a spawned one reads them from the cache, and a
        # process that runs a second thread is not forked)
        with ThreadPoolExecutor(1) as writer:
            stored = writer.submit(cache.store_summaries, fresh) if cache is not None else None
            self._sources.pack()
            self.binder.set_files(summaries, self.root.name, self.roots)
            self.binder.want(self.wanted, MAX_ROUNDS - 1)
            self._ids = {p: factlib.scope_ids(s) for p, s in summaries.items()}
            self.binder.warm()
            if stored is not None:
                stored.result()
        reparsed = len(fresh)
        self._resolve_files(progress)
        self._stats = IndexStats(
            reparsed=reparsed, from_cache=cached, libraries_prefetched=self._prefetched
        )
        self._note_libraries()
        # the library outlines read go to the user cache while the graph goes to this one:
        # two commits, each waiting for its disk
        with ThreadPoolExecutor(1) as writer:
            saved = writer.submit(self.externals.save) if self.externals is not None else None
            if cache is not None:
                cache.store_graph(stamp, *self._cache_state())
            if saved is not None:
                saved.result()
        self._note_cache(cache)
        self._note_library_cache()
        self._built = stamp
        return self.stats()

    def _with_environment(self, hashes: dict[str, str]) -> str:
        """The fingerprint a stored graph of these files must have been built under to be
        this build's, once the environment is known (a named interpreter's answer is
        waited for here), and what the binder leaves outside read from that environment
        from now on."""
        if self.externals is None:
            self.externals = self._new_externals()
        return fingerprint(
            self.exclude, self.max_file_bytes, self.roots, hashes, self.environment.identity()
        )

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

    def _find_roots(self, relpaths: list[str]) -> tuple[str, ...]:
        """The source roots the repository's files state and those the user named, but
        the repository root (always one); their problems are reported."""
        found, problems = project_roots(self.root, folders_of(relpaths))
        named, unused = user_roots(self.root, self.source_roots)
        for path, message in problems:
            self._problem(path, "config", message)
        for path, message in unused:
            self._problem(path, "source-root", message)
        return tuple(sorted((set(found) | set(named)) - {""}))

    def _read(self, rel: str) -> bytes | None:
        found = read_file(self.root, rel, self.max_file_bytes)
        if isinstance(found, Problem):
            self.problems[rel] = found
            return None
        return found

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

    def _between_files(self, done: int) -> None:
        if self.pause is not None and done % PAUSE_EVERY == 0:
            self.pause()

    def _cache_made(self) -> bool:
        if self._cache is not None:
            return True
        return self._cache_dir.is_dir() if self._cache_dir else cache_dir_made(self.root)

    def _note_cache(self, cache: Cache | None) -> None:
        """What the cache had to say since last asked (rebuilt, foreign rows ignored, a
        failed write: full disk, read-only folder) becomes one problem of its folder."""
        said = cache.take_problem() if cache is not None else None
        if said and cache is not None:
            old = self.problems.get(str(cache.folder))
            message = f"{old.message}; {said}" if old and old.kind == "cache" else said
            self._problem(str(cache.folder), "cache", message)

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
        read = self._sources.get
        jobs = [(rel, read(rel, keep=False) or b"", self.max_file_bytes) for rel in todo]
        # a glimpse's few files stay unpacked: no cache keeps them, and it lives a moment
        packed = cache is not None or self.only is None
        for rel, result in summarize_many(jobs, self.workers, packed=packed):
            done += 1
            self._between_files(done)
            if progress and (done % 50 == 0 or done == len(self._hashes)):
                progress(done, total, rel)
            if isinstance(result, Problem):
                self.problems[rel] = result
                self._sources.pop(rel)
                self._hashes.pop(rel, None)
                continue
            if isinstance(result, bytes):
                summaries[rel] = pickle.loads(result)
                fresh.append((rel, self._hashes[rel], result))
            else:
                summaries[rel] = result
        for summary in summaries.values():
            self._note_summary_problems(summary)
        return summaries, fresh, cached

    def _note_summary_problems(self, summary: FileSummary) -> None:
        for kind, message in summary.problems:
            self._problem(summary.path, kind, message)

    # ----- resolution -----------------------------------------------------
    def _resolve_files(self, progress: Progress | None) -> None:
        """Resolve the binder's files from no argument facts, and publish the graph."""
        self._facts, self._fact_holders = {}, None
        self._resolve_all(sorted(self.binder.summaries), progress)
        # What was evaluated, and the name tables read off the bodies, are the bulk of the
        # memory: the graph and the cache are built in their place (an edit evaluates again
        # only what it needs, as after a warm start).
        self.binder.clear_caches()
        self._rebuild_graph()
        self._publish(rebuilt=True)

    def _resolve_afresh(self, summaries: dict[str, FileSummary] | None = None) -> None:
        """Resolve every file again as a build does, from the summaries held (none is read
        or parsed again), or those given: an edit's rounds that do not settle leave other
        facts than a build's (see rounds.reresolve). Readers see the graph before until
        this one is published, as rebuilt; stats().resolved_afresh counts these."""
        if summaries is None:
            summaries = self.binder.summaries
        for summary in summaries.values():
            pack_bodies(summary)  # the file edited last may hold its bodies unpacked
        self.binder = Binder()
        self.binder.set_files(summaries, self.root.name, self.roots)
        self.binder.want(self.wanted, MAX_ROUNDS - 1)
        self.binder.warm()
        self._resolve_files(None)
        self._stats.resolved_afresh += 1

    def _resolve_all(self, paths: list[str], progress: Progress | None) -> None:
        """Rounds of resolution: each sees the argument facts of the rounds before it, and
        only the functions whose parameters learned new values are read again."""
        context = _pool_context(len(paths)) if self.workers > 1 else None
        cache = self._open_cache()
        origin = None
        if cache is not None:
            origin = (cache.path.parent, dict(self._hashes), self.root.name, self.roots)
        n, done = len(paths), 0

        def on_file(rel: str) -> None:
            nonlocal done
            done += 1
            self._between_files(done)
            if progress and (done % 50 == 0 or done == n):
                progress(n + done, 2 * n, rel)

        with Shares(self.binder, context, origin) as rounds:
            resolve_all(self.binder, rounds, paths, self._facts, on_file)

    def _rebuild_graph(self) -> None:
        graph = Graph(str(self.root))
        for rel, summary in self.binder.summaries.items():
            graph.replace_file_entities(rel, factlib.entities(summary, self._ids[rel]))
        # The prefetch often ends after resolution (DRF: 0.1-0.25 s): files' own edges
        # are found until it has, not before every file (a whole graph's held twice).
        inside: dict[str, factlib.Inside] = {}
        for rel, summary in self.binder.summaries.items():
            if self._prefetch is None or self._prefetch.done():
                break
            inside[rel] = factlib.inside_edges(summary, self._facts[rel], self._ids, self._calls_of)
        self._await_prefetch()  # the library outlines it parsed are in the cache then
        graph.load_edges(self._file_edges_and_sites(inside))
        for rel, summary in self.binder.summaries.items():
            order = factlib.base_order(summary, self._facts[rel], self._ids, self.externals)
            graph.replace_file_bases(rel, order)
        self._graph = graph
        self._method_names = MethodNames()
        self._link_across()

    # ----- what depends on more than one file's facts ---------------------------------
    def _new_externals(self) -> Externals | None:
        return Externals(self.environment, self._use_cache) if self.environment.active else None

    def _start_prefetch(self, summaries: dict[str, FileSummary]) -> Prefetch | None:
        """Read the library modules the files import in a process of its own while they
        resolve (index/prefetch.py): with a library cache to hand them over, and a core
        to spare."""
        if self.externals is None or not self._use_cache or self.workers < 2:
            return None
        if self.externals.has_read_before():  # the few files not read yet: lazily
            return None
        context = prefetch_context(len(summaries))
        if context is None:
            return None
        internal = {
            Path(rel[len(root) + 1 :] if root else rel).parts[0].removesuffix(".py")
            for rel in summaries
            for root in ("", *self.roots)
            if not root or rel.startswith(root + "/")
        }
        try:
            return Prefetch(context, self.environment, summaries, internal)
        except (OSError, RuntimeError):  # no process here: resolution reads them lazily
            return None

    def _await_prefetch(self) -> None:
        prefetch, self._prefetch = self._prefetch, None
        self._prefetched = prefetch.wait() if prefetch is not None else 0
        if prefetch is not None and prefetch.learned is not None and self.externals is not None:
            self.externals.adopt(prefetch.learned)

    def _note_libraries(self) -> None:
        """Library files found but not read: their definitions are left out, and said."""
        if self.externals is not None:
            for path, why in sorted(self.externals.unreadable.items()):
                self._problem(path, "library", f"{why}; its definitions are left out")

    def _note_library_cache(self) -> None:
        """What the library cache had to say (rebuilt, unusable: libraries are then read
        every time), as one problem of its file."""
        said = self.externals.take_problem() if self.externals is not None else None
        if said:
            self._problem(str(library_cache_folder() / LIBRARY_CACHE), "cache", said)

    def _counted_method_names(self) -> MethodNames:
        """The method names of the whole graph, counted once after a warm start (by the
        deferred load, else by the first edit: 50 ms on Django)."""
        names = self._method_names = MethodNames()
        names.refresh(self._graph, self._graph.files())
        return names

    def _link_across(self, changed_files: set[str] | None = None) -> set[str]:
        """Put the overrides edges that changed (a method's depend on the classes of its
        MRO, in other files and outside) and the external entities that edges lead to:
        of every file, or of those that changed files can affect. Returns the files whose
        edges changed."""
        graph = self._graph
        files = None
        if changed_files is None:
            self._bases_moved = set()
        else:
            files = sorted(below(graph, changed_files) & set(graph.files()))
        names = self._method_names
        if names is None:
            names = self._counted_method_names()
        else:
            names.refresh(graph, graph.files() if changed_files is None else changed_files)
        now = overrides_by_file(graph, self.externals, names, files)
        changed: set[str] = set()
        for rel in graph.files() if files is None else files:
            edges = graph.file_edges(rel)
            old = frozenset(e for e in edges if e.kind == OVERRIDES)
            new = now.get(rel, frozenset())
            if old == new:
                continue
            graph.replace_file_edges(
                rel,
                (edges - old) | new,
                {},
                via=graph.file_via_map(rel),
                missed=graph.file_missed_packed(rel),
            )
            changed |= {path_of(e.dst) for e in old ^ new} | {rel}
        self._put_external_entities()
        return changed - {EXTERNAL}

    def _put_external_entities(self) -> None:
        """The graph holds an entity for each ext id an edge leads to, and no other."""
        graph = self._graph
        wanted = graph.external_targets()
        held = {e.id: e for e in graph.file_entities(EXTERNAL)}
        if set(held) == wanted:
            return
        entities = [held[i] for i in sorted(wanted) if i in held]
        if self.externals is not None:
            entities += self.externals.entities(sorted(wanted - set(held)))
        graph.replace_file_entities(EXTERNAL, entities)

    def _file_edges_and_sites(self, inside: dict[str, factlib.Inside]) -> Iterator[tuple]:
        """Each file's edges, finishing those found already (inside, taken)."""
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
                    self.externals,
                    inside.pop(rel, None),
                ),
            )

    # ----- incremental ----------------------------------------------------
    def update_file(self, relpath: str, text: str | bytes) -> set[str]:
        """Re-index one file from text in memory; returns the relpaths whose facts changed."""
        data = buffer_bytes_or_utf8(text) if isinstance(text, str) else text
        with self.lock, gc_paused():
            self._built = None
            held = self.binder.summaries.get(relpath)
            try:
                parsed = self._reparser.summarize(relpath, data, held, limit=self.max_file_bytes)
            except UnreadableSource as err:
                self._problem(relpath, err.kind, str(err))
                return self._published_after(self._remove(relpath), relpath)
            except RecursionError:  # as in a build: reported, never raised to the caller
                self._problem(relpath, "too-deep", "nesting too deep to read; skipped")
                return self._published_after(self._remove(relpath), relpath)
            summary = parsed.summary
            self.problems.pop(relpath, None)
            self._note_summary_problems(summary)
            before = self._sources.get(relpath)
            self._sources.put(relpath, data)
            self._hashes[relpath] = content_hash(data)
            if before is None:
                return self._published_after(self._replace(summary, parsed.bodies), relpath)
            old, new = _python_lines(before), _python_lines(data)
            line = first_changed_line(old, new)
            delta = new.count(b"\n") - old.count(b"\n")
            edited = (line, delta, parsed.walked, parsed.replaced)
            return self._published_after(self._replace(summary, parsed.bodies, edited), relpath)

    def prepare_edits(self, relpath: str) -> None:
        """Parse relpath as indexed and keep its tree, so that even its first edit walks
        only what it changed (a server calls this when an editor opens the file)."""
        with self.lock:
            data, summary = self._sources.get(relpath), self.binder.summaries.get(relpath)
            if data is not None and summary is not None and not summary.problems:
                self._interface_items_of(summary)  # what the edit compares with, found now
                self._reparser.hold(relpath, data, summary, self.binder.bodies(relpath))
            self._graph.read_missed_names()  # what a new definition's name is looked up in

    def reload_file(self, relpath: str) -> set[str]:
        """Re-read one file from disk (a removal when it is gone)."""
        with self.lock:
            self._built = None
            data = self._read_again(relpath)
            if data is None:
                return self._published_after(self._remove(relpath), relpath)
            return self.update_file(relpath, data)

    def _read_again(self, relpath: str) -> bytes | None:
        """relpath's bytes on disk; None when a build would not index it now (gone: not
        a problem, unreadable: said)."""
        data = self._read(relpath) if self.is_indexable(relpath) else None
        gone = self.problems.get(relpath)
        if data is None and gone is not None and gone.kind == "vanished":
            del self.problems[relpath]
        return data

    def reload_files(self, relpaths: Iterable[str]) -> set[str]:
        """Re-read several files from disk at once (removals where they are gone); returns
        the relpaths whose facts changed. Up to AFRESH_MIN_FILES - 1 take an update each;
        more (a checkout, a pull), or a configuration file among them (configures_roots)
        that states other source roots now, are read and parsed, then every file is
        resolved again as a build does: each update resolves its dependents again, and on
        Django the 38 files of 5.1 -> 5.1.1 cost 205 s that way against 35 s for a build (6
        files of 5.1.1 -> 5.1.2: 73 s against 29 s)."""
        wanted = set(relpaths)
        configs = {rel for rel in wanted if configures_roots(rel) and not self.is_indexable(rel)}
        with self.lock:  # what is on disk as indexed (an event told twice) is left as it is
            rels = [rel for rel in sorted(wanted - configs) if not self._as_indexed(rel)]
            # a pyproject.toml, setup.cfg, pytest.ini or tox.ini that states other roots now
            # (pytest's pythonpath, a nested project): where every import lands may move
            moved = bool(configs) and self._find_roots(sorted(self._hashes)) != self.roots
        if len(rels) < AFRESH_MIN_FILES and not moved:
            changed: set[str] = set()
            for rel in rels:
                changed |= self.reload_file(rel)
            return changed
        with self.lock, gc_paused():
            self._built = None
            # after a warm start the binder holds no summary until the engine is loaded: a
            # checkout of five files then resolved those five alone, every other file gone
            self._ensure_engine()
            summaries = dict(self.binder.summaries)
            jobs: list[tuple[str, bytes, int]] = []
            for rel in rels:
                self._reparser.forget(rel)
                self._interface_memo.pop(rel, None)
                self._import_memo.pop(rel, None)
                summaries.pop(rel, None)
                self._sources.pop(rel)
                self._hashes.pop(rel, None)
                self._ids.pop(rel, None)
                self.problems.pop(rel, None)
                data = self._read_again(rel)
                if data is not None:
                    jobs.append((rel, data, self.max_file_bytes))
            rows: list[tuple[str, str, bytes]] = []
            read = {rel: data for rel, data, _limit in jobs}
            for rel, result in summarize_many(jobs, self.workers):
                if isinstance(result, Problem):
                    self.problems[rel] = result
                    continue
                summary = summaries[rel] = pickle.loads(result)
                self._note_summary_problems(summary)
                data = read[rel]
                self._sources.put(rel, data)
                self._hashes[rel] = content_hash(data)
                self._ids[rel] = factlib.scope_ids(summary)
                rows.append((rel, self._hashes[rel], result))
            cache = self._open_cache()
            if cache is not None and rows:  # the next build parses none of them again
                cache.store_summaries(rows)
                self._note_cache(cache)
            self.roots = self._find_roots(sorted(summaries))
            self._resolve_afresh(summaries)
            if self.externals is not None:  # the library files this read first
                self.externals.save()
            return set(self.binder.summaries) | set(rels)

    def _as_indexed(self, rel: str) -> bool:
        """Whether rel's bytes on disk are those the index holds."""
        held = self._hashes.get(rel)
        if held is None or not self.is_indexable(rel):
            return False
        found = read_file(self.root, rel, self.max_file_bytes)
        return not isinstance(found, Problem) and content_hash(found) == held

    def remove_file(self, relpath: str) -> set[str]:
        with self.lock, gc_paused():
            self._built = None
            self.problems.pop(relpath, None)
            return self._published_after(self._remove(relpath), relpath)

    def _published_after(self, changed: set[str], edited: str) -> set[str]:
        """Publish an edit's graph. Overrides depend on the classes' methods and bases
        alone: the edited file's, and those of files whose inherits edges the edit moved
        (not every file whose callers moved: on Django an appended def moved 9 to 53
        files' tags, and walking the classes below them took 0.2-0.6 s)."""
        if self._bases_moved and self._method_names is not None:
            self._method_names.below_outside = None
        classes, self._bases_moved = self._bases_moved | {edited}, set()
        if changed:
            changed |= self._link_across(classes)
        self._publish()
        if self.externals is not None:  # the library files the edit read first
            self.externals.save()
        return changed

    def _reresolve(
        self,
        paths: set[str],
        edited: tuple[str, BodyEdit] | None = None,
        passed_before: dict[str, dict] | None = None,
        found_before: dict[str, FileFacts] | None = None,
        start: dict | None = None,
    ) -> set[str]:
        """Resolve files again until argument flow settles (see rounds.reresolve); returns
        files whose tags moved."""
        touched: set[str] = set()
        calls_before: dict[str, dict[int, frozenset]] = {}

        def before_file(rel: str) -> None:
            if is_test_path(rel) and rel not in calls_before:
                calls_before[rel] = self._scope_calls(rel)

        def after_file(rel: str) -> None:
            self._note_facts(rel)
            touched.update(self._apply_edges(rel))

        resolved, settled = reresolve(
            self.binder,
            self._facts,
            paths,
            edited,
            passed_before or {},
            before_file,
            after_file,
            found_before,
            start,
        )
        if not settled:
            self._resolve_afresh()
            return set(self.binder.summaries)
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
        for rel, old in before.items():
            new, ids = self._scope_calls(rel), self._ids.get(rel, [])
            for idx in set(old) | set(new):
                if old.get(idx) == new.get(idx) or idx >= len(ids):
                    continue
                ent = self._graph.entities.get(ids[idx])
                if ent and ent.kind in ("function", "method") and not is_test_name(ent.name):
                    out.update(path_of(src) for src in self._graph.into(CALLS, ent.id))
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
            summary,
            facts,
            self._ids,
            self._calls_of,
            partial(self.binder.bodies, rel),
            self.externals,
        )
        old = self._graph.file_edges(rel)
        edges |= {e for e in old if e.kind == OVERRIDES}  # _link_across puts them
        self._graph.replace_file_edges(rel, edges, sites, via=via, missed=missed)
        order = factlib.base_order(summary, facts, self._ids, self.externals)
        self._graph.replace_file_bases(rel, order)
        moved = old ^ edges
        if any(e.kind == INHERITS for e in moved):
            self._bases_moved.add(rel)
        return {path_of(e.src) for e in moved} | {path_of(e.dst) for e in moved}

    # ----- cache state ----------------------------------------------------
    def _cache_state(self) -> tuple[dict, Iterator[tuple[str, bytes]]]:
        """The cache's copy of the graph (light, read at every warm start) and of the
        resolution state (read only when a file changes): a small state, and its rows."""
        stats = self.stats()
        state = {
            "paths": sorted(self.binder.summaries),
            "counts": (stats.resolved_binder, stats.external, stats.unresolved),
            "problems": self.problems,
            "stats": self._stats,
            # the entities outside the repository that edges lead to, and the library
            # files they were read from (a warm start trusts them only if unchanged)
            "external": [astuple_entity(e) for e in self._graph.file_entities(EXTERNAL)],
            "libraries": dict(self.externals.files) if self.externals is not None else {},
        }
        paths = sorted(self.binder.summaries)
        return state, cache_rows(self._graph, paths, self._facts, self.binder.passed_by_scope)

    def _restore(self, state: object, parts: dict[str, memoryview], stamp: str) -> bool:
        if not isinstance(state, dict) or "paths" not in state:
            return False
        paths = state["paths"]
        if not _unchanged(state.get("libraries", {})):
            return False
        graph = restore_graph(str(self.root), paths, parts, state.get("external", ()))
        if graph is None:
            return False
        self._method_names = None  # counted for this graph when an edit first asks
        self._graph = graph
        self._publish(rebuilt=True)
        # Only problems of the files read now: not old listing or cache problems.
        self.problems.update(
            (rel, problem) for rel, problem in state["problems"].items() if rel in self._hashes
        )
        for rel in set(self._hashes) - set(paths):
            self._sources.pop(rel)
            self._hashes.pop(rel, None)
        self._stats = state["stats"]
        # The hashes the cached summaries were stored under: an edit may change ours first.
        self._lazy = (paths, stamp, state["counts"], dict(self._hashes))
        return True

    def ensure_engine(self) -> None:
        """Load the resolver state a warm start deferred, and build the binder's
        repository-wide tables; a server calls it while idle.

        Otherwise the first change after a start pays for it.
        """
        with self.lock, gc_paused(settle=True):
            self._ensure_engine()

    def _ensure_engine(self) -> None:
        self._sources.pack()  # a warm start left them as read
        if self._lazy is None:
            self.binder.warm()
            return
        paths, stamp, _counts, hashes = self._lazy
        self._lazy = None
        cache = self._open_cache()
        blobs = cache.summaries({rel: hashes[rel] for rel in paths}) if cache else {}
        try:
            if cache is None or set(blobs) != set(paths):
                raise ValueError("summaries missing from the cache")
            summaries = {rel: pickle.loads(blob) for rel, blob in blobs.items()}
            del blobs
            # read and unpickled row by row: the blobs of them all are never held at once
            facts = unpickled(cache.graph_parts(FACTS, stamp), FACTS)
            contrib = unpickled(cache.graph_parts(PASSED, stamp), PASSED)
            if set(facts) != set(paths) or set(contrib) != set(paths):
                raise ValueError("resolution state missing from the cache")
        except Exception:  # the cache changed under us: build from scratch
            if cache is not None:
                cache.store_graph("", {}, ())
            self._build(None)
            return
        self.binder = Binder()
        self.binder.set_files(summaries, self.root.name, self.roots)
        self.binder.restore_passed(contrib)
        self._facts, self._fact_holders = facts, None
        # the ids the restored graph holds, one string each: 5 MB on Django made again
        one = {ident: ident for ident in self._graph.entities}
        self._ids = {p: [one.get(i, i) for i in factlib.scope_ids(s)] for p, s in summaries.items()}
        del one
        self.binder.warm()
        if self._method_names is None:
            self._counted_method_names()

    # ----- queries ----------------------------------------------------------
    def mro(self, class_id: str) -> list[str]:
        """class_id and its repository bases in C3 order (ids; bases outside the repository
        are not in the index), each once: a cycle of bases repeats one where it is cut.
        Read from the graph, which keeps each class statement's order of bases: a warm
        start answers without loading the resolver state."""
        graph = self.snapshot().graph
        return list(dict.fromkeys(mro_of(class_id, graph.bases, {}, set())))

    # ----- figures ----------------------------------------------------------
    def stats(self) -> IndexStats:
        graph = self.snapshot().graph
        mean, hubs = graph_figures(graph)
        stats = IndexStats(
            files=len(self._lazy[0]) if self._lazy else len(self.binder.summaries),
            entities=len(graph.entities) - len(graph.file_entities(EXTERNAL)),  # the repository's
            edges=edge_counts(graph),
            mean_out_degree=round(mean, 3),
            hub_share=round(hubs, 4),
            reparsed=self._stats.reparsed,
            from_cache=self._stats.from_cache,
            libraries_read=self.externals.parsed if self.externals is not None else 0,
            libraries_prefetched=self._stats.libraries_prefetched,
            resolved_afresh=self._stats.resolved_afresh,
        )
        if self._lazy is not None:
            stats.resolved_binder, stats.external, stats.unresolved = self._lazy[2]
        for facts in self._facts.values():
            stats.resolved_binder += facts.resolved
            stats.external += facts.external
            stats.unresolved += facts.unresolved
            if self.externals is not None:  # calls of packages not installed
                missing = factlib.missing_packages(facts, self.externals)
                flipped = sum(len(at) for at in missing.values())
                stats.external -= flipped
                stats.unresolved += flipped
        stats.call_sites = stats.resolved_binder + stats.external + stats.unresolved
        counts: dict[str, int] = {}
        for problem in self.problems.values():
            counts[problem.kind] = counts.get(problem.kind, 0) + 1
        stats.problems = dict(sorted(counts.items()))
        markers = [rel for rel in self._hashes if states_a_root(rel)]
        found = {"", *self.roots} | stated_by_files(self._hashes, markers)
        stats.source_roots = sorted(root or "." for root in found)
        return stats

    def close(self) -> None:
        if isinstance(self._environment, Asking):
            self._environment.close()
        if self._cache is not None:
            self._cache.close()
            self._cache = None
        if self.externals is not None:
            self.externals.close()


def _unchanged(files: dict[str, tuple[int, int]]) -> bool:
    """Whether the library files a stored build read are as they were (size, mtime)."""
    for path, (size, mtime) in files.items():
        try:
            info = os.stat(path)
        except OSError:
            return False
        if (info.st_size, info.st_mtime_ns) != (size, mtime):
            return False
    return True


def _python_lines(data: bytes) -> bytes:
    """data with every line ending a "\n", as Python (and the summaries) count lines: a
    lone CR ends a line too."""
    return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n") if b"\r" in data else data
