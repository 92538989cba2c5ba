"""The Python environment a repository's code imports from: where its libraries are.

The index reads installed packages (never imports them) to follow a base, an override or
a call one step out of the repository. Where they are is the search path of an
interpreter: by default the one anchor-ls runs in (its own sys.path, read in this
process), else one the user names, whose sys.path jedi's environment support asks it
for (in a process of anchor-ls's own interpreter, this file run as a script: see
Asking). No other interpreter is ever run: one inside the opened repository
(`.venv/bin/python`) is used only when the user names it. jedi (the `env` extra) is
imported only there, and its copy of typeshed's standard-library stubs is found without
importing it.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import platformdirs

__all__ = [
    "Asking",
    "Environment",
    "EnvironmentProblem",
    "asking",
    "environment_for",
    "typeshed_stdlib",
]


class EnvironmentProblem(ValueError):
    """A named interpreter that cannot be used (missing, broken, or jedi not installed)."""


@dataclass(frozen=True)
class Environment:
    """Folders a module is looked up in, in order: typeshed's standard-library stubs
    first (stubs carry the return types), then the interpreter's search path. No folder
    is inside the repository. `python`: the interpreter the user named, if any.

    An environment with no folders is no environment: everything outside the repository
    stays an outside name, as before the index knew of libraries."""

    paths: tuple[str, ...] = ()
    stubs: tuple[str, ...] = ()
    python: str | None = None
    # top-level name -> its folder or file, for packages installed in editable mode by a
    # finder (see editable_mappings): looked up after the folders, as the import system does
    editable: tuple[tuple[str, str], ...] = ()

    @property
    def active(self) -> bool:
        return bool(self.paths or self.stubs)

    def folders(self) -> tuple[str, ...]:
        return (*self.stubs, *self.paths)

    def identity(self) -> str:
        """What cached conclusions depend on: the folders, and when each last changed
        (a package installed or removed changes its folder)."""
        if not self.active:
            return ""
        h = hashlib.blake2b(digest_size=16)
        h.update(f"{self.python}\0".encode("utf-8", "surrogateescape"))
        for folder in self.folders():
            try:
                stamp = os.stat(folder).st_mtime_ns
            except OSError:
                stamp = -1
            h.update(f"{folder}\0{stamp}\0".encode("utf-8", "surrogateescape"))
        for name, target in self.editable:
            h.update(f"{name}\0{target}\0".encode("utf-8", "surrogateescape"))
        return h.hexdigest()

    def outside(self, root: Path) -> Environment:
        """This environment without the folders inside root (an editable install of the
        repository puts it on sys.path, or maps its package there: its files are the
        repository's, not a library's)."""
        paths = _outside(self.paths, root)
        editable = tuple(
            (name, target)
            for name, target in editable_mappings(paths)
            if _outside_file(target, root)
        )
        return Environment(paths, _outside(self.stubs, root), self.python, editable)


NO_ENVIRONMENT = Environment()


def typeshed_stdlib() -> tuple[str, ...]:
    """jedi's copy of typeshed's standard-library stubs, found without importing jedi;
    () when the env extra is not installed."""
    spec = _jedi()
    if spec is None or not spec.submodule_search_locations:
        return ()
    for location in spec.submodule_search_locations:
        stdlib = Path(location) / "third_party" / "typeshed" / "stdlib"
        if stdlib.is_dir():
            return (str(stdlib),)
    return ()


def _jedi() -> importlib.machinery.ModuleSpec | None:
    """Where jedi (the env extra) is installed, found without importing it; None: it is not."""
    try:
        return importlib.util.find_spec("jedi")
    except (ImportError, ValueError):  # a jedi that sys.modules says is missing
        return None


def environment_for(python: str | Path | Environment | None, root: Path) -> Environment:
    """The environment of Index(python=...), waited for (see asking)."""
    found = asking(python, root)
    return found if isinstance(found, Environment) else found.environment()


def asking(python: str | Path | Environment | None, root: Path) -> Environment | Asking:
    """The environment of Index(python=...): None, the one anchor-ls runs in; a path, the
    interpreter (or virtual environment folder) the user named; an Environment as given.
    A named interpreter not asked before is being asked (Asking) when this returns: what
    can be told at once (no such file, no jedi) is raised here as EnvironmentProblem."""
    if isinstance(python, Environment):
        return python.outside(root)
    if python is None:
        return Environment(tuple(sys.path), typeshed_stdlib()).outside(root)
    # Absolute: the answer kept for `venv/bin/python` is that of one working folder's, and
    # jedi would look a bare name (`./python` is `python` to pathlib) up on PATH.
    named = Path(python).absolute()
    try:
        stamp = named.stat().st_mtime_ns
    except OSError as err:
        raise EnvironmentProblem(f"python {python}: {err.strerror or err}") from None
    key = (str(named), stamp)
    found, stamps = _asked.get(key, ((), {}))
    if not found or _folder_stamps(found) != stamps:  # a package installed since: ask again
        kept = _kept_answer(named, stamp)
        if kept is None:
            return Asking(named, str(python), stamp, root)
        found = _remember(key, kept)
    return Environment(found, typeshed_stdlib(), str(python)).outside(root)


# (interpreter, mtime) -> its sys.path and the mtime of each of its folders then
_asked: dict[tuple[str, int], tuple[tuple[str, ...], dict[str, int]]] = {}


def _remember(key: tuple[str, int], found: tuple[str, ...]) -> tuple[str, ...]:
    _asked[key] = (found, _folder_stamps(found))
    return found


class Asking:
    """A named interpreter being asked for its sys.path, by a process of anchor-ls's own
    in which jedi runs it with no working folder on its path. It answers while the build
    lists and parses the repository: importing jedi and running the interpreter cost a
    first index 0.2-0.35 s, a sixth of a small repository's library work. The answer is
    kept in the user cache while the interpreter and every folder of its path are
    unchanged (a package installed since changes its folder)."""

    def __init__(self, named: Path, python: str, stamp: int, root: Path) -> None:
        if _jedi() is None:
            raise EnvironmentProblem(
                f"python {python}: reading a named interpreter's packages needs jedi "
                "(pip install 'anchor-ls[env]')"
            )
        self.python = python  # as the user named it, as Environment.python
        self._named, self._stamp, self._root = named, stamp, root
        self._answer: Environment | EnvironmentProblem | None = None
        self._process: subprocess.Popen[bytes] | None = subprocess.Popen(
            [sys.executable, "-P", __file__, str(named)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONSAFEPATH": "1"},
            start_new_session=True,  # a group of its own: stopped with the interpreter it runs
        )

    def environment(self) -> Environment:
        """The answer, waited for (EnvironmentProblem: the interpreter cannot be used)."""
        if self._answer is None:
            self._answer = self._wait()
        if isinstance(self._answer, EnvironmentProblem):
            raise self._answer
        return self._answer

    def _wait(self) -> Environment | EnvironmentProblem:
        process, self._process = self._process, None
        assert process is not None
        try:
            out, err = process.communicate(timeout=ASK_SECONDS)
        except subprocess.TimeoutExpired:
            _stop_group(process)
            return EnvironmentProblem(f"python {self.python}: no answer in {ASK_SECONDS} s")
        try:
            said = json.loads(out)
        except ValueError:  # it said nothing (crashed): its error output tells why
            said = None
        said = said if isinstance(said, dict) else {}
        path = said.get("path")
        if not isinstance(path, list) or not all(isinstance(p, str) for p in path):
            why = said.get("problem") or err.decode(errors="replace").strip()[-500:]
            return EnvironmentProblem(f"python {self.python}: not a usable interpreter ({why})")
        found = _remember((str(self._named), self._stamp), tuple(path))
        _keep_answer(self._named, self._stamp, found)
        return Environment(found, typeshed_stdlib(), self.python).outside(self._root)

    def close(self) -> None:
        """Stop the question if nobody waits for its answer any more."""
        process, self._process = self._process, None
        if process is not None:
            _stop_group(process)


ASK_SECONDS = 120  # a named interpreter that has not answered by then is not usable


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    """Kill the asking process and the interpreter jedi started in it (which holds its
    output open: waiting for that output to end would wait for a hung interpreter)."""
    with contextlib.suppress(OSError):
        os.killpg(process.pid, signal.SIGKILL)
    process.communicate()


def _ask(python: str) -> dict[str, object]:
    """In the asking process: python's sys.path through jedi, or what went wrong."""
    import jedi

    env_vars = {**os.environ, "PYTHONSAFEPATH": "1"}
    env = None
    try:
        env = jedi.create_environment(python, safe=False, env_vars=env_vars)
        return {"path": [str(p) for p in env.get_sys_path()]}
    except Exception as err:  # jedi's InvalidPythonEnvironment, a crashed interpreter
        return {"problem": str(err)}
    finally:
        _stop(env)


