"""The queries' own rules, in process on small trees (a real Index; the end-to-end answers
are in test_agent_mcp.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from anchor_ls.agent.queries import Queries, QueryError
from anchor_ls.index import Index

EXAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "example"


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


def ids(items: list[dict]) -> list[str]:
    return [item["id"] for item in items]


def own_ids(items: list[dict]) -> list[str]:
    """ids of the repository's own (the environment's typing.Generic, ext:, left out)."""
    return [i for i in ids(items) if not i.startswith("ext:")]


# Bases whose names a header does not list in their order: a module-qualified base next
# to a same-named one, a generic base whose subscript names a later base, and an alias.
DECLARED_ORDER = {
    "mod.py": "class A:\n    def run(self):\n        pass\n",
    "main.py": "import mod\nfrom typing import Generic, TypeVar\n\n"
    'K = TypeVar("K")\nV = TypeVar("V")\n\n\n'
    "class A:\n    def run(self):\n        pass\n\n\n"
    "class C(mod.A, A):\n    def run(self):\n        pass\n\n\n"
    "class Pair(Generic[K, V]):\n    pass\n\n\n"
    "class Key:\n    pass\n\n\n"
    "class Value:\n    pass\n\n\n"
    "class Entry(Pair[Value, Key], Key, Value):\n    pass\n",
}
# What CPython computes for these classes (`C.__mro__`, `Entry.__mro__`), without the
# classes outside the repository (object, typing.Generic):
#   C:     C, mod.A, main.A, object
#   Entry: Entry, Pair, Generic, Key, Value, object
C_MRO = ["mod.py:A", "main.py:A"]
ENTRY_MRO = ["main.py:Pair", "main.py:Key", "main.py:Value"]


def test_hierarchy_follows_the_declared_order_of_the_bases(tmp_path: Path) -> None:
    q = queries(tmp_path, DECLARED_ORDER)
    assert ids(q.hierarchy("main.py:C")["mro"]) == C_MRO
    assert own_ids(q.hierarchy("Entry")["mro"]) == ENTRY_MRO
    overridden = q.hierarchy("main.py:C.run")["overridden"]
    assert ids(overridden) == ["mod.py:A.run", "main.py:A.run"]


def test_a_warm_start_and_an_edit_keep_the_declared_order(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    for rel, text in DECLARED_ORDER.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    Index(root, cache_dir=tmp_path / "cache").build()
    warm = Index(root, cache_dir=tmp_path / "cache")
    assert warm.build().from_cache
    q = Queries(warm)
    assert ids(q.hierarchy("main.py:C")["mro"]) == C_MRO
    assert own_ids(q.hierarchy("Entry")["mro"]) == ENTRY_MRO
    swapped = DECLARED_ORDER["main.py"].replace("(mod.A, A)", "(A, mod.A)")
    warm.update_file("main.py", swapped)
    q.changed()
    assert ids(q.hierarchy("main.py:C")["mro"]) == ["main.py:A", "mod.py:A"]


def test_the_hierarchy_of_a_chain_of_3000_classes(tmp_path: Path) -> None:
    chain = "class C0:\n    pass\n" + "".join(
        f"\n\nclass C{i}(C{i - 1}):\n    pass\n" for i in range(1, 3000)
    )
    q = queries(tmp_path, {"chain.py": chain})
    answer = q.hierarchy("C2999")
    assert ids(answer["mro"]) == [f"chain.py:C{i}" for i in range(2998, -1, -1)]
    assert ids(q.hierarchy("C0")["subclasses"])[:2] == ["chain.py:C1", "chain.py:C2"]


def test_a_cycle_of_bases_lists_each_class_once(tmp_path: Path) -> None:
    # Python refuses such classes; the index sees the cycle and cuts it.
    q = queries(
        tmp_path,
        {
            "a.py": "from b import B\n\n\nclass A(B):\n    pass\n",
            "b.py": "from a import A\n\n\nclass B(A):\n    pass\n",
        },
    )
    assert ids(q.hierarchy("A")["mro"]) == ["b.py:B"]
    assert ids(q.hierarchy("B")["mro"]) == ["a.py:A"]


def test_source_text_is_read_in_the_file_s_own_codec_and_line_ends(tmp_path: Path) -> None:
    # A latin-1 file (its cookie says so), a file whose lines end with a lone CR (Python
    # and the index read each CR as a line end) and one with a BOM: the call-site text
    # and the signatures quote each as Python reads it, at the line the index counted.
    root = tmp_path / "repo"
    root.mkdir()
    (root / "lib.py").write_text("def helper(x):\n    return x\n", encoding="utf-8")
    (root / "latin.py").write_bytes(
        b"# -*- coding: latin-1 -*-\nfrom lib import helper\n\n\n"
        b'def caf\xe9(prix="d\xe9j\xe0"):\n    return helper("\xe9t\xe9")\n'
    )
    (root / "mac.py").write_bytes(b"from lib import helper\r\r\rdef old():\r    helper(1)\r")
    (root / "bom.py").write_bytes(
        b"\xef\xbb\xbffrom lib import helper\n\n\ndef bom():\n    helper('\xc3\xa9')\n"
    )
    index = Index(root, use_cache=False)
    index.build()
    q = Queries(index)
    sites = {
        item["id"]: [(s["line"], s["text"]) for s in item["sites"]]
        for item in q.callers("helper")["levels"][0]["items"]
    }
    assert sites == {
        "latin.py:café": [(6, 'return helper("été")')],
        "mac.py:old": [(5, "helper(1)")],
        "bom.py:bom": [(5, "helper('é')")],
    }
    (latin,) = q.find_symbol("café")["matches"]
    assert latin["signature"] == 'def café(prix="déjà")'
    outline = q.outline("mac.py")["definitions"]
    assert [(d["line"], d.get("signature")) for d in outline] == [(1, None), (4, "def old()")]


def test_find_symbol_does_not_match_the_ext_prefix_of_library_ids(tmp_path: Path) -> None:
    # `x` is in no name of functools.wraps: the `ext:` every library id starts with is
    # not a part of its name (each library definition reached matched `x`, `e`, `t`)
    q = queries(
        tmp_path,
        {
            "a.py": "import functools\n\n\ndef deco(fn):\n    @functools.wraps(fn)\n"
            "    def inner():\n        return fn()\n    return inner\n\n\ndef fix():\n    pass\n",
        },
    )
    assert "ext:functools.wraps" in q.graph.entities
    assert ids(q.find_symbol("x")["matches"]) == ["a.py:fix"]
    assert ids(q.find_symbol("wraps")["matches"]) == ["ext:functools.wraps"]
    assert ids(q.find_symbol("ext:functools.wraps")["matches"]) == ["ext:functools.wraps"]
    every = q.find_symbol("ext:")["matches"]  # asked for: every library definition reached
    assert ids(every) == sorted(i for i in q.graph.entities if i.startswith("ext:"))


def test_the_impact_of_a_constant_is_the_code_that_reads_it(tmp_path: Path) -> None:
    # fixtures/example: pkg/repo.py's SqlRepo.__init__ reads config.TIMEOUT (`self.timeout =
    # TIMEOUT`), pkg/service.py's checkout reads MAX_ITEMS; "0 affected" hid both
    root = tmp_path / "example"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".anchor-ls", "__pycache__"))
    index = Index(root, use_cache=False)
    index.build()
    q = Queries(index)
    timeout = q.impact("pkg/config.py:TIMEOUT")
    first = timeout["affected"][0]
    assert (first["id"], first["distance"], first["relation"]) == (
        "pkg/repo.py:SqlRepo.__init__",
        1,
        "reads",
    )
    second = {i["id"] for i in timeout["affected"] if i["distance"] == 2}
    assert {"pkg/service.py:CheckoutService.__init__", "pkg/cli.py:main"} <= second
    assert "tests/test_service.py:test_service_run_records_timing" in ids(timeout["tests"])
    items = q.impact("pkg/config.py:MAX_ITEMS", depth=1)["affected"]
    assert [(i["id"], i["relation"]) for i in items] == [("pkg/service.py:checkout", "reads")]


def test_a_symbol_may_be_a_dotted_python_path_or_a_pytest_node_id(tmp_path: Path) -> None:
    # what an agent copies from an import, a traceback's module, or pytest's output
    q = queries(
        tmp_path,
        {
            "src/shop/__init__.py": "",
            "src/shop/core.py": "class Engine:\n    def fire(self):\n        pass\n",
            "src/shop/more.py": "class Engine:\n    def fire(self):\n        pass\n",
            "tests/test_core.py": "def test_run():\n    pass\n\n\n"
            "class TestEngine:\n    def test_fire(self):\n        pass\n",
        },
    )
    named = {
        "shop.core.Engine.fire": "src/shop/core.py:Engine.fire",
        "core.Engine": "src/shop/core.py:Engine",
        "shop.core": "src/shop/core.py",
        "shop": "src/shop/__init__.py",
        "tests/test_core.py::test_run": "tests/test_core.py:test_run",
        "tests/test_core.py::TestEngine::test_fire": "tests/test_core.py:TestEngine.test_fire",
        "tests/test_core.py::TestEngine::test_fire[1-x]": "tests/test_core.py:TestEngine.test_fire",
    }
    for symbol, ident in named.items():
        assert q.resolve(symbol).id == ident, symbol
    with pytest.raises(QueryError) as ambiguous:  # never a guess: both files define it
        q.resolve("Engine.fire")
    assert ambiguous.value.data["candidates"] == [
        "src/shop/core.py:Engine.fire",
        "src/shop/more.py:Engine.fire",
    ]


def test_a_signature_ends_at_the_colon_that_ends_the_header(tmp_path: Path) -> None:
    # a `#` in a string, a comment after the colon or between the parameters, and a body on
    # the header's line: the header ran on into the body and the next definitions
    q = queries(
        tmp_path,
        {
            "m.py": 'def f(a="#", b=1):\n    x = 1\n    return x\n\n\n'
            'def g(sep: str = "#") -> str:  # a comment: here\n    return sep\n\n\n'
            "class C(dict):  # type: ignore\n    pass\n\n\n"
            "def h(\n    a,  # first: one\n    b: int = 2,\n):\n    pass\n\n\n"
            'def k(d={"a": 1}): return d\n\n\n'
            "class D:\n    async def run(self, *, n: 'int' = 1) -> None:\n        pass\n",
        },
    )
    signatures = {d["name"]: d.get("signature") for d in q.outline("m.py")["definitions"]}
    assert signatures == {
        "m.py": None,
        "f": 'def f(a="#", b=1)',
        "g": 'def g(sep: str = "#") -> str',
        "C": "class C(dict)",
        "h": "def h(a, b: int = 2,)",
        "k": 'def k(d={"a": 1})',
        "D": "class D",
        "D.run": "async def run(self, *, n: 'int' = 1) -> None",
    }


def test_hierarchy_lists_the_repository_s_own_subclasses_before_its_tests(
    tmp_path: Path,
) -> None:
    # DRF: 95 test views subclass APIView directly, so the 100 subclasses listed were
    # those and ListAPIView, ModelViewSet (distance 2 and more) were cut
    tests = "from app.views import View\n" + "".join(
        f"\n\nclass Test{i}(View):\n    def get(self):\n        pass\n" for i in range(120)
    )
    q = queries(
        tmp_path,
        {
            "app/__init__.py": "",
            "app/views.py": "class View:\n    def get(self):\n        pass\n",
            "app/generic.py": "from app.views import View\n\n\nclass Generic(View):\n    pass\n\n\n"
            "class ListView(Generic):\n    def get(self):\n        pass\n",
            "tests/test_views.py": tests,
        },
    )
    answer = q.hierarchy("app/views.py:View")
    assert answer["subclasses_total"] == 122 and answer["omitted"] == 22
    head = [(s["id"], s["distance"], s.get("test", False)) for s in answer["subclasses"][:3]]
    assert head == [
        ("app/generic.py:Generic", 1, False),
        ("app/generic.py:ListView", 2, False),
        ("tests/test_views.py:Test0", 1, True),
    ]
    overrides = q.hierarchy("app/views.py:View.get")
    assert overrides["overrides_total"] == 121
    assert ids(overrides["overrides"])[:2] == [
        "app/generic.py:ListView.get",
        "tests/test_views.py:Test0.get",
    ]
    assert overrides["overrides"][1]["test"] is True


def test_a_method_named_through_a_subclass_is_the_one_its_mro_finds(tmp_path: Path) -> None:
    # Flask.route is Scaffold.route, as Python finds it; 'no definition matches' sent the
    # agent guessing among the nearest names
    q = queries(
        tmp_path,
        {
            "web/scaffold.py": "class Scaffold:\n    def route(self):\n        pass\n\n\n"
            "    def run(self):\n        pass\n",
            "web/app.py": "from web.scaffold import Scaffold\n\n\nclass App(Scaffold):\n"
            "    def run(self):\n        pass\n\n\nclass Flask(App):\n    pass\n",
        },
    )
    assert q.resolve("Flask.route").id == "web/scaffold.py:Scaffold.route"
    assert q.resolve("web.app.Flask.route").id == "web/scaffold.py:Scaffold.route"
    assert q.resolve("web/app.py:Flask.run").id == "web/app.py:App.run"  # nearest first
    assert q.callers("Flask.route")["symbol"] == "web/scaffold.py:Scaffold.route"
    with pytest.raises(QueryError, match=r"no definition matches 'Flask\.missing'"):
        q.resolve("Flask.missing")


def test_the_tests_that_read_a_constant_are_its_related_tests(tmp_path: Path) -> None:
    # fixtures/example: test_service_run_records_timing reads plugins.TIMINGS; impact
    # listed it among the tests, related_tests said no tests reach TIMINGS
    root = tmp_path / "example"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".anchor-ls", "__pycache__"))
    index = Index(root, use_cache=False)
    index.build()
    q = Queries(index)
    reader = "tests/test_service.py:test_service_run_records_timing"
    assert ids(q.impact("pkg/plugins.py:TIMINGS")["tests"]) == [reader]
    assert ids(q.related_tests("pkg/plugins.py:TIMINGS")["tests"]) == [reader]
    timings = [d for d in q.outline("pkg/plugins.py")["definitions"] if d["name"] == "TIMINGS"]
    assert timings[0]["tests"] == 1


def test_the_callers_of_a_constant_are_the_code_that_reads_it(tmp_path: Path) -> None:
    # "no callers of pkg/config.py:MAX_ITEMS", while checkout reads it twice
    root = tmp_path / "example"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".anchor-ls", "__pycache__"))
    index = Index(root, use_cache=False)
    index.build()
    q = Queries(index)
    (level,) = q.callers("pkg/config.py:MAX_ITEMS")["levels"]
    (item,) = level["items"]
    assert (item["id"], item["relation"]) == ("pkg/service.py:checkout", "read")
    assert [(s["line"], s["text"]) for s in item["sites"]] == [
        (18, "if len(skus) > MAX_ITEMS:"),
        (19, 'raise OrderError(f"at most {MAX_ITEMS} items per order")'),
    ]
    deeper = q.callers("pkg/config.py:TIMEOUT", depth=2)["levels"]
    assert ids(deeper[0]["items"]) == ["pkg/repo.py:SqlRepo.__init__"]
    assert deeper[1]["items"][0]["relation"] == "call"  # who calls the reader


def test_find_symbol_matches_a_module_by_its_import_name(tmp_path: Path) -> None:
    # rich: `find console` listed rich/console.py after 224 substring matches' first 8
    q = queries(
        tmp_path,
        {
            "lib/__init__.py": "",
            "lib/console.py": "class Console:\n    pass\n",
            "lib/_win32_console.py": "def console_mode():\n    pass\n",
            "lib/progress.py": "class Progress:\n    def console(self):\n        pass\n",
        },
    )
    found = q.find_symbol("console")["matches"]
    assert [(m["id"], m["match"]) for m in found[:3]] == [
        ("lib/console.py", "exact"),
        ("lib/progress.py:Progress.console", "exact"),
        ("lib/_win32_console.py", "substring"),
    ]
    assert q.find_symbol("lib")["matches"][0] == {
        "id": "lib/__init__.py",
        "kind": "module",
        "path": "lib/__init__.py",
        "line": 1,
        "match": "exact",
        "signature": "module lib/__init__.py",
    }


def test_the_tags_of_a_library_definition_are_none(tmp_path: Path) -> None:
    # tag writes nothing into the libraries; the tool gave a block for ext:functools.wraps
    q = queries(
        tmp_path,
        {"a.py": "import functools\n\n\ndef deco(fn):\n    return functools.wraps(fn)(fn)\n"},
    )
    answer = q.tags("ext:functools.wraps")
    assert answer["text"] == ""
    assert answer["note"] == "outside the repository: tag writes no block there"


def test_find_symbol_orders_ties_production_first_then_shorter_names_then_path(
    tmp_path: Path,
) -> None:
    # ties of one match kind were ordered by id: tests/, examples/ and a nested class's
    # method came before the library's own `save` whenever their path sorted first
    save = "def save():\n    pass\n"
    q = queries(
        tmp_path,
        {
            "examples/__init__.py": "",
            "examples/app.py": save,
            "a_tests/__init__.py": "",
            "a_tests/test_store.py": save,
            "lib/__init__.py": "",
            "lib/deep/__init__.py": "",
            "lib/deep/store.py": save,
            "lib/store.py": "class Store:\n    def save(self):\n        pass\n\n"
            "    class Inner:\n        def save(self):\n            pass\n",
            "lib/z.py": save + '\n\nif __name__ == "__main__":\n    class Demo:\n'
            "        def save(self):\n            pass\n",
            "lib/models.py": "class Model:\n    def save(self):\n        pass\n",
        },
    )
    found = q.find_symbol("save")
    assert [(m["id"], m["match"]) for m in found["matches"]] == [
        ("lib/z.py:save", "exact"),  # production; the shortest qualified name; path
        ("lib/deep/store.py:save", "exact"),
        ("lib/models.py:Model.save", "exact"),
        ("lib/store.py:Store.save", "exact"),
        ("lib/store.py:Store.Inner.save", "exact"),
        ("examples/app.py:save", "exact"),  # demo code
        ("lib/z.py:Demo.save", "exact"),  # in a __main__ block: demo code too
        ("a_tests/test_store.py:save", "exact"),  # tests last
    ]
    marks = {m["id"]: (m.get("demo", False), m.get("test", False)) for m in found["matches"]}
    assert marks["examples/app.py:save"] == (True, False)
    assert marks["a_tests/test_store.py:save"] == (False, True)
    assert marks["lib/z.py:save"] == (False, False)
    capped = q.find_symbol("save", limit=3)
    assert [m["id"] for m in capped["matches"]] == [m["id"] for m in found["matches"][:3]]
