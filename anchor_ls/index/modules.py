"""Where an import statement lands: dotted module names to repository files."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable


class ModuleTable:
    """The repository's Python files as importable modules.

    An absolute import is looked up from the importing file's source root (the
    folder above its top package), then the repository root, then `src/`; a
    folder without `__init__.py` is a namespace package. Modules not found are
    external (the standard library, third-party code) and never linked.
    """

    def __init__(self, relpaths: Iterable[str], root_package: str = "") -> None:
        self.files: set[str] = set()
        self.dirs: set[str] = set()
        # When the indexed folder is itself a package (`django/`), `import django.x` lands inside.
        self.root_package = root_package
        # Answers of resolve(): a file asks the same import once per name it reads of it.
        self._resolved: dict[tuple[str, int, str], str | None] = {}
        for rel in relpaths:
            self.add(rel)

    def add(self, relpath: str) -> None:
        self._resolved.clear()
        self.files.add(relpath)
        parent = posixpath.dirname(relpath)
        while parent and parent not in self.dirs:
            self.dirs.add(parent)
            parent = posixpath.dirname(parent)

    def discard(self, relpath: str) -> None:
        self._resolved.clear()
        self.files.discard(relpath)

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
        roots = [self.source_root(importer), ""]
        if "src" in self.dirs:
            roots.append("src")
        if self.root_package and parts[0] == self.root_package and "__init__.py" in self.files:
            inner = "/".join(parts[1:])
            found = self.module_at(inner) if inner else "__init__.py"
            if found is not None:
                return found
        seen = set()
        for root in roots:
            if root in seen:
                continue
            seen.add(root)
            found = self.module_at(f"{root}/{suffix}" if root else suffix)
            if found is not None:
                return found
        return None

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
