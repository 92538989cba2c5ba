"""The suite never writes to the user's own cache folder (see conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import platformdirs


def test_the_suite_and_the_processes_it_starts_keep_their_caches_out_of_home() -> None:
    home = Path.home().resolve()
    here = Path(platformdirs.user_cache_dir("anchor-ls")).resolve()
    child = subprocess.run(
        [sys.executable, "-c", "import platformdirs as p; print(p.user_cache_dir('anchor-ls'))"],
        capture_output=True,
        text=True,
        check=True,
    )
    there = Path(child.stdout.strip()).resolve()
    for folder in (here, there):
        assert not folder.is_relative_to(home / ".cache"), folder
        assert folder.parent == Path(os.environ["XDG_CACHE_HOME"]).resolve()
