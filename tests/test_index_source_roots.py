"""Source roots: nested projects, `src/` layouts, the folders pytest puts on sys.path, and
the ones a user names; checked against fixtures/source_roots/expected.json (by hand)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from anchor_ls.index import CALLS, Index
from anchor_ls.index.modules import ModuleTable

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "source_roots"
EXPECTED = json.loads((FIXTURE / "expected.json").read_text(encoding="utf-8"))
GET_DB = "examples/tutorial/flaskr/db.py:get_db"
CREATE_APP = "examples/tutorial/flaskr/__init__.py:create_app"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns(".anchor-ls", "__pycache__"))
    return root


def calls_of(index: Index) -> set[tuple[str, str]]:
    """The repository's own calls (those into the standard library, `ext:`, left out)."""
    data = index.snapshot().graph.to_json()
    edges = [e for e in data["edges"] if e["kind"] == CALLS]
    return {(e["src"], e["dst"]) for e in edges if not e["dst"].startswith("ext:")}


def callers(calls: set[tuple[str, str]], dst: str) -> set[str]:
    return {src for src, to in calls if to == dst}


def expected_calls(*, with_setting: bool = False) -> set[tuple[str, str]]:
    found = {(src, dst) for src, dst in EXPECTED["calls"]}
    if with_setting:
        found |= {(src, dst) for src, dst in EXPECTED["with_source_roots"]["calls"]}
    return found


def test_a_nested_project_tests_call_its_package(repo: Path) -> None:
    """Flask's tutorial: its tests import `flaskr` as installed; every caller counts."""
    index = Index(repo, use_cache=False)
    index.build()
    calls = calls_of(index)
    assert callers(calls, GET_DB) == callers(expected_calls(), GET_DB)
    assert len(callers(calls, GET_DB)) == 7
    assert callers(calls, CREATE_APP) == {
        "examples/tutorial/tests/conftest.py:app",
        "examples/tutorial/tests/test_factory.py:test_config",
    }
    assert calls == expected_calls()
    assert index.problems == {}
    assert index.stats().source_roots == [
        ".",
        "examples/shop",
        "examples/shop/tests",
        "examples/tutorial",
        "examples/tutorial/tests",
        "tests/support",
    ]


def test_the_setting_adds_a_root_no_file_states(repo: Path) -> None:
    index = Index(repo, use_cache=False, source_roots=EXPECTED["with_source_roots"]["sourceRoots"])
    index.build()
    assert calls_of(index) == expected_calls(with_setting=True)
    absolute = Index(repo, use_cache=False, source_roots=[str(repo / "lib")])
    absolute.build()
    assert calls_of(absolute) == expected_calls(with_setting=True)


def test_a_root_outside_the_repository_is_reported_and_ignored(repo: Path, tmp_path: Path) -> None:
    index = Index(repo, use_cache=False, source_roots=["../elsewhere", str(tmp_path), "nope"])
    index.build()
    assert calls_of(index) == expected_calls()
    assert {p.path: p.kind for p in index.problems.values()} == {
        "../elsewhere": "source-root",
        str(tmp_path): "source-root",
        "nope": "source-root",
    }


