"""Modules a repository could ship to run code in a process that imports from it (no tests
here): each leaves a mark when imported, then steps aside for the real module of the same
name, so that the process goes on as usual and a test sees every import, not a crash."""

from __future__ import annotations

from pathlib import Path

# Packages (name/__init__.py) and modules (name.py) that anchor-ls, Python's start-up,
# runpy or a multiprocessing worker import, or that site imports if it finds them.
PACKAGES = ("anchor_ls", "multiprocessing", "json", "pickle", "concurrent")
MODULES = ("sitecustomize", "usercustomize", "__future__", "runpy")

_STEP_ASIDE = """\
import sys
_os = sys.modules["os"]
open({marks!r} + "/" + __name__ + "-" + str(_os.getpid()), "a").close()
_me = sys.modules.pop(__name__)
_path = sys.path[:]
sys.path[:] = [p for p in _path if _os.path.realpath(p or ".") != {here!r}]
try:
    sys.modules[__name__] = __import__(__name__)
except ImportError:
    sys.modules[__name__] = _me
finally:
    sys.path[:] = _path
"""


def plant(repo: Path, marks: Path, skip: tuple[str, ...] = ()) -> list[str]:
    """Plant every module of PACKAGES and MODULES not in skip at the top of repo; their
    marks go to the folder marks (made here). The names planted."""
    marks.mkdir(parents=True, exist_ok=True)
    source = _STEP_ASIDE.format(marks=str(marks.resolve()), here=str(repo.resolve()))
    planted = []
    for name in PACKAGES:
        if name not in skip:
            (repo / name).mkdir(parents=True, exist_ok=True)
            (repo / name / "__init__.py").write_text(source, encoding="utf-8")
            planted.append(name)
    for name in MODULES:
        if name not in skip:
            (repo / f"{name}.py").write_text(source, encoding="utf-8")
            planted.append(name)
    return planted


def marks_left(marks: Path) -> list[str]:
    """The marks the planted modules left: `name-pid` of every import of one."""
    return sorted(p.name for p in marks.iterdir())


def plant_interpreter(repo: Path, marks: Path) -> Path:
    """A `.venv` in repo whose `bin/python` and `bin/python3` (shell scripts) leave a mark
    `name-pid` in marks when anything runs them, then fail. Its bin/python."""
    marks.mkdir(parents=True, exist_ok=True)
    for name in ("python", "python3"):
        script = repo / ".venv" / "bin" / name
        script.parent.mkdir(parents=True, exist_ok=True)
        script.write_text(f'#!/bin/sh\ntouch "{marks.resolve()}/{name}-$$"\nexit 1\n', "utf-8")
        script.chmod(0o755)
    (repo / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n", encoding="utf-8")
    return repo / ".venv" / "bin" / "python"
