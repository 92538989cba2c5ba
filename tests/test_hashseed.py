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


def _environ_seed(pid: int) -> str | None:
    """PYTHONHASHSEED in the environment the process runs under now (after an exec)."""
    data = Path(f"/proc/{pid}/environ").read_bytes()
    for item in data.split(b"\0"):
        if item.startswith(b"PYTHONHASHSEED="):
            return item.partition(b"=")[2].decode()
    return None


@pytest.mark.parametrize(
    "command",
    [
        [ANCHOR_LS or "anchor-ls", "serve"],
        [sys.executable, "-m", "anchor_ls", "serve"],
        [sys.executable, "-m", "anchor_ls.server"],
    ],
    ids=["console-script", "python-m-anchor_ls", "python-m-anchor_ls.server"],
)
def test_a_server_started_under_another_seed_runs_under_seed_0(command: list[str]) -> None:
    env = {**os.environ, "PYTHONHASHSEED": "7"}
    proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    try:
        seed = _environ_seed(proc.pid)
        deadline = time.monotonic() + 60
        while seed != "0" and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
            seed = _environ_seed(proc.pid)
        assert seed == "0"
        assert proc.poll() is None  # the same process, still serving its pipes
    finally:
        proc.kill()
        proc.communicate(timeout=30)


def test_the_cli_under_another_seed_answers_on_its_own_stdout(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "m.py").write_text("def f():\n    g()\n\n\ndef g():\n    pass\n")
    env = {**os.environ, "PYTHONHASHSEED": "random"}
    out = subprocess.run(
        [sys.executable, "-m", "anchor_ls", "callers", "m.py:g", str(tmp_path / "r")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "m.py:f" in out.stdout


def test_nothing_happens_under_seed_0(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple] = []
    monkeypatch.setattr(os, "execve", lambda *args: calls.append(args))
    monkeypatch.setenv("PYTHONHASHSEED", "0")
    hashseed.rerun_with_fixed_seed("anchor_ls")
    assert calls == []
    monkeypatch.setenv("PYTHONHASHSEED", "12")
    monkeypatch.setattr(sys, "argv", ["anchor-ls", "graph", "."])
    hashseed.rerun_with_fixed_seed("anchor_ls")
    ((_path, argv, env),) = calls
    assert argv == [sys.executable, "-m", "anchor_ls", "graph", "."]
    assert env["PYTHONHASHSEED"] == "0"
