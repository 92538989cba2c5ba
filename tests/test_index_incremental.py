"""Incremental updates: one file changes, the graph follows, and it equals a fresh build.

Each edit is written to disk too, so a from-scratch build of the same tree is the referee.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from anchor_ls.index import CALLS, IMPORTS, INHERITS, Index
from anchor_ls.index.bind.rounds import MAX_ROUNDS
from anchor_ls.index.state import FileFacts, Function

EXAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "example"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".anchor-ls", "__pycache__"))
    return root


@pytest.fixture
def index(repo: Path) -> Index:
    idx = Index(repo, use_cache=False)
    idx.build()
    return idx


def fresh_json(root: Path) -> dict:
    idx = Index(root, use_cache=False)
    idx.build()
    return idx.graph.to_json()


def edit(index: Index, rel: str, change: Callable[[str], str]) -> set[str]:
    """Apply `change` to a file on disk and give the new text to the index from memory."""
    path = index.root / rel
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    new = change(old)
    assert new != old, f"edit of {rel} changed nothing"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(new, encoding="utf-8")
    return index.update_file(rel, new)


def touching(index: Index, rel: str) -> list[tuple[str, str, str]]:
    """Every edge with an end in file rel."""
    prefix = (rel, rel + ":")
    return [
        (e.kind, e.src, e.dst)
        for e in index.graph.edges()
        if e.src == rel
        or e.dst == rel
        or e.src.startswith(prefix[1])
        or e.dst.startswith(prefix[1])
    ]


def test_renaming_a_function_drops_the_old_id_everywhere(index: Index) -> None:
    old_id, new_id = "pkg/pricing.py:price_of", "pkg/pricing.py:cost_of"
    assert old_id in index.graph.out(CALLS, "pkg/service.py:checkout")
    changed = edit(index, "pkg/pricing.py", lambda s: s.replace("def price_of(", "def cost_of("))
    assert "pkg/service.py" in changed  # its CALLS lost price_of
    assert index.graph.entity(old_id) is None
    assert index.graph.entity(new_id) is not None
    assert old_id not in index.graph.out(CALLS, "pkg/service.py:checkout")
    assert not [e for e in index.graph.edges() if old_id in (e.src, e.dst)]
    assert index.graph.sites("pkg/service.py:checkout", old_id) == []

    changed = edit(index, "pkg/service.py", lambda s: s.replace("price_of", "cost_of"))
    assert "pkg/pricing.py" in changed  # its CALLED_BY gained checkout
    assert index.graph.into(CALLS, new_id) == ["pkg/service.py:checkout"]
    assert index.graph.to_json() == fresh_json(index.root)


def test_adding_a_call_adds_the_edge_and_names_the_callee_file(index: Index) -> None:
    caller, callee = "pkg/cli.py:main", "pkg/config.py:env_flag"
    assert callee not in index.graph.out(CALLS, caller)
    changed = edit(
        index,
        "pkg/cli.py",
        lambda s: s.replace(
            "    if args.timings:", "    config.env_flag('X')\n    if args.timings:"
        ),
    )
    assert {"pkg/cli.py", "pkg/config.py"} <= changed
    assert callee in index.graph.out(CALLS, caller)
    assert caller in index.graph.into(CALLS, callee)
    line = index.graph.sites(caller, callee)[0][0]
    source = (index.root / "pkg/cli.py").read_text(encoding="utf-8").splitlines()
    assert "env_flag" in source[line]
    assert index.graph.to_json() == fresh_json(index.root)


def test_removing_a_file_drops_its_entities_and_edges(index: Index) -> None:
    callers = {src for e in touching(index, "pkg/repo.py") for src in [e[1]]}
    assert callers
    changed = index.remove_file("pkg/repo.py")
    (index.root / "pkg/repo.py").unlink()
    assert "pkg/repo.py" not in index.graph.files()
    assert not [e for e in index.graph.entities if e.startswith("pkg/repo.py")]
    assert touching(index, "pkg/repo.py") == []
    assert {"pkg/repo.py", "pkg/service.py", "pkg/cli.py", "tests/test_service.py"} <= changed
    assert index.source("pkg/repo.py") is None
    assert index.graph.to_json() == fresh_json(index.root)


def test_reload_file_reads_the_change_from_disk(index: Index) -> None:
    path = index.root / "pkg/models.py"
    path.write_text(
        path.read_text(encoding="utf-8").replace(
            "    def is_empty(self) -> bool:\n        return not self.items\n",
            "    def is_empty(self) -> bool:\n        return self.total() == 0\n",
        ),
        encoding="utf-8",
    )
    assert "pkg/models.py:Order.total" not in index.graph.out(CALLS, "pkg/models.py:Order.is_empty")
    changed = index.reload_file("pkg/models.py")
    assert "pkg/models.py" in changed
    assert "pkg/models.py:Order.total" in index.graph.out(CALLS, "pkg/models.py:Order.is_empty")
    assert index.source("pkg/models.py") == path.read_bytes()
    assert index.graph.to_json() == fresh_json(index.root)


def test_files_reloaded_from_where_a_build_does_not_look_stay_out(tmp_path: Path) -> None:
    """A file an editor opens or a watcher names is indexed only where the build's walk
    would list it: not in a virtual environment, a skipped or an excluded folder."""
    root = tmp_path / "repo"
    caller = "from pkg.pricing import price_of\n\ndef outside(s):\n    return price_of(s)\n"
    files = {
        ".venv/pyvenv.cfg": "",
        "env/pyvenv.cfg": "",
        "pkg/pricing.py": "def price_of(s):\n    return s\n",
        "pkg/sub/use.py": caller,
        "node_modules/x/y.py": caller,
        ".venv/lib/z.py": caller,
        "env/lib/z.py": caller,
        "build/lib/pkg/pricing.py": caller,
        "docs/conf.py": caller,
        "pkg/notes.txt": caller,
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    index = Index(root, use_cache=False, exclude=["build", "docs/*"])
    index.build()
    built = index.graph.to_json()
    assert sorted(index.graph.files()) == ["pkg/pricing.py", "pkg/sub/use.py"]
    for rel in files:
        assert index.is_indexable(rel) == (rel in index.graph.files()), rel
        index.reload_file(rel)
    assert index.graph.to_json() == built


ACCURACY = EXAMPLE.parent / "accuracy"


@pytest.mark.parametrize(
    ("case", "rel", "name"),
    [
        # main.py: from no_all import *; no_all.py: from base import * (no package)
        ("import_star", "base.py", "basefn"),
        # main.py: from compat import parse; compat.py: from _pure import parse
        ("try_except_import", "_pure.py", "parse"),
    ],
)
def test_a_definition_reached_through_a_module_that_re_exports_it(
    tmp_path: Path, case: str, rel: str, name: str
) -> None:
    """A module that is no package's __init__.py passes names on too (a star import, a
    compat module's from-import): a def added behind it, or its file deleted and
    restored (a stash, a branch switch), reaches the importers of that module: main's call
    stayed unresolved where a fresh build links it."""
    root = tmp_path / case
    shutil.copytree(ACCURACY / case, root)
    text = (root / rel).read_text(encoding="utf-8")
    index = Index(root, use_cache=False)
    index.build()
    built = index.graph.to_json()
    assert any(e["dst"] == f"{rel}:{name}" and e["src"] == "main.py:main" for e in built["edges"])

    index.remove_file(rel)
    assert index.reload_file(rel)
    assert index.graph.to_json() == built

    index.update_file(rel, text.replace(f"def {name}(", f"def {name}_old("))
    index.update_file(rel, text)
    assert index.graph.to_json() == built


def test_lines_and_call_sites_move_with_inserted_lines(index: Index) -> None:
    caller, callee = "pkg/service.py:checkout", "pkg/pricing.py:price_of"
    before_line = index.graph.entity(caller).line
    before_site = index.graph.sites(caller, callee)
    edit(index, "pkg/service.py", lambda s: s.replace('"""\n', '"""\n\n\n\n', 1))
    assert index.graph.entity(caller).line == before_line + 3
    assert index.graph.sites(caller, callee) == [(a + 3, b, c + 3, d) for a, b, c, d in before_site]


def test_a_file_that_breaks_and_recovers(index: Index) -> None:
    rel = "pkg/pricing.py"
    original = (index.root / rel).read_text(encoding="utf-8")
    broken = original.replace("def no_discount(total: float) -> float:", "def no_discount(total:")
    changed = edit(index, rel, lambda s: broken)
    assert index.problems[rel].kind == "syntax"
    assert rel in changed
    # Only the broken definition is lost; its neighbours and their callers stay.
    assert "pkg/pricing.py:price_of" in index.graph.out(CALLS, "pkg/service.py:checkout")
    assert index.graph.entity("pkg/pricing.py:bulk_discount") is not None

    edit(index, rel, lambda s: original)
    assert rel not in index.problems
    assert index.graph.to_json() == fresh_json(index.root)


def test_a_file_turned_binary_is_dropped_and_reported(index: Index) -> None:
    rel = "pkg/plugins.py"
    changed = index.update_file(rel, b"\x89PNG\r\n\x1a\n\x00\x00")
    assert index.problems[rel].kind == "binary"
    assert rel not in index.graph.files()
    assert "pkg/service.py" in changed  # CheckoutService.run was decorated with plugins.timed
    assert index.stats().problems == {"binary": 1}
    index.update_file(rel, (EXAMPLE / rel).read_text(encoding="utf-8"))
    assert index.problems == {}
    assert index.graph.to_json() == fresh_json(index.root)


def test_an_editor_buffer_nested_too_deep_is_a_problem_and_read_around_the_nesting(
    index: Index,
) -> None:
    rel = "pkg/pricing.py"
    deep = "x = " + "(" * 10000 + "1" + ")" * 10000 + "\n\n\ndef kept():\n    return len(x)\n"
    changed = index.update_file(rel, deep)
    assert index.problems[rel].kind == "too-deep"
    assert "line 1" in index.problems[rel].message
    assert rel in changed and rel in index.graph.files()
    assert "pkg/pricing.py:kept" in index.graph.entities
    assert "pkg/service.py:checkout" in index.graph.entities
    index.update_file(rel, (EXAMPLE / rel).read_text(encoding="utf-8"))
    assert index.problems == {}
    assert index.graph.to_json() == fresh_json(index.root)


def test_an_editor_buffer_of_a_latin1_file_keeps_its_names(index: Index) -> None:
    """Buffers arrive as text; the file's coding cookie says how its bytes were written."""
    text = (
        "# -*- coding: latin-1 -*-\n"
        "from .pricing import price_of\n\n\n"
        "def pr\u00e9f\u00e9r\u00e9():\n"
        "    return price_of('apple')\n"
    )
    path = index.root / "pkg/latin.py"
    path.write_bytes(text.encode("latin-1"))
    index.reload_file("pkg/latin.py")
    on_disk = index.graph.to_json()
    assert "pkg/latin.py:pr\u00e9f\u00e9r\u00e9" in index.graph.entities
    index.update_file("pkg/latin.py", text)
    assert index.graph.to_json() == on_disk
    assert index.source("pkg/latin.py") == path.read_bytes()
    assert index.problems == {}


