"""Source roots: the folders an absolute import is looked up from.

Python finds `import flaskr.db` on a sys.path the repository never states: a nested project
installed for development (`examples/tutorial` with its own pyproject.toml), a `src/` layout,
the folders pytest inserts (the first folder above a test file or a conftest.py that is not a
package, in its default prepend import mode, and its `pythonpath` option). These are read
off the files (nothing is run or imported) and users add the ones no file states (the
`sourceRoots` setting, `--source-root`), as pyright's execution environments do.

Naming: a file has one module name per root that contains it, and the innermost root wins:
`examples/tutorial/flaskr/db.py` is `flaskr.db`, not `examples.tutorial.flaskr.db`. So an
absolute import is looked up, in this order, from: the folder above the importer's top
package (what Python and pytest put first); the roots that contain the importer, innermost
first, each followed by its `src/` (the repository root, always a root, comes last of them);
then the other roots (a monorepo's projects import each other once installed). A repository
without nested roots keeps the order it always had: importer's folder, root, `src/`.
Entity ids are relpaths and never depend on roots.
"""

from __future__ import annotations

import configparser
import os
import posixpath
import tomllib
from collections.abc import Container, Iterable, Sequence
from pathlib import Path

# A folder holding one of these is a project root (a package installed from there); one
# holding a setup.py too, which the module table reads off the indexed files.
PROJECT_MARKERS = ("pyproject.toml", "setup.cfg")
# Where pytest reads its `pythonpath` option: (file, section); pyproject's is a TOML table.
_PYTEST_INI = (("pytest.ini", "pytest"), ("tox.ini", "pytest"), ("setup.cfg", "tool:pytest"))
_MAX_CONFIG_BYTES = 1 << 20


def configures_roots(relpath: str) -> bool:
    """Whether the file is one whose text states source roots (a project's marker, pytest's
    `pythonpath`): the roots are read again only by a build."""
    name = posixpath.basename(relpath)
    return name in PROJECT_MARKERS or any(name == ini for ini, _section in _PYTEST_INI)


def states_a_root(relpath: str) -> bool:
    """Whether the file makes a source root of a folder by being there (a setup.py, a
    conftest.py): adding or removing it changes where other files' imports land."""
    return posixpath.basename(relpath) in ("setup.py", "conftest.py")


def stated_by_files(files: Container[str], markers: Iterable[str]) -> set[str]:
    """The roots that setup.py and conftest.py files (`markers`, among `files`) make: a
    setup.py's folder; the first folder above a conftest.py that is not a package (the
    folder pytest puts on sys.path for it)."""
    found = set()
    for rel in markers:
        folder = posixpath.dirname(rel)
        if posixpath.basename(rel) == "conftest.py":
            while folder and f"{folder}/__init__.py" in files:
                folder = posixpath.dirname(folder)
        found.add(folder)
    return found


def folders_of(relpaths: Iterable[str]) -> set[str]:
    """Every folder that holds an indexed file, or a folder that does ('' is the root)."""
    found = {""}
    for rel in relpaths:
        parent = posixpath.dirname(rel)
        while parent and parent not in found:
            found.add(parent)
            parent = posixpath.dirname(parent)
    return found


def contains(root: str, relpath: str) -> bool:
    return not root or relpath.startswith(root + "/")


