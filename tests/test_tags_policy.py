"""Tag policies (the study's auto rule), fields_for on hand-built graphs, block rendering."""

from __future__ import annotations

from dataclasses import replace

import pytest

from anchor_ls.index.model import CALLS, CONTAINS, IMPORTS, INHERITS, Edge, Entity, Graph
from anchor_ls.tags.policy import (
    HUB_CALLERS,
    INV_FIELDS,
    TOPO_FIELDS,
    PolicyError,
    TagField,
    block_fields,
    fields_for,
    is_test_path,
    resolve_policy,
    tags_file,
)
from anchor_ls.tags.render import block_header, block_lines, expand_id, short_id


def ent(ident: str, kind: str, line: int = 1) -> Entity:
    path, _, qual = ident.partition(":")
    name = qual.rpartition(".")[2] if qual else path
    return Entity(ident, kind, path, name, line, line + 1, line, (line - 1, 0, line - 1, 1))


def graph(entities: list[Entity], edges: list[tuple[str, str, str]]) -> Graph:
    g = Graph("/repo")
    by_file: dict[str, list[Entity]] = {}
    for e in entities:
        by_file.setdefault(e.path, []).append(e)
    for path, ents in by_file.items():
        g.replace_file_entities(path, ents)
    by_src: dict[str, set[Edge]] = {}
    for kind, src, dst in edges:
        by_src.setdefault(src.partition(":")[0], set()).add(Edge(kind, src, dst))
    for path, es in by_src.items():
        g.replace_file_edges(path, es, {})
    return g


@pytest.fixture
def g() -> Graph:
    ents = [
        ent("pkg/a.py", "module"),
        ent("pkg/a.py:Base", "class", 3),
        ent("pkg/a.py:Base.run", "method", 5),
        ent("pkg/a.py:helper", "function", 9),
        ent("pkg/b.py", "module"),
        ent("pkg/b.py:Child", "class", 3),
        ent("pkg/b.py:main", "function", 8),
        ent("tests/test_a.py", "module"),
        ent("tests/test_a.py:test_helper", "function", 3),
    ]
    edges = [
        (CONTAINS, "pkg/a.py", "pkg/a.py:Base"),
        (CONTAINS, "pkg/a.py", "pkg/a.py:helper"),
        (CONTAINS, "pkg/a.py:Base", "pkg/a.py:Base.run"),
        (CONTAINS, "pkg/b.py", "pkg/b.py:Child"),
        (CONTAINS, "pkg/b.py", "pkg/b.py:main"),
        (IMPORTS, "pkg/b.py", "pkg/a.py"),
        (INHERITS, "pkg/b.py:Child", "pkg/a.py:Base"),
        (CALLS, "pkg/a.py:Base.run", "pkg/a.py:helper"),
        (CALLS, "pkg/b.py:main", "pkg/a.py:helper"),
        (CALLS, "pkg/b.py:main", "pkg/b.py:Child"),
        (CALLS, "tests/test_a.py:test_helper", "pkg/a.py:helper"),
        ("const_ref", "pkg/a.py:helper", "pkg/a.py:LIMIT"),
        ("env_var", "pkg/a.py:helper", "env:HOME"),
        ("references", "pkg/b.py:main", "pkg/a.py:helper"),
    ]
    return graph(ents, edges)


# ----- resolve_policy -------------------------------------------------------------


@pytest.mark.parametrize(
    ("mean", "name", "cap"),
    [
        (0.0, "topo", 8),
        (4.99, "topo", 8),
        (5.0, "topo", 4),
        (8.0, "topo", 4),
        (8.01, "inv", 8),
        (20.0, "inv", 8),
    ],
)
def test_auto_follows_the_study_rule(mean: float, name: str, cap: int) -> None:
    policy = resolve_policy("auto", mean, 8)
    assert (policy.name, policy.max_items) == (name, cap)
    assert policy.fields == (TOPO_FIELDS if name == "topo" else INV_FIELDS)
    assert f"{mean:.2f}" in policy.reason


