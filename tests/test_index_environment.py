"""The Python environment whose packages the index reads: found without running anything
the user did not name, never inside the repository, jedi only when asked for."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.library_env import make_environment
from support.planted import marks_left, plant, plant_interpreter

from anchor_ls.index import Index
from anchor_ls.index.environment import Environment, EnvironmentProblem, environment_for

ANCHOR_LS = shutil.which("anchor-ls", path=str(Path(sys.executable).parent))


def write_repo(repo: Path) -> None:
    (repo / "app").mkdir(parents=True)
    (repo / "app" / "__init__.py").write_text("", encoding="utf-8")
    (repo / "app" / "views.py").write_text(
        "from pathlib import Path\n\n\ndef read(p):\n    return Path(p).read_text()\n",
        encoding="utf-8",
    )


def test_an_interpreter_in_the_repository_never_runs_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, marks = tmp_path / "repo", tmp_path / "marks"
    write_repo(repo)
    plant_interpreter(repo, marks)
    monkeypatch.chdir(repo)
    monkeypatch.setenv("VIRTUAL_ENV", str(repo / ".venv"))  # as an activated shell has it
    index = Index(repo, cache_dir=tmp_path / "cache")
    index.build()
    assert index.environment.active and index.environment.python is None
    assert ANCHOR_LS is not None
    run = subprocess.run(
        [ANCHOR_LS, "graph", str(repo)],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**os.environ, "VIRTUAL_ENV": str(repo / ".venv")},
    )
    assert run.returncode == 0, run.stderr
    assert marks_left(marks) == []


def test_the_search_path_holds_nothing_of_the_repository_nor_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An editable install of the repository puts it on sys.path: its files stay the
    repository's, never a library's."""
    repo = tmp_path / "repo"
    write_repo(repo)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.setattr(sys, "path", ["", str(elsewhere), str(repo), str(repo / "app"), *sys.path])
    env = environment_for(None, repo)
    inside = [f for f in env.folders() if f == str(repo) or f.startswith(f"{repo}{os.sep}")]
    assert inside == []
    assert str(elsewhere) not in env.folders() and "" not in env.folders()
    assert env.paths  # the standard library and site-packages of this interpreter


def test_a_named_interpreter_that_is_missing_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EnvironmentProblem, match=r"python .*nowhere"):
        Index(tmp_path, python=tmp_path / "nowhere" / "python")


def test_without_jedi_the_own_environment_works_and_a_named_one_says_what_is_missing(
    tmp_path: Path,
) -> None:
    """jedi is the env extra: without it the index still reads this interpreter's
    packages, and a named interpreter asks for the extra instead of failing obscurely."""
    code = (
        "import sys; sys.modules['jedi'] = None\n"
        "from pathlib import Path\n"
        "from anchor_ls.index.environment import environment_for, EnvironmentProblem\n"
        "root = Path(sys.argv[1])\n"
        "own = environment_for(None, root)\n"
        "assert own.paths and not own.stubs, own\n"
        "try:\n"
        "    environment_for(sys.executable, root)\n"
        "except EnvironmentProblem as err:\n"
        "    print(err)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONSAFEPATH": "1", "XDG_CACHE_HOME": str(tmp_path / "xdg")},
    )
    assert run.returncode == 0, run.stderr
    assert "needs jedi" in run.stdout and "anchor-ls[env]" in run.stdout