def test_a_new_file_that_was_imported_before_it_existed(index: Index) -> None:
    edit(
        index,
        "pkg/cli.py",
        lambda s: s.replace(
            "from .repo import SqlRepo\n", "from .repo import SqlRepo\nfrom .audit import note\n"
        ).replace("    return 0\n\n\nif", "    note(order)\n    return 0\n\n\nif"),
    )
    assert "pkg/cli.py" in index.graph.files()
    changed = edit(index, "pkg/audit.py", lambda s: "def note(order):\n    return order\n")
    assert {"pkg/audit.py", "pkg/cli.py"} <= changed
    assert "pkg/audit.py:note" in index.graph.out(CALLS, "pkg/cli.py:main")
    assert "pkg/audit.py" in index.graph.out(IMPORTS, "pkg/cli.py")
    assert index.graph.to_json() == fresh_json(index.root)


def test_a_sequence_of_updates_equals_a_fresh_build(index: Index) -> None:
    steps: list[tuple[str, Callable[[str], str]]] = [
        (
            "pkg/models.py",
            lambda s: s.replace("class OrderError(Exception):", "class OrderError(KeyError):"),
        ),
        ("pkg/repo.py", lambda s: s.replace("class SqlRepo(Repo):", "class SqlRepo:")),
        ("pkg/pricing.py", lambda s: s.replace("no_discount", "flat")),
        ("pkg/service.py", lambda s: s.replace("no_discount", "flat")),
        ("tests/test_service.py", lambda s: s.replace("no_discount", "flat")),
        (
            "pkg/extra.py",
            lambda s: (
                "from .service import checkout\n\n\n"
                "def again(r):\n    return checkout([], r, None)\n"
            ),
        ),
        ("pkg/__init__.py", lambda s: s + "from .extra import again\n"),
        ("pkg/repo.py", lambda s: s.replace("class SqlRepo:", "class SqlRepo(Repo):")),
        (
            "pkg/plugins.py",
            lambda s: s.replace("def record(", "def record_time(").replace(
                "record(func", "record_time(func"
            ),
        ),
        ("pkg/config.py", lambda s: s + "\ndef broken(:\n"),
        ("pkg/models.py", lambda s: s.replace("\n", "\r\n")),
    ]
    for rel, change in steps:
        edit(index, rel, change)
    index.remove_file("pkg/cli.py")
    (index.root / "pkg/cli.py").unlink()
    assert index.graph.to_json() == fresh_json(index.root)
    assert ("pkg/repo.py:SqlRepo", "pkg/repo.py:Repo") in {
        (e.src, e.dst) for e in index.graph.edges(INHERITS)
    }
    assert index.graph.into(CALLS, "pkg/extra.py:again") == []
    assert "pkg/service.py:checkout" in index.graph.out(CALLS, "pkg/extra.py:again")


def test_a_file_removed_and_restored_behind_a_package_reexport(index: Index) -> None:
    """tests/ imports `checkout` from `pkg`, which re-exports it from pkg/service.py."""
    test_fn = "tests/test_service.py:test_checkout_saves_and_charges"
    assert "pkg/service.py:checkout" in index.graph.out(CALLS, test_fn)
    text = (index.root / "pkg/service.py").read_text(encoding="utf-8")
    index.remove_file("pkg/service.py")
    assert "pkg/service.py:checkout" not in index.graph.out(CALLS, test_fn)
    changed = index.update_file("pkg/service.py", text)
    assert "tests/test_service.py" in changed
    assert "pkg/service.py:checkout" in index.graph.out(CALLS, test_fn)
    assert index.graph.to_json() == fresh_json(index.root)


def test_a_package_init_restored_is_what_relative_imports_name_again(index: Index) -> None:
    """With pkg/config.py gone, `from . import config` in pkg/cli.py names the package."""
    for rel in ("pkg/config.py", "pkg/__init__.py"):
        text = (index.root / rel).read_text(encoding="utf-8")
        (index.root / rel).unlink()
        index.remove_file(rel)
    assert "pkg/__init__.py" not in index.graph.out(IMPORTS, "pkg/cli.py")
    changed = edit(index, "pkg/__init__.py", lambda s: text)
    assert "pkg/cli.py" in changed
    assert "pkg/__init__.py" in index.graph.out(IMPORTS, "pkg/cli.py")
    assert index.graph.to_json() == fresh_json(index.root)


def flow_repo(root: Path, a_text: str) -> Index:
    (root / "a.py").write_text(a_text, encoding="utf-8")
    (root / "b.py").write_text("from a import A, f\n\n\ndef go():\n    f(A())\n", encoding="utf-8")
    idx = Index(root, use_cache=False)
    idx.build()
    return idx


def stop_passing_a(idx: Index) -> None:
    text = "from a import A, f\n\n\ndef go():\n    f(None)\n"
    (idx.root / "b.py").write_text(text, encoding="utf-8")
    idx.update_file("b.py", text)


CHAIN = (
    "class A:\n    def m(self):\n        pass\n\n\n"
    "def f(p):\n    return relay(p)\n\n\n"
    "def relay(y):\n    return y.m()\n"
)
CYCLE = (
    "class A:\n    def m(self):\n        pass\n\n\n"
    "def f(p):\n    g(p)\n    return p.m()\n\n\n"
    "def g(q):\n    return f(q)\n"
)