def _answer_file(python: Path) -> Path:
    digest = hashlib.blake2b(str(python).encode("utf-8", "surrogateescape"), digest_size=12)
    return (
        Path(platformdirs.user_cache_dir("anchor-ls"))
        / "interpreters"
        / f"{digest.hexdigest()}.json"
    )


def _folder_stamps(folders: tuple[str, ...]) -> dict[str, int]:
    out = {}
    for folder in folders:
        try:
            out[folder] = os.stat(folder).st_mtime_ns
        except OSError:
            out[folder] = -1
    return out


def _kept_answer(python: Path, stamp: int) -> tuple[str, ...] | None:
    """The sys.path kept for python, if nothing it depends on changed (JSON: reading it runs
    nothing, whoever wrote it)."""
    try:
        kept = json.loads(_answer_file(python).read_text(encoding="utf-8"))
        if kept["python"] != str(python) or kept["stamp"] != stamp:
            return None
        found = tuple(kept["path"])
        if not all(isinstance(p, str) for p in found):
            return None
        return found if kept["folders"] == _folder_stamps(found) else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _keep_answer(python: Path, stamp: int, found: tuple[str, ...]) -> None:
    """Kept atomically; a cache that cannot be written only costs the next run the question."""
    target = _answer_file(python)
    answer = {"python": str(python), "stamp": stamp, "path": list(found)}
    answer["folders"] = _folder_stamps(found)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", dir=target.parent, delete=False, suffix=".tmp", encoding="utf-8"
        ) as f:
            json.dump(answer, f)
        os.replace(f.name, target)
    except OSError:
        with contextlib.suppress(OSError, NameError):
            os.unlink(f.name)