def test_a_named_interpreter_gives_its_own_search_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The interpreter the user names is asked (through jedi) for its sys.path."""
    pytest.importorskip("jedi")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    env = environment_for(sys.executable, tmp_path)
    assert env.python == sys.executable
    site = next(p for p in sys.path if p.endswith("site-packages"))
    assert os.path.realpath(site) in env.paths
    assert env.stubs and env.stubs[0].endswith(os.path.join("typeshed", "stdlib"))


def test_an_empty_environment_is_no_environment(tmp_path: Path) -> None:
    assert not Environment().active and Environment().identity() == ""
    assert not environment_for(Environment(), tmp_path).active


def test_a_named_interpreter_is_asked_again_only_when_its_path_changed(tmp_path: Path) -> None:
    """Its answer is kept in the user cache: a warm start runs nothing, and an install
    into one of its folders (a new .pth, a new package) makes it ask again."""
    pytest.importorskip("jedi")
    extra, runs = tmp_path / "extra", tmp_path / "runs"
    extra.mkdir()
    python = tmp_path / "python"
    python.write_text(
        f'#!/bin/sh\necho run >> "{runs}"\nexec "{sys.executable}" "$@"\n', encoding="utf-8"
    )
    python.chmod(0o755)
    code = (
        "import sys\nfrom pathlib import Path\n"
        "from anchor_ls.index.environment import environment_for\n"
        "print(environment_for(Path(sys.argv[1]), Path(sys.argv[2])).paths)\n"
    )
    env = {
        **os.environ,
        "XDG_CACHE_HOME": str(tmp_path / "xdg"),
        "PYTHONPATH": str(extra),
        "PYTHONSAFEPATH": "1",
    }

    def ask() -> str:
        args = [sys.executable, "-c", code, str(python), str(tmp_path / "repo")]
        done = subprocess.run(args, capture_output=True, text=True, env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return done.stdout

    first = ask()
    assert str(extra) in first
    assert ask() == first
    assert runs.read_text(encoding="utf-8").count("run") == 1
    (extra / "newly_installed.py").write_text("", encoding="utf-8")
    assert ask() == first
    assert runs.read_text(encoding="utf-8").count("run") == 2


def test_asking_a_named_interpreter_imports_nothing_of_the_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The interpreter jedi starts to ask for sys.path runs in the repository's folder (the
    working directory of an editor's server): modules planted there leave no mark."""
    pytest.importorskip("jedi")
    repo, marks = tmp_path / "repo", tmp_path / "marks"
    write_repo(repo)
    plant(repo, marks)
    monkeypatch.chdir(repo)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # asked, not remembered
    python, ran = tmp_path / "python", tmp_path / "ran"
    python.write_text(f'#!/bin/sh\ntouch "{ran}"\nexec "{sys.executable}" "$@"\n', "utf-8")
    python.chmod(0o755)
    env = environment_for(python, repo)
    assert ran.exists()  # it was asked (this test's own interpreter: nothing remembered)
    assert env.paths and not [p for p in env.paths if p.startswith(str(repo))]
    assert marks_left(marks) == []