def test_an_argument_no_longer_passed_is_forgotten_along_a_chain(tmp_path: Path) -> None:
    """b passes an A to f, f passes it on to relay, relay calls .m(): two hops of flow."""
    idx = flow_repo(tmp_path, CHAIN)
    assert idx.graph.out(CALLS, "a.py:relay") == ["a.py:A.m"]
    stop_passing_a(idx)
    assert idx.graph.out(CALLS, "a.py:relay") == []
    assert idx.graph.to_json() == fresh_json(tmp_path)


def test_an_argument_no_longer_passed_is_forgotten_around_a_cycle(tmp_path: Path) -> None:
    idx = flow_repo(tmp_path, CYCLE)
    assert "a.py:A.m" in idx.graph.out(CALLS, "a.py:f")
    stop_passing_a(idx)
    assert idx.graph.to_json() == fresh_json(tmp_path)


@pytest.mark.parametrize("use_cache", [False, True], ids=["no-cache", "cache"])
def test_building_the_same_index_again_after_files_changed(
    repo: Path, tmp_path: Path, use_cache: bool
) -> None:
    idx = Index(repo, use_cache=use_cache, cache_dir=tmp_path / "cache")
    idx.build()
    (repo / "pkg/repo.py").unlink()
    pricing = repo / "pkg/pricing.py"
    pricing.write_text(
        pricing.read_text(encoding="utf-8").replace("no_discount", "flat"), encoding="utf-8"
    )
    stats = idx.build()
    idx.close()
    assert idx.graph.to_json() == fresh_json(repo)
    assert stats.files == 8
    fresh = Index(repo, use_cache=False)
    assert stats.call_sites == fresh.build().call_sites


def test_interface_edits_reach_exactly_the_files_that_name_them(tmp_path: Path) -> None:
    """Definitions added, inserted before others, or removed: the files that name them
    resolve again, and every fact naming a moved definition (a call, a callback passed
    from another file) follows it to its new place; the graph is a fresh build's."""
    root = tmp_path / "r"
    root.mkdir()
    f, h, z = ("def f():\n    pass\n", "\ndef h():\n    pass\n", "def z():\n    pass\n\n")
    run = "\ndef run(cb):\n    cb()\n"
    (root / "a.py").write_text(f + run, encoding="utf-8")
    (root / "b.py").write_text("import a\n\ndef g():\n    a.h()\n", encoding="utf-8")
    (root / "c.py").write_text("from a import f\n\ndef k():\n    f()\n", encoding="utf-8")
    (root / "d.py").write_text("from a import f, run\n\nrun(f)\n", encoding="utf-8")
    index = Index(root, use_cache=False)
    index.build()
    steps = [
        (f + h + run, ("b.py:g", "a.py:h"), True),  # added at the end
        (z + f + h + run, ("c.py:k", "a.py:f"), True),  # inserted first: the others move
        (z + f + run, ("b.py:g", "a.py:h"), False),  # removed between others
        (f + run, ("a.py:run", "a.py:f"), True),  # removed first: the callback moves back
    ]
    for text, (src, dst), linked in steps:
        index.update_file("a.py", text)
        assert (dst in index.graph.out(CALLS, src)) is linked, text
        assert "a.py:f" in index.graph.out(CALLS, "a.py:run"), "the callback d.py passes"
        (root / "a.py").write_text(text, encoding="utf-8")
        assert index.graph.to_json() == fresh_json(root), text


def test_a_file_edited_to_name_what_is_not_yet_defined_links_once_it_is(tmp_path: Path) -> None:
    """An edit leaves its file's words sketch to be made when another file's edit needs
    it: the file still counts as naming what its new text names."""
    root = tmp_path / "r"
    root.mkdir()
    (root / "a.py").write_text("def f():\n    pass\n", encoding="utf-8")
    (root / "b.py").write_text("import a\n\n\ndef g():\n    a.f()\n", encoding="utf-8")
    index = Index(root, use_cache=False)
    index.build()
    index.prepare_edits("b.py")
    b_text = "import a\n\n\ndef g():\n    a.f()\n    a.h()\n"
    index.update_file("b.py", b_text)
    assert not index.binder.summaries["b.py"].words  # left to be made
    a_text = "def f():\n    pass\n\n\ndef h():\n    pass\n"
    index.update_file("a.py", a_text)
    assert "a.py:h" in index.graph.out(CALLS, "b.py:g")
    (root / "a.py").write_text(a_text, encoding="utf-8")
    (root / "b.py").write_text(b_text, encoding="utf-8")
    assert index.graph.to_json() == fresh_json(root)


def test_a_class_back_in_place_links_calls_through_a_value_another_module_types(
    tmp_path: Path,
) -> None:
    """helpers.py calls current_app.make_response(), and current_app is typed by globs.py
    with app.py's class: no import or edge leads from app.py to helpers.py once the
    class was gone, yet a fresh build links the call when it is back (Flask's own
    current_app; found emptying and restoring app.py)."""
    root = tmp_path / "r"
    root.mkdir()
    app = "class Flask:\n    def make_response(self):\n        return 1\n"
    (root / "app.py").write_text(app, encoding="utf-8")
    (root / "globs.py").write_text("from app import Flask\n\ncurrent_app: Flask = None\n", "utf-8")
    (root / "helpers.py").write_text(
        "from globs import current_app\n\n\ndef make_response():\n"
        "    return current_app.make_response()\n",
        encoding="utf-8",
    )
    index = Index(root, use_cache=False)
    index.build()
    call = "app.py:Flask.make_response"
    assert call in index.graph.out(CALLS, "helpers.py:make_response")
    index.update_file("app.py", "")
    assert call not in index.graph.out(CALLS, "helpers.py:make_response")
    index.update_file("app.py", app)
    assert call in index.graph.out(CALLS, "helpers.py:make_response")
    assert index.graph.to_json() == fresh_json(root)


def test_a_class_attribute_changed_reaches_the_importers_of_its_class(tmp_path: Path) -> None:
    """`Foo.x = B()` where it was `A()`: use.py imports Foo, not x, and reads Foo.x: it
    is resolved again, as every importer of a name whose class changed inside."""
    root = tmp_path / "r"
    root.mkdir()
    go = "    def go(self):\n        pass\n"
    (root / "other.py").write_text(f"class A:\n{go}\n\nclass B:\n{go}", encoding="utf-8")
    (root / "lib.py").write_text("from other import A, B\n\n\nclass Foo:\n    x = A()\n", "utf-8")
    (root / "use.py").write_text("from lib import Foo\n\n\ndef run():\n    Foo.x.go()\n", "utf-8")
    index = Index(root, use_cache=False)
    index.build()
    assert index.graph.out(CALLS, "use.py:run") == ["other.py:A.go"]
    new = "from other import A, B\n\n\nclass Foo:\n    x = B()\n"
    index.update_file("lib.py", new)
    (root / "lib.py").write_text(new, encoding="utf-8")
    assert index.graph.out(CALLS, "use.py:run") == ["other.py:B.go"]
    assert index.graph.to_json() == fresh_json(root)


def test_an_inserted_definition_resolves_again_only_the_files_that_name_it(
    tmp_path: Path,
) -> None:
    root = tmp_path / "r"
    root.mkdir()
    a = "def f():\n    pass\n\n\ndef g():\n    pass\n"
    (root / "a.py").write_text(a, encoding="utf-8")
    (root / "b.py").write_text("import a\n\n\ndef use():\n    a.g()\n", encoding="utf-8")
    (root / "c.py").write_text("import a\n\n\ndef use():\n    a.H()\n", encoding="utf-8")
    index = Index(root, use_cache=False)
    index.build()
    index.prepare_edits("a.py")
    resolved: list[str] = []
    original = index.binder.resolve_file
    index.binder.resolve_file = lambda path, *rest: resolved.append(path) or original(path, *rest)  # type: ignore[method-assign]
    index.update_file("a.py", a.replace("\n\ndef g", "\n\nclass H:\n    pass\n\n\ndef g"))
    assert sorted(set(resolved)) == ["a.py", "c.py"]
    assert "a.py:H" in index.graph.out(CALLS, "c.py:use")
    assert "a.py:g" in index.graph.out(CALLS, "b.py:use")


