"""Definitions outside the repository that its code reaches: the first step out, no more.

The binder names what lies outside the repository by the way the code reaches it
(`("x", "django.db.models.Model")`, `("x", "requests.Session().get")`). This module
finds what such a name is in the environment (anchor_ls.index.environment): the module
file, then the definition along re-exports, aliases, stubs and base classes, as
`ext:<defining module>.<qualified name>` (`ext:django.db.models.base.Model`). Only modules
that resolution reaches are read, by the same syntax layer as the repository's files;
their summaries are kept in the user cache (signed rows, as every cache row) under their
path, size and modification time, shared by every repository.

It never imports, runs or links anything of the library's insides: an entity here is a
target of a repository edge, never a source.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sqlite3
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import platformdirs

from anchor_ls.index.cache import Cache
from anchor_ls.index.environment import Environment
from anchor_ls.index.model import EXTERNAL_PREFIX, Entity
from anchor_ls.index.mro import mro_of
from anchor_ls.syntax.parse import summarize
from anchor_ls.syntax.summary import Expr, FileSummary, Span, StarImport, shared_expression

__all__ = ["Externals", "library_cache_folder"]

_MAX_DEPTH = 24  # re-exports and aliases followed before giving up (a cycle, or absurd depth)
_SOURCE_SUFFIXES = (".pyi", ".py")  # a stub before its source (PEP 561)
_EXTENSION_SUFFIXES = (".so", ".pyd")
_BUILTINS_PREFIX = f"{EXTERNAL_PREFIX}builtins."
_ALWAYS_THERE = frozenset({"builtins", *sys.builtin_module_names})


LIBRARY_CACHE = "libraries.sqlite3"

# Modules of the other platform's side of a stub that star-imports one module per platform
# under `if sys.platform == "win32"` (typeshed's os/path.pyi: ntpath or posixpath; asyncio:
# windows_events or unix_events). The outline keeps no condition: these are looked in last.
_OTHER_PLATFORM = (
    frozenset({"posixpath", "posix", "unix_events"})
    if sys.platform == "win32"
    else frozenset({"ntpath", "nt", "windows_events", "windows_utils", "_winapi", "msvcrt"})
)


# typing's generic aliases of classes (typeshed: `List = _Alias()`): as a base or an
# annotation each is the class it stands for at run time (`List[int].__mro_entries__` is
# list), in typing and typing_extensions alike.
_TYPING_MODULES = frozenset({"typing", "typing_extensions"})
_TYPING_ALIASES = {
    "List": "builtins.list",
    "Dict": "builtins.dict",
    "Set": "builtins.set",
    "FrozenSet": "builtins.frozenset",
    "Tuple": "builtins.tuple",
    "Type": "builtins.type",
    "DefaultDict": "collections.defaultdict",
    "OrderedDict": "collections.OrderedDict",
    "Counter": "collections.Counter",
    "Deque": "collections.deque",
    "ChainMap": "collections.ChainMap",
}
# Special forms a class derives from that are no class in typeshed (`Protocol:
# _SpecialForm`, `Generic: type[_Generic]`): an entity of their own, at their declaration.
_TYPING_FORMS = frozenset({"Protocol", "Generic", "TypedDict"})
_IMPORTS = frozenset({"im", "ima", "if"})  # the tags of what an import binds


def library_cache_folder() -> Path:
    """Where library summaries are kept (LIBRARY_CACHE, beside the cache key): the user
    cache, one file for all repositories."""
    return Path(platformdirs.user_cache_dir("anchor-ls"))


class Module(NamedTuple):
    """A module found in the environment: its file (None for a namespace package or a
    compiled module without a stub) and, for a package, its folders."""

    name: str
    path: str | None
    dirs: tuple[str, ...]


class Definition(NamedTuple):
    """A class or function: scope idx of the module's summary."""

    module: Module
    idx: int


class Form(NamedTuple):
    """A special form of typing that a class can derive from (_TYPING_FORMS), declared as
    no class: a base with no bases and no members of its own. line, col: where its module
    declares it."""

    module: Module
    name: str
    line: int
    col: int