def test_the_tighter_cap_is_half_but_at_least_three_and_never_looser() -> None:
    assert resolve_policy("auto", 6, 4).max_items == 3
    assert resolve_policy("auto", 6, 2).max_items == 2
    assert resolve_policy("auto", 6, 20).max_items == 10
    assert resolve_policy("auto", 6, 0).max_items == 4  # no cap asked: a cap all the same


def test_named_policies_ignore_the_degree() -> None:
    assert resolve_policy("inv", 0.5, 5).fields == (
        "CALLED_BY",
        "BASE",  # external bases only under inv
        "DERIVED",
        "OVERRIDES",  # external targets only under inv
        "IMPORTED_BY",
        "PARENT",
    )
    assert resolve_policy(" TOPO ", 50, 5).name == "topo"
    dense = resolve_policy("dense", 3, 5)
    assert dense.fields[: len(TOPO_FIELDS)] == TOPO_FIELDS
    assert "TEST_REF" in dense.fields and "REFERENCED_BY" in dense.fields


@pytest.mark.parametrize(("name", "cap"), [("fancy", 8), ("topo", -1)])
def test_bad_policy_or_cap_is_refused_with_a_message(name: str, cap: int) -> None:
    with pytest.raises(PolicyError, match=r"policy|max items"):
        resolve_policy(name, 1.0, cap)


# ----- fields_for -----------------------------------------------------------------


def names(fields: list[TagField]) -> dict[str, tuple[str, ...]]:
    return {f.name: f.entries for f in fields}


def test_topo_lists_both_directions_in_a_fixed_order(g: Graph) -> None:
    fields = fields_for(g, "pkg/a.py:helper", resolve_policy("topo", 0, 8))
    assert names(fields) == {"CALLED_BY": ("pkg/a.py:Base.run", "pkg/b.py:main")}
    fields = fields_for(g, "pkg/b.py:main", resolve_policy("topo", 0, 8))
    assert [f.name for f in fields] == ["CALLS"]
    assert fields[0].entries == ("pkg/a.py:helper", "pkg/b.py:Child")
    base = fields_for(g, "pkg/a.py:Base", resolve_policy("topo", 0, 8))
    assert names(base) == {"DERIVED": ("pkg/b.py:Child",)}  # its CHILDREN follow below it
    mod = fields_for(g, "pkg/b.py", resolve_policy("topo", 0, 8))
    assert names(mod) == {"IMPORTS": ("pkg/a.py",)}


def test_inv_keeps_only_who_depends_on_me(g: Graph) -> None:
    inv = resolve_policy("inv", 0, 8)
    assert names(fields_for(g, "pkg/b.py:main", inv)) == {}
    assert names(fields_for(g, "pkg/a.py", inv)) == {"IMPORTED_BY": ("pkg/b.py",)}
    assert names(fields_for(g, "pkg/a.py:Base", inv)) == {"DERIVED": ("pkg/b.py:Child",)}


def test_parent_is_written_only_when_the_id_does_not_say_it() -> None:
    g = graph(
        [ent("m.py", "module"), ent("m.py:f", "function"), ent("m.py:g", "function", 5)],
        [(CONTAINS, "m.py", "m.py:f"), (CONTAINS, "m.py:g", "m.py:f")],  # an odd, second parent
    )
    assert names(fields_for(g, "m.py:f", resolve_policy("inv", 0, 8))) == {"PARENT": ("m.py:g",)}


def test_children_are_written_only_when_their_ids_do_not_say_it() -> None:
    g = graph(
        [ent("m.py", "module"), ent("m.py:f", "function"), ent("m.py:g", "function", 5)],
        [
            (CONTAINS, "m.py", "m.py:f"),
            (CONTAINS, "m.py", "m.py:g"),
            (CONTAINS, "m.py:g", "m.py:f"),
        ],
    )
    topo = resolve_policy("topo", 0, 8)
    assert names(fields_for(g, "m.py", topo)) == {}
    assert names(fields_for(g, "m.py:g", topo)) == {"CHILDREN": ("m.py:f",)}