def test_a_new_definition_reaches_star_importers_of_what_holds_it_only(tmp_path: Path) -> None:
    """`import *` brings a new name only from a module that holds it: pkg/a.py, and the
    package re-exporting it with `*`. A file importing `*` from elsewhere (os, a helper)
    cannot see it and is not resolved again (on the stdlib, 54 ctypes tests were, for a
    def appended to unittest/case.py: 2.3 s)."""
    root = tmp_path / "r"
    (root / "pkg").mkdir(parents=True)
    a = "def f():\n    pass\n"
    (root / "pkg" / "__init__.py").write_text("from .a import *\n", encoding="utf-8")
    (root / "pkg" / "a.py").write_text(a, encoding="utf-8")
    (root / "helpers.py").write_text("def h():\n    pass\n", encoding="utf-8")
    user = "from pkg import *\n\n\ndef use():\n    f()\n    g()\n"
    (root / "user.py").write_text(user, encoding="utf-8")
    other = "import pkg.a\nfrom os import *\nfrom helpers import *\n\n\ndef use():\n    pkg.a.f()\n"
    (root / "other.py").write_text(other, encoding="utf-8")
    index = Index(root, use_cache=False)
    index.build()
    assert index.graph.out(CALLS, "user.py:use") == ["pkg/a.py:f"]
    index.prepare_edits("pkg/a.py")
    resolved: list[str] = []
    original = index.binder.resolve_file
    index.binder.resolve_file = lambda path, *rest: resolved.append(path) or original(path, *rest)  # type: ignore[method-assign]
    index.update_file("pkg/a.py", a + "\n\ndef g():\n    pass\n")
    assert sorted(set(resolved)) == ["pkg/__init__.py", "pkg/a.py", "user.py"]
    assert index.graph.out(CALLS, "user.py:use") == ["pkg/a.py:f", "pkg/a.py:g"]
    assert index.graph.out(CALLS, "other.py:use") == ["pkg/a.py:f"]


def test_swapping_two_definitions_of_one_name_reaches_their_callers(tmp_path: Path) -> None:
    """Which of two `def f` a name means is part of the interface, though the set of
    definitions stays the same."""

    def runs(index: Index) -> list[str]:
        return [d for d in index.graph.out(CALLS, "b.py:use") if d.endswith(".run")]

    root = tmp_path / "r"
    root.mkdir()
    run = "    def run(self):\n        pass\n"
    classes = f"class A:\n{run}\n\nclass B:\n{run}"
    first = "\n\ndef f():\n    return A()\n\n\ndef f():\n    return B()\n"
    (root / "a.py").write_text(classes + first, encoding="utf-8")
    (root / "b.py").write_text("from a import f\n\n\ndef use():\n    f().run()\n", encoding="utf-8")
    index = Index(root, use_cache=False)
    index.build()
    assert runs(index) == ["a.py:B.run"]  # the last f
    index.prepare_edits("a.py")
    swapped = classes + first.replace("A()", "X()").replace("B()", "A()").replace("X()", "B()")
    index.update_file("a.py", swapped)
    assert runs(index) == ["a.py:A.run"]
    (root / "a.py").write_text(swapped, encoding="utf-8")
    assert index.graph.to_json() == fresh_json(root)


def test_class_edits_keep_self_dispatch_and_hierarchy_fresh(tmp_path: Path) -> None:
    """A base method calling `self.hook()` reaches the overrides of the subclasses that
    exist now: subclasses gained, lost, moved among other definitions, or whose base
    resolves through a renamed class; after each edit the graph is a fresh build's."""
    root = tmp_path / "r"
    root.mkdir()
    base = (
        "class Base:\n    def run(self):\n        return self.hook()\n\n"
        "    def hook(self):\n        pass\n"
    )
    sub = "from base import Base\n\n\nclass Sub(Base):\n    def hook(self):\n        pass\n"
    (root / "base.py").write_text(base, encoding="utf-8")
    (root / "sub.py").write_text(sub, encoding="utf-8")
    index = Index(root, use_cache=False)
    index.build()
    run = "base.py:Base.run"
    steps = [
        ("sub.py", sub.replace("class Sub(Base)", "class Sub"), False),  # base dropped
        ("sub.py", sub, True),  # and back
        ("sub.py", sub.replace("from base", "def first():\n    pass\n\n\nfrom base"), True),
        ("base.py", "class Other:\n    pass\n\n\n" + base, True),  # Base moves down
        ("base.py", base.replace("class Base", "class Root"), False),  # Base renamed away
        ("base.py", base, True),
        ("sub.py", "", False),  # emptied
        ("more.py", sub.replace("Sub", "More"), True),  # a new file subclasses Base
    ]
    for rel, text, linked in steps:
        (root / rel).write_text(text, encoding="utf-8")
        index.update_file(rel, text)
        hooks = {d for d in index.graph.out(CALLS, run) if d.endswith(".hook")}
        owner = "more.py:More.hook" if rel == "more.py" else "sub.py:Sub.hook"
        assert (owner in hooks) is linked, (rel, text)
        assert index.graph.to_json() == fresh_json(root), (rel, text)


def test_edits_of_self_stores_keep_attribute_calls_fresh(tmp_path: Path) -> None:
    """`self.tool.cut()` reaches what the classes of the MRO store in self.tool: a store
    added in a subclass, removed from a base, or its file emptied, and after each edit the
    graph is a fresh build's (the table of which classes store which name follows)."""
    root = tmp_path / "r"
    root.mkdir()
    tools = "".join(f"class {c}:\n    def cut(self):\n        pass\n\n\n" for c in ("Saw", "Drill"))
    base = (
        "from tools import Saw\n\n\nclass Base:\n    def __init__(self):\n"
        "        self.tool = Saw()\n\n    def work(self):\n        return self.tool.cut()\n"
    )
    sub = (
        "from base import Base\n\n\nclass Sub(Base):\n"
        "    def go(self):\n        return self.tool.cut()\n"
    )
    stores = sub.replace(
        "class Sub(Base):\n",
        "class Sub(Base):\n    def __init__(self):\n        self.tool = Drill()\n\n",
    ).replace("from base import Base", "from base import Base\nfrom tools import Drill")
    for rel, text in (("tools.py", tools), ("base.py", base), ("sub.py", sub)):
        (root / rel).write_text(text, encoding="utf-8")
    index = Index(root, use_cache=False)
    index.build()
    saw, drill = "tools.py:Saw.cut", "tools.py:Drill.cut"
    steps = [
        ("sub.py", stores, {saw}, {saw, drill}),  # Sub stores a Drill too
        ("base.py", base.replace("self.tool = Saw()", "self.other = Saw()"), set(), {drill}),
        ("sub.py", "", set(), None),  # emptied
        ("base.py", base, {saw}, None),
        ("sub.py", stores, {saw}, {saw, drill}),
    ]
    for rel, text, from_base, from_sub in steps:
        (root / rel).write_text(text, encoding="utf-8")
        index.update_file(rel, text)
        assert set(index.graph.out(CALLS, "base.py:Base.work")) == from_base, (rel, text)
        if from_sub is not None:
            assert set(index.graph.out(CALLS, "sub.py:Sub.go")) == from_sub, (rel, text)
        assert index.graph.to_json() == fresh_json(root), (rel, text)


BODIES = """\
import os


def helper():
    return 1


def other():
    return 2


class Runner:
    def __init__(self):
        self.step = helper

    def run(self):
        value = helper()

        def inner():
            return value + other()

        return inner()

    def last(self):
        return self.step()


def tail():
    return other()
"""


def scoped_resolutions(index: Index) -> list[bool]:
    """From now on, for each file the binder resolves: whether only some of its scopes."""
    seen: list[bool] = []
    original = index.binder.resolve_file

    def spy(path, scopes=None, previous=None):  # type: ignore[no-untyped-def]
        seen.append(scopes is not None and previous is not None)
        return original(path, scopes, previous)

    index.binder.resolve_file = spy  # type: ignore[method-assign]
    return seen


def all_sites(index: Index) -> dict[tuple[str, str, str], list]:
    return {
        (e.kind, e.src, e.dst): index.graph.sites(e.src, e.dst, e.kind) for e in index.graph.edges()
    }


