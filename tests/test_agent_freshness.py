"""Freshness keeps an Index equal to the disk: with inotify events (Linux) and by stats.

Real files in a temporary tree, a real Index; each change is made the way editors and
agents make it (in place, by an atomic rename, in a new folder) and must be in the graph
after the next sync, and only a change of content re-indexes.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from anchor_ls.agent.freshness import Freshness
from anchor_ls.index import CALLS, Index

MODES = [
    pytest.param(
        True,
        id="inotify",
        marks=pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only"),
    ),
    pytest.param(False, id="stat"),
]


@pytest.fixture(params=MODES)
def fresh(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Freshness]:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "a.py").write_text("def f():\n    return 1\n")
    (root / "pkg" / "b.py").write_text("from pkg.a import f\n\n\ndef g():\n    return f()\n")
    freshness = Freshness(Index(root, cache_dir=tmp_path / "cache"), watch=request.param)
    assert freshness.watching is request.param
    freshness.build()
    yield freshness
    freshness.close()
    freshness.index.close()


def callers(freshness: Freshness, ident: str) -> list[str]:
    return freshness.index.graph.into(CALLS, ident)


def test_an_edit_in_place_is_re_indexed(fresh: Freshness) -> None:
    root = fresh.index.root
    assert fresh.sync() == []
    (root / "pkg" / "b.py").write_text("from pkg.a import f\n\n\ndef h():\n    return f()\n")
    assert fresh.sync() == ["pkg/b.py"]
    assert callers(fresh, "pkg/a.py:f") == ["pkg/b.py:h"]


def test_an_atomic_save_is_re_indexed(fresh: Freshness) -> None:
    root = fresh.index.root
    temp = root / "pkg" / ".b.py.tmp"
    temp.write_text("from pkg.a import f\n\n\ndef k():\n    return f()\n")
    os.replace(temp, root / "pkg" / "b.py")
    assert fresh.sync() == ["pkg/b.py"]
    assert callers(fresh, "pkg/a.py:f") == ["pkg/b.py:k"]


def test_the_same_content_written_again_re_indexes_nothing(fresh: Freshness) -> None:
    b = fresh.index.root / "pkg" / "b.py"
    b.write_bytes(b.read_bytes())
    os.utime(b, ns=(1, 1))
    (fresh.index.root / "pkg" / "notes.txt").write_text("not Python\n")
    (fresh.index.root / "pkg" / "__pycache__").mkdir()
    assert fresh.sync() == []


def test_a_file_in_a_new_nested_folder_appears(fresh: Freshness) -> None:
    deep = fresh.index.root / "tools" / "scripts"
    deep.mkdir(parents=True)
    (deep / "run.py").write_text("from pkg.a import f\n\nf()\n")
    assert fresh.sync() == ["tools/scripts/run.py"]
    assert callers(fresh, "pkg/a.py:f") == ["pkg/b.py:g", "tools/scripts/run.py"]
    (deep / "more.py").write_text("from pkg.a import f\n\nf()\n")  # a folder watched now
    assert fresh.sync() == ["tools/scripts/more.py"]


def test_a_deleted_file_and_a_deleted_folder_disappear(fresh: Freshness) -> None:
    root = fresh.index.root
    (root / "pkg" / "b.py").unlink()
    assert fresh.sync() == ["pkg/b.py"]
    assert callers(fresh, "pkg/a.py:f") == []
    assert "pkg/b.py" not in fresh.index.graph.files()
    for name in ("__init__.py", "a.py"):
        (root / "pkg" / name).unlink()
    (root / "pkg").rmdir()
    assert fresh.sync() == ["pkg/__init__.py", "pkg/a.py"]
    assert fresh.index.graph.files() == []


@pytest.mark.parametrize("watch", MODES)
def test_a_config_that_states_a_new_root_moves_the_imports(tmp_path: Path, watch: bool) -> None:
    """An agent's session (mcp) took events of Python files alone: pytest's pythonpath
    written into pyproject.toml left `from helpers import h` unresolved for good. A stat of
    the tree (no inotify) followed Python files alone too: a pyproject.toml edited in place
    (its folder's listing unchanged) was never read again."""
    root = tmp_path / "repo"
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "helpers.py").write_text("def h():\n    return 1\n")
    (root / "app.py").write_text("from helpers import h\n\n\ndef run():\n    return h()\n")
    pyproject = root / "pyproject.toml"
    pyproject.write_text('[project]\nname = "app"\n')
    freshness = Freshness(Index(root, cache_dir=tmp_path / "cache"), watch=watch)
    assert freshness.watching is watch
    freshness.build()
    assert callers(freshness, "lib/helpers.py:h") == []
    with pyproject.open("a") as file:  # in place: the folder lists the same names
        file.write('\n[tool.pytest.ini_options]\npythonpath = ["lib"]\n')
    freshness.sync()
    assert callers(freshness, "lib/helpers.py:h") == ["app.py:run"]
    pyproject.unlink()
    freshness.sync()
    assert callers(freshness, "lib/helpers.py:h") == []
    (root / "pytest.ini").write_text("[pytest]\npythonpath = lib\n")
    freshness.sync()
    assert callers(freshness, "lib/helpers.py:h") == ["app.py:run"]
    freshness.close()
    freshness.index.close()
