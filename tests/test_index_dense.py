"""Dense facts and references in the live index: sites, incremental updates, warm starts.

The per-semantic expectations are hand-written fixtures (fixtures/accuracy/dense_*, refs_*);
these tests cover what a single build cannot: edits, the cache, and where each fact is made.
"""

from __future__ import annotations

from pathlib import Path

from anchor_ls.index import Index
from anchor_ls.index.model import CONST_REF, ENV_VAR, IO_DEP, REFERENCES, TEST_REF

FILES = {
    "app/__init__.py": "",
    "app/config.py": "import os\n\nTIMEOUT = 5\nHOME = os.environ['HOME']\n",
    "app/core.py": (
        "from app.config import TIMEOUT\n"
        "\n"
        "def on_done():\n"
        "    pass\n"
        "\n"
        "def run(callback):\n"
        "    callback()\n"
        "    return TIMEOUT\n"
        "\n"
        "def start():\n"
        "    return run(on_done)\n"
        "\n"
        "def save(path):\n"
        "    with open(path, 'w') as f:\n"
        "        f.write('x')\n"
        "\n"
        "def relay(callback):\n"
        "    return run(callback)\n"
        "\n"
        "def start_later():\n"
        "    return relay(on_done)\n"
    ),
    "tests/__init__.py": "",
    "tests/helpers.py": "from app.core import start\n\ndef go():\n    return start()\n",
    "tests/test_core.py": (
        "from tests.helpers import go\n\ndef test_go():\n    assert go() == 5\n"
    ),
}


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def _dense(index: Index) -> set[tuple[str, str, str]]:
    kinds = (REFERENCES, ENV_VAR, CONST_REF, IO_DEP, TEST_REF)
    return {(e.kind, e.src, e.dst) for k in kinds for e in index.graph.edges(k)}


EXPECTED = {
    (REFERENCES, "app/core.py:start", "app/core.py:on_done"),
    # relay passes on what start_later passed in: the reference is start_later's alone
    (REFERENCES, "app/core.py:start_later", "app/core.py:on_done"),
    (ENV_VAR, "app/config.py", "env:HOME"),
    (CONST_REF, "app/core.py:run", "app/config.py:TIMEOUT"),
    (IO_DEP, "app/core.py:save", "io:file"),
    (TEST_REF, "tests/test_core.py:test_go", "app/core.py:start"),
}


def test_each_fact_is_made_where_the_source_says(tmp_path: Path) -> None:
    index = Index(_repo(tmp_path), cache_dir=tmp_path / "cache")
    index.build()
    assert _dense(index) == EXPECTED
    g = index.graph
    # 0-based (line, byte column) spans of the name that makes each fact
    assert g.sites("app/core.py:start", "app/core.py:on_done", REFERENCES) == [(10, 15, 10, 22)]
    assert g.sites("app/core.py:run", "app/config.py:TIMEOUT", CONST_REF) == [(7, 11, 7, 18)]
    assert g.sites("app/config.py", "env:HOME", ENV_VAR) == [(3, 18, 3, 24)]
    # `open(...)`, and `f.write(...)` of what `with open(...) as f` bound
    assert g.sites("app/core.py:save", "io:file", IO_DEP) == [(13, 9, 13, 13), (14, 10, 14, 15)]
    # through the helper: the span is the test's own call of the helper
    assert g.sites("tests/test_core.py:test_go", "app/core.py:start", TEST_REF) == [(3, 11, 3, 13)]
    # a reference is not a call, and a call is not a reference
    assert "app/core.py:on_done" not in g.out("calls", "app/core.py:start")
    assert g.out(REFERENCES, "app/core.py:run") == []


def test_edits_move_dense_facts_including_tests_through_a_helper(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    index = Index(root, cache_dir=tmp_path / "cache")
    index.build()
    # The helper now calls save instead of start: the test's test_ref follows, though
    # tests/test_core.py itself did not change.
    helper = "from app.core import save, start\n\ndef go():\n    return save('p')\n"
    index.update_file("tests/helpers.py", helper)
    dense = _dense(index)
    assert (TEST_REF, "tests/test_core.py:test_go", "app/core.py:save") in dense
    assert (TEST_REF, "tests/test_core.py:test_go", "app/core.py:start") not in dense
    # The callback goes away, and the constant read with it.
    core = FILES["app/core.py"].replace("run(on_done)", "run(print)").replace("TIMEOUT\n", "1\n")
    index.update_file("app/core.py", core)
    dense = _dense(index)
    assert (REFERENCES, "app/core.py:start", "app/core.py:on_done") not in dense
    assert (CONST_REF, "app/core.py:run", "app/config.py:TIMEOUT") not in dense
    # The same facts as a fresh build of the edited tree.
    (root / "tests/helpers.py").write_text(helper, encoding="utf-8")
    (root / "app/core.py").write_text(core, encoding="utf-8")
    fresh = Index(root, use_cache=False)
    fresh.build()
    assert _dense(fresh) == dense


def test_a_warm_start_restores_dense_facts_and_their_sites(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    cold = Index(root, cache_dir=tmp_path / "cache")
    cold.build()
    cold.close()
    warm = Index(root, cache_dir=tmp_path / "cache")
    stats = warm.build()
    assert stats.from_cache == len(FILES)
    assert _dense(warm) == EXPECTED
    for kind, src, dst in EXPECTED:
        assert warm.graph.sites(src, dst, kind) == cold.graph.sites(src, dst, kind) != []
    assert warm.graph.entity("app/config.py:TIMEOUT").kind == "constant"
