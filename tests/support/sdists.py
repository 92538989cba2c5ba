"""Real code on a real library: a project's sdist and a venv with the library it builds on
installed at pinned versions, in benchmarks/.data as benchmarks/index_bench.py --libraries
keeps them (no tests here). Made when missing, so a test needs nothing prepared by hand."""

from __future__ import annotations

import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "benchmarks" / ".data"


@dataclass(frozen=True)
class Pair:
    """A project (`name==version`, fetched as its sdist) and the pins its environment holds."""

    project: str
    pins: tuple[str, ...]
    env: str  # the venv's folder in DATA

    @property
    def folder(self) -> str:
        """The sdist's folder once unpacked (`djangorestframework-3.15.2`)."""
        name, _, version = self.project.partition("==")
        return f"{name}-{version}"


DRF = Pair("djangorestframework==3.15.2", ("django==5.1.4",), "django-5.1.4-env")
# Flask's dependencies as of its release (and theirs: MarkupSafe), all pinned, so the
# environment is what a Flask user has, the same anywhere
FLASK = Pair(
    "flask==3.1.0",
    (
        "werkzeug==3.1.3",
        "jinja2==3.1.4",
        "itsdangerous==2.2.0",
        "click==8.1.7",
        "blinker==1.9.0",
        "markupsafe==3.0.2",
    ),
    "flask-3.1.0-env",
)


def sdist_with_env(pair: Pair) -> tuple[Path, Path] | str:
    """(the sdist's root, the python of a venv holding the pins), or why they cannot be had
    (no network, no pip)."""
    root, python = DATA / pair.folder, DATA / pair.env / "bin" / "python"
    try:
        DATA.mkdir(parents=True, exist_ok=True)
        if not root.is_dir():
            tarball = DATA / f"{pair.folder}.tar.gz"
            if not tarball.is_file():
                cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps"]
                cmd += ["--no-binary", ":all:", pair.project, "-d", str(DATA)]
                subprocess.run(cmd, check=True, capture_output=True, timeout=600)
            with tarfile.open(tarball) as tar:
                tar.extractall(DATA, filter="data")
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(DATA / pair.env)], check=True)
            pip = [str(python), "-m", "pip", "install", "-q", *pair.pins]
            subprocess.run(pip, check=True, capture_output=True, timeout=600)
    except (OSError, subprocess.SubprocessError, tarfile.TarError) as err:
        return f"the {pair.project} sdist or {', '.join(pair.pins)} could not be had: {err}"
    return root, python
