"""How each call edge was found (via), the call sites nothing resolves (unresolved) and
the possible callers they make, through the graph JSON, the cache and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.via_case import copy_case, run


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return copy_case(tmp_path)


def graph(repo: Path, cache: Path) -> dict:
    done = run("graph", str(repo), "--json", "--cache", str(cache))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_graph_json_says_via_and_unresolved_the_same_cold_and_warm(
    repo: Path, tmp_path: Path
) -> None:
    cold = graph(repo, tmp_path / "c")
    warm = graph(repo, tmp_path / "c")  # from the cache's stored graph
    assert cold == warm
    via = {(e["src"], e["dst"]): e.get("via") for e in cold["edges"] if e["kind"] == "calls"}
    assert via[("main.py:entry", "main.py:local")] == "name"
    assert via[("main.py:entry", "lib.py:helper")] == "import"
    assert via[("main.py:entry", "main.py:Other.go")] == "flow"
    assert via[("lib.py:Job.step", "lib.py:Base.step")] == "super"
    unresolved = {e["id"]: e["unresolved"] for e in cold["entities"] if "unresolved" in e}
    assert unresolved == {"main.py:entry": 1, "main.py:blind": 2}


def test_an_edit_keeps_via_and_moves_the_unresolved_sites(repo: Path, tmp_path: Path) -> None:
    from anchor_ls.index import Index

    index = Index(repo, cache_dir=tmp_path / "c")
    index.build()
    main = repo / "main.py"
    text = main.read_text()
    edited = text.replace("def blind(obj, name):\n", "def blind(obj, name):\n    local()\n")
    index.update_file("main.py", edited)
    graph = index.graph
    assert graph.via("main.py:blind", "main.py:local") == "name"
    assert graph.via("main.py:entry", "lib.py:helper") == "import"
    assert graph.unresolved("main.py:blind") == 2
    lines = [span[0] + 1 for _src, span in graph.maybe_callers("run")]
    assert lines == [edited.splitlines().index("    obj.run()") + 1]


def test_index_prints_the_share_of_unresolved_sites(repo: Path, tmp_path: Path) -> None:
    done = run("index", str(repo), "--cache", str(tmp_path / "c"))
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("call sites:"))
    assert "3 unresolved: " in line and line.endswith("%)")


def test_callers_with_maybe_lists_the_unresolved_sites_after_the_callers(
    repo: Path, tmp_path: Path
) -> None:
    cache = str(tmp_path / "c")
    plain = run("callers", "Base.run", str(repo), "--cache", cache)
    assert plain.returncode == 0, plain.stderr
    lines = plain.stdout.splitlines()
    assert lines[0].startswith("main.py:entry [attribute]\tmain.py:")
    assert lines[-1] == "1 unresolved call sites call this name (--maybe lists them)"
    maybe = run("callers", "Base.run", str(repo), "--maybe", "--cache", cache)
    assert maybe.stdout.splitlines()[-2:] == [
        "possible callers (1): unresolved sites calling this name",
        "  main.py:blind\tmain.py:51: obj.run()",
    ]
    answer = json.loads(run("callers", "Base.run", str(repo), "--maybe", "--json").stdout)
    assert answer["possible"] == 1
    assert answer["maybe"] == [
        {"id": "main.py:blind", "path": "main.py", "line": 51, "text": "obj.run()"}
    ]
    assert answer["levels"][0]["items"][0]["call_via"] == "attribute"


def test_no_callers_is_said_with_the_sites_that_could_reach_it(repo: Path) -> None:
    (repo / "more.py").write_text("def handler():\n    return 0\n")
    done = run("callers", "more.py:handler", str(repo))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "no callers of more.py:handler",
        "1 unresolved call sites call this name (--maybe lists them)",
    ]