def test_edits_inside_bodies_resolve_only_what_they_touch_and_equal_a_fresh_build(
    tmp_path: Path,
) -> None:
    (tmp_path / "mod.py").write_text(BODIES, encoding="utf-8")
    idx = Index(tmp_path, use_cache=False)
    idx.build()
    steps: list[Callable[[str], str]] = [
        # a call added mid-file: later scopes only move down a line
        lambda s: s.replace(
            "        value = helper()\n", "        value = helper()\n        other()\n"
        ),
        # lines inserted above everything in a body, none of its code changed
        lambda s: s.replace("def helper():\n", "def helper():\n    # note\n\n"),
        # a local name the nested function reads now holds something else
        lambda s: s.replace("        value = helper()\n", "        value = other\n"),
        lambda s: s.replace(
            "        def inner():\n", "        def inner():\n            helper()\n"
        ),
        # a new block (its numbering moves the blocks of the scopes below)
        lambda s: s.replace(
            "    return other()\n", "    if os.sep:\n        helper()\n    return other()\n"
        ),
        # an import inside a function: the whole file again
        lambda s: s.replace(
            "    def last(self):\n", "    def last(self):\n        import os.path\n"
        ),
        # module-level code
        lambda s: s + "\ntail()\n",
        # a call removed
        lambda s: s.replace("        other()\n", "", 1),
        # a function added at the end that nothing calls yet: it and the module alone
        lambda s: s + "\n\ndef added():\n    return helper()\n",
        # a call of a name that is not defined yet...
        lambda s: s.replace("def tail():\n", "def tail():\n    later()\n"),
        # ...then defined: what calls it resolves again, the whole file
        lambda s: s + "\n\ndef later():\n    return 3\n",
        # a class added at the end that nothing names yet, then removed again
        lambda s: s + "\n\nclass Extra(Runner):\n    pass\n",
        lambda s: s.replace("\n\nclass Extra(Runner):\n    pass\n", ""),
        # a function removed from the end that other code calls: the whole file again
        lambda s: s.replace("\n\ndef later():\n    return 3\n", ""),
    ]
    seen_partial = scoped_resolutions(idx)
    first_partial = []
    for change in steps:
        seen_partial.clear()
        edit(idx, "mod.py", change)
        first_partial.append(seen_partial[0])
        fresh = Index(tmp_path, use_cache=False)
        fresh.build()
        assert idx.graph.to_json() == fresh.graph.to_json()
        assert all_sites(idx) == all_sites(fresh)
    # the body edits and the unread additions and removal were resolved scope by scope,
    # the import, module and read-definition edits whole
    body = [True, True, True, True, True, False, False, True]
    assert first_partial == [*body, True, True, False, True, True, False]
    assert "mod.py:later" not in idx.graph.out(CALLS, "mod.py:tail")


def test_after_a_warm_start_a_body_edit_also_resolves_only_its_scopes(tmp_path: Path) -> None:
    """The cache keeps the argument values scope by scope, so the first edit after a warm
    start needs no whole-file resolution either."""
    root, cache = tmp_path / "repo", tmp_path / "cache"
    root.mkdir()
    (root / "mod.py").write_text(BODIES, encoding="utf-8")
    Index(root, cache_dir=cache).build()
    warm = Index(root, cache_dir=cache)
    assert warm.build().reparsed == 0
    warm.ensure_engine()
    partial = scoped_resolutions(warm)
    edit(
        warm,
        "mod.py",
        lambda s: s.replace("    return other()\n", "    helper()\n    return other()\n"),
    )
    assert partial[0]
    fresh = Index(root, use_cache=False)
    fresh.build()
    assert warm.graph.to_json() == fresh.graph.to_json()
    assert all_sites(warm) == all_sites(fresh)


REGISTRY = """\
def first():
    return 1


def second():
    return 2


HANDLERS = {}


def register():
    HANDLERS["run"] = first


def dispatch():
    return HANDLERS["run"]()
"""


def test_a_function_filling_a_module_table_refreshes_the_readers_of_the_table(
    tmp_path: Path,
) -> None:
    """register() adds to HANDLERS, which dispatch() reads: changing what it adds is not an
    edit of register() alone."""
    (tmp_path / "reg.py").write_text(REGISTRY, encoding="utf-8")
    idx = Index(tmp_path, use_cache=False)
    idx.build()
    assert idx.graph.out(CALLS, "reg.py:dispatch") == ["reg.py:first"]
    edit(idx, "reg.py", lambda s: s.replace('HANDLERS["run"] = first', 'HANDLERS["run"] = second'))
    assert idx.graph.out(CALLS, "reg.py:dispatch") == ["reg.py:second"]
    fresh = Index(tmp_path, use_cache=False)
    fresh.build()
    assert idx.graph.to_json() == fresh.graph.to_json()


@pytest.mark.parametrize("newline", ["\r", "\r\n"])
def test_body_edits_of_a_file_with_cr_line_ends_equal_a_fresh_build(
    tmp_path: Path, newline: str
) -> None:
    # Python reads a lone CR as a line break: lines must be counted as it counts them
    (tmp_path / "mod.py").write_bytes(BODIES.replace("\n", newline).encode())
    idx = Index(tmp_path, use_cache=False)
    idx.build()
    text = BODIES
    for change in (
        lambda s: s.replace("def helper():\n", "def helper():\n    # note\n\n"),
        lambda s: s.replace(
            "        value = helper()\n", "        value = helper()\n        other()\n"
        ),
    ):
        text = change(text)
        data = text.replace("\n", newline).encode()
        (tmp_path / "mod.py").write_bytes(data)
        idx.update_file("mod.py", data)
        fresh = Index(tmp_path, use_cache=False)
        fresh.build()
        assert all_sites(idx) == all_sites(fresh)


FLOW_FILES = {
    "a.py": (
        "from d import f4\n\n\ndef target():\n    pass\n\n\n"
        "def f1(cb):\n    cb()\n    f2(cb)\n\n\n"
        "def f2(cb):\n    cb()\n    f3(cb)\n\n\n"
        "def f3(cb):\n    cb()\n    f4(cb)\n\n\n"
        "def main():\n    f1(target)\n"
    ),
    "d.py": (
        "from b import f5\nfrom e import helper\n\n\n"
        "def f4(cb):\n    cb()\n    helper()\n    f5(cb)\n    return None\n"
    ),
    "e.py": "def helper(x=None):\n    return x\n",
    "b.py": "from c import f6\n\n\ndef f5(cb):\n    cb()\n    f6(cb)\n",
    "c.py": "def f6(cb):\n    cb()\n    f7(cb)\n\n\ndef f7(cb):\n    cb()\n",
}


def test_an_edit_carries_on_only_what_it_changes_of_the_arguments_its_file_passes(
    tmp_path: Path,
) -> None:
    """A build stops after its rounds with argument facts still growing: main's callback
    reaches f3, which passes it to f4, and d.py is not resolved again. An edit in f4 that
    changes no call must not carry that old growth on to f5, f6 and f7: on Django such a
    first edit resolved 100 files for 3 s, and its undo left 1,228 edges other than the
    build's. Only the edited file itself may see it."""
    for rel, text in FLOW_FILES.items():
        (tmp_path / rel).write_text(text, encoding="utf-8")
    idx = Index(tmp_path, use_cache=False)
    idx.build()
    reached = idx.graph.into(CALLS, "a.py:target")
    assert "a.py:f3" in reached and "d.py:f4" not in reached  # where the build's rounds stop
    others = {rel: idx.graph.file_edges(rel) for rel in ("a.py", "b.py", "c.py")}

    source = FLOW_FILES["d.py"]
    changed = idx.update_file(
        "d.py", source.replace("    return None", "    _x = 1\n    return None")
    )
    changed |= idx.update_file("d.py", source)

    assert changed <= {"d.py", "a.py"}  # a.py: its target may gain a caller in d.py
    assert {rel: idx.graph.file_edges(rel) for rel in others} == others


def test_a_file_resolved_again_for_an_edit_elsewhere_carries_on_only_what_it_changes(
    tmp_path: Path,
) -> None:
    """The same for a file resolved again because an edit changed what it imports: d.py
    calls e.helper, whose signature changes. d.py is resolved in the present argument
    facts, but the growth the build left in f4 must not flow on to b.py and c.py."""
    for rel, text in FLOW_FILES.items():
        (tmp_path / rel).write_text(text, encoding="utf-8")
    idx = Index(tmp_path, use_cache=False)
    idx.build()
    assert "d.py:f4" not in idx.graph.into(CALLS, "a.py:target")
    others = {rel: idx.graph.file_edges(rel) for rel in ("a.py", "b.py", "c.py")}

    source = FLOW_FILES["e.py"]
    idx.update_file("e.py", source.replace("(x=None)", "(x=None, y=None)"))
    idx.update_file("e.py", source)

    assert {rel: idx.graph.file_edges(rel) for rel in others} == others


