"""The graph is a function of the files alone: byte for byte the same under any
PYTHONHASHSEED, built as a library or by the CLI, in processes that keep the seed they
were started under (nothing runs them again under a fixed one).

The binder cuts a value short where it meets it again inside its own evaluation, so
which member of a cycle it enters first decides what is remembered; it enters them in
an order of their own, never in the order a set of values happens to hash to.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

SEEDS = ("1", "2", "3", "5", "8", "13")

# Asked in one order, f gives A and g gives A and B; in the other, g gives B and f
# gives A and B: which one `h()` calls first was the order of the set {f, g}.
PAIR = """\
class A{i}:
    def from_a(self):
        pass


class B{i}:
    def from_b(self):
        pass


def f{i}():
    return g{i}() or A{i}()


def g{i}():
    return f{i}() or B{i}()


def use{i}(flag):
    h = f{i} if flag else g{i}
    h().anything()
    f{i}().from_b()
    g{i}().from_a()
"""

LIBRARY = """\
import json, sys
from anchor_ls.index import Index
index = Index(sys.argv[1], use_cache=False, workers=1)
index.build()
json.dump(index.graph.to_json(), sys.stdout)
"""


def graph_json(root: Path, seed: str, how: str, cache: Path) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    if how == "library":
        argv = [sys.executable, "-P", "-c", LIBRARY, str(root)]
    else:
        argv = [sys.executable, "-m", "anchor_ls", "graph", str(root), "--json"]
        argv += ["--cache", str(cache / seed)]
    out = subprocess.run(
        argv, capture_output=True, text=True, env=env, cwd=cache.parent, timeout=900
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize("how", ["library", "cli"])
def test_cycles_of_definitions_give_one_graph_under_every_hash_seed(
    tmp_path: Path, how: str
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    for n in range(4):
        text = "\n\n".join(PAIR.format(i=i) for i in range(4 * n, 4 * n + 4))
        (root / f"m{n}.py").write_text(text, encoding="utf-8")
    graphs = {seed: graph_json(root, seed, how, tmp_path / "cache") for seed in SEEDS}
    assert '"src": "m0.py:use0"' in graphs["1"]
    distinct = len(set(graphs.values()))
    assert distinct == 1, f"{distinct} graphs under {len(SEEDS)} hash seeds"


# A slice of the standard library: turtle's RawTurtle.clone deep-copies itself (copy.py
# is there), and what `self.screen` holds is a cycle of definitions. Before the fix seed 0
# found screen's methods where seeds 1 to 7 did not (or the other way round).
STDLIB_SLICE = ("turtle.py", "tkinter", "copy.py", "copyreg.py", "weakref.py", "types.py")


@pytest.mark.slow
def test_a_slice_of_the_standard_library_gives_one_graph_under_every_hash_seed(
    tmp_path: Path,
) -> None:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    root = tmp_path / "stdlib"
    root.mkdir()
    for name in STDLIB_SLICE:
        source = stdlib / name
        if source.is_dir():
            shutil.copytree(source, root / name, ignore=shutil.ignore_patterns("test*"))
        else:
            shutil.copy2(source, root / name)
    seeds = ("0", "1", "2")
    graphs = {seed: graph_json(root, seed, "library", tmp_path / "c") for seed in seeds}
    assert '"src": "turtle.py:RawTurtle.clone"' in graphs["0"]
    distinct = len(set(graphs.values()))
    assert distinct == 1, f"{distinct} graphs under {len(seeds)} hash seeds"
