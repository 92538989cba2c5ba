"""The project an opened file belongs to, for a client that named no workspace folder.

Neovim without a root marker, VS Code on a single file, `vim some/loose/file.py`: the
client sends no folder, and an index of nothing shows nothing. The project is then
found from the first opened file, the way the Neovim plugin finds its root: the nearest
folder above it with a project marker; else the top of its package chain (the parent of
the highest folder that still holds an `__init__.py`); else the file's own folder. The
filesystem root and the home folder are never a root: they hold every project at once; nor
is a folder of a Python installation (site-packages, the standard library) that a library
file opened by go to definition would give.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

# The same list as the Neovim plugin's root_markers (editors/nvim/lsp/anchor_ls.lua).
MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "Pipfile", ".git")


class Root(NamedTuple):
    """A folder to index, or None with the reason none is; `how` says how it was found."""

    folder: Path | None
    how: str


def _too_wide(folder: Path) -> bool:
    """The filesystem root or the user's home folder."""
    if folder == Path(folder.anchor):
        return True
    try:
        return folder == Path.home().resolve()
    except (RuntimeError, OSError):  # no home folder known
        return False


def _marked(folder: Path) -> bool:
    return any(os.path.lexists(folder / marker) for marker in MARKERS)


def _environment(folder: Path) -> Path | None:
    """The outermost folder of a Python installation holding folder: site-packages (or
    dist-packages), the standard library (os.py beside site.py); None when it is in none.
    (A virtual environment's own folder may be a project too: `python -m venv .`.)"""
    found = None
    for here in (folder, *folder.parents):
        if here.name in ("site-packages", "dist-packages") or (
            os.path.lexists(here / "os.py") and os.path.lexists(here / "site.py")
        ):
            found = here
    return found


def project_root(file: Path) -> Root:
    """The folder to index for `file` (an absolute path), and how it was chosen."""
    found = _root(file)
    installed = _environment(file.resolve().parent) if found.folder is not None else None
    if (
        found.folder is not None
        and installed is not None
        and found.folder.is_relative_to(installed)
    ):
        # Go to definition into a library: the rest of its installation is no project.
        return Root(None, f"{file.name} belongs to the Python installation at {installed}")
    return found


def _root(file: Path) -> Root:
    here = file.resolve().parent
    if not here.is_dir():  # an unsaved buffer's URI may name anything
        return Root(None, f"{here} is not a folder on this machine")
    for folder in (here, *here.parents):
        if _marked(folder):
            found = Root(folder, f"nearest project marker above {file.name}")
            break
    else:
        top = here
        while (top / "__init__.py").is_file() and top.parent != top:
            top = top.parent
        if top != here:
            found = Root(top, f"top of the package chain of {file.name}")
        else:
            found = Root(here, f"folder of {file.name}")
    if found.folder is None or not _too_wide(found.folder):
        return found
    if found.folder != here and not _too_wide(here):
        return Root(here, f"folder of {file.name}; {found.folder}, its {found.how}, is too wide")
    return Root(None, f"{here} is the filesystem root or the home folder: too wide to index")