def test_an_edit_whose_rounds_do_not_settle_resolves_every_file_again(tmp_path: Path) -> None:
    """top passes a function down a chain of modules deeper than the rounds, to one that
    calls it and itself. Passing another function instead retracts the old one from the
    whole chain, and the new one flows back one module per round: the rounds run out
    before it settles (as on Django's expressions.py, 5.1 to 5.1.1), and the facts they
    leave are not a build's (the last module calls the new function, which a build does
    not reach). The index resolves every file again from the summaries it holds then."""
    depth = MAX_ROUNDS + 2
    for k in range(depth):
        calls = f"    f{k + 1}(cb)\n" if k < depth - 1 else f"    cb()\n    f{k}(cb)\n"
        head = f"from m{k + 1} import f{k + 1}\n\n\n" if k < depth - 1 else ""
        (tmp_path / f"m{k}.py").write_text(f"{head}def f{k}(cb):\n{calls}", encoding="utf-8")
    (tmp_path / "top.py").write_text(
        "from m0 import f0\n\n\ndef target():\n    return 1\n\n\ndef other():\n    return 2\n"
        "\n\ndef top():\n    return f0(target)\n",
        encoding="utf-8",
    )
    idx = Index(tmp_path, use_cache=False)
    idx.build()
    before = idx.snapshot()
    held = before.graph.to_json()

    changed = edit(idx, "top.py", lambda s: s.replace("f0(target)", "f0(other)"))

    assert idx.graph.to_json() == fresh_json(tmp_path)
    assert idx.stats().resolved_afresh == 1
    assert idx.snapshot().built != before.built  # readers learn the graph was put anew
    assert changed == {"top.py", *(f"m{k}.py" for k in range(depth))}
    assert before.graph.to_json() == held  # what readers held is as it was

    edit(idx, "top.py", lambda s: s.replace("return 2", "return 3"))  # settles
    assert idx.stats().resolved_afresh == 1


def built(root: Path, files: dict[str, str]) -> Index:
    """A built index of a folder holding files."""
    root.mkdir()
    for rel, text in files.items():
        (root / rel).write_text(text, encoding="utf-8")
    index = Index(root, use_cache=False)
    index.build()
    return index


FILLED_REGISTRY = {
    "kinds.py": "class IntConv:\n    def to_python(self, v):\n        return int(v)\n",
    "conv.py": (
        "REG = {}\n\n\ndef register(c, name):\n    REG[name] = c()\n\n\n"
        "def convert(name, v):\n    return REG[name].to_python(v)\n"
    ),
    "app.py": (
        "from conv import REG, register\nfrom kinds import IntConv\n\n"
        'register(IntConv, "int")\n\n\ndef use():\n    return REG["int"].to_python("1")\n'
    ),
}


def test_readers_of_a_registry_a_function_fills_see_what_its_arguments_put_there(
    tmp_path: Path,
) -> None:
    """`REG[name] = c()` in register: REG holds what register is passed, which a build
    learns a round after it first read REG. The readers of REG (in its module and in the
    modules importing it) are read again once it holds more, as the readers of a
    parameter are, so a fresh build sees what an edit sees (Django's
    REGISTERED_CONVERTERS: tests/urlpatterns/tests.py's `.pop` was unresolved in a fresh
    build and not after an edit of that file)."""
    index = built(tmp_path / "r", FILLED_REGISTRY)
    root = index.root
    to_python = "kinds.py:IntConv.to_python"
    assert index.graph.out(CALLS, "app.py:use") == [to_python]
    assert index.graph.out(CALLS, "conv.py:convert") == [to_python]
    edited = FILLED_REGISTRY["app.py"].replace('to_python("1")', 'to_python("2")')
    index.update_file("app.py", edited)
    (root / "app.py").write_text(edited, encoding="utf-8")
    assert index.graph.to_json() == fresh_json(root)


def test_an_edit_that_fills_a_registry_reaches_its_readers_in_other_files(
    tmp_path: Path,
) -> None:
    """An edit passes register a new class: REG holds its instances too, and reader.py,
    which neither the edit nor register's file names, reads REG again."""
    files = dict(FILLED_REGISTRY)
    files["kinds.py"] += (
        "\n\nclass FloatConv:\n    def to_python(self, v):\n        return float(v)\n"
    )
    files["reader.py"] = "from conv import REG\n\n\ndef read():\n    return REG['x'].to_python(3)\n"
    index = built(tmp_path / "r", files)
    root = index.root
    assert index.graph.out(CALLS, "reader.py:read") == ["kinds.py:IntConv.to_python"]
    edited = files["app.py"].replace("IntConv\n", "FloatConv, IntConv\n") + (
        '\n\nregister(FloatConv, "float")\n'
    )
    index.update_file("app.py", edited)
    (root / "app.py").write_text(edited, encoding="utf-8")
    assert index.graph.out(CALLS, "reader.py:read") == [
        "kinds.py:FloatConv.to_python",
        "kinds.py:IntConv.to_python",
    ]
    assert index.graph.to_json() == fresh_json(root)


def test_a_setter_or_deleter_added_or_removed_links_the_writes_of_other_files(
    tmp_path: Path,
) -> None:
    """`g.level = 5` in use.py calls Gauge.level once lib.py gives the property a setter,
    `del g.level` once it gives it a deleter, and neither once they are gone; after each
    edit the graph is a fresh build's."""
    root = tmp_path / "r"
    root.mkdir()
    getter = "class Gauge:\n    @property\n    def level(self):\n        return 1\n"
    setter = "\n    @level.setter\n    def level(self, value):\n        pass\n"
    deleter = "\n    @level.deleter\n    def level(self):\n        pass\n"
    use = (
        "from lib import Gauge\n\n\n"
        "def write(g: Gauge):\n    g.level = 5\n\n\n"
        "def delete(g: Gauge):\n    del g.level\n"
    )
    (root / "lib.py").write_text(getter, encoding="utf-8")
    (root / "use.py").write_text(use, encoding="utf-8")
    index = Index(root, use_cache=False)
    index.build()
    level = "lib.py:Gauge.level"
    steps = [
        (getter + setter, True, False),
        (getter + setter + deleter, True, True),
        (getter + deleter, False, True),
        (getter, False, False),
    ]
    for text, written, deleted in steps:
        (root / "lib.py").write_text(text, encoding="utf-8")
        index.update_file("lib.py", text)
        assert (level in index.graph.out(CALLS, "use.py:write")) is written, text
        assert (level in index.graph.out(CALLS, "use.py:delete")) is deleted, text
        assert index.graph.to_json() == fresh_json(root), text


def test_many_files_changed_at_once_are_read_and_resolved_with_the_rest_again(
    tmp_path: Path,
) -> None:
    """A checkout changes many files at once: they are read and parsed, and every file
    resolved once, as a build does (one update each resolved their dependents again, 205 s
    on Django's 38 files of 5.1 -> 5.1.1 against a build's 35 s). A file gone, a file
    come, a file turned binary: as a build sees them."""
    files = {f"m{i}.py": f"def f{i}():\n    pass\n" for i in range(6)}
    files["use.py"] = "".join(f"from m{i} import f{i}\n" for i in range(6)) + (
        "\n\ndef run():\n" + "".join(f"    f{i}()\n" for i in range(6))
    )
    index = built(tmp_path / "r", files)
    root = index.root
    assert len(index.graph.out(CALLS, "use.py:run")) == 6
    for i in range(3):
        (root / f"m{i}.py").write_text(f"def f{i}():\n    g()\n\n\ndef g():\n    pass\n", "utf-8")
    (root / "m3.py").unlink()
    (root / "m4.py").write_bytes(b"\x00\x01binary")
    (root / "new.py").write_text("from m0 import g\n\n\ndef h():\n    g()\n", "utf-8")
    afresh = index.stats().resolved_afresh
    changed = index.reload_files(["m0.py", "m1.py", "m2.py", "m3.py", "m4.py", "new.py"])
    assert {"m3.py", "new.py", "use.py"} <= changed
    assert index.stats().resolved_afresh == afresh + 1
    assert index.graph.out(CALLS, "new.py:h") == ["m0.py:g"]
    assert "m3.py" not in index.graph.files() and "m3.py" not in index.problems
    assert index.problems["m4.py"].kind == "binary"
    assert index.graph.to_json() == fresh_json(root)
    # a few files: an update each, no resolution of every file
    (root / "m5.py").write_text("def f5():\n    return 5\n", encoding="utf-8")
    index.reload_files(["m5.py"])
    assert index.stats().resolved_afresh == afresh + 1
    assert index.graph.to_json() == fresh_json(root)


