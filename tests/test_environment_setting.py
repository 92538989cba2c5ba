"""The environment setting (`--python`, the server's `python`): an interpreter runs only
when the user names it.

A repository here ships `.venv/bin/python`, a script that leaves a mark when run. The CLI
(run in the repository, with that .venv activated as a shell has it) and a real server
process over stdio index it without a named interpreter: nothing may run it. Naming it is
what makes it run (the marks prove the trap works), and an interpreter that fails is a
clear message: exit 2 on the command line; in the editor, a message, and the index reads
the server's own environment.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient
from support.library_env import copy_app, make_environment
from support.lsp import lsp, start, write_files
from support.planted import marks_left, plant_interpreter

__all__ = ["lsp"]

ANCHOR_LS = shutil.which("anchor-ls", path=str(Path(sys.executable).parent))
FILES = {
    "app/__init__.py": "",
    "app/views.py": (
        "from pathlib import Path\n\n\ndef read(p):\n    return Path(p).read_text()\n"
    ),
}


def repository(tmp: Path) -> tuple[Path, Path, Path]:
    """(repository, its planted .venv/bin/python, the folder of marks)."""
    repo, marks = tmp / "repo", tmp / "marks"
    write_files(repo, FILES)
    return repo, plant_interpreter(repo, marks), marks


def activated(repo: Path) -> dict[str, str]:
    """The environment of a shell in which the repository's .venv is activated."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"}
    env["VIRTUAL_ENV"] = str(repo / ".venv")
    env["PATH"] = f"{repo / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.mark.parametrize(
    "command",
    [
        ["index", ".", "--json"],
        ["graph", "."],
        ["tag", ".", "--out", "{out}"],
        ["check", "."],
        ["hierarchy", "read", "."],
    ],
    ids=lambda c: c[0],
)
def test_the_cli_never_runs_an_interpreter_it_was_not_given(
    tmp_path: Path, command: list[str]
) -> None:
    repo, _python, marks = repository(tmp_path)
    assert ANCHOR_LS is not None
    args = [a.replace("{out}", str(tmp_path / "out")) for a in command]
    run = subprocess.run(
        [ANCHOR_LS, *args], cwd=repo, env=activated(repo), capture_output=True, text=True
    )
    assert run.returncode in (0, 1), run.stderr  # check: 1, the tree has no tags yet
    assert marks_left(marks) == []


@pytest.mark.parametrize("command", ["index", "mcp"])
def test_the_cli_runs_the_named_interpreter_and_refuses_a_broken_one(
    tmp_path: Path, command: str
) -> None:
    """mcp too refuses before a client connects (it would serve EOF and exit 0)."""
    repo, python, marks = repository(tmp_path)
    assert ANCHOR_LS is not None
    run = subprocess.run(
        [ANCHOR_LS, command, ".", "--python", str(python)],
        cwd=repo,
        env=activated(repo),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
    )
    assert marks_left(marks), "naming the interpreter runs it: the trap works"
    assert run.returncode == 2, run.stdout
    assert run.stderr.startswith(f"anchor-ls: python {python}: not a usable interpreter")
    assert not (repo / ".anchor-ls").exists()  # refused before anything was written


def test_every_command_that_reads_the_index_takes_python() -> None:
    from anchor_ls.cli import build_parser

    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    reading = {name for name, p in commands.items() if "--cache" in p.format_usage()}
    taking = {name for name, p in commands.items() if "--python" in p.format_usage()}
    assert reading - {"batch"} <= taking
    assert {"index", "graph", "tag", "check", "mcp", "callers", "hierarchy"} <= taking


