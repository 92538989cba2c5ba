"""The queries' own rules, in process on small trees (a real Index; the end-to-end answers
are in test_agent_mcp.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from anchor_ls.agent.queries import Queries, QueryError
from anchor_ls.index import Index


def queries(tmp_path: Path, files: dict[str, str]) -> Queries:
    root = tmp_path / "repo"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    index = Index(root, use_cache=False)
    index.build()
    return Queries(index)


def test_a_caller_that_both_calls_and_references_is_a_call(tmp_path: Path) -> None:
    q = queries(
        tmp_path,
        {
            "a.py": "def target():\n    pass\n\n\n"
            "def via_a():\n    target()\n\n\n"
            "def via_b():\n    target()\n\n\n"
            "def keep(f):\n    return f\n\n\n"
            "def user():\n    via_b()\n    keep(via_a)\n",
        },
    )
    answer = q.callers("target", depth=2)
    (user,) = answer["levels"][1]["items"]
    assert (user["id"], user["relation"], user["via"]) == ("a.py:user", "call", "a.py:via_b")
    assert [s["line"] for s in user["sites"]] == [18]


def test_depth_and_limit_must_make_sense(tmp_path: Path) -> None:
    q = queries(tmp_path, {"a.py": "def f():\n    pass\n"})
    for call in (
        lambda: q.callers("f", depth=0),
        lambda: q.impact("f", depth=-1),
        lambda: q.callees("f", limit=-1),
        lambda: q.find_symbol("f", kind="lambda"),
        lambda: q.find_symbol("   "),
        lambda: q.tags("f", policy="loud"),
    ):
        with pytest.raises(QueryError):
            call()
    assert q.callers("f", limit=0)["omitted"] == 0