def constructor_graph() -> Graph:
    """make() builds a C (C.__init__ too, as the index records it); D(C) has no __init__."""
    return graph(
        [
            ent("m.py:C", "class", 1),
            ent("m.py:C.__init__", "method", 2),
            ent("m.py:D", "class", 5),
            ent("m.py:D.__init__", "method", 6),
            ent("a.py:make", "function"),
            ent("a.py:make_d", "function", 4),
            ent("a.py:E", "class", 8),
        ],
        [
            (CALLS, "a.py:make", "m.py:C"),
            (CALLS, "a.py:make", "m.py:C.__init__"),
            (CALLS, "a.py:make_d", "m.py:D"),
            (CALLS, "a.py:make_d", "m.py:D.__init__"),
            (CALLS, "a.py:make_d", "m.py:C.__init__"),  # an explicit C.__init__(self) call
        ],
    )


def test_a_constructor_call_is_listed_once_in_each_direction() -> None:
    g = constructor_graph()
    topo = resolve_policy("topo", 0, 8)
    assert names(fields_for(g, "a.py:make", topo)) == {"CALLS": ("m.py:C",)}
    assert names(fields_for(g, "a.py:make_d", topo)) == {"CALLS": ("m.py:C.__init__", "m.py:D")}
    assert names(fields_for(g, "m.py:C", topo)) == {"CALLED_BY": ("a.py:make",)}
    # Explicit calls of an __init__ stay; construction is on the class's block.
    assert names(fields_for(g, "m.py:C.__init__", topo)) == {"CALLED_BY": ("a.py:make_d",)}
    assert names(fields_for(g, "m.py:D.__init__", topo)) == {}


def hub_graph(callers: int) -> Graph:
    """main calls a helper and a hub; the hub has `callers` callers in all."""
    others = [ent(f"pkg/c{i}.py:f", "function") for i in range(callers - 1)]
    return graph(
        [ent("pkg/m.py:main", "function"), ent("pkg/u.py:hub", "function"), *others],
        [
            (CALLS, "pkg/m.py:main", "pkg/u.py:hub"),
            (CALLS, "pkg/m.py:main", "pkg/u.py:helper"),
            (CALLS, "pkg/u.py:hub", "pkg/u.py:helper"),
            *[(CALLS, o.id, "pkg/u.py:hub") for o in others],
            *[(CALLS, f"tests/t{i}.py:test", "pkg/u.py:helper") for i in range(50)],
        ],
    )


def test_materialized_calls_leave_out_hubs_and_the_editor_keeps_them() -> None:
    topo = resolve_policy("topo", 0, 8)
    busy = hub_graph(HUB_CALLERS + 1)
    assert names(block_fields(busy, "pkg/m.py:main", topo)) == {"CALLS": ("pkg/u.py:helper",)}
    assert names(fields_for(busy, "pkg/m.py:main", topo))["CALLS"] == (
        "pkg/u.py:helper",
        "pkg/u.py:hub",
    )
    # The hub's own block still lists its callers (capped), and inv is untouched.
    (called_by,) = block_fields(busy, "pkg/u.py:hub", resolve_policy("inv", 0, 8))
    assert called_by.more == HUB_CALLERS + 1 - 8
    # At the limit it is no hub; test callers (TEST_REF) do not make a hub either.
    quiet = hub_graph(HUB_CALLERS)
    assert "pkg/u.py:hub" in names(block_fields(quiet, "pkg/m.py:main", topo))["CALLS"]
    assert block_fields(busy, "pkg/m.py:main", replace(topo, hub_callers=0)) == fields_for(
        busy, "pkg/m.py:main", topo
    )


def test_entries_are_sorted_and_capped_with_a_count(g: Graph) -> None:
    callers = [ent(f"pkg/c{i}.py:f", "function") for i in range(12)]
    g2 = graph(
        [ent("pkg/t.py:target", "function"), *callers],
        [(CALLS, c.id, "pkg/t.py:target") for c in reversed(callers)],
    )
    (field,) = fields_for(g2, "pkg/t.py:target", resolve_policy("topo", 0, 5))
    assert field.entries == tuple(sorted(c.id for c in callers)[:5])
    assert field.more == 7
    (uncapped,) = fields_for(g2, "pkg/t.py:target", resolve_policy("topo", 0, 0))
    assert len(uncapped.entries) == 12 and uncapped.more == 0