def test_a_file_emptied_under_the_subclasses_of_its_classes_and_restored(
    tmp_path: Path,
) -> None:
    """Flask: select all of app.py, delete, undo. sub.py's classes had a base in app.py's
    second scope, which is gone once app.py is empty: the update crashed (IndexError)
    looking up that base's ancestors, and the index was left half updated."""
    app = (
        "class Base:\n    def hook(self):\n        pass\n\n\n"
        "class App(Base):\n    def run(self):\n        return self.hook()\n"
    )
    sub = "from app import App\n\n\nclass Mine(App):\n    def hook(self):\n        pass\n"
    index = built(tmp_path / "r", {"app.py": app, "sub.py": sub})
    root = index.root
    assert "sub.py:Mine.hook" in index.graph.out(CALLS, "app.py:App.run")
    (root / "app.py").write_text("", encoding="utf-8")
    index.update_file("app.py", "")
    assert index.graph.to_json() == fresh_json(root)
    (root / "app.py").write_text(app, encoding="utf-8")
    index.update_file("app.py", app)
    assert "sub.py:Mine.hook" in index.graph.out(CALLS, "app.py:App.run")
    assert index.graph.to_json() == fresh_json(root)


STEP = "def step_{0}(value):\n    callback = value\n    step_{1}(callback)\n\n\n"
STEPS = "".join(STEP.format(n, n + 1) for n in range(8)) + (
    "def step_8(value):\n    pass\n\n\ndef callback():\n    pass\n\n\n"
)


def test_a_dependent_resolved_again_finds_what_the_build_found_past_its_last_round(
    tmp_path: Path,
) -> None:
    """callback flows one step of the chain deeper per round; a build stops with step_3
    passed it but not yet resolved in it. An edit of lib.py resolves chain.py again (it
    calls helper): in those facts step_3 would reference callback, which no build does,
    and the edit settled with that edge (what chain.py passes on being the same as its
    baseline). The build's last round leaves the argument facts as its files read them."""
    start = "def start():\n    helper()\n    step_0(callback)\n"
    chain = "from lib import helper\n\n\n" + STEPS + start
    index = built(tmp_path / "r", {"lib.py": "def helper():\n    pass\n", "chain.py": chain})
    edit(index, "lib.py", lambda text: text.replace("def helper():", "def helper(x=None):"))
    assert index.stats().resolved_afresh == 0
    assert index.graph.to_json() == fresh_json(index.root)
    assert all_sites(index) == all_sites(built(tmp_path / "fresh", _texts(index.root)))


def _texts(root: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in root.glob("*.py")}


# reader reads what set_last stores through last_of, whose parameters never grow: a
# build reads last_of again once Doc's last holds more, and not its callers
STORED_ELSEWHERE = {
    "doc.py": (
        "class Doc:\n    def __init__(self):\n        self.last = None\n\n"
        "    def set_last(self, sym):\n        self.last = sym\n\n\n"
        "DOC = Doc()\n\n\ndef last_of():\n    return DOC.last\n"
    ),
    "sym.py": "class Sym:\n    def go(self):\n        pass\n",
    "lib.py": "def helper():\n    pass\n",
    "use.py": (
        "from doc import Doc, last_of\nfrom lib import helper\nfrom sym import Sym\n\n\n"
        "def setter(d: Doc):\n    d.set_last(Sym())\n\n\n"
        "def reader(d: Doc):\n    helper()\n    last_of().go()\n"
    ),
}
READER_AS_BUILT = ["doc.py:last_of", "lib.py:helper"]


def test_a_dependent_the_build_left_short_of_a_value_stored_later_stays_as_built(
    tmp_path: Path,
) -> None:
    """set_last learns its argument (a Sym) in the build's second round, and what it
    stores on self.last changes then; last_of, which reads DOC.last, is read again, but
    not reader, which calls it: a build leaves reader calling helper and last_of alone
    (sphinx's cpp domain read env.current_document.cpp_last_symbol so, until the rounds
    read again the readers of a stored attribute outside its class tree too). Resolved
    again with no edit, it calls Sym.go: an edit of lib.py, whose helper reader calls,
    must leave it as a build does.
    The scopes of use.py whose resolution the edit does not change keep what the build
    left them with, and nothing is resolved afresh (the repository was, once)."""
    index = built(tmp_path / "r", STORED_ELSEWHERE)
    assert index.graph.out(CALLS, "use.py:reader") == READER_AS_BUILT
    edit(index, "lib.py", lambda text: text.replace("def helper():", "def helper(x=None):"))
    assert index.stats().resolved_afresh == 0
    assert index.graph.out(CALLS, "use.py:reader") == READER_AS_BUILT
    assert index.graph.to_json() == fresh_json(index.root)
    assert all_sites(index) == all_sites(built(tmp_path / "fresh", _texts(index.root)))
    # An edit that changes what reader finds: a build finds neither what it held nor
    # what it finds now (without helper, and without Sym.go).
    edit(index, "lib.py", lambda text: text.replace("def helper(", "def assist("))
    assert index.stats().resolved_afresh == 1
    assert index.graph.out(CALLS, "use.py:reader") == ["doc.py:last_of"]
    assert index.graph.to_json() == fresh_json(index.root)


def test_a_file_a_later_round_reaches_keeps_what_the_edit_did_not_change(
    tmp_path: Path,
) -> None:
    """An edit of e.py's body passes take another function: use.py, which no edit names,
    is resolved again in the rounds' second, and reader (left by the build short of the
    Sym that set_last stores later) must stay as a build leaves it. Resolved whole in the
    facts the round grew, it called Sym.go; its baseline is what it finds in the argument
    facts before the edit (sphinx/util/inspect.py, reached so from an edit of
    _type_comments.py, grew its own functions until the rounds ran out)."""
    files = dict(STORED_ELSEWHERE)
    files["use.py"] += "\n\ndef take(x):\n    x()\n"
    files["e.py"] = (
        "from use import take\n\n\ndef one():\n    pass\n\n\ndef two():\n    pass\n\n\n"
        "def go():\n    take(one)\n"
    )
    index = built(tmp_path / "r", files)
    assert index.graph.out(CALLS, "use.py:take") == ["e.py:one"]
    edit(index, "e.py", lambda text: text.replace("take(one)", "take(two)"))
    assert index.stats().resolved_afresh == 0
    assert index.graph.out(CALLS, "use.py:take") == ["e.py:two"]
    assert index.graph.out(CALLS, "use.py:reader") == READER_AS_BUILT
    assert index.graph.to_json() == fresh_json(index.root)
    assert all_sites(index) == all_sites(built(tmp_path / "fresh", _texts(index.root)))


def test_a_def_removed_or_moved_under_a_dependent_the_build_left_short(
    tmp_path: Path,
) -> None:
    """spare is passed on to run.py's take: removing it drops the argument facts naming
    it, and what use.py and run.py found before the edit is found before they are
    dropped (after, take's x() found nothing either side and kept the call of a def
    gone). A def inserted above moves lib.py's scopes: what they found before follows."""
    files = dict(STORED_ELSEWHERE)
    files["lib.py"] += "\n\ndef spare():\n    pass\n"
    files["run.py"] = "def take(x):\n    x()\n"
    files["use.py"] = files["use.py"].replace(
        "from lib import helper\n", "from lib import helper, spare\nfrom run import take\n"
    ) + ("\n\ndef pass_on():\n    take(spare)\n")
    index = built(tmp_path / "r", files)
    assert index.graph.out(CALLS, "run.py:take") == ["lib.py:spare"]
    steps = [
        (lambda text: text.replace("\n\ndef spare():\n    pass\n", ""), []),
        (lambda text: "def first():\n    pass\n\n\n" + files["lib.py"], ["lib.py:spare"]),
    ]
    for n, (change, taken) in enumerate(steps):
        edit(index, "lib.py", change)
        assert index.stats().resolved_afresh == 0
        assert index.graph.out(CALLS, "run.py:take") == taken
        assert index.graph.out(CALLS, "use.py:reader") == READER_AS_BUILT
        assert index.graph.to_json() == fresh_json(index.root)
        fresh = built(tmp_path / f"fresh{n}", _texts(index.root))
        assert all_sites(index) == all_sites(fresh)