class Bases(NamedTuple):
    """The classes from outside the repository that a class of the repository derives
    from, in its MRO's order (the binder's group name `[a.A+b.B]`): looked in along the
    C3 merge of their MROs, as Python's MRO has them."""

    classes: tuple[Definition, ...]


class Instance(NamedTuple):
    """An instance of a class (of one deriving from Bases)."""

    cls: Definition | Bases


Target = Module | Definition | Instance | Bases | Form


class OutlineBinding(NamedTuple):
    """A name a library's module or class body binds, and to what."""

    name: str
    value: Expr


class OutlineScope(NamedTuple):
    """What following a name needs of one scope of a library file, and what its entity
    shows: a summary's Scope keeps some twenty fields more (a dict and a dozen lists
    each), three times the memory for the 11,000 scopes Django reaches."""

    kind: str
    name: str
    qualname: str
    parent: int
    line: int
    end_line: int
    start_line: int
    name_span: Span
    bases: tuple[Expr, ...]
    returns: Expr | None  # the return annotation
    bindings: tuple[OutlineBinding, ...]  # of a module or a class, in source order
    star_imports: tuple[StarImport, ...]


class Outline(NamedTuple):
    """A library file's scopes, as summary.scopes indexes them (Definition.idx), and
    where it declares a name of _TYPING_FORMS other than by a class: (name, line, col)."""

    path: str
    scopes: tuple[OutlineScope, ...]
    forms: tuple[tuple[str, int, int], ...] = ()


class Learned(NamedTuple):
    """What an Externals found out, to hand over to another of the same environment: the
    prefetch process (index/prefetch.py) follows the names the build will, so the build
    parses no outline and follows no name a second time (see handover)."""

    modules: dict[str, Module | None]
    summaries: dict[str, Outline | None]
    targets: dict[str, str | None]
    defs: dict[str, Definition | Form]
    files: dict[str, tuple[int, int]]
    unreadable: dict[str, str]


