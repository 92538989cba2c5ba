"""A Python environment whose installed packages are the fake ones of fixtures/libraries (no
tests here): a virtual environment (no pip) with a `.pth` line naming that site-packages, so
`--python` and the server's `python` setting name a real interpreter, as a user's would."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIBRARIES = ROOT / "fixtures" / "libraries"
SITE_PACKAGES = (LIBRARIES / "site-packages").resolve()
APP = LIBRARIES / "app"


def make_environment(where: Path) -> Path:
    """A virtual environment at where whose packages are fixtures/libraries/site-packages;
    its python."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(where)],
        check=True,
        capture_output=True,
    )
    purelib = sysconfig.get_path("purelib", vars={"base": str(where), "platbase": str(where)})
    Path(purelib).mkdir(parents=True, exist_ok=True)
    (Path(purelib) / "fixture_libraries.pth").write_text(f"{SITE_PACKAGES}\n", encoding="utf-8")
    return where / "bin" / "python"


def copy_app(where: Path) -> Path:
    """A fresh copy of the repository of fixtures/libraries (it uses those packages)."""
    root = where / "app"
    shutil.copytree(APP, root, ignore=shutil.ignore_patterns(".anchor-ls", "__pycache__"))
    return root
