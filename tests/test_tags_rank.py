"""Capped lists keep what matters and counts add up: the tags layer, materialized tags (the
strip/check round trip included) and the agent's answers, on tests/support/ranked_repo.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.ranked_repo import (
    BY_ID_BEFORE,
    DEMO,
    FILES,
    HUB,
    MAX_ITEMS,
    PRODUCTION,
    TESTS,
    write_repo,
)

from anchor_ls.agent.queries import Queries
from anchor_ls.agent.render import as_text
from anchor_ls.index import Index
from anchor_ls.syntax.parse import summarize
from anchor_ls.tags.policy import fields_for, other_side, resolve_policy

RANKED = PRODUCTION + DEMO  # CALLED_BY of the hub, uncapped, in rank order


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    root = write_repo(tmp_path_factory.mktemp("ranked") / "repo")
    built = Index(root, cache_dir=root.parent / "cache")
    built.build()
    return built


def test_the_cap_keeps_production_callers_with_most_callers_first(index: Index) -> None:
    capped = resolve_policy("topo", 0.0, MAX_ITEMS)
    (called_by,) = fields_for(index.graph, HUB, capped)
    assert called_by.name == "CALLED_BY"
    assert list(called_by.entries) == PRODUCTION[:MAX_ITEMS] != BY_ID_BEFORE
    assert called_by.more == len(RANKED) - MAX_ITEMS
    (whole,) = fields_for(index.graph, HUB, resolve_policy("topo", 0.0, 0))
    assert list(whole.entries) == RANKED
    assert other_side(index.graph, "CALLED_BY", HUB) == TESTS


def test_main_blocks_are_found_with_and_and_either_order() -> None:
    text = (
        b"import sys\n"
        b'if sys.platform != "win32" and __name__ == "__main__":\n'
        b"    f()\n"
        b"if '__main__' == __name__:\n"
        b"    f()\n"
        b"else:\n"
        b"    g()\n"
        b'if __name__ == "__main__" or sys.argv:\n'
        b"    f()\n"
    )
    assert summarize("m.py", text).main_blocks == [(1, 0, 2, 7), (3, 0, 4, 7)]
    assert summarize("m.py", FILES["lib/aaa_demo.py"].encode()).main_blocks == [(7, 0, 13, 11)]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-P", "-m", "anchor_ls", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_materialized_tags_rank_and_check_and_strip_round_trip(tmp_path: Path) -> None:
    root = write_repo(tmp_path / "repo")
    cap = ["--policy", "topo", "--max-items", str(MAX_ITEMS), "--cache", str(tmp_path / "c")]
    done = cli("tag", str(root), "--in-place", *cap)
    assert done.returncode == 0, done.stderr
    core = (root / "lib/core.py").read_text(encoding="utf-8")
    assert f"# CALLED_BY: {', '.join(PRODUCTION[:MAX_ITEMS])}, [+4 more]\n" in core
    checked = cli("check", str(root), *cap)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert cli("strip", str(root)).returncode == 0
    assert (root / "lib/core.py").read_text(encoding="utf-8") == FILES["lib/core.py"]


def test_agent_answers_rank_like_tags_and_count_by_role(index: Index) -> None:
    queries = Queries(index, max_items=MAX_ITEMS)
    answer = queries.callers("emit")
    items = answer["levels"][0]["items"]
    assert [i["id"] for i in items] == RANKED + TESTS
    assert [i["id"] for i in items if i.get("demo")] == DEMO
    assert [i["id"] for i in items if i.get("test")] == TESTS
    assert (answer["total"], answer["in_tests"], answer["in_demo"]) == (10, 3, 3)
    cut = queries.callers("emit", limit=MAX_ITEMS)
    assert [i["id"] for i in cut["levels"][0]["items"]] == PRODUCTION[:MAX_ITEMS]
    assert as_text("callers", cut).splitlines()[-1] == (
        "[+7 more left out; raise --limit] 7 callers · 3 tests (3 of them demo code)"
    )
    tags = queries.tags("emit", "topo")["text"]
    assert f"# CALLED_BY: {', '.join(PRODUCTION[:MAX_ITEMS])}, [+4 more]" in tags
    impact = queries.impact("emit", depth=1)
    assert [i["id"] for i in impact["affected"]] == RANKED


DEMO_FOLDERS = [
    "tutorial",
    "tutorials",
    "demo",
    "demos",
    "sample",
    "samples",
    "example",
    "examples",
    "doc",
    "docs",
    "pkg/tutorial",
]


def test_tutorial_sample_and_demo_folders_rank_as_demo_code(tmp_path: Path) -> None:
    # DRF's sdist ships tutorial/quickstart/views.py: its calls ranked as production code
    # and took CALLED_BY slots from the library's own callers
    from anchor_ls.tags.rank import DEMO as DEMO_ROLE
    from anchor_ls.tags.rank import PRODUCTION as PRODUCTION_ROLE
    from anchor_ls.tags.rank import ranked, role

    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "core.py").write_text("def hub():\n    pass\n")
    callers = {"pkg/zz_use.py": "pkg/zz_use.py:use"}
    for folder in [*DEMO_FOLDERS, "exampleapp", "samplers", "pkg/tutorials_index"]:
        (root / folder).mkdir(parents=True, exist_ok=True)
        rel = f"{folder}/a_views.py"
        callers[rel] = f"{rel}:use"
    for rel in callers:
        (root / rel).write_text("from pkg.core import hub\n\n\ndef use():\n    hub()\n")
    index = Index(root, cache_dir=tmp_path / "cache")
    index.build()
    graph = index.graph
    found = set(graph.into("calls", "pkg/core.py:hub"))
    assert found == set(callers.values())
    demo = {f"{folder}/a_views.py:use" for folder in DEMO_FOLDERS}
    for caller in found:
        expected = DEMO_ROLE if caller in demo else PRODUCTION_ROLE
        assert role(graph, caller) == expected, caller
    order = ranked(graph, found)
    assert set(order[: len(found) - len(demo)]) == found - demo  # production first