def _stop(env: object) -> None:
    """End the interpreter jedi keeps running for the environment: its path is all we ask."""
    process = getattr(env, "_subprocess", None)
    kill = getattr(process, "_kill", None)
    if kill is not None:
        with contextlib.suppress(Exception):  # already gone
            kill()


_FINDER_PREFIX, _FINDER_SUFFIX = "__editable___", "_finder.py"
_FINDER_BYTES = 1 << 20  # setuptools writes a few KB; anything far larger is not one


def editable_mappings(folders: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """(top-level name, folder or file) of each package installed in editable mode by a
    finder: `pip install -e` of a flat-layout project (setuptools >= 64) puts no folder on
    sys.path but a `__editable___NAME_finder.py` in site-packages, whose MAPPING (a dict
    literal) says where each name is. The file is parsed, never run; the first mapping of
    a name wins, in folder order."""
    out: dict[str, str] = {}
    for folder in folders:
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            if name.startswith(_FINDER_PREFIX) and name.endswith(_FINDER_SUFFIX):
                for top, target in _finder_mapping(os.path.join(folder, name)):
                    out.setdefault(top, target)
    return tuple(out.items())


def _finder_mapping(path: str) -> list[tuple[str, str]]:
    """The `MAPPING = {...}` literal of a setuptools editable finder, read with ast."""
    try:
        with open(path, "rb") as f:
            data = f.read(_FINDER_BYTES + 1)
        if len(data) > _FINDER_BYTES:
            return []
        tree = ast.parse(data)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and target.id == "MAPPING" and value is not None:
            try:
                mapping = ast.literal_eval(value)
            except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
                return []
            if not isinstance(mapping, dict):
                return []
            return [
                (k, os.path.realpath(v))
                for k, v in sorted(mapping.items(), key=lambda kv: str(kv[0]))
                if isinstance(k, str)
                and k.isidentifier()
                and isinstance(v, str)
                and v
                and os.path.isabs(v)
            ]
    return []


def _listed_in(folder: str, root: str) -> bool:
    """Whether the index of root would list a file of folder (inside root): not one in a
    virtual environment nor a folder it always skips."""
    from anchor_ls.index.files import is_listed  # not in the asking process (a script)

    rel = os.path.relpath(folder, root).replace(os.sep, "/")
    return is_listed(Path(root), f"{rel}/_.py")


def _outside_file(path: str, root: Path) -> bool:
    """Whether path is neither root nor inside it."""
    real_root, real = os.path.realpath(root), os.path.realpath(path)
    return real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep)


def _outside(folders: tuple[str, ...], root: Path) -> tuple[str, ...]:
    """The existing folders of folders (zip files are not read), resolved, each once, none
    the working directory ('' included) nor inside root, but for one whose files the
    index of root never lists: the repository's own virtual environment (`.venv`, uv's
    and poetry's in-project default) is where its packages are."""
    try:
        here = os.path.realpath(os.getcwd())
    except OSError:
        here = None
    real_root = os.path.realpath(root)
    out: list[str] = []
    for folder in folders:
        if not folder:
            continue
        real = os.path.realpath(folder)
        if real in (here, real_root):
            continue
        if real.startswith(real_root.rstrip(os.sep) + os.sep) and _listed_in(real, real_root):
            continue
        if os.path.isdir(real) and real not in out:
            out.append(real)
    return tuple(out)


if __name__ == "__main__":  # the asking process (Asking): one JSON line
    print(json.dumps(_ask(sys.argv[1])))
