"""No process of anchor-ls imports a module of the repository it reads.

Editors start the server with the working directory at the repository, and people run the
CLI there. A repository's `json/`, `multiprocessing/` or `sitecustomize.py` would run if
the working directory were on sys.path of the program or of its parse and resolution
workers (which start as fresh interpreters with `-c`). The repositories here plant such
modules (see planted) and the programs run in them, with enough files for workers; no
module may leave its mark.

`python -m anchor_ls` itself finds the package `anchor_ls` from the working directory
before anything of anchor-ls runs: a repository's own `anchor_ls/` is out of its hands
(the editor clients start it with -P). Those runs plant everything else.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from pytest_lsp import LanguageClient
from pytest_lsp.client import make_test_lsp_client
from support.lsp import start
from support.planted import marks_left, plant
from support.processes import children

from anchor_ls import syspath
from anchor_ls.index import Index

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ANCHOR_LS = shutil.which("anchor-ls", path=str(Path(sys.executable).parent))
FILES = 240  # over the size from which the server parses in spawned workers
# (how the program is started, PYTHONHASHSEED): a random seed or a fixed one, the program
# goes on in the process it was started as
CASES = {
    "console-script": (["anchor-ls"], None),
    "console-script-seed-0": (["anchor-ls"], "0"),
    "python-m": ([sys.executable, "-m", "anchor_ls"], None),
    "python-m-seed-0": ([sys.executable, "-m", "anchor_ls"], "0"),
    "python-P-m-seed-0": ([sys.executable, "-P", "-m", "anchor_ls"], "0"),
}


def write_repo(root: Path) -> None:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (root / "pkg" / "m0.py").write_text("def run0():\n    return None\n", "utf-8")
    for i in range(1, FILES):
        text = f"from pkg.m{i - 1} import run{i - 1}\n\n\ndef run{i}():\n    return run{i - 1}()\n"
        (root / "pkg" / f"m{i}.py").write_text(text, "utf-8")


def setup(tmp_path: Path, case: str) -> tuple[Path, Path, list[str], dict[str, str]]:
    """The repository (files and planted modules), the marks' folder, the program's
    command and environment."""
    prefix, seed = CASES[case]
    repo, marks = tmp_path / "repo", tmp_path / "marks"
    write_repo(repo)
    plant(repo, marks, skip=("anchor_ls",) if prefix[1:3] == ["-m", "anchor_ls"] else ())
    if prefix[0] == "anchor-ls":
        assert ANCHOR_LS is not None, "the console script is installed beside the interpreter"
        prefix = [ANCHOR_LS]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"}
    env.pop("PYTHONHASHSEED", None)
    if seed is not None:
        env["PYTHONHASHSEED"] = seed
    return repo, marks, prefix, env


@pytest.mark.parametrize("case", list(CASES))
def test_the_cli_in_a_repository_imports_nothing_from_it(tmp_path: Path, case: str) -> None:
    repo, marks, prefix, env = setup(tmp_path, case)
    out = subprocess.run(
        [*prefix, "index", ".", "--json"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert '"files"' in out.stdout
    assert marks_left(marks) == []


@pytest.mark.parametrize("case", list(CASES))
async def test_the_server_and_its_workers_import_nothing_from_the_repository(
    tmp_path: Path, case: str
) -> None:
    repo, marks, prefix, env = setup(tmp_path, case)
    client: LanguageClient = make_test_lsp_client()
    await client.start_io(*prefix, "serve", cwd=repo, env=env)
    server = client._server
    assert server is not None
    seen: set[int] = set()
    stop = threading.Event()

    def watch() -> None:  # the server's workers, as they come and go
        while not stop.wait(0.01):
            seen.update(children(server.pid))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        editor = await start(client, repo, "visual-studio-code")
        stats = await editor.ready()
        assert stats["folders"][0]["state"] == "ready"
    finally:
        stop.set()
        watcher.join()
        try:
            await asyncio.wait_for(client.shutdown_session(), 30)
        finally:
            if server.returncode is None:
                server.kill()
    assert seen, "the server started no worker process"
    assert marks_left(marks) == []


def test_workers_a_threaded_host_spawns_import_nothing_from_its_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Index as a library, in a process of its own that runs threads (so its workers are
    spawned) and works in the repository; the process's own sys.path is its business."""
    repo, marks = tmp_path / "repo", tmp_path / "marks"
    write_repo(repo)
    plant(repo, marks)
    monkeypatch.delenv(syspath.SAFE_PATH, raising=False)  # and put back as it was after
    monkeypatch.chdir(repo)
    seen: set[int] = set()
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.01):
            seen.update(children())

    before = children()
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        index = Index(repo, use_cache=False, workers=2)
        index.build()
    finally:
        stop.set()
        watcher.join()
    assert seen - before, "no worker process was started"
    assert len(index.graph.entities) > FILES
    assert marks_left(marks) == []
