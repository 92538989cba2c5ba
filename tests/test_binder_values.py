"""The binder's values are named types: distinct kinds never meet, their order is the
fixed one the graph depends on, and they survive pickling (worker shares, cache rows)."""

from __future__ import annotations

import pickle
import shutil
import sqlite3
from pathlib import Path

from anchor_ls.index import Index
from anchor_ls.index.bind.values import MAX_VALUES, cap, in_order, value_key
from anchor_ls.index.cache import FILE_NAME, SCHEMA, Cache
from anchor_ls.index.persistence import FACTS
from anchor_ls.index.state import (
    VALUE_TYPES,
    BoundMethod,
    Class,
    Container,
    Dict,
    DictMethod,
    External,
    FileFacts,
    Function,
    Generator,
    Instance,
    Module,
    SelfInstance,
    Super,
    renumbered,
)

EXAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "example"
SCOPED = (Function, BoundMethod, Class, Instance, SelfInstance, Super, Generator)


def test_kinds_naming_one_scope_are_distinct_values() -> None:
    """A class, an instance of it, `self` in it, `super()` in it: each its own type, never
    equal to another, never collapsing in a set."""
    made = [kind("a.py", 3) for kind in SCOPED]
    assert len(set(made)) == len(SCOPED)
    assert Class("a.py", 3) != Instance("a.py", 3)
    assert {Class("a.py", 3)} & {Instance("a.py", 3), SelfInstance("a.py", 3)} == set()
    assert [type(v) for v in made] == list(SCOPED)
    assert all(v.scope == ("a.py", 3) and v.path == "a.py" and v.idx == 3 for v in made)
    assert Module("os") != External("os") and len({Module("os"), External("os")}) == 2


def test_values_sort_by_their_kind_then_their_fields() -> None:
    """The fixed order of the binder's walks (cycle cuts depend on it): kind first, as the
    tags always sorted, then path and index; the same in any order given."""
    values = [
        External("os.getcwd"),
        Instance("a.py", 1),
        Module("a.py"),
        Container(frozenset({Class("b.py", 2), Function("a.py", 1)})),
        Function("b.py", 0),
        Class("a.py", 1),
        Function("a.py", 7),
    ]
    ordered = list(in_order(values))
    assert ordered == list(in_order(list(reversed(values))))
    assert [type(v) for v in ordered] == [
        Container,
        Class,
        Function,
        Function,
        Instance,
        Module,
        External,
    ]
    assert ordered[2:4] == [Function("a.py", 7), Function("b.py", 0)]
    assert value_key(ordered[0]) == ("L", (("c", "b.py", 2), ("f", "a.py", 1)))


def test_cap_keeps_the_same_values_whatever_order_they_come_in() -> None:
    many = [Function(f"m{i:03}.py", i) for i in range(MAX_VALUES + 10)]
    many += [Instance(f"m{i:03}.py", i) for i in range(10)]
    kept = cap(set(many))
    assert len(kept) == MAX_VALUES
    assert kept == cap(set(reversed(many)))
    assert all(isinstance(v, Function) for v in kept)


def test_values_keep_their_types_through_pickle_and_renumbering() -> None:
    d = Dict((("k", frozenset({Instance("a.py", 2)})),))
    values = {
        *(kind("a.py", 2) for kind in SCOPED),
        Module("pkg/"),
        External("builtins.len()"),
        Container(frozenset({Class("a.py", 2), Generator("b.py", 2)})),
        d,
        DictMethod(d, "get"),
    }
    back = pickle.loads(pickle.dumps(values, pickle.HIGHEST_PROTOCOL))
    assert back == values
    assert _shape(back) == _shape(values)  # types, not bare tuples

    moved = renumbered(values, "a.py", {2: 5})
    assert isinstance(moved, frozenset | set)
    assert {type(v) for v in moved} == {type(v) for v in values}
    assert Class("a.py", 5) in moved and SelfInstance("a.py", 5) in moved
    assert Container(frozenset({Class("a.py", 5), Generator("b.py", 2)})) in moved
    assert DictMethod(Dict((("k", frozenset({Instance("a.py", 5)})),)), "get") in moved


def _shape(data: object) -> object:
    """data's types all the way down, sets in one order (a set's repr lists its items in
    the order they went in, which unpickling need not keep)."""
    if isinstance(data, tuple):
        return (type(data).__name__, *map(_shape, data))
    if isinstance(data, frozenset | set):
        return ("set", *sorted(map(_shape, data), key=repr))
    return data


def _plain(data: object) -> object:
    """data with every value a bare tuple, as the binder kept them before they were typed."""
    if isinstance(data, tuple):
        return tuple(_plain(v) for v in data)
    if isinstance(data, frozenset | set | list):
        return type(data)(_plain(v) for v in data)
    if isinstance(data, dict):
        return {_plain(k): _plain(v) for k, v in data.items()}
    return data


def _held(facts: FileFacts) -> list[object]:
    """The values facts hold: what each scope calls, each class's bases."""
    held: list[object] = [t for targets in facts.calls.values() for t in targets]
    return held + [v for bases in facts.bases.values() for v in bases]


def _typed(facts: dict[str, FileFacts]) -> bool:
    held = [v for f in facts.values() for v in _held(f)]
    return bool(held) and all(isinstance(v, VALUE_TYPES) for v in held)


def test_facts_rows_of_the_format_before_typed_values_are_not_read_back(tmp_path: Path) -> None:
    """A cache whose facts rows hold bare-tuple values (format 4, the format before typed
    values) is rebuilt: an edit after the warm start never reads those values back."""
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns(".anchor-ls", "__pycache__"))
    cold = Index(repo)
    cold.build()
    cold.close()
    folder = repo / ".anchor-ls"
    cache = Cache(folder)
    rows = {n: pickle.loads(b) for n, b in cache.graph_parts(FACTS)}
    assert _typed(rows)
    old_schema = SCHEMA.replace(" cache 5 ", " cache 4 ")
    assert old_schema != SCHEMA
    with sqlite3.connect(folder / FILE_NAME) as conn:
        for name, facts in rows.items():
            for table in ("calls", "bases", "sites", "refs"):
                setattr(facts, table, _plain(getattr(facts, table)))
            blob = cache.key.sign(f"part\0{name}", pickle.dumps(facts, pickle.HIGHEST_PROTOCOL))
            conn.execute("UPDATE graph_parts SET blob = ? WHERE name = ?", (blob, name))
        owner = cache.key.tag("owner", old_schema.encode()).hex()
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (old_schema,))
        conn.execute("UPDATE meta SET value = ? WHERE key = 'owner'", (owner,))
    conn.close()
    cache.close()

    warm = Index(repo)
    warm.build()
    pricing = repo / "pkg" / "pricing.py"
    warm.update_file("pkg/pricing.py", pricing.read_bytes() + b"\n\ndef added():\n    pass\n")
    assert _typed(warm._facts)
    warm.close()