async def test_the_server_never_runs_an_interpreter_it_was_not_given(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    repo, _python, marks = repository(tmp_path)
    ed = await start(lsp, repo, lsp.profile)  # type: ignore[attr-defined]
    stats = await ed.ready()
    assert stats["settings"]["python"] is None
    assert stats["folders"][0]["python"] is None
    ed.open("app/views.py")
    await ed.hints("app/views.py")
    assert marks_left(marks) == []


async def test_the_python_setting_reaches_the_index_and_a_broken_one_is_told(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    repo, python, marks = repository(tmp_path)
    ed = await start(
        lsp,
        repo,
        lsp.profile,  # type: ignore[attr-defined]
        options={"anchorLs": {"python": sys.executable}},
    )
    stats = await ed.ready()
    assert stats["settings"]["python"] == sys.executable
    assert stats["folders"][0]["python"] == sys.executable
    assert stats["folders"][0]["environmentProblem"] is None
    assert marks_left(marks) == []

    # Named (relative paths count from the folder), the repository's own interpreter runs;
    # it fails, which the user is told, and the index reads the server's own environment.
    lsp.set_configuration({"python": ".venv/bin/python"}, section="anchorLs")
    lsp.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))

    async def told() -> list[str]:
        return [m.message for m in lsp.messages if f"python {python}" in m.message]

    messages = await ed.until(told, "a message about the interpreter")
    assert "not a usable interpreter" in messages[0]
    assert "the server's own environment" in messages[0]
    assert marks_left(marks)
    stats = await ed.ready()
    assert stats["settings"]["python"] == ".venv/bin/python"
    assert stats["folders"][0]["python"] is None
    assert "not a usable interpreter" in stats["folders"][0]["environmentProblem"]


def test_index_says_whose_libraries_it_read(tmp_path: Path) -> None:
    """The fixture's repository reaches 17 definitions of its environment (counted by hand
    in fixtures/libraries: View, View.dispatch, TemplateView, TemplateResponseMixin,
    TemplateResponseMixin.render_to_response, RedirectView, Model, Model.save, BaseManager,
    Encoder, Encoder.encode, dumps, Path, Path.read_text, Session, Session.get,
    Response.json)."""
    app = copy_app(tmp_path)
    python = make_environment(tmp_path / "env")
    assert ANCHOR_LS is not None
    args = [ANCHOR_LS, "index", str(app), "--python", str(python)]
    data = json.loads(subprocess.run([*args, "--json"], capture_output=True, check=True).stdout)
    assert data["python"] == str(python)
    assert data["external_entities"] == 17
    assert data["edges"]["overrides"] == 6
    text = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    assert "edges: 10 calls, 8 inherits, 6 overrides, 0 imports, 19 contains\n" in text
    assert f"libraries: 17 definitions outside the repository reached, from {python}\n" in text


async def test_the_server_answers_while_the_named_interpreter_is_asked(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    """The interpreter is asked while the files are parsed: a status report meanwhile says
    which one was named, without waiting for it; when it turns out unusable the index
    reads the server's own environment and says why."""
    repo, _planted, _marks = repository(tmp_path)
    go, python = tmp_path / "go", tmp_path / "slow-python"
    python.write_text(
        f'#!/bin/sh\nn=0; while [ ! -e "{go}" ] && [ $n -lt 600 ]; do n=$((n+1)); sleep 0.05;'
        " done\nexit 1\n",
        encoding="utf-8",
    )
    python.chmod(0o755)
    ed = await start(
        lsp,
        repo,
        lsp.profile,  # type: ignore[attr-defined]
        options={"anchorLs": {"python": str(python)}},
    )

    async def indexing() -> dict | None:
        stats = await ed.command("anchor.stats")
        return stats if stats["folders"] and "python" in stats["folders"][0] else None

    stats = await ed.until(indexing, "the folder's index made")
    assert stats["folders"][0]["python"] == str(python)
    assert stats["folders"][0]["state"] != "ready"  # still waiting for the answer
    go.touch()
    stats = await ed.ready()
    assert stats["folders"][0]["python"] is None
    assert "not a usable interpreter" in stats["folders"][0]["environmentProblem"]
