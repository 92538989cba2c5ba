"""The via_kinds accuracy case as a repository of a test's own, and the CLI run on it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

CASE = Path(__file__).resolve().parents[2] / "fixtures" / "accuracy" / "via_kinds"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """`anchor-ls ARGS` in a fresh process."""
    return subprocess.run(
        [sys.executable, "-m", "anchor_ls", *args], capture_output=True, text=True, timeout=300
    )


def copy_case(tmp_path: Path) -> Path:
    """The case's files without its expected.json, in tmp_path/repo."""
    root = tmp_path / "repo"
    shutil.copytree(CASE, root, ignore=shutil.ignore_patterns(".anchor-ls", "__pycache__"))
    (root / "expected.json").unlink()
    return root