class Externals:
    """What the names the binder leaves outside the repository are in one environment.

    Answers are remembered for the life of the index (a library changes under a running
    index rarely; a new build starts a new one)."""

    def __init__(self, environment: Environment, use_cache: bool = True) -> None:
        self.environment = environment
        self._folders = environment.folders()
        self._use_cache = use_cache
        self._cache: Cache | None = None
        self.problem: str | None = None  # the library cache could not be used
        self._modules: dict[str, Module | None] = {}
        self._summaries: dict[str, Outline | None] = {}
        self._targets: dict[str, str | None] = {}  # binder name -> ext id
        self._bases: dict[str, tuple[str, ...]] = {}
        self._defs: dict[str, Definition | Form] = {}  # ext id -> where it is defined
        self._known_mros: dict = {}
        self.files: dict[str, tuple[int, int]] = {}  # files read -> (size, mtime_ns)
        # outlines read since the last save(), as library cache rows (path, stamp, pickle)
        self._unsaved: list[tuple[str, str, bytes]] = []
        self.parsed = 0  # library files parsed here (not found in the library cache)
        # library files found but not read (gone, unreadable, refused): path -> why
        self.unreadable: dict[str, str] = {}
        self._extensions: dict[str, frozenset[str]] = {}  # folder -> its compiled modules

    def learned(self) -> Learned:
        return Learned(
            self._modules, self._summaries, self._targets, self._defs, self.files, self.unreadable
        )

    def handover(self) -> Learned:
        """What learned() holds, for another process once save() has run: the outlines
        read are in the library cache then, and are read back from it as asked (a file
        not there is read again). Pickling them all again cost DRF's first index 0.1 s at
        its end, while the build waited."""
        unread = {path: None for path, outline in self._summaries.items() if outline is None}
        return self.learned()._replace(summaries=unread)

    def adopt(self, learned: Learned) -> None:
        """Take what another Externals of this environment found; what this one found
        itself stays."""
        mine = self.learned()
        for ours, theirs in zip(mine, learned, strict=True):
            for key, value in theirs.items():
                ours.setdefault(key, value)

    # ----- what the index asks ------------------------------------------------
    def installed(self, dotted: str) -> bool:
        """Whether the top module of a binder name is in the environment (else a call of
        it is unresolved: the code needs a package that is not installed)."""
        group = _group(dotted)
        if group is not None:
            return any(self.installed(member) for member in group[0])
        top = dotted.partition(".")[0].partition("(")[0]
        return top in _ALWAYS_THERE or self.module(top) is not None

    def target(self, dotted: str) -> str | None:
        """The ext id of the class or function a binder name stands for, or None."""
        try:
            return self._targets[dotted]
        except KeyError:
            pass
        try:
            found = self._evaluate_name(dotted)
            ident = self._remember(found) if isinstance(found, Definition | Form) else None
        except RecursionError:  # a library whose names chase each other: left unlinked
            ident = None
        self._targets[dotted] = ident
        return ident

    def call_target(self, dotted: str) -> str | None:
        """target(dotted) for a call: none into builtins (`len`, `super`, `str.join`:
        a link from nearly every function, saying nothing of any)."""
        found = self.target(dotted)
        return None if found is None or found.startswith(_BUILTINS_PREFIX) else found

    def is_class(self, ident: str) -> bool:
        found = self._defs.get(ident)
        return isinstance(found, Form) or (found is not None and self._scope(found).kind == "class")

    def entity(self, ident: str) -> Entity | None:
        """The entity of an ext id this index gave out (its file absolute)."""
        found = self._defs.get(ident)
        if found is None:
            return None
        summary = self.summary(found.module)
        if summary is None or found.module.path is None:
            return None
        if isinstance(found, Form):
            at = (found.line - 1, found.col, found.line - 1, found.col + len(found.name))
            return Entity(ident, "class", found.module.path, found.name, *(found.line,) * 3, at)
        scope = summary.scopes[found.idx]
        kind = scope.kind if scope.kind == "class" else "function"
        if kind == "function" and summary.scopes[scope.parent].kind == "class":
            kind = "method"
        return Entity(
            ident,
            kind,
            found.module.path,
            scope.name,
            scope.line,
            scope.end_line,
            scope.start_line,
            scope.name_span,
        )

    def bases(self, ident: str) -> tuple[str, ...]:
        """The ext ids of an external class's bases, in declared order (those found)."""
        known = self._bases.get(ident)
        if known is not None:
            return known
        found = self._defs.get(ident)
        out: list[str] = []
        self._bases[ident] = ()  # a class among its own bases' names stands alone
        if isinstance(found, Definition):
            try:
                out = [self._remember(base) for base in self._class_bases(found)]
            except RecursionError:
                out = []
        self._bases[ident] = known = tuple(dict.fromkeys(b for b in out if b != ident))
        return known

    def member(self, ident: str, name: str) -> str | None:
        """The ext id of the function an external class's own body binds to name."""
        found = self._defs.get(ident)
        if not isinstance(found, Definition):
            return None
        try:
            value = self._own_attr(found, name, 0)
        except RecursionError:
            return None
        if isinstance(value, Definition) and self._scope(value).kind != "class":
            return self._remember(value)
        return None

    def mro(self, ident: str) -> list[str]:
        """An external class and its external bases in C3 order."""
        return list(mro_of(ident, self.bases, self._known_mros, set()))

    def entities(self, idents: Iterator[str] | list[str]) -> list[Entity]:
        return [e for e in (self.entity(i) for i in idents) if e is not None]

    # ----- modules ---------------------------------------------------------------
    def module(self, dotted: str) -> Module | None:
        try:
            return self._modules[dotted]
        except KeyError:
            pass
        parent, _, last = dotted.rpartition(".")
        if parent:
            above = self.module(parent)
            found = self._find(last, above.dirs, dotted) if above is not None else None
        else:
            found = self._find(dotted, self._folders, dotted, top=True)
            if found is None:  # after every folder, as the finder is after PathFinder
                found = self._editable(dotted)
        self._modules[dotted] = found
        return found

    def _editable(self, name: str) -> Module | None:
        """A top-level module installed in editable mode by a finder (Environment.editable):
        the package folder or the module file (the path without its suffix) it maps to."""
        target = dict(self.environment.editable).get(name)
        if target is None:
            return None
        if os.path.isdir(target):
            for suffix in _SOURCE_SUFFIXES:
                init = os.path.join(target, f"__init__{suffix}")
                if os.path.isfile(init):
                    return Module(name, init, (target,))
            return Module(name, None, (target,))
        for suffix in _SOURCE_SUFFIXES:
            if os.path.isfile(target + suffix):
                return Module(name, target + suffix, ())
        return None

    def _find(
        self, name: str, folders: tuple[str, ...], dotted: str, top: bool = False
    ) -> Module | None:
        """name in folders as the import system finds it: a package or module in the first
        folder that has one (a stub package `name-stubs` first, a stub before its
        source), else a namespace package of every folder with a folder `name`."""
        portions: list[str] = []
        for folder in folders:
            if top:
                stubs = os.path.join(folder, f"{name}-stubs")
                init = os.path.join(stubs, "__init__.pyi")
                if os.path.isfile(init):
                    real = os.path.join(folder, name)
                    dirs = (stubs, real) if os.path.isdir(real) else (stubs,)
                    return Module(dotted, init, dirs)
            package = os.path.join(folder, name)
            if os.path.isdir(package):
                for suffix in _SOURCE_SUFFIXES:
                    init = os.path.join(package, f"__init__{suffix}")
                    if os.path.isfile(init):
                        return Module(dotted, init, (package,))
            for suffix in _SOURCE_SUFFIXES:
                single = os.path.join(folder, f"{name}{suffix}")
                if os.path.isfile(single):
                    return Module(dotted, single, ())
            if self._has_extension(folder, name):
                return Module(dotted, None, ())
            if os.path.isdir(package):
                portions.append(package)
        return Module(dotted, None, tuple(portions)) if portions else None

    # ----- summaries ---------------------------------------------------------------
    def summary(self, module: Module) -> Outline | None:
        path = module.path
        if path is None:
            return None
        try:
            return self._summaries[path]
        except KeyError:
            pass
        found = self._summaries[path] = self._read_summary(path)
        return found

    def _read_summary(self, path: str) -> Outline | None:
        try:
            info = os.stat(path)
        except OSError as err:
            self.unreadable[path] = f"library file gone ({err.strerror or err})"
            return None
        self.files[path] = (info.st_size, info.st_mtime_ns)
        stamp = hashlib.blake2b(
            f"{info.st_size}\0{info.st_mtime_ns}".encode(), digest_size=16
        ).hexdigest()
        cache = self._open_cache()
        if cache is not None:
            blob = cache.summary(path, stamp)
            if blob is not None:
                try:
                    return pickle.loads(blob)
                except Exception:  # a damaged row: read the file again
                    pass
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as err:
            self.unreadable[path] = f"library file unreadable ({err.strerror or err})"
            return None
        try:
            summary = _outline(summarize(path, data, outline=True), data)
        except Exception as err:  # bytes the syntax layer refuses: no definitions from it
            self.unreadable[path] = f"library file not read ({err})"
            return None
        self.parsed += 1
        if cache is not None:
            self._unsaved.append((path, stamp, pickle.dumps(summary, pickle.HIGHEST_PROTOCOL)))
        return summary

    def has_read_before(self) -> bool:
        """Whether the library cache holds outlines of this environment's files already (a
        machine that has read its libraries): reading ahead then costs more than the few
        files left to read lazily (6 s of CPU on Django, for nothing to parse)."""
        cache = self._open_cache()
        return cache is not None and cache.holds_under(self.environment.folders())

    def save(self) -> None:
        """Write the outlines read since the last save to the library cache, in one
        transaction: a commit per file waited for the disk 191 times on DRF's first index
        (1-2 s), longer than reading the files."""
        rows, self._unsaved = self._unsaved, []
        cache = self._cache
        if rows and cache is not None:
            cache.store_summaries(rows)
            self.problem = cache.take_problem() or self.problem

    def _open_cache(self) -> Cache | None:
        if not self._use_cache:
            return None
        if self._cache is None:
            try:
                self._cache = Cache(library_cache_folder(), name=LIBRARY_CACHE)
            except (OSError, sqlite3.Error) as err:
                self._use_cache = False
                self.problem = f"library cache unusable ({err}); libraries read every time"
                return None
            self.problem = self._cache.take_problem() or self.problem  # rebuilt, foreign rows
        return self._cache

    def take_problem(self) -> str | None:
        """What went wrong with the library cache since last asked, once."""
        if self._cache is not None:
            self.problem = self._cache.take_problem() or self.problem
        said, self.problem = self.problem, None
        return said

    def _has_extension(self, folder: str, name: str) -> bool:
        """Whether folder holds a compiled module `name` (`name.cpython-311-...so`)."""
        names = self._extensions.get(folder)
        if names is None:
            try:
                entries = os.listdir(folder)
            except OSError:
                entries = []
            names = self._extensions[folder] = frozenset(
                e.partition(".")[0] for e in entries if e.endswith(_EXTENSION_SUFFIXES)
            )
        return name in names

    def close(self) -> None:
        self.save()
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    # ----- names to definitions --------------------------------------------------
    def _remember(self, found: Definition | Form) -> str:
        qualname = found.name if isinstance(found, Form) else self._scope(found).qualname
        ident = f"{EXTERNAL_PREFIX}{found.module.name}.{qualname}"
        self._defs.setdefault(ident, found)
        return ident

    def _scope(self, found: Definition) -> OutlineScope:
        summary = self.summary(found.module)
        assert summary is not None  # a Definition is made only from a summary
        return summary.scopes[found.idx]

    def _evaluate_name(self, dotted: str) -> Target | None:
        """A binder name (`a.b.C().m`) step by step: the longest module prefix, then
        attributes and calls."""
        group = _group(dotted)
        if group is not None:
            return self._evaluate_group(*group)
        steps = _steps(dotted)
        if not steps or steps[0][1]:
            return None
        current = self.module(steps[0][0])
        return self._follow(current, steps[1:]) if current is not None else None

    def _evaluate_group(self, members: list[str], rest: str) -> Target | None:
        """`[a.A+b.B]().name`: the bases from outside of a class of the repository (Bases),
        then what rest does to it."""
        classes: list[Definition] = []
        for member in members:
            found = self._evaluate_name(member)
            if (
                isinstance(found, Definition)
                and self._scope(found).kind == "class"
                and found not in classes
            ):
                classes.append(found)
        if not classes:
            return None
        current: Target | None = classes[0] if len(classes) == 1 else Bases(tuple(classes))
        calls = 0
        while rest.startswith("()"):
            rest, calls = rest[2:], calls + 1
        for _ in range(calls):
            current = self._call(current, 0) if current is not None else None
        if current is None or not rest:
            return current
        steps = _steps(rest[1:]) if rest.startswith(".") else []
        return self._follow(current, steps) if steps else None

    def _follow(self, current: Target, steps: list[tuple[str, int]]) -> Target | None:
        """current's attributes and calls, step by step."""
        for name, calls in steps:
            receiver = current.cls if isinstance(current, Instance) else None
            current = self._attribute(current, name, 0)
            for _ in range(calls):
                if current is None:
                    break
                current, receiver = self._call(current, 0, receiver), None
            if current is None:
                return None
        return current

    def _attribute(self, target: Target, name: str, depth: int) -> Target | None:
        if depth > _MAX_DEPTH:
            return None
        if isinstance(target, Module):
            found = self._module_attr(target, name, depth + 1)
            if found is None:
                return self.module(f"{target.name}.{name}")
            return found
        if isinstance(target, Instance):
            return self._class_attr(target.cls, name, depth + 1)
        if isinstance(target, Form):
            return None
        if isinstance(target, Bases) or self._scope(target).kind == "class":
            return self._class_attr(target, name, depth + 1)
        return None

    def _call(
        self, target: Target, depth: int, receiver: Definition | Bases | None = None
    ) -> Target | None:
        """What calling target gives; receiver: the class of the instance a method was
        read from, which a `-> Self` names (`open(p).__enter__()` is a TextIOWrapper,
        though _IOBase defines `__enter__`)."""
        if depth > _MAX_DEPTH or isinstance(target, Module | Form):
            return None
        if isinstance(target, Instance):
            call = self._class_attr(target.cls, "__call__", depth + 1)
            return self._call(call, depth + 1) if isinstance(call, Definition) else None
        if isinstance(target, Bases):
            return Instance(target)
        scope = self._scope(target)
        if scope.kind == "class":
            return Instance(target)
        if scope.returns is None:
            return None
        if receiver is not None and _names_self(scope.returns):
            return Instance(receiver)
        made = self._evaluate(target.module, scope.parent, scope.returns, depth + 1, target)
        if isinstance(made, Definition) and self._scope(made).kind == "class":
            return Instance(made)
        return None

    def _module_attr(self, module: Module, name: str, depth: int) -> Target | None:
        summary = self.summary(module)
        if summary is None:
            return None
        top = summary.scopes[0]
        if module.name in _TYPING_MODULES and (name in _TYPING_ALIASES or name in _TYPING_FORMS):
            special = self._typing_special(module, summary, name)
            if special is not None:
                return special
        for binding in top.bindings:
            if binding.name == name:
                found = self._evaluate(module, 0, binding.value, depth + 1)
                if found is not None:
                    return found
        for star in _this_platform_first(top.star_imports):
            source = self._imported_module(module, star.module, star.level)
            if source is not None and source != module:
                found = self._module_attr(source, name, depth + 1)
                if found is not None:
                    return found
        return None

    def _typing_special(self, module: Module, summary: Outline, name: str) -> Target | None:
        """A generic alias or special form typing declares as no class (`List = _Alias()`,
        `Protocol: _SpecialForm`): the class an alias stands for, the form itself."""
        own = next((b.value for b in summary.scopes[0].bindings if b.name == name), None)
        if (
            own is None
            or own[0] in _IMPORTS
            or (own[0] == "f" and summary.scopes[own[1]].kind == "class")
        ):
            return None  # another module's (re-exported), or a class (typing.py's Protocol)
        if name in _TYPING_ALIASES:
            found = self._evaluate_name(_TYPING_ALIASES[name])
            return found if isinstance(found, Definition) else None
        for form, line, col in summary.forms:
            if form == name:
                return Form(module, name, line, col)
        return None

    def star_sources(self, module: Module) -> list[Module]:
        """module and the modules its top level star-imports for this platform (once read,
        any name asked of it later is looked up in these)."""
        summary = self.summary(module)
        if summary is None:
            return []
        found = [module]
        for star in summary.scopes[0].star_imports:
            if star.module.rpartition(".")[2] in _OTHER_PLATFORM:
                continue  # looked in last, and only for a name this platform's lacks
            source = self._imported_module(module, star.module, star.level)
            if source is not None and source not in found:
                found.append(source)
        return found

    def _own_attr(self, cls: Definition, name: str, depth: int) -> Target | None:
        scope = self._scope(cls)
        for binding in scope.bindings:
            if binding.name == name:
                found = self._evaluate(cls.module, cls.idx, binding.value, depth + 1)
                if found is not None:
                    return found
        return None

    def _class_attr(self, cls: Definition | Bases, name: str, depth: int) -> Target | None:
        for ident in self._lookup_order(cls):
            found = self._own_attr(self._defs[ident], name, depth + 1)  # type: ignore[arg-type]
            if found is not None:
                return found
        return None

    def _lookup_order(self, cls: Definition | Bases) -> list[str]:
        """The ext ids of the classes a name is looked up in: cls's MRO, or for Bases the C3
        merge of their MROs and their order (the MRO of a class deriving from them, without
        that class)."""
        if isinstance(cls, Definition):
            return self.mro(self._remember(cls))
        members = [self._remember(c) for c in cls.classes]
        group = f"[{'+'.join(members)}]"

        def bases(ident: str) -> Sequence[str]:
            return members if ident == group else self.bases(ident)

        return list(mro_of(group, bases, self._known_mros, set()))[1:]

    def _class_bases(self, cls: Definition) -> list[Definition]:
        scope = self._scope(cls)
        out = []
        for base in scope.bases:
            found = self._evaluate(cls.module, scope.parent, base, 0)
            if isinstance(found, Definition) and self._scope(found).kind == "class":
                out.append(found)
        return out

    def _imported_module(self, module: Module, dotted: str, level: int) -> Module | None:
        if not level:
            return self.module(dotted) if dotted else None
        package = module.name.split(".")
        is_package = module.path is not None and os.path.basename(module.path).startswith(
            "__init__."
        )
        keep = len(package) - level + (1 if is_package else 0)
        if keep < 1:
            return None
        base = ".".join(package[:keep])
        return self.module(f"{base}.{dotted}" if dotted else base)

    def _evaluate(
        self,
        module: Module,
        scope_idx: int,
        expr: Expr,
        depth: int,
        method: Definition | None = None,
    ) -> Target | None:
        """What an expression of a library's definitions (an alias, a base, an import, a
        return annotation) names: a module, class or function; else None."""
        if depth > _MAX_DEPTH:
            return None
        tag = expr[0]
        if tag == "f":
            return Definition(module, expr[1])
        if tag == "n":
            return self._name(module, scope_idx, expr[1], depth + 1, method)
        if tag == "a":
            base = self._evaluate(module, scope_idx, expr[1], depth + 1, method)
            return self._attribute(base, expr[2], depth + 1) if base is not None else None
        if tag in ("s", "g"):  # Generic[T], list[str]: the class subscripted
            return self._evaluate(module, scope_idx, expr[1], depth + 1, method)
        if tag == "c":
            called = self._evaluate(module, scope_idx, expr[1], depth + 1, method)
            return self._call(called, depth + 1) if called is not None else None
        if tag == "an":  # `X: T` binds an instance of T; `X: type[T]` binds the class T
            annotation = expr[1]
            if annotation[0] == "g" and annotation[2] and _names_type(annotation[1]):
                return self._evaluate(module, scope_idx, annotation[2][0], depth + 1, method)
            found = self._evaluate(module, scope_idx, annotation, depth + 1, method)
            if isinstance(found, Definition) and self._scope(found).kind == "class":
                return Instance(found)
            return None
        if tag == "or":
            for option in expr[1]:
                found = self._evaluate(module, scope_idx, option, depth + 1, method)
                if found is not None:
                    return found
            return None
        if tag == "sa":
            parts = expr[1].strip().split(".")
            if not all(p.isidentifier() for p in parts):
                return None
            found = self._name(module, scope_idx, parts[0], depth + 1, method)
            for part in parts[1:]:
                if found is None:
                    return None
                found = self._attribute(found, part, depth + 1)
            return found
        if tag == "im":
            return self.module(expr[1].split(".")[0])
        if tag == "ima":
            return self._imported_module(module, expr[1], expr[2])
        if tag == "if":
            source = self._imported_module(module, expr[1], expr[2])
            if source is None:
                return None
            if source.path is not None and source.path == module.path:
                return None
            found = self._module_attr(source, expr[3], depth + 1)
            return found if found is not None else self.module(f"{source.name}.{expr[3]}")
        return None

    def _name(
        self, module: Module, scope_idx: int, name: str, depth: int, method: Definition | None
    ) -> Target | None:
        if name == "Self" and method is not None:
            summary = self.summary(module)
            owner = summary.scopes[method.idx].parent if summary is not None else -1
            if owner > 0 and summary is not None and summary.scopes[owner].kind == "class":
                return Definition(module, owner)
        summary = self.summary(module)
        if summary is not None and 0 < scope_idx < len(summary.scopes):
            scope = summary.scopes[scope_idx]
            if scope.kind == "class":
                for binding in scope.bindings:
                    if binding.name == name:
                        found = self._evaluate(module, scope_idx, binding.value, depth + 1)
                        if found is not None:
                            return found
        found = self._module_attr(module, name, depth + 1)
        if found is not None or module.name == "builtins":
            return found
        builtins = self.module("builtins")
        return self._module_attr(builtins, name, depth + 1) if builtins is not None else None


