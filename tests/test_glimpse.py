"""Glimpses (anchor_ls/index/glimpse.py): the index of the files that can answer one
question, served while a repository's first build runs.

What must hold: a glimpse reads the files its rules name (written out by hand below); it
finds the callers and subclasses written in those files; it holds no caller and no
subclass the whole build does not, on a fixture and on a slice of the standard library.
"""

from __future__ import annotations

import shutil
import sysconfig
import threading
from pathlib import Path

import pytest
from support.lsp import write_files
from support.repos import SHAPES

from anchor_ls.index import CALLS, INHERITS, Index, repository
from anchor_ls.index import glimpse as glimpse_module
from anchor_ls.index.glimpse import Corpus, glimpse, used_scope, users_scope, users_wanted
from anchor_ls.server.glimpses import Glimpses


def test_a_method_is_looked_for_where_its_name_and_its_class_are_named(tmp_path: Path) -> None:
    write_files(tmp_path, SHAPES)
    corpus = Corpus.read(tmp_path)
    # use.py and tools/area.py name `area` but not `Shape`, factory.py the other way
    # round; conftest.py states a root
    assert users_scope(corpus, "pkg/shapes.py:Shape.area") == {
        "pkg/shapes.py",
        "pkg/report.py",
        "pkg/__init__.py",
        "conftest.py",
    }
    # a function: every file that names it, and the packages they are in
    assert users_scope(corpus, "tools/area.py:area") == {
        "tools/area.py",
        "tools/__init__.py",
        "pkg/shapes.py",
        "pkg/report.py",
        "pkg/use.py",
        "pkg/__init__.py",
        "conftest.py",
    }
    # a constructor is called as its class
    assert "pkg/use.py" not in users_scope(corpus, "pkg/shapes.py:Shape.__init__")
    assert "pkg/factory.py" in users_scope(corpus, "pkg/shapes.py:Shape.__init__")
    # what describe calls: the files that define a name its text uses
    text = SHAPES["pkg/report.py"].encode()
    assert used_scope(corpus, "pkg/report.py:describe", text) == {
        "pkg/report.py",
        "pkg/shapes.py",
        "pkg/__init__.py",
        "tools/area.py",  # defines `area`
        "tools/__init__.py",
        "conftest.py",
    }


def test_a_glimpse_finds_the_callers_its_files_hold_and_the_build_the_rest(
    tmp_path: Path,
) -> None:
    write_files(tmp_path, SHAPES)
    corpus = Corpus.read(tmp_path)
    target = "pkg/shapes.py:Shape.area"
    seen = glimpse(corpus, users_scope(corpus, target), exclude=(), source_roots=())
    assert sorted(seen.graph.into(CALLS, target)) == ["pkg/report.py:describe"]
    assert sorted(seen.graph.into(INHERITS, "pkg/shapes.py:Shape")) == ["pkg/shapes.py:Square"]
    assert seen.stats().files == 4
    whole = Index(tmp_path, use_cache=False)
    whole.build()
    assert sorted(whole.graph.into(CALLS, target)) == [
        "pkg/report.py:describe",
        "pkg/use.py:measure",
    ]


# Who calls Query.filter: a glimpse resolves the sites of test files that can reach it.
FILTERS = {
    "pkg/__init__.py": "",
    "pkg/query.py": (
        "class Query:\n    def filter(self):\n        return self\n\n\n"
        "def narrow(q):\n    return q.filter()\n"
    ),
    # names Query, and filter only as a word: no call of a method
    "pkg/notes.py": "from pkg.query import Query\n\n# a filter of Query values\n",
    "tests/test_query.py": (
        "from pkg.query import Query, narrow\n\n\n"
        "def check(q):\n    return q.filter()\n\n\n"
        "def test_direct():\n    return Query().filter()\n\n\n"
        "def test_alias():\n    f = Query().filter\n    return f()\n\n\n"
        "def test_helper():\n    return check(Query())\n\n\n"
        "def test_narrow():\n    return narrow(Query())\n\n\n"
        "def test_unrelated():\n    return Query()\n"
    ),
}