def project_roots(repo: Path, folders: Iterable[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """(the folders among `folders` with a project marker, and the folders their pytest
    configuration puts on sys.path; the problems of configuration files that cannot be read).

    Only folders that hold indexed files are looked at: an excluded tree adds no root.
    """
    roots: set[str] = set()
    problems: list[tuple[str, str]] = []
    for folder in sorted(folders):
        here = repo / folder if folder else repo
        present = _configuration_in(here)
        if not present:
            continue
        if any((here / marker).is_file() for marker in PROJECT_MARKERS if marker in present):
            roots.add(folder)
        for extra in _pytest_paths(here, folder, present, problems):
            roots.add(extra)
    return sorted(roots), problems


_CONFIGURATION = frozenset(PROJECT_MARKERS) | {name for name, _section in _PYTEST_INI}


def _configuration_in(here: Path) -> frozenset[str]:
    """The names of configuration files in the folder here: one listing of it, where
    looking for each name took ten calls a folder (Django: 650 folders, 0.05 s)."""
    try:
        with os.scandir(here) as entries:
            return frozenset(e.name for e in entries if e.name in _CONFIGURATION)
    except OSError:
        return frozenset()


def _pytest_paths(
    here: Path, folder: str, present: frozenset[str], problems: list[tuple[str, str]]
) -> list[str]:
    """The `pythonpath` entries of the pytest configuration in `here` (whose configuration
    files are `present`), as relpaths."""
    entries: list[str] = []
    pyproject = (
        _text(here / "pyproject.toml", problems, folder) if "pyproject.toml" in present else None
    )
    if pyproject is not None:
        try:
            table = tomllib.loads(pyproject)
        except tomllib.TOMLDecodeError as err:
            problems.append((_join(folder, "pyproject.toml"), f"not valid TOML ({err})"))
        else:
            options = table.get("tool", {}).get("pytest", {}).get("ini_options", {})
            value = options.get("pythonpath") if isinstance(options, dict) else None
            if isinstance(value, str):
                entries += value.split()
            elif isinstance(value, list):
                entries += [v for v in value if isinstance(v, str)]
    for name, section in _PYTEST_INI:
        text = _text(here / name, problems, folder) if name in present else None
        if text is None:
            continue
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(text)
        except configparser.Error as err:
            problems.append((_join(folder, name), f"not a valid ini file ({err.message})"))
            continue
        if parser.has_option(section, "pythonpath"):
            entries += parser.get(section, "pythonpath").split()
    found = []
    for entry in entries:
        rel = inside(folder, entry)
        if rel is not None:
            found.append(rel)
    return found


def _text(path: Path, problems: list[tuple[str, str]], folder: str) -> str | None:
    """A configuration file's text; None when there is none (a symlink is not followed)."""
    if path.is_symlink() or not path.is_file():
        return None
    try:
        with path.open("rb") as file:
            data = file.read(_MAX_CONFIG_BYTES + 1)
    except OSError as err:
        problems.append((_join(folder, path.name), err.strerror or str(err)))
        return None
    if len(data) > _MAX_CONFIG_BYTES:
        problems.append((_join(folder, path.name), "too large to read as configuration"))
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        problems.append((_join(folder, path.name), "not UTF-8"))
        return None


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def inside(base: str, entry: str) -> str | None:
    """`entry` (relative to the folder `base`) as a relpath of the repository; None when
    it is absolute or leaves the repository."""
    if not entry or entry.startswith(("/", "\\")) or (len(entry) > 1 and entry[1] == ":"):
        return None
    joined = posixpath.normpath(posixpath.join(base, entry.replace("\\", "/")))
    if joined == ".":
        return ""
    if joined == ".." or joined.startswith("../"):
        return None
    return joined


def user_roots(repo: Path, given: Sequence[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """The roots a user named (relative to the repository, or absolute inside it), as
    relpaths; (the entry, why it is not used) for the others."""
    roots: list[str] = []
    problems: list[tuple[str, str]] = []
    for entry in given:
        path = Path(entry)
        rel: str | None
        if path.is_absolute():
            try:
                rel = path.resolve().relative_to(repo).as_posix()
            except (ValueError, OSError):
                rel = None
            rel = "" if rel == "." else rel
        else:
            rel = inside("", entry)
        if rel is None:
            problems.append((entry, f"source root outside {repo}; ignored"))
        elif not (repo / rel).is_dir():
            problems.append((entry, "source root is not a folder; ignored"))
        elif rel not in roots:
            roots.append(rel)
    return roots, problems