def _this_platform_first(stars: tuple[StarImport, ...]) -> tuple[StarImport, ...]:
    """stars in order, those of the other platform's modules (_OTHER_PLATFORM) last."""
    if len(stars) < 2:
        return stars
    return tuple(sorted(stars, key=lambda star: star.module.rpartition(".")[2] in _OTHER_PLATFORM))


def _names_self(expr: Expr) -> bool:
    """`Self` (`typing.Self`), as a return annotation names it."""
    name = expr[1] if expr[0] == "n" else expr[2] if expr[0] == "a" else None
    return name == "Self"


def _names_type(expr: Expr) -> bool:
    """`type` or `Type` (`typing.Type`), as an annotation names it."""
    name = expr[1] if expr[0] == "n" else expr[2] if expr[0] == "a" else None
    return name in ("type", "Type")


def _group(dotted: str) -> tuple[list[str], str] | None:
    """`[a.A+b.B]().name` (classes.outside_name of the binder) -> (["a.A", "b.B"],
    "().name"); None for a name that is no group."""
    if not dotted.startswith("["):
        return None
    members: list[str] = []
    depth, start = 0, 1
    for at, char in enumerate(dotted):
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if not depth:
                members.append(dotted[start:at])
                return members, dotted[at + 1 :]
        elif char == "+" and depth == 1:
            members.append(dotted[start:at])
            start = at + 1
    return None


