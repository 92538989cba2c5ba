"""The programs run again under PYTHONHASHSEED=0 in the same process (see hashseed)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from anchor_ls import hashseed

ANCHOR_LS = shutil.which("anchor-ls", path=str(Path(sys.executable).parent))


def _proc(pid: int, name: str) -> list[bytes]:
    return Path(f"/proc/{pid}/{name}").read_bytes().rstrip(b"\0").split(b"\0")


def _environ_seed(pid: int) -> str | None:
    """PYTHONHASHSEED in the environment the process runs under now (after an exec)."""
    for item in _proc(pid, "environ"):
        if item.startswith(b"PYTHONHASHSEED="):
            return item.partition(b"=")[2].decode()
    return None


@pytest.mark.parametrize(
    "command",
    [
        ["anchor-ls", "serve"],
        ["-m", "anchor_ls", "serve"],
        ["-m", "anchor_ls.server"],
    ],
    ids=["console-script", "python-m-anchor_ls", "python-m-anchor_ls.server"],
)
def test_a_server_started_under_another_seed_runs_under_seed_0(command: list[str]) -> None:
    assert ANCHOR_LS is not None, "the console script is installed beside the interpreter"
    argv = [ANCHOR_LS, *command[1:]] if command[0] == "anchor-ls" else [sys.executable, *command]
    env = {**os.environ, "PYTHONHASHSEED": "7"}
    env.pop(hashseed.ANY_SEED, None)
    pipe = subprocess.PIPE
    proc = subprocess.Popen(argv, stdin=pipe, stdout=pipe, stderr=pipe, env=env)
    try:
        seed = _environ_seed(proc.pid)
        deadline = time.monotonic() + 60
        while seed != "0" and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
            seed = _environ_seed(proc.pid)
        assert seed == "0"
        assert proc.poll() is None  # the same process, still serving its pipes
        # the same command line again (the script path too: the same sys.path)
        assert [a.decode() for a in _proc(proc.pid, "cmdline")][-len(argv) + 1 :] == argv[1:]
    finally:
        proc.kill()
        proc.communicate(timeout=30)


def test_the_cli_still_answers_on_its_stdout_after_the_rerun(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def f():\n    g()\n\n\ndef g():\n    pass\n")
    env = {**os.environ, "PYTHONHASHSEED": "random"}
    env.pop(hashseed.ANY_SEED, None)
    out = subprocess.run(
        [sys.executable, "-m", "anchor_ls", "callers", "m.py:g", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "m.py:f" in out.stdout


def test_the_rerun_keeps_the_command_line_and_only_sets_the_seed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(Path(hashseed.__file__).parent.parent)  # a checkout run in place
    calls: list[tuple] = []
    monkeypatch.setattr(os, "execve", lambda *args: calls.append(args))
    monkeypatch.delenv(hashseed.ANY_SEED, raising=False)
    monkeypatch.setenv("PYTHONHASHSEED", "0")
    hashseed.rerun_with_fixed_seed()
    assert calls == []
    monkeypatch.setenv("PYTHONHASHSEED", "12")
    monkeypatch.setenv(hashseed.ANY_SEED, "1")
    hashseed.rerun_with_fixed_seed()
    assert calls == []
    monkeypatch.delenv(hashseed.ANY_SEED)
    monkeypatch.setattr(sys, "orig_argv", ["python3", "-X", "utf8", "/bin/anchor-ls", "graph"])
    hashseed.rerun_with_fixed_seed()
    ((path, argv, env),) = calls
    assert (path, argv) == (sys.executable, ["python3", "-X", "utf8", "/bin/anchor-ls", "graph"])
    assert env == {**os.environ, "PYTHONHASHSEED": "0"}


def test_the_rerun_keeps_the_working_directory_off_its_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """-P, which (unlike -I) leaves PYTHONHASHSEED in force; see syspath."""
    calls: list[tuple] = []
    monkeypatch.setattr(os, "execve", lambda *args: calls.append(args))
    monkeypatch.delenv(hashseed.ANY_SEED, raising=False)
    monkeypatch.setenv("PYTHONHASHSEED", "12")
    monkeypatch.chdir(tmp_path)  # a repository, say
    monkeypatch.setattr(sys, "orig_argv", ["python3", "-X", "utf8", "-m", "anchor_ls", "serve"])
    hashseed.rerun_with_fixed_seed()
    ((path, argv, env),) = calls
    assert (path, argv) == (
        sys.executable,
        ["python3", "-P", "-X", "utf8", "-m", "anchor_ls", "serve"],
    )
    assert env["PYTHONHASHSEED"] == "0"
