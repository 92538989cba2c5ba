"""A new user's first steps in a real headless Neovim 0.11, against the real server.

editors/nvim/test/first_contact.lua opens `:help anchor_ls`, a Python file in a folder
with no root marker, changes the policy with :AnchorPolicy while watching the statusline,
opens a file directly in the home folder and one of an installed package, and runs
`:checkhealth anchor_ls`; what it saw comes back as JSON and the assertions live here.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.lsp import write_files
from support.nvim import PLUGIN, nvim, run_script
from support.repos import LOOSE

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("nvim-first")
    loose = work / "loose"
    write_files(loose, LOOSE)
    home = work / "home"
    write_files(home, {"notes.py": "def note():\n    pass\n"})
    site = work / "venvs/shop/lib/python3.12/site-packages"
    write_files(site, {"req/__init__.py": "", "req/api.py": "def get():\n    pass\n"})
    env = {
        "HOME": str(home),
        "ANCHOR_NVIM_LOOSE": str(loose / "shapes.py"),
        "ANCHOR_NVIM_HOMED": str(home / "notes.py"),
        "ANCHOR_NVIM_LIBRARY": str(site / "req/api.py"),
    }
    result, _ = run_script("first_contact.lua", work, work, env)
    result["loose"], result["home"], result["site"] = str(loose), str(home), str(site)
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
        [nvim(), "--headless", "--clean", "-c", f"helptags {doc}", "-c", "q"],
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


def test_a_library_file_opened_by_go_to_definition_indexes_no_installation(
    run: dict[str, Any],
) -> None:
    """Its package chain tops at site-packages: the client was started there, and the
    server indexed every installed package."""
    assert run["library_root_dir"] is None
    assert run["library_how"] == f"api.py belongs to the Python installation at {run['site']}"