# Each step hands its argument one call on: a build's last round resolves step_2, and
# what it passes step_3 (a Job) is read by no round, so step_3's value.run() stays unlinked.
SHORT_CHAIN = "".join(f"def step_{n}(value):\n    step_{n + 1}(value)\n\n\n" for n in range(3)) + (
    "def step_3(value):\n    value.run()\n\n\n"
    "class Job:\n    def run(self):\n        pass\n\n\n"
    "def start():\n    step_0(Job())\n"
)


@pytest.mark.parametrize("added", ["import os\n\n\n", "X = 1\n\n\n"])
def test_a_file_resolved_whole_passes_what_its_edit_did_not_change_as_held(
    tmp_path: Path, added: str
) -> None:
    """An import or a name added above the chain changes the file's interface: it is
    resolved whole again, and step_2 passes step_3 the Job it learned in the build's last
    round. That is no change of the edit's (the file passed it as it stood too): taken in,
    the rounds settled with step_3 -> Job.run, which no build has (pytest: an import added
    to src/_pytest/mark/structures.py, get_empty_parameterset_mark -> MockConfig.getini)."""
    index = built(tmp_path / "r", {"chain.py": SHORT_CHAIN})
    assert index.graph.out(CALLS, "chain.py:step_2") == ["chain.py:step_3"]
    assert index.graph.out(CALLS, "chain.py:step_3") == []
    edit(index, "chain.py", lambda text: added + text)
    assert index.stats().resolved_afresh == 0
    assert index.graph.out(CALLS, "chain.py:step_3") == []
    assert index.graph.to_json() == fresh_json(index.root)


def test_a_scope_found_calling_the_same_targets_in_another_order_is_not_changed() -> None:
    """What a scope's sites call is a set, frozen into a tuple in the set's order (the hash
    seed's, and renumber keeps the order from before): use.py's reader, found calling
    lib.py:helper and Sym.go before the def inserted above helper and after it, came out
    in the other order under PYTHONHASHSEED=2 and 7, counted as changed, and the edit
    resolved the repository afresh."""
    helper, go = Function("lib.py", 2), Function("sym.py", 2)
    before = FileFacts(calls={(2, "call"): (helper, go)}, counts={2: (2, 0, 0)})
    after = FileFacts(calls={(2, "call"): (go, helper)}, counts={2: (2, 0, 0)})
    assert before.scopes_differing(after) == set()
    assert before.scopes_differing(FileFacts(calls={(2, "call"): (helper,)})) == {2}


READ_FROM_OUTSIDE = {
    "outcomes.py": (
        "class Outcome(BaseException):\n    def __init__(self, msg=None):\n        self.msg = msg\n"
    ),
    "bad.py": (
        "from outcomes import Outcome\n\n\ndef on_skip():\n    pass\n\n\n"
        "def fail():\n    raise Outcome(on_skip)\n"
    ),
    "plugins.py": (
        "from outcomes import Outcome\n\n\nclass Manager:\n"
        "    def __init__(self):\n        self.skipped = []\n\n"
        "    def load(self, run):\n        try:\n            run()\n"
        "        except Outcome as e:\n            e.msg()\n"
        "            self.skipped.append(e.msg)\n\n"
        "    def other(self):\n        return 1\n"
    ),
}


def test_a_value_stored_on_self_later_reaches_its_readers_outside_the_class(
    tmp_path: Path,
) -> None:
    """Outcome.__init__ learns msg (on_skip) after the build's first round, and what it
    stores on self.msg changes then; Manager.load reads e.msg from outside Outcome's
    class tree. A build reads it again, so it finds what resolving plugins.py again in
    the build's last facts finds, and an edit of another function of that file leaves a
    fresh build's graph (pytest's PytestPluginManager.import_plugin: `except Skipped as
    e: self.skipped_plugins.append((modname, e.msg or ""))`, its append unresolved
    after a build and outside once the file was resolved again)."""
    index = built(tmp_path / "r", READ_FROM_OUTSIDE)
    assert index.graph.out(CALLS, "plugins.py:Manager.load") == ["bad.py:on_skip"]
    rel = "plugins.py"
    load = next(i for i, s in enumerate(index.binder.summaries[rel].scopes) if s.name == "load")
    as_built = index._facts[rel]
    index.ensure_engine()
    again, _passed = index.binder.resolve_file(rel)
    assert again.counts[load] == as_built.counts[load]
    assert again.scopes_differing(as_built) == set()
    edit(index, rel, lambda text: text.replace("return 1", "return 2"))
    assert index.stats().resolved_afresh == 0
    assert index.graph.to_json() == fresh_json(index.root)
    assert all_sites(index) == all_sites(built(tmp_path / "fresh", _texts(index.root)))


def test_a_subclass_that_puts_a_mixin_before_a_base_reaches_the_mixins_super_calls(
    tmp_path: Path,
) -> None:
    """`super().dispatch()` in `class LoginMixin:` runs what the instance's MRO puts after
    the mixin: a class `Page(LoginMixin, View)` in another file, added, changed to
    another base and removed by edits, makes it View.dispatch, then Other.dispatch, then
    nothing, as a fresh build has it each time."""
    root = tmp_path / "r"
    root.mkdir()
    (root / "views.py").write_text(
        "class View:\n    def dispatch(self):\n        return 1\n\n\n"
        "class Other:\n    def dispatch(self):\n        return 2\n\n\n"
        "class LoginMixin:\n    def dispatch(self):\n        return super().dispatch()\n",
        encoding="utf-8",
    )
    page = "from views import LoginMixin, View, Other\n\n\nclass Page(LoginMixin, {}):\n    pass\n"
    add_rebase_remove(
        root,
        "views.py:LoginMixin.dispatch",
        ("pages.py", page),
        {"View": "views.py:View.dispatch", "Other": "views.py:Other.dispatch"},
    )


def add_rebase_remove(
    root: Path, caller: str, subclass: tuple[str, str], callee_by_base: dict[str, str]
) -> None:
    """Build root; then write subclass's file (its text a template of the base) with each
    base in turn and remove it: caller calls nothing, then callee_by_base[base] each time,
    then nothing again, and the graph is a fresh build's after every step."""
    index = Index(root, use_cache=False)
    index.build()
    assert index.graph.out(CALLS, caller) == []
    rel, template = subclass
    for base, callee in callee_by_base.items():
        edit(index, rel, lambda _, base=base: template.format(base))
        assert index.graph.out(CALLS, caller) == [callee]
        assert index.graph.to_json() == fresh_json(root)
    (root / rel).unlink()
    index.remove_file(rel)
    assert index.graph.out(CALLS, caller) == []
    assert index.graph.to_json() == fresh_json(root)


def test_a_subclass_in_another_file_decides_what_super_of_a_named_class_runs(
    tmp_path: Path,
) -> None:
    """`super(Mixin, self).save()` in `class Child(Mixin)` runs what the MRO of self's
    class (Child or a subclass of it) puts after Mixin, never what a class deriving Mixin
    but not Child puts there (Mixed(Mixin, Store): Store.save). A subclass of Child in
    another file, added, rebased and removed by edits, makes it Other.save, then
    Store.save, then nothing, as a fresh build has it each time."""
    root = tmp_path / "r"
    root.mkdir()
    (root / "models.py").write_text(
        "class Mixin:\n    pass\n\n\n"
        "class Store:\n    def save(self):\n        return 1\n\n\n"
        "class Other:\n    def save(self):\n        return 2\n\n\n"
        "class Mixed(Mixin, Store):\n    pass\n\n\n"
        "class Child(Mixin):\n    def put(self):\n        return super(Mixin, self).save()\n",
        encoding="utf-8",
    )
    deep = "from models import Child, Other, Store\n\n\nclass Deep(Child, {}):\n    pass\n"
    add_rebase_remove(
        root,
        "models.py:Child.put",
        ("deep.py", deep),
        {"Other": "models.py:Other.save", "Store": "models.py:Store.save"},
    )
