"""Where an import statement lands: dotted module names to repository files."""

from __future__ import annotations

import posixpath
import sys
from collections.abc import Iterable

from anchor_ls.index.roots import contains, stated_by_files, states_a_root

# Top-level modules of the standard library that Python 3.12 and 3.13 removed.
_REMOVED = frozenset(
    {
        *("asynchat", "asyncore", "distutils", "imp", "smtpd"),
        *("aifc", "audioop", "cgi", "cgitb", "chunk", "crypt", "imghdr", "lib2to3"),
        *("mailcap", "msilib", "nis", "nntplib", "ossaudiodev", "pipes", "sndhdr", "spwd"),
        *("sunau", "telnetlib", "uu", "xdrlib"),
    }
)


def stdlib_modules(running: Iterable[str]) -> frozenset[str]:
    """The standard library's top-level modules on every Python anchor-ls runs on (3.11
    on), from those of the one running (sys.stdlib_module_names): the graph must not
    depend on which interpreter runs the index (a folder `cgi/` is no namespace package
    on any of them)."""
    return frozenset(running) | _REMOVED


STDLIB_MODULES = stdlib_modules(sys.stdlib_module_names)


class ModuleTable:
    """The repository's Python files as importable modules.

    An absolute import is looked up from the source roots (anchor_ls/index/roots.py says
    which and in what order): the importing file's own (the folder above its top package),
    those that contain it, innermost first, the repository root and `src/`, then the
    others. A folder without `__init__.py` is a namespace package. Modules not found are
    external (the standard library, third-party code) and never linked.
    """

    def __init__(
        self, relpaths: Iterable[str], root_package: str = "", roots: Iterable[str] = ()
    ) -> None:
        self.files: set[str] = set()
        self.dirs: set[str] = set()
        # When the indexed folder is itself a package (`django/`), `import django.x` lands inside.
        self.root_package = root_package
        # Roots stated outside the Python files (pyproject.toml, setup.cfg, pytest's
        # pythonpath, the user's); those of setup.py and conftest.py files are read off the
        # files as they come and go.
        self.roots = frozenset(roots) | {""}
        self._markers: set[str] = set()  # the setup.py and conftest.py files
        # Answers of resolve(): a file asks the same import once per name it reads of it.
        self._resolved: dict[tuple[str, int, str], str | None] = {}
        self._search: dict[str, tuple[str, ...]] = {}  # folder -> roots, in lookup order
        for rel in relpaths:
            self.add(rel)

    def add(self, relpath: str) -> None:
        self._resolved.clear()
        self._search.clear()
        self.files.add(relpath)
        if states_a_root(relpath):
            self._markers.add(relpath)
        parent = posixpath.dirname(relpath)
        while parent and parent not in self.dirs:
            self.dirs.add(parent)
            parent = posixpath.dirname(parent)

    def discard(self, relpath: str) -> None:
        self._resolved.clear()
        self._search.clear()
        self.files.discard(relpath)
        self._markers.discard(relpath)

    def is_package_dir(self, folder: str) -> bool:
        return f"{folder}/__init__.py" in self.files if folder else False

    def source_root(self, relpath: str) -> str:
        folder = posixpath.dirname(relpath)
        while folder and self.is_package_dir(folder):
            folder = posixpath.dirname(folder)
        return folder

    def module_at(self, folder_path: str) -> str | None:
        """The module for a path without suffix: a file, a package, or a namespace folder."""
        if f"{folder_path}.py" in self.files:
            return f"{folder_path}.py"
        if f"{folder_path}/__init__.py" in self.files:
            return f"{folder_path}/__init__.py"
        if folder_path in self.dirs:
            return f"{folder_path}/"
        return None

    def resolve(self, dotted: str, level: int, importer: str) -> str | None:
        """The relpath (or 'folder/' for a namespace package) of a module, or None."""
        key = (dotted, level, importer)
        try:
            return self._resolved[key]
        except KeyError:
            found = self._resolved[key] = self._resolve(dotted, level, importer)
            return found

    def _resolve(self, dotted: str, level: int, importer: str) -> str | None:
        parts = dotted.split(".") if dotted else []
        if level:
            base = posixpath.dirname(importer)
            for _ in range(level - 1):
                base = posixpath.dirname(base)
            if not parts:
                return self.module_at(base) if base else None
            return self.module_at(posixpath.join(base, *parts))
        if not parts:
            return None
        suffix = "/".join(parts)
        if self.root_package and parts[0] == self.root_package and "__init__.py" in self.files:
            inner = "/".join(parts[1:])
            found = self.module_at(inner) if inner else "__init__.py"
            if found is not None:
                return found
        namespace = None
        for root in self.search_path(importer):
            found = self.module_at(f"{root}/{suffix}" if root else suffix)
            if found is not None and not found.endswith("/"):
                return found
            namespace = namespace or found
        # Python makes a namespace package of a folder only when no root holds a module or
        # package of that name, and the standard library always holds its own (`logging`).
        if namespace is not None and parts[0] in STDLIB_MODULES:
            return None
        return namespace

    def search_path(self, importer: str) -> tuple[str, ...]:
        """The roots an absolute import in `importer` is looked up from, in order."""
        folder = posixpath.dirname(importer)
        try:
            return self._search[folder]
        except KeyError:
            pass
        roots = self.roots | stated_by_files(self.files, self._markers)
        near = sorted((r for r in roots if contains(r, importer)), key=_depth, reverse=True)
        order = [self.source_root(importer)]
        for root in [*near, *sorted(roots.difference(near))]:
            order.append(root)
            src = f"{root}/src" if root else "src"
            if src in self.dirs:
                order.append(src)
        found = self._search[folder] = tuple(dict.fromkeys(order))
        return found

    def submodule(self, module: str, name: str) -> str | None:
        """`name` as a submodule of a package (or namespace folder) module."""
        if module == "__init__.py":  # the indexed folder is itself the package
            return self.module_at(name)
        if module.endswith("/__init__.py"):
            folder = module[: -len("/__init__.py")]
        elif module.endswith("/"):
            folder = module[:-1]
        else:
            return None
        return self.module_at(f"{folder}/{name}")


def _depth(folder: str) -> tuple[int, str]:
    return (folder.count("/") + 1 if folder else 0, folder)