def test_a_cached_graph_is_not_reused_once_the_roots_change(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = Index(repo, cache_dir=cache)
    first.build()
    first.close()
    again = Index(repo, cache_dir=cache, source_roots=["lib"])
    again.build()
    assert calls_of(again) == expected_calls(with_setting=True)
    again.close()
    (repo / "examples" / "tutorial" / "pyproject.toml").unlink()
    third = Index(repo, cache_dir=cache)
    third.build()
    assert callers(calls_of(third), CREATE_APP) == set()  # no marker: not a project
    third.close()


def test_a_bad_pytest_configuration_is_reported_and_the_rest_indexed(repo: Path) -> None:
    (repo / "examples" / "shop" / "pyproject.toml").write_text("[project\n", encoding="utf-8")
    (repo / "examples" / "tutorial" / "setup.cfg").write_text("no section\n", encoding="utf-8")
    index = Index(repo, use_cache=False)
    index.build()
    assert {p.path: p.kind for p in index.problems.values()} == {
        "examples/shop/pyproject.toml": "config",
        "examples/tutorial/setup.cfg": "config",
    }
    assert calls_of(index) == expected_calls()  # a marker still, whatever its content


def test_the_innermost_root_wins_and_other_repositories_keep_their_order() -> None:
    files = [
        "src/shop/cart.py",
        "src/shop/__init__.py",
        "examples/shop/src/shop/__init__.py",
        "examples/shop/src/shop/cart.py",
        "examples/shop/tests/test_cart.py",
        "tests/test_outer.py",
        "app/main.py",
    ]
    nested = ModuleTable(files, roots=["examples/shop"])
    assert nested.resolve("shop.cart", 0, "examples/shop/tests/test_cart.py") == (
        "examples/shop/src/shop/cart.py"
    )
    assert nested.resolve("shop.cart", 0, "tests/test_outer.py") == "src/shop/cart.py"
    assert nested.search_path("examples/shop/tests/test_cart.py") == (
        "examples/shop/tests",
        "examples/shop",
        "examples/shop/src",
        "",
        "src",
    )
    plain = ModuleTable(files)
    assert plain.search_path("app/main.py") == ("app", "", "src")


def test_a_namespace_folder_yields_to_a_module_as_python_finds_it() -> None:
    # Python makes a namespace package of a folder without __init__.py only when no root
    # has a module or package of that name; the standard library always has `logging`
    files = [
        "testing/conftest.py",
        "testing/logging/test_fixture.py",
        "testing/util/helpers.py",
        "src/pkg/__init__.py",
        "src/pkg/log.py",
        "src/util.py",
    ]
    table = ModuleTable(files, roots=["testing"])
    importer = "src/pkg/log.py"
    assert table.search_path(importer) == ("src", "", "testing")
    assert table.resolve("logging", 0, importer) is None  # the standard library's
    assert table.resolve("logging.handlers", 0, importer) is None
    assert table.resolve("util", 0, "testing/conftest.py") == "src/util.py"
    assert table.resolve("util.helpers", 0, "testing/conftest.py") == "testing/util/helpers.py"
    assert table.resolve("logging", 1, "testing/conftest.py") == "testing/logging/"  # relative


def test_a_folder_named_as_a_standard_module_takes_none_of_its_calls(tmp_path: Path) -> None:
    # pytest's own repository: testing/logging/ (no __init__.py) under the conftest root
    # took `import logging` of src/_pytest/logging.py, so every base and call into the
    # logging module was lost, and annotations through it raised KeyError (internal)
    root = tmp_path / "repo"
    for rel, text in {
        "testing/conftest.py": "",
        "testing/logging/test_fixture.py": "import logging\n\n\n"
        "def test_it(h: 'logging.Handler') -> None:\n    logging.getLogger('t')\n",
        "src/pkg/__init__.py": "",
        "src/pkg/log.py": "import logging\n\n\nclass F(logging.Formatter):\n    pass\n\n\n"
        "def make(f: 'logging.Formatter') -> None:\n    logging.getLogger('x')\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    index = Index(root, use_cache=False)
    index.build()
    graph = index.snapshot().graph
    assert "ext:logging.Formatter" in graph.out("inherits", "src/pkg/log.py:F")
    assert "ext:logging.getLogger" in graph.out(CALLS, "src/pkg/log.py:make")
    assert "ext:logging.getLogger" in graph.out(CALLS, "testing/logging/test_fixture.py:test_it")
    assert index.problems == {}


def test_an_annotation_through_a_namespace_package_is_no_internal_error(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    for rel, text in {
        "nsp/thing.py": "class Thing:\n    def go(self):\n        pass\n",
        "app.py": "import nsp\n\n\ndef f(x: 'nsp.Thing') -> None:\n    x.go()\n\n\n"
        "def g(y: 'nsp.thing.Thing') -> None:\n    y.go()\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    index = Index(root, use_cache=False)
    index.build()
    assert index.problems == {}  # was "internal: resolution failed in f: KeyError: 'nsp/'"
    assert "nsp/thing.py:Thing.go" in index.snapshot().graph.out(CALLS, "app.py:g")


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "anchor_ls", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_cli_takes_source_roots(repo: Path, tmp_path: Path) -> None:
    cache = ("--cache", str(tmp_path / "cache"))
    plain = run_cli("graph", str(repo), "--json", *cache)
    named = run_cli("graph", str(repo), "--json", *cache, "--source-root", "lib")
    twice = run_cli(
        "graph", str(repo), "--json", *cache, "--source-root", "lib", "--source-root", "tools"
    )
    assert plain.returncode == named.returncode == twice.returncode == 0, plain.stderr
    edges = [
        {
            (e["src"], e["dst"])
            for e in json.loads(out.stdout)["edges"]
            if e["kind"] == CALLS and not e["dst"].startswith("ext:")  # the repository's own
        }
        for out in (plain, named, twice)
    ]
    assert edges == [expected_calls(), *[expected_calls(with_setting=True)] * 2]
    asked = run_cli("callers", "render_all", str(repo), "--json", *cache, "--source-root", "lib")
    assert asked.returncode == 0, asked.stderr
    [level] = json.loads(asked.stdout)["levels"]
    assert [item["id"] for item in level["items"]] == ["tools/report.py:main"]
    outside = run_cli("index", str(repo), *cache, "--source-root", "../elsewhere")
    assert outside.returncode == 0
    assert "../elsewhere: source-root: source root outside" in outside.stderr


def test_a_nested_setup_py_is_a_project_root(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    for rel, text in {
        "setup.py": "",
        "plugins/auth/setup.py": "",
        "plugins/auth/auth_plugin/__init__.py": "def login():\n    return 1\n",
        "plugins/auth/tests/test_login.py": (
            "from auth_plugin import login\n\n\ndef test_login():\n    login()\n"
        ),
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    index = Index(root, use_cache=False)
    index.build()
    assert calls_of(index) == {
        (
            "plugins/auth/tests/test_login.py:test_login",
            "plugins/auth/auth_plugin/__init__.py:login",
        )
    }


@pytest.mark.parametrize(
    "marker", ["examples/shop/tests/conftest.py", "examples/tutorial/setup.py"]
)
def test_a_root_file_added_or_removed_in_an_index_is_a_fresh_build(repo: Path, marker: str) -> None:
    """A setup.py or conftest.py edited into (or out of) a live index moves imports as a
    build of the files as they then stand would."""
    if marker.endswith("setup.py"):
        (repo / "examples" / "tutorial" / "pyproject.toml").unlink()
        (repo / marker).write_text("from setuptools import setup\n\nsetup()\n", encoding="utf-8")
    text = (repo / marker).read_text(encoding="utf-8")
    live = Index(repo, use_cache=False, workers=1)
    live.build()
    with_marker = calls_of(live)
    (repo / marker).unlink()
    live.remove_file(marker)
    fresh = Index(repo, use_cache=False, workers=1)
    fresh.build()
    assert calls_of(live) == calls_of(fresh)
    (repo / marker).write_text(text, encoding="utf-8")
    live.update_file(marker, text)
    again = Index(repo, use_cache=False, workers=1)
    again.build()
    assert calls_of(live) == calls_of(again) == with_marker


def test_the_standard_library_modules_are_those_of_every_python_anchor_ls_runs_on() -> None:
    """A folder named like a module Python 3.13 removed (`cgi/`) must be no namespace
    package under 3.11 and a package under 3.13: the graph is the files' alone."""
    from anchor_ls.index.modules import STDLIB_MODULES, stdlib_modules

    gone = {"cgi", "distutils", "telnetlib", "asyncore", "lib2to3"}
    on_313 = stdlib_modules(frozenset(sys.stdlib_module_names) - gone)
    assert on_313 == STDLIB_MODULES
    assert gone <= on_313
