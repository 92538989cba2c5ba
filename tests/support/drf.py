"""The djangorestframework sdist and an environment with Django installed (a venv), in
benchmarks/.data as benchmarks/index_bench.py --libraries keeps them: made here when
missing, so a test needs nothing prepared by hand."""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "benchmarks" / ".data"
DRF = "djangorestframework-3.15.2"
ENV = DATA / "django-5.1.4-env"


def drf_with_django() -> tuple[Path, Path] | str:
    """(the DRF sdist's root, the python of a venv with Django 5.1.4), or why they cannot
    be had (no network, no pip)."""
    try:
        DATA.mkdir(parents=True, exist_ok=True)
        if not (DATA / DRF).is_dir():
            if not (DATA / f"{DRF}.tar.gz").is_file():
                cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps"]
                cmd += ["--no-binary", ":all:", "djangorestframework==3.15.2", "-d", str(DATA)]
                subprocess.run(cmd, check=True, capture_output=True, timeout=600)
            with tarfile.open(DATA / f"{DRF}.tar.gz") as tar:
                tar.extractall(DATA, filter="data")
        python = ENV / "bin" / "python"
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(ENV)], check=True, timeout=600)
            pip = [str(python), "-m", "pip", "install", "-q", "django==5.1.4"]
            subprocess.run(pip, check=True, capture_output=True, timeout=600)
    except (OSError, subprocess.SubprocessError, tarfile.TarError) as err:
        return f"the DRF sdist or Django could not be had: {err}"
    return DATA / DRF, python