def test_a_glimpse_of_a_method_resolves_the_test_sites_that_can_reach_it(tmp_path: Path) -> None:
    """In a test file, the sites that name the method, a name bound to it (`f`), or a
    function whose own such site reads a parameter (check and narrow: the argument is the
    receiver); its other sites are not resolved (test_unrelated), and the callers are the
    build's all the same."""
    write_files(tmp_path, FILTERS)
    corpus = Corpus.read(tmp_path)
    target = "pkg/query.py:Query.filter"
    assert users_wanted(target, "method") == {"filter"}
    assert users_wanted("pkg/query.py:Query", "class") is None  # made as `cls()` too
    assert users_wanted("pkg/query.py:Query.__iter__", "method") is None  # `for` calls it
    scope = users_scope(corpus, target)
    assert scope == {"pkg/__init__.py", "pkg/query.py", "tests/test_query.py"}
    seen = glimpse(
        corpus, scope, exclude=(), source_roots=(), wanted=users_wanted(target, "method")
    )
    assert sorted(seen.graph.into(CALLS, target)) == [
        "pkg/query.py:narrow",
        "tests/test_query.py:check",
        "tests/test_query.py:test_alias",
        "tests/test_query.py:test_direct",
    ]
    assert seen.graph.out(CALLS, "tests/test_query.py:test_unrelated") == []
    whole = Index(tmp_path, use_cache=False)
    whole.build()
    assert sorted(whole.graph.into(CALLS, target)) == sorted(seen.graph.into(CALLS, target))
    assert whole.graph.out(CALLS, "tests/test_query.py:test_unrelated") == ["pkg/query.py:Query"]


# `A(B, C)`: `self.run()` in A is B.run, which C's glimpse must not take for C.run.
BASES = {
    "pkg/__init__.py": "",
    "pkg/b.py": "from pkg.root import Root\n\n\nclass B(Root):\n    pass\n",
    "pkg/root.py": "class Root:\n    def run(self):\n        return 1\n",
    "pkg/c.py": "class C:\n    def run(self):\n        return 2\n",
    "pkg/a.py": (
        "from pkg.b import B\nfrom pkg.c import C\n\n\n"
        "class A(B, C):\n    def x(self):\n        return self.run()\n"
    ),
    "pkg/other.py": "class Other(Unrelated):\n    pass\n",
}


def test_a_glimpse_reads_the_other_bases_of_the_classes_that_reach_the_method(
    tmp_path: Path,
) -> None:
    """b.py and root.py name no `run` call nor C, but A's lookup passes B and Root first."""
    write_files(tmp_path, BASES)
    corpus = Corpus.read(tmp_path)
    scope = users_scope(corpus, "pkg/c.py:C.run")
    assert scope == {"pkg/__init__.py", "pkg/a.py", "pkg/b.py", "pkg/c.py", "pkg/root.py"}
    seen = glimpse(corpus, scope, exclude=(), source_roots=())
    assert seen.graph.into(CALLS, "pkg/c.py:C.run") == []
    assert seen.graph.into(CALLS, "pkg/root.py:Root.run") == ["pkg/a.py:A.x"]