def test_a_named_interpreter_answers_while_the_files_are_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Asking an interpreter first costs 0.2-0.35 s (jedi, then the interpreter): neither
    Index() nor the parse waits for it. This interpreter answers only once the files
    are parsed; had anything waited for it first, it would give up and say so."""
    pytest.importorskip("jedi")
    import anchor_ls.index.repository as repository

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # asked, not remembered
    repo, go, gave_up = tmp_path / "repo", tmp_path / "go", tmp_path / "gave-up"
    write_repo(repo)
    python = tmp_path / "python"
    python.write_text(
        "#!/bin/sh\n"
        f'n=0; while [ ! -e "{go}" ]; do\n'
        f'  n=$((n+1)); [ $n -gt 200 ] && touch "{gave_up}" && break; sleep 0.05\n'
        f'done\nexec "{sys.executable}" "$@"\n',
        encoding="utf-8",
    )
    python.chmod(0o755)
    parse = repository.Index._summaries
    cache_then: list[bool] = []

    def parsed_then_answer(self: Index, *args: object) -> object:
        found = parse(self, *args)
        cache_then.append((tmp_path / "cache").exists())
        go.touch()  # the interpreter may answer from here on
        return found

    monkeypatch.setattr(repository.Index, "_summaries", parsed_then_answer)
    index = Index(repo, cache_dir=tmp_path / "cache", python=python)
    stats = index.build()
    index.close()
    assert not gave_up.exists()
    assert cache_then == [False]  # nothing written before the answer (it may be a refusal)
    assert index.environment.python == str(python)
    site = next(p for p in sys.path if p.endswith("site-packages"))
    assert os.path.realpath(site) in index.environment.paths
    assert stats.files == 2 and (tmp_path / "cache").is_dir()


def _gone(pid: int) -> bool:
    """Whether pid has ended (polled for up to a minute: a killed process is reaped soon)."""
    for _ in range(600):
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
                if f.read().split(") ", 1)[1].startswith("Z"):
                    return True  # a zombie: ended, not reaped yet
        except (FileNotFoundError, ProcessLookupError):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("when", ["build", "close"])
def test_a_named_interpreter_that_never_answers_is_stopped_and_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    """Waited for at most ASK_SECONDS, then refused; an index closed before it answered
    stops it. Either way the interpreter jedi started is stopped too, not left running."""
    pytest.importorskip("jedi")
    import anchor_ls.index.environment as environment

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(environment, "ASK_SECONDS", 3)
    repo, pid_file = tmp_path / "repo", tmp_path / "pid"
    write_repo(repo)
    python = tmp_path / "python"
    finished = tmp_path / "finished"  # only if nothing stopped it
    python.write_text(
        f'#!/bin/sh\necho $$ > "{pid_file}"\nsleep 20\ntouch "{finished}"\n', encoding="utf-8"
    )
    python.chmod(0o755)
    index = Index(repo, cache_dir=tmp_path / "cache", python=python)
    if when == "build":
        with pytest.raises(EnvironmentProblem, match=r"python .*: no answer in 3 s"):
            index.build()
    else:
        for _ in range(600):  # until jedi has started it
            if pid_file.exists() and pid_file.read_text(encoding="utf-8").strip():
                break
            time.sleep(0.1)
    index.close()
    assert _gone(int(pid_file.read_text(encoding="utf-8")))
    assert not finished.exists()
    assert not (tmp_path / "cache").exists()


def test_a_relative_interpreter_is_the_one_in_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--python venv/bin/python` run from two projects names two environments: the answer
    kept for one (its search path) is not the other's, though the two interpreters are
    links to one base interpreter (same file, same modification time). And `./python`
    is the file in the working folder, not a `python` found on PATH."""
    pytest.importorskip("jedi")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    repo = tmp_path / "repo"
    write_repo(repo)
    found = {}
    for name in ("one", "two"):
        project, extra = tmp_path / name, tmp_path / f"{name}-packages"
        extra.mkdir()
        python = make_environment(project / "venv")
        purelib = next((project / "venv" / "lib").glob("python*/site-packages"))
        (purelib / "extra.pth").write_text(f"{extra}\n", encoding="utf-8")
        monkeypatch.chdir(project)
        found[name] = environment_for(Path("venv") / "bin" / "python", repo).paths
        assert str(extra) in found[name], (name, found[name])
        assert python.exists()
    assert found["one"] != found["two"]
    script = tmp_path / "one" / "python"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n', encoding="utf-8")
    script.chmod(0o755)
    monkeypatch.chdir(tmp_path / "one")
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    assert environment_for("./python", repo).paths


def test_a_running_process_asks_again_once_a_package_changed_the_search_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server keeps a named interpreter's answer in memory too: `pip install -e` of
    a src-layout sibling (a new .pth in site-packages) while it runs must reach the next
    build (anchor.reindex), as it reaches the next command line."""
    pytest.importorskip("jedi")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    repo = tmp_path / "repo"
    write_repo(repo)
    python = make_environment(tmp_path / "venv")
    before = environment_for(python, repo).paths
    sibling = tmp_path / "sibling" / "src"
    sibling.mkdir(parents=True)
    purelib = next((tmp_path / "venv" / "lib").glob("python*/site-packages"))
    (purelib / "__editable__.sibling-0.1.pth").write_text(f"{sibling}\n", encoding="utf-8")
    after = environment_for(python, repo).paths
    assert str(sibling) not in before and str(sibling) in after