def test_calls_across_the_test_boundary_are_test_refs(g: Graph) -> None:
    topo = resolve_policy("topo", 0, 8)
    assert "tests/test_a.py:test_helper" not in str(fields_for(g, "pkg/a.py:helper", topo))
    assert fields_for(g, "tests/test_a.py:test_helper", topo) == []
    dense = names(fields_for(g, "pkg/a.py:helper", resolve_policy("dense", 0, 8)))
    assert dense["TEST_REF"] == ("tests/test_a.py:test_helper",)


def test_code_under_test_does_not_list_test_code_that_imports_or_derives_from_it() -> None:
    g = graph(
        [
            ent("pkg/a.py", "module"),
            ent("pkg/a.py:Base", "class", 3),
            ent("pkg/b.py", "module"),
            ent("pkg/b.py:Child", "class", 3),
            ent("tests/test_a.py", "module"),
            ent("tests/test_a.py:FakeBase", "class", 3),
        ],
        [
            (IMPORTS, "pkg/b.py", "pkg/a.py"),
            (IMPORTS, "tests/test_a.py", "pkg/a.py"),
            (INHERITS, "pkg/b.py:Child", "pkg/a.py:Base"),
            (INHERITS, "tests/test_a.py:FakeBase", "pkg/a.py:Base"),
        ],
    )
    topo = resolve_policy("topo", 0, 8)
    assert names(fields_for(g, "pkg/a.py", topo)) == {"IMPORTED_BY": ("pkg/b.py",)}
    assert names(fields_for(g, "pkg/a.py:Base", topo)) == {"DERIVED": ("pkg/b.py:Child",)}
    # Test code keeps its own facts about the code under test.
    assert names(fields_for(g, "tests/test_a.py", topo)) == {"IMPORTS": ("pkg/a.py",)}
    assert names(fields_for(g, "tests/test_a.py:FakeBase", topo)) == {"BASE": ("pkg/a.py:Base",)}


def test_dense_fields_render_from_their_edge_kinds(g: Graph) -> None:
    dense = names(fields_for(g, "pkg/a.py:helper", resolve_policy("dense", 0, 8)))
    assert dense["CONST_REF"] == ("pkg/a.py:LIMIT",)
    assert dense["ENV_VAR"] == ("env:HOME",)
    assert dense["REFERENCED_BY"] == ("pkg/b.py:main",)
    assert "CONFIG_USAGE" not in dense  # no such edges: no field
    topo = names(fields_for(g, "pkg/a.py:helper", resolve_policy("topo", 0, 8)))
    assert "CONST_REF" not in topo


@pytest.mark.parametrize(
    ("path", "test"),
    [
        ("tests/test_a.py", True),
        ("pkg/tests/helpers.py", True),
        ("Lib/test/support/__init__.py", True),
        ("idlelib/idle_test/test_x.py", True),
        ("pkg/test_utils.py", True),
        ("pkg/foo_test.py", True),
        ("app/tests.py", True),
        ("conftest.py", True),
        ("pkg/testing.py", False),
        ("pkg/contest.py", False),
        ("pkg/attestation/x.py", False),
        ("pkg/service.py", False),
    ],
)
def test_test_code_is_told_apart_by_path(path: str, test: bool) -> None:
    assert is_test_path(path) is test


# ----- rendering ------------------------------------------------------------------


def test_block_lines_follow_the_design_format() -> None:
    lines = block_lines(
        ent("pkg/service.py:checkout", "function"),
        [
            TagField("CALLS", ("pkg/models.py:Order", "pkg/models.py:Order.add"), 3),
            TagField("CALLED_BY", ("pkg/service.py:CheckoutService.run", "pkg/service.py"), 0),
        ],
    )
    assert lines == [
        "# === CodeAnchor pkg/service.py:checkout",
        "# CALLS: pkg/models.py:Order, pkg/models.py:Order.add, [+3 more]",
        "# CALLED_BY: :CheckoutService.run, pkg/service.py",
        "# ===",
    ]
    assert block_header(lines) == "pkg/service.py:checkout"


