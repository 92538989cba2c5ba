"""The suite's user cache is its own: every index, library outline, named interpreter's
answer and cache key the tests make goes to a folder made for this run and removed after
it, never to the user's ~/.cache/anchor-ls (a developer's cache kept hundreds of folders
of tmp repositories, and a run could read what an earlier run left there). Set before
collection, so every process the tests start inherits it."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

_made: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    folder = tempfile.mkdtemp(prefix="anchor-ls-tests-cache-")
    _made.append(folder)
    os.environ["XDG_CACHE_HOME"] = folder


def pytest_unconfigure(config: pytest.Config) -> None:
    for folder in _made:
        shutil.rmtree(folder, ignore_errors=True)
