"""Glimpses (anchor_ls/index/glimpse.py): the index of the files that can answer one
question, served while a repository's first build runs.

What must hold: a glimpse reads the files its rules name (written out by hand below); it
finds the callers and subclasses written in those files; it holds no caller and no
subclass the whole build does not, on a fixture and on a slice of the standard library.
"""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path

import pytest
from support.lsp import write_files
from support.repos import SHAPES

from anchor_ls.index import CALLS, INHERITS, Index
from anchor_ls.index import glimpse as glimpse_module
from anchor_ls.index.glimpse import Corpus, glimpse, used_scope, users_scope


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
    seen = glimpse(tmp_path, users_scope(corpus, target), exclude=(), source_roots=())
    assert sorted(seen.graph.into(CALLS, target)) == ["pkg/report.py:describe"]
    assert sorted(seen.graph.into(INHERITS, "pkg/shapes.py:Shape")) == ["pkg/shapes.py:Square"]
    assert seen.stats().files == 4
    whole = Index(tmp_path, use_cache=False)
    whole.build()
    assert sorted(whole.graph.into(CALLS, target)) == [
        "pkg/report.py:describe",
        "pkg/use.py:measure",
    ]


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
    seen = glimpse(tmp_path, scope, exclude=(), source_roots=())
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
            seen = glimpse(tmp_path, scope, exclude=(), source_roots=()).graph
            found = set(seen.into(relation, entity_id))
            expected = set(graph.into(relation, entity_id))
            assert found <= expected, (entity_id, found - expected)
            complete += found == expected
    assert complete >= 0.6 * (len(called) + len(derived))