@pytest.mark.parametrize(
    ("entity", "kind", "link", "short"),
    [
        ("pkg/m.py:A.f", "method", "pkg/m.py:A.g", ".g"),  # a method of the same class
        ("pkg/m.py:A.f", "method", "pkg/m.py:A", ":A"),
        ("pkg/m.py:A.f", "method", "pkg/m.py:A.g.inner", ":A.g.inner"),
        ("pkg/m.py:A.f", "method", "pkg/m.py:B.g", ":B.g"),
        ("pkg/m.py:A.B.f", "method", "pkg/m.py:A.B.g", ".g"),
        ("pkg/m.py:A.B.f", "method", "pkg/m.py:A.g", ":A.g"),
        ("pkg/m.py:A", "class", "pkg/m.py:A.g", ":A.g"),  # only a method's block says "."
        ("pkg/m.py:f", "function", "pkg/m.py:g", ":g"),
        ("pkg/m.py:f.inner", "function", "pkg/m.py:f.other", ":f.other"),
        ("pkg/m.py", "module", "pkg/m.py:g", ":g"),
        ("pkg/m.py:f", "function", "pkg/m.py", "pkg/m.py"),  # a module keeps its id
        ("pkg/m.py:f", "function", "pkg/mm.py:g", "pkg/mm.py:g"),
        ("pkg/m.py:f", "function", "env:HOME", "env:HOME"),  # a dense target
    ],
)
def test_same_file_links_are_short_and_expand_back(
    entity: str, kind: str, link: str, short: str
) -> None:
    assert short_id(link, ent(entity, kind)) == short
    assert expand_id(short, entity) == link


def test_test_code_carries_blocks_only_when_the_policy_asks() -> None:
    topo = resolve_policy("topo", 0, 8)
    assert tags_file("pkg/a.py", topo) and not tags_file("tests/test_a.py", topo)
    both = resolve_policy("topo", 0, 8, tests=True)
    assert tags_file("tests/test_a.py", both) and "test code" in both.reason


def test_cross_file_keeps_only_links_to_other_files(g: Graph) -> None:
    policy = resolve_policy("topo", 0, 8, cross_file=True)
    assert policy.cross_file and "cross-file" in policy.reason
    assert names(fields_for(g, "pkg/a.py:helper", policy)) == {"CALLED_BY": ("pkg/b.py:main",)}
    assert names(fields_for(g, "pkg/a.py:Base", policy)) == {"DERIVED": ("pkg/b.py:Child",)}
    assert names(fields_for(g, "pkg/a.py:Base.run", policy)) == {}  # all its links stay home
    assert resolve_policy("auto", 9, 8, cross_file=True).name == "inv"


def test_callers_split_at_the_test_boundary_file_by_file() -> None:
    """Callers are grouped by file before the test check: ids of files whose paths are
    prefixes of each other, module-level callers and test files must each land right."""
    callers = [
        "pkg/m.py",  # module-level code
        "pkg/m.py/tests/x.py:f",  # a folder named m.py sorts between the module and its defs
        "pkg/m.py:a",
        "pkg/m.py:b.c",
        "pkg/m.pyx.py:z",
        "pkg/m.py_tests/x.py:t",  # test code right after pkg/m.py's run
        "tests/test_m.py",
        "tests/test_m.py:test_a",
        "tests/test_m.py:TestM.test_b",
        "tests/test_m.pyz/helpers.py:h",
        "tests_not/m.py:g",
    ]
    entities = [ent("pkg/t.py:target", "function")]
    entities += [ent(c, "module" if ":" not in c else "function") for c in callers]
    g = graph(entities, [(CALLS, c, "pkg/t.py:target") for c in callers])
    outside = sorted(c for c in callers if not is_test_path(c.partition(":")[0]))
    inside = sorted(c for c in callers if is_test_path(c.partition(":")[0]))
    assert outside and inside
    (called_by,) = fields_for(g, "pkg/t.py:target", resolve_policy("topo", 0, 0))
    assert called_by.entries == tuple(outside)
    dense = names(fields_for(g, "pkg/t.py:target", resolve_policy("dense", 0, 0)))
    assert dense["TEST_REF"] == tuple(inside)