def test_a_method_whose_lookups_pass_too_many_bases_gets_no_glimpse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past twice GLIMPSE_FILES files of bases, no scope: a glimpse without them could
    list a call the build does not, and the server waits for the build instead."""
    write_files(tmp_path, BASES)
    corpus = Corpus.read(tmp_path)
    monkeypatch.setattr(glimpse_module, "GLIMPSE_FILES", 1)  # a.py, c.py, b.py: over 2
    assert users_scope(corpus, "pkg/c.py:C.run") is None
    assert users_scope(corpus, "pkg/root.py:Root.run") is not None  # no class derives from it
    monkeypatch.setattr(glimpse_module, "GLIMPSE_FILES", 2)
    assert users_scope(corpus, "pkg/c.py:C.run") is not None


STDLIB_SLICE = ("email", "json")


def test_glimpses_of_the_standard_library_hold_nothing_the_build_leaves_out(
    tmp_path: Path,
) -> None:
    """Every 16th function or method with callers, and every third class with subclasses:
    what a glimpse lists of them is in the whole build's lists, and most glimpses list all."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for name in STDLIB_SLICE:
        shutil.copytree(stdlib / name, tmp_path / name, ignore=shutil.ignore_patterns("test*"))
    # json's tests: test files, where a glimpse resolves only the sites naming its function
    shutil.copytree(stdlib / "test" / "test_json", tmp_path / "test" / "test_json")
    whole = Index(tmp_path, use_cache=False)
    whole.build()
    graph = whole.graph
    corpus = Corpus.read(tmp_path)
    entities = [e for path in graph.files() for e in graph.file_entities(path)]
    called = sorted(e.id for e in entities if e.kind in ("function", "method"))
    called = [i for i in called if graph.into(CALLS, i)][::16]
    derived = [e.id for e in entities if e.kind == "class" and graph.into(INHERITS, e.id)]
    derived = sorted(derived)[::3]
    assert len(called) >= 20 and len(derived) >= 5, (len(called), len(derived))
    complete = 0
    for relation, ids in ((CALLS, called), (INHERITS, derived)):
        for entity_id in ids:
            scope = users_scope(corpus, entity_id)
            assert scope is not None  # never too many bases here
            kind = graph.entity(entity_id).kind  # type: ignore[union-attr]
            wanted = users_wanted(entity_id, kind)  # as the server asks
            seen = glimpse(corpus, scope, exclude=(), source_roots=(), wanted=wanted).graph
            found = set(seen.into(relation, entity_id))
            expected = set(graph.into(relation, entity_id))
            assert found <= expected, (entity_id, found - expected)
            complete += found == expected
    assert complete >= 0.6 * (len(called) + len(derived))


def test_a_build_waits_while_a_glimpse_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server's build yields to a glimpse between files (Index(pause=...)): beside
    it, the glimpse took three times as long (the interpreter lock takes turns)."""
    write_files(tmp_path, FILTERS)
    glimpses = Glimpses(tmp_path, (), ())
    begun, release = threading.Event(), threading.Event()
    order: list[str] = []
    read = Corpus.read

    def slow_read(root: Path, exclude: tuple[str, ...] = ()) -> Corpus:
        begun.set()
        release.wait(30)
        return read(root, exclude)

    monkeypatch.setattr(Corpus, "read", staticmethod(slow_read))
    monkeypatch.setattr(repository, "PAUSE_EVERY", 1)
    made = threading.Thread(
        target=lambda: (glimpses.of_file("pkg/query.py"), order.append("glimpse made"))
    )
    made.start()
    assert begun.wait(30)
    index = Index(tmp_path, use_cache=False, workers=1, pause=lambda: glimpses.wait_idle(30))
    built = threading.Thread(target=lambda: (index.build(), order.append("build ended")))
    built.start()
    built.join(2)  # the build of four files, had it not waited
    release.set()
    made.join(30)
    built.join(30)
    assert order == ["glimpse made", "build ended"]
    assert index.graph.into(CALLS, "pkg/query.py:Query.filter")  # it built all the same


def test_the_glimpse_asked_for_next_holds_the_build_from_when_it_is_asked(
    tmp_path: Path,
) -> None:
    """A prepare's glimpse asks for the glimpse of who calls the entity next, on another
    thread: the build must not run in between (Django: a tenth of a second, beside the
    glimpse, each time)."""
    write_files(tmp_path, FILTERS)
    glimpses = Glimpses(tmp_path, (), ())
    with glimpses.busy():
        glimpses.of_file("pkg/query.py")
        assert not glimpses.wait_idle(0.01)
        made = glimpses.soon("pkg/query.py:Query.filter", "incoming")
    assert not glimpses.wait_idle(0.01)  # asked for, not begun: the build still waits
    seen = made()
    assert seen is not None and seen.graph is not None
    assert seen.graph.into(CALLS, "pkg/query.py:Query.filter")
    assert glimpses.wait_idle(0)