def _steps(dotted: str) -> list[tuple[str, int]]:
    """`a.b().c` -> [(a, 0), (b, 1), (c, 0)]: each name and the calls made of it."""
    out: list[tuple[str, int]] = []
    for part in dotted.split("."):
        name = part.rstrip("()")
        calls = (len(part) - len(name)) // 2
        if not name.isidentifier():
            return []
        out.append((name, calls))
    return out


def _outline(summary: FileSummary, data: bytes) -> Outline:
    """What following a name needs of a library file (data): its scopes' definitions,
    bindings of modules and classes, bases and return annotations, with each repeated
    expression and name one object, and where a typing special form is declared; no bodies
    (a library's call sites are never resolved)."""
    seen: dict[tuple, tuple] = {}
    names: dict[str, str] = {}

    def shared(value: Any) -> Any:
        try:
            return shared_expression(value, seen)
        except RecursionError:  # an expression too deep to walk: as it is
            return value

    scopes = []
    for scope in summary.scopes:
        bindings: tuple[OutlineBinding, ...] = ()
        if scope.kind in ("module", "class"):
            bindings = tuple(
                OutlineBinding(names.setdefault(b.name, b.name), shared(b.value))
                for b in scope.bindings
            )
        scopes.append(
            OutlineScope(
                scope.kind,
                names.setdefault(scope.name, scope.name),
                scope.qualname,
                scope.parent,
                scope.line,
                scope.end_line,
                scope.start_line,
                scope.name_span,
                tuple(shared(b) for b in scope.bases),
                shared(scope.returns),
                bindings,
                tuple(scope.star_imports),
            )
        )
    forms: dict[str, tuple[str, int, int]] = {}
    for binding in summary.scopes[0].bindings if summary.scopes else ():
        value = binding.value
        if binding.name in _TYPING_FORMS and binding.name not in forms and value[0] == "an":
            line_start = data.rfind(b"\n", 0, binding.pos) + 1
            line = data.count(b"\n", 0, binding.pos) + 1
            forms[binding.name] = (binding.name, line, binding.pos - line_start)
    return Outline(summary.path, tuple(scopes), tuple(forms.values()))
