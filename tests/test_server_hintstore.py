"""The store of whole-file hints: what a change drops, and what is never kept."""

from __future__ import annotations

import json

from anchor_ls.server.hintstore import FileHints, HintStore

KEY = (("CALLED_BY",), "utf-16", True)


def hints(*rows: int, deps: tuple[str, ...] = ()) -> FileHints:
    parts = tuple(json.dumps({"position": {"line": r, "character": 0}, "label": "x"}) for r in rows)
    return FileHints(rows, parts, frozenset(deps))


def test_within_cuts_by_line_and_is_json() -> None:
    found = hints(1, 5, 5, 9)
    assert [h["position"]["line"] for h in json.loads(found.within(5, 9))] == [5, 5, 9]
    assert json.loads(found.within(2, 4)) == []
    assert [h["position"]["line"] for h in json.loads(found.within(0, 100))] == [1, 5, 5, 9]


def test_a_change_drops_the_files_it_touched_and_those_linking_to_them() -> None:
    store = HintStore()
    for rel, deps in (("a.py", ("a.py",)), ("b.py", ("b.py", "a.py")), ("c.py", ("c.py",))):
        assert store.put(KEY, rel, hints(1, deps=deps), store.token())
    store.begin_change()
    store.end_change({"a.py"})
    assert store.get(KEY, "a.py") is None
    assert store.get(KEY, "b.py") is None  # links into a.py: its positions may have moved
    assert store.get(KEY, "c.py") is not None
    store.begin_change()
    store.end_change(None)  # the graph was replaced as a whole
    assert store.get(KEY, "c.py") is None and len(store) == 0


def test_hints_computed_across_a_change_are_not_kept() -> None:
    store = HintStore()
    token = store.token()
    store.begin_change()
    assert not store.put(KEY, "a.py", hints(1), token)  # the change started meanwhile
    assert not store.put(KEY, "a.py", hints(1), store.token())  # read from a changing graph
    store.end_change({"z.py"})
    assert not store.put(KEY, "a.py", hints(1), token)  # a change ran meanwhile
    assert store.put(KEY, "a.py", hints(1), store.token())
    assert store.get(KEY, "a.py") is not None


def test_other_settings_or_a_new_policy_start_afresh() -> None:
    store = HintStore()
    assert store.put(KEY, "a.py", hints(1), store.token())
    other = (("CALLS",), "utf-16", True)
    assert store.get(other, "a.py") is None
    assert store.missing(other, ["a.py"]) == ["a.py"]
    token = store.token()
    store.clear()
    assert store.get(KEY, "a.py") is None
    assert not store.put(KEY, "a.py", hints(1), token)  # computed under the old policy


def test_the_budget_keeps_the_most_recently_used() -> None:
    one = hints(1, 2, 3)
    store = HintStore(budget=one.size * 2)
    for rel in ("a.py", "b.py"):
        assert store.put(KEY, rel, one, store.token())
    assert store.get(KEY, "a.py") is not None  # a.py is now the most recent
    assert store.put(KEY, "c.py", one, store.token())
    assert store.get(KEY, "b.py") is None
    assert store.get(KEY, "a.py") is not None and store.get(KEY, "c.py") is not None
    assert store.full
