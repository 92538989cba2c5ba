"""A new user's first steps in a real headless Neovim 0.11, against the real server.

editors/nvim/test/first_contact.lua opens `:help anchor_ls`, a Python file in a folder
with no root marker, changes the policy with :AnchorPolicy while watching the statusline,
opens a file directly in the home folder and runs `:checkhealth anchor_ls`; what it saw
comes back as JSON and the assertions live here.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_nvim_client import PLUGIN, _nvim
from test_server_first_contact import LOOSE
from test_server_support import write_files

NVIM_TIMEOUT_S = 240


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("nvim-first")
    loose = work / "loose"
    write_files(loose, LOOSE)
    home = work / "home"
    write_files(home, {"notes.py": "def note():\n    pass\n"})
    out = work / "result.json"
    env = {
        **os.environ,
        "HOME": str(home),
        "ANCHOR_NVIM_PLUGIN": str(PLUGIN),
        "ANCHOR_NVIM_CMD": json.dumps([sys.executable, "-m", "anchor_ls", "serve"]),
        "ANCHOR_NVIM_LOOSE": str(loose / "shapes.py"),
        "ANCHOR_NVIM_HOMED": str(home / "notes.py"),
        "ANCHOR_NVIM_OUT": str(out),
        "XDG_CONFIG_HOME": str(work / "config"),
        "XDG_DATA_HOME": str(work / "data"),
        "XDG_STATE_HOME": str(work / "state"),
        "XDG_CACHE_HOME": str(work / "cache"),
    }
    nvim = subprocess.Popen(
        [_nvim(), "--headless", "--clean", "-u", str(PLUGIN / "test" / "first_contact.lua")],
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        _, stderr = nvim.communicate(timeout=NVIM_TIMEOUT_S)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(nvim.pid, signal.SIGKILL)
        nvim.wait()
    assert out.exists(), f"nvim wrote no result (exit {nvim.returncode}):\n{stderr[-3000:]}"
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result.get("ok"), (
        f"the Neovim test failed: {result.get('error')}\nlog: {result.get('log')}\n"
        f"messages: {result.get('messages')}\nstderr: {stderr[-2000:]}"
    )
    result["loose"], result["home"] = str(loose), str(home)
    return result


def test_help_opens_the_plugin_doc(run: dict[str, Any]) -> None:
    assert run.get("help_error") is None, run.get("help_error")
    assert Path(run["help_file"]) == PLUGIN / "doc" / "anchor_ls.txt"
    assert "*anchor_ls*" in run["help_line"]


def test_shipped_help_tags_are_what_helptags_makes(tmp_path: Path) -> None:
    """doc/tags is committed (a plugin manager may not run :helptags): it must not go stale."""
    doc = tmp_path / "doc"
    shutil.copytree(PLUGIN / "doc", doc, ignore=shutil.ignore_patterns("tags"))
    subprocess.run(
        [_nvim(), "--headless", "--clean", "-c", f"helptags {doc}", "-c", "q"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    assert (PLUGIN / "doc" / "tags").read_bytes() == (doc / "tags").read_bytes()


def test_a_file_in_a_folder_without_markers_gets_hints(run: dict[str, Any]) -> None:
    assert Path(run["root_dir"]) == Path(run["loose"])
    assert "summary" in run["hint"] and "twice" in run["hint"], run["hint"]


def test_the_statusline_follows_the_policy_at_once(run: dict[str, Any]) -> None:
    assert run["status_indexed"].startswith("anchor-ls: auto→")
    assert run["status_inv_at_once"] == "anchor-ls: inv"
    assert run["status_inv_later"] == "anchor-ls: inv"
    assert run["status_auto_at_once"] == "anchor-ls: auto"
    assert run["status_auto_resolved"] == run["status_indexed"]


def test_checkhealth_warns_about_a_client_without_a_root(run: dict[str, Any]) -> None:
    assert run["homed_root_dir"] is None
    assert run["homed_same_client"] is False
    health = "\n".join(run["health"])
    warnings = [line for line in run["health"] if "WARNING" in line]
    assert any("has no root folder" in line for line in warnings), health
    assert any("indexes no folder" in line for line in warnings), health
    assert f"indexes {Path(run['loose'])} (workspace folder): ready" in health, health
