"""The library-aware index: bases, overrides and calls one step out of the repository,
into a fake site-packages (fixtures/libraries/site-packages) and the standard library,
with the expected edges written by hand."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from anchor_ls.index import Environment, Index
from anchor_ls.index.environment import typeshed_stdlib
from anchor_ls.index.model import EXTERNAL_PREFIX

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "fixtures" / "libraries"
SITE = FIXTURE / "site-packages"

# Written by hand from fixtures/libraries: re-exports (django.views.generic, django.db
# .models), an alias (`Manager = BaseManager`, `dumps = _dumps`), a compiled module with
# only its stub (fastjson/_speedups), return annotations (Session.get -> Response), the
# standard library (pathlib), a package that is not installed (paymentgateway), and
# `super()` calls of what only a base from outside defines (views.py; mixins.py, where C3
# puts the outside base of the repository's mixin before the class's own).
EXPECTED_INHERITS = {
    ("shop/views.py:ArticleView", "ext:django.views.generic.base.View"),
    ("shop/views.py:HomeView", "ext:django.views.generic.base.TemplateView"),
    ("shop/views.py:SpecialArticleView", "shop/views.py:ArticleView"),
    ("shop/models.py:Article", "ext:django.db.models.base.Model"),
    ("shop/clients.py:FastEncoder", "ext:fastjson._speedups.Encoder"),
    ("shop/mixins.py:RenderMixin", "ext:django.views.generic.base.TemplateResponseMixin"),
    ("shop/mixins.py:RedirectingView", "shop/mixins.py:RenderMixin"),
    ("shop/mixins.py:RedirectingView", "ext:django.views.generic.base.RedirectView"),
}
RENDER = "ext:django.views.generic.base.TemplateResponseMixin.render_to_response"
EXPECTED_OVERRIDES = {
    ("shop/views.py:ArticleView.dispatch", "ext:django.views.generic.base.View.dispatch"),
    ("shop/views.py:SpecialArticleView.dispatch", "shop/views.py:ArticleView.dispatch"),
    (
        "shop/views.py:HomeView.render_to_response",
        "ext:django.views.generic.base.TemplateResponseMixin.render_to_response",
    ),
    ("shop/models.py:Article.save", "ext:django.db.models.base.Model.save"),
    ("shop/clients.py:FastEncoder.encode", "ext:fastjson._speedups.Encoder.encode"),
    ("shop/mixins.py:RedirectingView.render_to_response", RENDER),
}
EXPECTED_EXTERNAL_CALLS = {
    ("shop/views.py:ArticleView.get", "ext:pathlib.Path"),
    ("shop/views.py:ArticleView.get", "ext:pathlib.Path.read_text"),
    ("shop/models.py:Article", "ext:django.db.models.manager.BaseManager"),
    ("shop/clients.py:FastEncoder.encode", "ext:fastjson._speedups.dumps"),
    ("shop/clients.py:Client.__init__", "ext:requests.sessions.Session"),
    ("shop/clients.py:Client.fetch", "ext:requests.sessions.Session.get"),
    ("shop/clients.py:Client.fetch", "ext:requests.models.Response.json"),
    ("shop/views.py:ArticleView.dispatch", "ext:django.views.generic.base.View.dispatch"),
    ("shop/mixins.py:RedirectingView.render_to_response", RENDER),
}
# ext id -> (file under the fake site-packages, or None for the standard library; line)
EXPECTED_PLACES = {
    "ext:django.views.generic.base.View": ("django/views/generic/base.py", 1),
    "ext:django.views.generic.base.View.dispatch": ("django/views/generic/base.py", 10),
    "ext:django.db.models.base.Model": ("django/db/models/base.py", 5),
    "ext:django.db.models.manager.BaseManager": ("django/db/models/manager.py", 4),
    "ext:fastjson._speedups.Encoder": ("fastjson/_speedups.pyi", 1),
    "ext:requests.sessions.Session.get": ("requests/sessions.py", 5),
}


def fake_environment() -> Environment:
    """The fake site-packages, then this interpreter's standard library (typeshed's stubs
    first when jedi is installed): an environment without an interpreter."""
    stdlib = os.path.dirname(os.__file__)
    return Environment(paths=(str(SITE), stdlib), stubs=typeshed_stdlib())


def edge_set(graph_json: dict, kind: str) -> set[tuple[str, str]]:
    return {(e["src"], e["dst"]) for e in graph_json["edges"] if e["kind"] == kind}


def copy_app(tmp_path: Path) -> Path:
    app = tmp_path / "app"
    shutil.copytree(FIXTURE / "app", app)
    return app


def build(root: Path, python: object, **kwargs: object) -> Index:
    index = Index(root, python=python, **kwargs)  # type: ignore[arg-type]
    index.build()
    return index


def test_bases_overrides_and_calls_reach_one_step_into_the_libraries(tmp_path: Path) -> None:
    index = build(copy_app(tmp_path), fake_environment(), use_cache=False)
    data = index.graph.to_json()
    assert edge_set(data, "inherits") == EXPECTED_INHERITS
    assert edge_set(data, "overrides") == EXPECTED_OVERRIDES
    external_calls = {(s, d) for s, d in edge_set(data, "calls") if d.startswith(EXTERNAL_PREFIX)}
    assert external_calls == EXPECTED_EXTERNAL_CALLS
    # only the first step out: no edge starts outside the repository
    assert not [e for e in data["edges"] if e["src"].startswith(EXTERNAL_PREFIX)]
    external = {e["id"]: e for e in data["entities"] if e.get("external")}
    targets = {d for _s, d in EXPECTED_EXTERNAL_CALLS | EXPECTED_INHERITS | EXPECTED_OVERRIDES}
    assert set(external) == {t for t in targets if t.startswith(EXTERNAL_PREFIX)}
    for ident, (rel, line) in EXPECTED_PLACES.items():
        assert (external[ident]["path"], external[ident]["line"]) == (str(SITE / rel), line)
    assert os.path.isabs(external["ext:pathlib.Path.read_text"]["path"])
    assert index.graph.entity("ext:django.views.generic.base.View").external  # type: ignore[union-attr]
    # how each call was found, as for the repository's own
    assert {
        d: e.get("via") for e in data["edges"] if (d := e["dst"]).startswith("ext:requests")
    } == {
        "ext:requests.sessions.Session": "constructor",
        "ext:requests.sessions.Session.get": "attribute",
        "ext:requests.models.Response.json": "flow",  # a return value's method
    }
    supers = ("shop/views.py:ArticleView.dispatch", "shop/mixins.py:RedirectingView")
    assert {
        (e["src"], e["dst"]): e.get("via")
        for e in data["edges"]
        if e["kind"] == "calls" and e["src"].startswith(supers)
    } == {
        ("shop/views.py:ArticleView.dispatch", "ext:django.views.generic.base.View.dispatch"): (
            "super"
        ),
        ("shop/mixins.py:RedirectingView.render_to_response", RENDER): "super",
    }
    assert "ext" not in index.graph.files()


def test_a_package_that_is_not_installed_is_unresolved_not_outside(tmp_path: Path) -> None:
    app = copy_app(tmp_path)
    with_env = build(app, fake_environment(), use_cache=False)
    without = build(app, Environment(), use_cache=False)
    assert with_env.problems == {}
    assert [n for _s, n, _span in with_env.graph.file_missed("shop/clients.py")] == ["charge"]
    assert with_env.graph.unresolved("shop/clients.py:charge") == 1
    assert without.graph.unresolved("shop/clients.py:charge") == 0  # outside, as before
    assert with_env.stats().unresolved == without.stats().unresolved + 1
    assert with_env.stats().external == without.stats().external - 1
    assert not [d for _s, d in edge_set(with_env.graph.to_json(), "calls") if "payment" in d]


def test_repository_edges_are_the_same_with_and_without_the_environment(tmp_path: Path) -> None:
    app = copy_app(tmp_path)
    with_env = build(app, fake_environment(), use_cache=False).graph.to_json()
    without = build(app, Environment(), use_cache=False).graph.to_json()

    def internal(data: dict) -> list[dict]:
        return [e for e in data["edges"] if not e["dst"].startswith(EXTERNAL_PREFIX)]

    assert internal(with_env) == internal(without)
    assert [e for e in without["entities"] if e.get("external")] == []


def test_the_mean_call_out_degree_counts_the_repository_calls_alone(tmp_path: Path) -> None:
    """auto picks a policy by it (the study measured calls inside repositories): what is
    installed must not change the tags a repository gets."""
    app = copy_app(tmp_path)
    with_env = build(app, fake_environment(), use_cache=False)
    without = build(app, Environment(), use_cache=False)
    assert with_env.graph.edge_count("calls") > without.graph.edge_count("calls")
    assert with_env.stats().mean_out_degree == without.stats().mean_out_degree > 0


def test_a_warm_start_and_another_environment_each_give_their_own_graph(tmp_path: Path) -> None:
    """The environment is part of the cache key: a warm start in the same environment
    answers the same, one in no environment does not reuse the library edges."""
    app = copy_app(tmp_path)
    cache = tmp_path / "cache"
    cold = build(app, fake_environment(), cache_dir=cache).graph.to_json()
    warm_index = build(app, fake_environment(), cache_dir=cache)
    assert warm_index.stats().reparsed == 0
    assert warm_index.graph.to_json() == cold
    bare = build(app, Environment(), cache_dir=cache).graph.to_json()
    assert [e for e in bare["entities"] if e.get("external")] == []
    assert edge_set(bare, "overrides") == {
        ("shop/views.py:SpecialArticleView.dispatch", "shop/views.py:ArticleView.dispatch")
    }


@pytest.mark.parametrize("start", ["cold", "warm"])
def test_edits_keep_the_library_edges_as_a_fresh_build_has_them(tmp_path: Path, start: str) -> None:
    """After a warm start too: the graph came from the cache, the library is read again
    for the edit."""
    app = copy_app(tmp_path)
    cache = tmp_path / "cache"
    index = build(app, fake_environment(), cache_dir=cache)
    if start == "warm":
        index.close()
        index = build(app, fake_environment(), cache_dir=cache)
        assert index.stats().reparsed == 0
    views = app / "shop" / "views.py"
    text = views.read_text(encoding="utf-8").replace(
        "class HomeView(TemplateView):", "class HomeView(RedirectView):"
    )
    text = text.replace("import TemplateView, View", "import RedirectView, TemplateView, View")
    views.write_text(text, encoding="utf-8")
    index.update_file("shop/views.py", text)
    fresh = build(app, fake_environment(), use_cache=False).graph.to_json()
    assert index.graph.to_json() == fresh
    assert ("shop/views.py:HomeView", "ext:django.views.generic.base.RedirectView") in edge_set(
        fresh, "inherits"
    )
    assert not [s for s, _d in edge_set(fresh, "overrides") if "HomeView" in s]


def test_library_summaries_are_cached_and_signed_in_the_user_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Shared by every repository, keyed by path, size and mtime; a row this user's key
    did not sign is never unpickled (the library is read again)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    app = copy_app(tmp_path)
    first = build(app, fake_environment(), use_cache=True, cache_dir=tmp_path / "c1")
    expected = first.graph.to_json()
    first.close()
    store = tmp_path / "xdg" / "anchor-ls" / "libraries.sqlite3"
    assert store.is_file()
    import sqlite3

    with sqlite3.connect(store) as db:
        paths = {row[0] for row in db.execute("SELECT path FROM summaries")}
        assert str(SITE / "django" / "views" / "generic" / "base.py") in paths
        # a foreign row: the bytes of a pickle that would run code, unsigned
        evil = b"\x00" * 16 + b"cos\nsystem\n(S'touch " + str(tmp_path).encode() + b"/pwned'\ntR."
        db.execute("UPDATE summaries SET blob = ?", (evil,))
    second = build(copy_app(tmp_path / "again"), fake_environment(), cache_dir=tmp_path / "c2")
    assert second.graph.to_json()["edges"] == expected["edges"]
    assert not (tmp_path / "pwned").exists()


@pytest.mark.slow
def test_a_named_interpreter_of_a_virtual_environment_gives_its_packages(tmp_path: Path) -> None:
    """A venv whose site-packages holds the fake packages, named by its python: its search
    path comes from running that interpreter (the user named it), through jedi."""
    pytest.importorskip("jedi")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    for package in ("django", "requests", "fastjson"):
        shutil.copytree(SITE / package, site / package)
    app = copy_app(tmp_path)
    index = build(app, venv / "bin" / "python", use_cache=False)
    data = index.graph.to_json()
    assert index.environment.python == str(venv / "bin" / "python")
    assert edge_set(data, "inherits") == EXPECTED_INHERITS
    assert edge_set(data, "overrides") == EXPECTED_OVERRIDES
    view = next(e for e in data["entities"] if e["id"] == "ext:django.views.generic.base.View")
    assert view["path"] == str(site.resolve() / "django" / "views" / "generic" / "base.py")
    assert json.dumps(data)  # serializable as the CLI writes it


def test_a_class_that_an_edit_puts_below_a_library_class_gets_its_overrides(
    tmp_path: Path,
) -> None:
    """A method whose name no other class of the repository defines is walked only when
    its class is below one outside; which classes are is kept between edits, and an edit
    that moves a base must renew it."""
    app = copy_app(tmp_path)
    index = build(app, fake_environment(), use_cache=False)
    alone = "class Lone:\n    def setup(self, request):\n        pass\n"
    (app / "shop" / "lone.py").write_text(alone, encoding="utf-8")
    index.update_file("shop/lone.py", alone)
    below = "from django.views.generic import View\n\n\n" + alone.replace("Lone:", "Lone(View):")
    (app / "shop" / "lone.py").write_text(below, encoding="utf-8")
    index.update_file("shop/lone.py", below)
    assert ("shop/lone.py:Lone.setup", "ext:django.views.generic.base.View.setup") in edge_set(
        index.graph.to_json(), "overrides"
    )
    assert index.graph.to_json() == build(app, fake_environment(), use_cache=False).graph.to_json()


def test_a_library_file_is_kept_as_an_outline_of_what_names_lead_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Following a name needs a library scope's place, bases, return annotation and the
    bindings of modules and classes: nothing of parameters or function bodies is kept
    (Django's environment held 25 MB of them). A build from the cached outlines gives the
    graph of a build that read the files."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    app = copy_app(tmp_path)
    first = build(app, fake_environment(), cache_dir=tmp_path / "c1")
    externals = first.externals
    assert externals is not None
    module = externals.module("django.views.generic.base")
    assert module is not None
    outline = externals.summary(module)
    assert outline is not None
    scopes = {scope.qualname: scope for scope in outline.scopes}
    assert [b.name for b in scopes["View"].bindings] == [
        "http_method_names",
        "__init__",
        "setup",
        "dispatch",
    ]
    assert (scopes["View.dispatch"].line, scopes["View.dispatch"].end_line) == (10, 12)
    assert scopes["View.dispatch"].bindings == ()  # `handler = ...` is the body's
    assert not hasattr(scopes["View.dispatch"], "params")
    assert not hasattr(scopes["View.dispatch"], "calls")
    expected = first.graph.to_json()
    first.close()
    again = build(app, fake_environment(), cache_dir=tmp_path / "c2")  # outlines cached
    assert again.stats().reparsed == len(again.graph.files())
    assert again.graph.to_json() == expected


def test_a_build_writes_the_outlines_it_read_to_the_library_cache_in_one_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each commit waits for the disk: one per library file took 1-2 s of DRF's first
    index. The statements SQLite runs on the library cache show the transactions."""
    import sqlite3

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    statements: list[str] = []
    connect = sqlite3.connect

    def traced(where: object, *args: object, **kwargs: object) -> sqlite3.Connection:
        db = connect(where, *args, **kwargs)  # type: ignore[arg-type]
        if str(where).endswith("libraries.sqlite3"):
            db.set_trace_callback(statements.append)
        return db

    monkeypatch.setattr(sqlite3, "connect", traced)
    # one process (no prefetch: that one writes what it read in a transaction of its own)
    index = build(copy_app(tmp_path), fake_environment(), cache_dir=tmp_path / "c1", workers=1)
    stored = [s for s in statements if s.startswith("INSERT OR REPLACE INTO summaries")]
    assert len(stored) == len(index.externals.files) > 5  # type: ignore[union-attr]
    # the transactions that store outlines (setting up a new cache file is one more)
    marks = "".join(
        "I" if s in stored else s[0] for s in statements if s in stored or s in ("BEGIN ", "COMMIT")
    )
    assert marks.replace("BC", "") == "B" + "I" * len(stored) + "C"
    index.close()


def test_the_library_files_a_build_imports_are_parsed_by_a_process_of_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a machine that has read no library, the modules the repository imports are
    read ahead by a second process while the files resolve; the build process finds
    their outlines in the library cache, and the graph is the one lazy reading gives."""
    import sqlite3

    from anchor_ls.index import prefetch

    # CI's background installs may keep both cores busy for seconds: the idle-priority
    # prefetch is then ended by design (tests/test_prefetch.py), not what is tested here
    monkeypatch.setattr(prefetch, "STALL_SECONDS", 60.0)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    app = copy_app(tmp_path)
    index = build(app, fake_environment(), cache_dir=tmp_path / "c1", workers=2)
    stats = index.stats()
    externals = index.externals
    assert externals is not None
    needed = set(externals.files)
    assert stats.libraries_prefetched > 0
    assert stats.libraries_read + stats.libraries_prefetched >= len(needed)
    assert stats.libraries_read < len(needed) / 2  # most were in the cache when asked for
    index.close()
    with sqlite3.connect(tmp_path / "xdg" / "anchor-ls" / "libraries.sqlite3") as db:
        stored = {row[0] for row in db.execute("SELECT path FROM summaries")}
    assert needed <= stored
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-lazy"))
    lazy = build(app, fake_environment(), cache_dir=tmp_path / "c2", workers=1)
    assert lazy.stats().libraries_prefetched == 0
    assert lazy.stats().libraries_read == len(needed)
    assert index.graph.to_json() == lazy.graph.to_json()


def test_the_edges_found_while_the_prefetch_ends_make_the_graph_lazy_reading_makes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The prefetch often ends after resolution: the build finds the files' own edges
    meanwhile and adds those outside once it has waited. The graph is the one a build
    that reads every library itself gives."""
    import time

    from anchor_ls.index import facts, prefetch

    real_prefetch, real_inside, real_wait = (
        prefetch.prefetch_outlines,
        facts.inside_edges,
        prefetch.Prefetch.wait,
    )

    def late(externals: object, names: object) -> int:
        time.sleep(1.5)  # still reading when resolution ends
        return real_prefetch(externals, names)  # type: ignore[arg-type]

    found: list[str] = []  # files whose own edges were found, in turn
    found_before_wait: list[int] = []
    monkeypatch.setattr(prefetch, "prefetch_outlines", late)
    monkeypatch.setattr(prefetch, "STALL_SECONDS", 60.0)
    monkeypatch.setattr(
        facts, "inside_edges", lambda *a: found.append(a[0].path) or real_inside(*a)
    )
    monkeypatch.setattr(
        prefetch.Prefetch, "wait", lambda p: found_before_wait.append(len(found)) or real_wait(p)
    )
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    app = copy_app(tmp_path)
    index = build(app, fake_environment(), cache_dir=tmp_path / "c1", workers=2)
    files = len(index.binder.summaries)
    assert found_before_wait == [files]  # every file's, before the prefetch had ended
    assert len(found) == files  # and not again after
    assert index.stats().libraries_prefetched > 0
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-lazy"))
    lazy = build(app, fake_environment(), cache_dir=tmp_path / "c2", workers=1)
    assert lazy.stats().libraries_prefetched == 0
    assert index.graph.to_json() == lazy.graph.to_json()


def test_a_machine_that_has_read_its_libraries_reads_none_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the library cache holds the environment's outlines, a cold build of another
    repository (here: another cache folder) reads them from it as resolution reaches them:
    a read-ahead would walk every body of the repository for nothing left to parse."""
    from anchor_ls.index import prefetch, repository

    monkeypatch.setattr(prefetch, "STALL_SECONDS", 60.0)  # as above: not ended under load
    started: list[int] = []  # prefetch processes started, build by build
    real = repository.Prefetch
    monkeypatch.setattr(repository, "Prefetch", lambda *a: started.append(1) or real(*a))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    app = copy_app(tmp_path)
    first = build(app, fake_environment(), cache_dir=tmp_path / "c1", workers=2)
    assert first.stats().libraries_prefetched > 0 and started == [1]
    first.close()
    again = build(app, fake_environment(), cache_dir=tmp_path / "c2", workers=2)
    assert started == [1]
    assert again.stats().libraries_read == 0  # every outline came from the cache
    assert again.graph.to_json() == first.graph.to_json()


def test_a_library_file_changed_after_the_prefetch_read_it_is_read_again_or_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between the prefetch and the build's own reading, one library file is deleted and
    one becomes bytes that are not Python: no error, no edge to what they defined, and
    the one that is there but cannot be read is named in the problems."""
    from anchor_ls.index.externals import Externals
    from anchor_ls.index.prefetch import prefetch_outlines

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    site = tmp_path / "site-packages"
    shutil.copytree(SITE, site)
    env = Environment(paths=(str(site), os.path.dirname(os.__file__)), stubs=typeshed_stdlib())
    app = copy_app(tmp_path)
    ahead = Externals(env)
    names = ["requests.Session", "fastjson.Encoder", "django.views.generic.View"]
    assert prefetch_outlines(ahead, names) > 0
    ahead.close()
    (site / "requests" / "models.py").unlink()
    stub = site / "fastjson" / "_speedups.pyi"
    stub.write_bytes(b"class Encoder:\x00\n")
    index = build(app, env, cache_dir=tmp_path / "c", workers=1)
    data = index.graph.to_json()
    targets = {e["dst"] for e in data["edges"]}
    assert not {t for t in targets if t.startswith(("ext:requests.models", "ext:fastjson"))}
    assert "ext:requests.sessions.Session.get" in targets  # the rest as before
    assert ("shop/views.py:ArticleView", "ext:django.views.generic.base.View") in edge_set(
        data, "inherits"
    )
    problem = index.problems[str(stub)]
    assert problem.kind == "library"
    assert "NUL bytes" in problem.message and "left out" in problem.message


def test_the_prefetch_follows_what_call_sites_reach_through_an_imported_name() -> None:
    """`import asyncio` names a package; `asyncio.sleep(...)` in a body names the module
    of its own that resolution will read (asyncio/tasks.pyi): read ahead too."""
    from anchor_ls.index.prefetch import imported_names
    from anchor_ls.syntax.parse import summarize
    from anchor_ls.syntax.summary import pack_bodies

    source = (
        b"import asyncio\nimport a.b\nfrom os import path as p\nfrom . import sibling\n"
        b"from shop import models\n\n\ndef f():\n    asyncio.sleep(1)\n    p.join('x')\n"
        b"    a.b.c().d()\n    sibling.g()\n    models.h()\n    len(p)\n"
    )
    summary = pack_bodies(summarize("shop/m.py", source))
    assert imported_names([summary], {"shop"}) == ["a.b", "asyncio", "os.path"]
    assert imported_names([summary], {"shop"}, calls=True) == [
        "a.b",
        "a.b.c",
        "a.b.c().d",
        "asyncio",
        "asyncio.sleep",
        "os.path",
        "os.path.join",
    ]


def test_the_prefetch_follows_what_bodies_read_through_an_imported_name() -> None:
    """`except json.JSONDecodeError`, `q = asyncio.Queue`, a dict of classes: no call, yet
    resolution reads json/decoder.pyi and asyncio/queues.pyi for them (DRF's tail read
    such modules itself, one at a time, after the prefetch had ended)."""
    from anchor_ls.index.prefetch import imported_names
    from anchor_ls.syntax.parse import summarize
    from anchor_ls.syntax.summary import pack_bodies

    source = (
        b"import asyncio\nimport json\nfrom os import path as p\n\n\ndef f():\n"
        b"    try:\n        q = asyncio.Queue\n    except json.JSONDecodeError:\n        pass\n"
        b"    return {p.sep: asyncio.events.AbstractEventLoop}\n"
    )
    summary = pack_bodies(summarize("shop/m.py", source))
    assert imported_names([summary], {"shop"}, calls=True) == [
        "asyncio",
        "asyncio.Queue",
        "asyncio.events",
        "asyncio.events.AbstractEventLoop",
        "json",
        "json.JSONDecodeError",
        "os.path",
        "os.path.sep",
    ]


def test_the_prefetch_reads_the_modules_an_imported_package_star_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`from django.contrib.postgres import fields` re-exported by a compat module and read
    as `compat.fields.ArrayField` elsewhere: the prefetch cannot see the name, but the
    package's `from .array import *` says where any name of it is looked up (but for the
    other platform's module of a pair, as typeshed's os/path.pyi has them)."""
    from anchor_ls.index.externals import Externals
    from anchor_ls.index.prefetch import prefetch_outlines

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    other = "unix_events" if sys.platform == "win32" else "windows_events"
    package = tmp_path / "site" / "pg" / "fields"
    package.mkdir(parents=True)
    (tmp_path / "site" / "pg" / "__init__.py").write_text("", encoding="utf-8")
    (package / "__init__.py").write_text(
        "from .array import *\nfrom .ranges import *\nfrom .jsonb import JSONField\n"
        f"from .{other} import *\n",
        encoding="utf-8",
    )
    made = (("array", "ArrayField"), ("ranges", "RangeField"), ("jsonb", "JSONField"))
    for name, cls in (*made, (other, "Loop")):
        (package / f"{name}.py").write_text(f"class {cls}:\n    pass\n", encoding="utf-8")
    (package / "unused.py").write_text("class Unused:\n    pass\n", encoding="utf-8")
    ahead = Externals(Environment(paths=(str(tmp_path / "site"),), stubs=()))
    prefetch_outlines(ahead, ["pg.fields"])
    read = {Path(path).name for path in ahead.files}
    ahead.close()
    assert read == {"__init__.py", "array.py", "ranges.py"}


def test_a_method_a_library_base_defines_is_called_through_self_and_instances(
    tmp_path: Path,
) -> None:
    """`self.setup(request)` in a view, `Client().get(url)` of a subclass of a library's
    Session: the repository's class defines no such method, its base from outside does
    (the commonest call of a library there is: Django's and DRF's `self.get_object()`).
    The call reaches it one step out, as `super().name()` does."""
    app = tmp_path / "app"
    (app / "site").mkdir(parents=True)
    (app / "site" / "__init__.py").write_text("", encoding="utf-8")
    (app / "site" / "pages.py").write_text(
        "from django.views.generic.base import TemplateView, View\n"
        "from requests import Session\n\n\n"
        "class Page(View):\n"
        "    def get(self, request):\n"
        "        self.setup(request)\n"
        "        return self.dispatch(request)\n\n\n"
        "class Home(TemplateView):\n"
        "    def show(self):\n"
        "        return self.render_to_response({})\n\n\n"
        "class Client(Session):\n"
        "    pass\n\n\n"
        "def fetch(url):\n"
        "    return Client().get(url).json()\n",
        encoding="utf-8",
    )
    data = build(app, fake_environment(), use_cache=False).graph.to_json()
    calls = {(e["src"], e["dst"]): e.get("via") for e in data["edges"] if e["kind"] == "calls"}
    base = "ext:django.views.generic.base"
    assert calls == {
        ("site/pages.py:Page.get", f"{base}.View.setup"): "self",
        ("site/pages.py:Page.get", f"{base}.View.dispatch"): "self",
        ("site/pages.py:Home.show", f"{base}.TemplateResponseMixin.render_to_response"): "self",
        ("site/pages.py:fetch", "site/pages.py:Client"): "constructor",
        ("site/pages.py:fetch", "ext:requests.sessions.Session.get"): "attribute",
        ("site/pages.py:fetch", "ext:requests.models.Response.json"): "flow",
    }
    without = build(app, Environment(), use_cache=False).graph.to_json()
    internal = {k for k in calls if not k[1].startswith(EXTERNAL_PREFIX)}
    assert {(e["src"], e["dst"]) for e in without["edges"] if e["kind"] == "calls"} == internal


@pytest.mark.parametrize("start", ["outside", "inside"])
def test_an_edit_that_moves_a_base_in_or_out_moves_the_self_calls_with_it(
    tmp_path: Path, start: str
) -> None:
    """`self.setup()` of a subclass in another file reaches the library's method only
    while the base's file puts a library class below it: an edit of that file alone
    gives the graph a fresh build has."""
    app = tmp_path / "app"
    (app / "site").mkdir(parents=True)
    (app / "site" / "__init__.py").write_text("", encoding="utf-8")
    outside = "from django.views.generic import View\n\n\nclass Base(View):\n    pass\n"
    inside = "class Base:\n    def setup(self, request):\n        pass\n"
    before, after = (outside, inside) if start == "outside" else (inside, outside)
    (app / "site" / "base.py").write_text(before, encoding="utf-8")
    (app / "site" / "pages.py").write_text(
        "from .base import Base\n\n\n"
        "class Page(Base):\n"
        "    def get(self, request):\n"
        "        return self.setup(request)\n",
        encoding="utf-8",
    )
    index = build(app, fake_environment(), use_cache=False)
    (app / "site" / "base.py").write_text(after, encoding="utf-8")
    index.update_file("site/base.py", after)
    fresh = build(app, fake_environment(), use_cache=False).graph.to_json()
    assert index.graph.to_json() == fresh
    target = (
        "ext:django.views.generic.base.View.setup"
        if after is outside
        else "site/base.py:Base.setup"
    )
    assert ("site/pages.py:Page.get", target) in edge_set(fresh, "calls")


def test_a_package_installed_in_editable_mode_by_a_finder_is_found(tmp_path: Path) -> None:
    """`pip install -e` of a flat-layout project (setuptools >= 64) puts no folder on
    sys.path: a `__editable___NAME_finder.py` in site-packages maps the top-level name to
    the project's folder at import time. Its MAPPING is read (a literal, never run), so a
    sibling project under development is a library like any other; a mapping into the
    repository (the repository installed editable) stays the repository's."""
    app = tmp_path / "app"
    (app / "site").mkdir(parents=True)
    (app / "site" / "__init__.py").write_text("def run():\n    pass\n", encoding="utf-8")
    (app / "site" / "pages.py").write_text(
        "import mylib\nimport shadow\n\n\n"
        "class Page(mylib.Base):\n"
        "    def hook(self):\n"
        "        return mylib.helper()\n\n\n"
        "def other():\n"
        "    return shadow.run()\n",
        encoding="utf-8",
    )
    sibling = tmp_path / "sibling" / "mylib"
    sibling.mkdir(parents=True)
    (sibling / "__init__.py").write_text(
        "class Base:\n    def hook(self):\n        pass\n\n\ndef helper():\n    pass\n",
        encoding="utf-8",
    )
    site, ran = tmp_path / "site-packages", tmp_path / "ran"
    site.mkdir()
    finder = (
        "import pathlib\n"
        f"pathlib.Path({str(ran)!r}).touch()\n"
        "MAPPING: dict[str, str] = {{'mylib': {mylib!r}, 'shadow': {shadow!r}}}\n"
        "NAMESPACES: dict[str, list[str]] = {{}}\n"
    ).format(mylib=str(sibling), shadow=str(app / "site"))
    (site / "__editable___mylib_0_1_finder.py").write_text(finder, encoding="utf-8")
    (site / "__editable__.mylib-0.1.pth").write_text(
        "import __editable___mylib_0_1_finder; __editable___mylib_0_1_finder.install()\n",
        encoding="utf-8",
    )
    index = build(app, Environment(paths=(str(site),)), use_cache=False)
    data = index.graph.to_json()
    assert edge_set(data, "inherits") == {("site/pages.py:Page", "ext:mylib.Base")}
    assert edge_set(data, "overrides") == {("site/pages.py:Page.hook", "ext:mylib.Base.hook")}
    assert ("site/pages.py:Page.hook", "ext:mylib.helper") in edge_set(data, "calls")
    assert index.graph.unresolved("site/pages.py:Page.hook") == 0
    external = {e["id"]: e["path"] for e in data["entities"] if e.get("external")}
    assert external["ext:mylib.Base"] == str(sibling / "__init__.py")
    assert not [p for p in external.values() if p.startswith(str(app))]
    assert index.graph.unresolved("site/pages.py:other") == 1  # as a package not installed
    assert not ran.exists()


@pytest.mark.parametrize("damage", ["garbage", "a folder", "no folder"])
def test_a_library_cache_that_cannot_be_used_is_said_not_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    """A libraries.sqlite3 of garbage is rebuilt, one that cannot be opened (a folder in
    its place, a user cache folder that is a file) is done without: either way the graph
    is the one a sound cache gives, and the index says what happened to the cache, as it
    does of its own (it said nothing: Externals kept the reason to itself)."""
    xdg = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    expected = build(copy_app(tmp_path / "sound"), fake_environment(), use_cache=False)
    store = xdg / "anchor-ls" / "libraries.sqlite3"
    store.parent.mkdir(parents=True)
    if damage == "garbage":
        store.write_bytes(b"\x13 not a database " * 300)
    elif damage == "a folder":
        store.mkdir()
    else:
        shutil.rmtree(xdg)
        xdg.write_text("a file where the user cache folder should be", encoding="utf-8")
    index = build(copy_app(tmp_path), fake_environment(), cache_dir=tmp_path / "cache")
    assert index.graph.to_json()["edges"] == expected.graph.to_json()["edges"]
    said = [p.message for p in index.problems.values() if "libraries.sqlite3" in p.path]
    assert len(said) == 1, index.problems
    assert ("rebuilt" if damage == "garbage" else "libraries read every time") in said[0]


@pytest.mark.skipif(sys.platform == "win32", reason="the POSIX side of the stubs")
def test_a_stub_that_star_imports_one_module_per_platform_leads_to_this_ones(
    tmp_path: Path,
) -> None:
    """typeshed's os/path.pyi is `if sys.platform == "win32": from ntpath import *` else
    `from posixpath import *`, asyncio's the same with windows_events and unix_events:
    the first star import held the name, so every `os.path.join()` led to ntpath.pyi."""
    assert typeshed_stdlib(), "the test extras install jedi, whose typeshed this reads"
    app = tmp_path / "app"
    (app / "p").mkdir(parents=True)
    (app / "p" / "__init__.py").write_text("", encoding="utf-8")
    (app / "p" / "m.py").write_text(
        "import asyncio\nimport os.path\n\n\n"
        "def f(p):\n"
        "    asyncio.SelectorEventLoop()\n"
        "    return os.path.join(p, 'x')\n",
        encoding="utf-8",
    )
    data = build(app, fake_environment(), use_cache=False).graph.to_json()
    assert {d for s, d in edge_set(data, "calls") if s == "p/m.py:f"} == {
        "ext:posixpath.join",
        "ext:asyncio.unix_events._UnixSelectorEventLoop",
    }


def test_a_name_a_star_import_from_a_library_brings_is_called_there(tmp_path: Path) -> None:
    """`from requests import *` then `get(url)`: no scope of the repository binds the name,
    the library module does. The call was unresolved (as a typo would be); it reaches the
    library's function, and a builtin is still the builtin. Adding a repository module of
    that name takes the star import over, as a fresh build has it."""
    app = tmp_path / "app"
    (app / "p").mkdir(parents=True)
    (app / "p" / "__init__.py").write_text("", encoding="utf-8")
    (app / "p" / "m.py").write_text(
        "from requests import *\n\n\ndef f(url):\n    len(url)\n    return session().get(url)\n",
        encoding="utf-8",
    )
    index = build(app, fake_environment(), use_cache=False)
    calls = {d for s, d in edge_set(index.graph.to_json(), "calls") if s == "p/m.py:f"}
    assert calls == {"ext:requests.sessions.session", "ext:requests.sessions.Session.get"}
    assert index.graph.unresolved("p/m.py:f") == 0
    without = build(app, Environment(), use_cache=False)
    assert without.graph.unresolved("p/m.py:f") == 0  # outside, as any call of a library
    shadow = "def session():\n    pass\n"
    (app / "requests.py").write_text(shadow, encoding="utf-8")
    index.update_file("requests.py", shadow)
    fresh = build(app, fake_environment(), use_cache=False).graph.to_json()
    assert index.graph.to_json() == fresh
    assert ("p/m.py:f", "requests.py:session") in edge_set(fresh, "calls")


def test_the_repositorys_own_virtual_environment_is_a_library_folder(tmp_path: Path) -> None:
    """`.venv` in the repository (uv's and poetry's in-project default) is where its
    packages are: named (`--python .venv/bin/python`), its site-packages is read like any
    other, though it lies inside the repository (the index lists none of its files). The
    search path's folders of the repository proper stay the repository's."""
    app = copy_app(tmp_path)
    site = app / ".venv" / "lib" / "python3.11" / "site-packages"
    shutil.copytree(SITE, site)
    (app / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n", encoding="utf-8")
    stdlib = os.path.dirname(os.__file__)
    env = Environment(paths=(str(site), str(app), str(app / "shop"), stdlib))
    index = build(app, env, use_cache=False)
    assert index.environment.paths == (str(site.resolve()), os.path.realpath(stdlib))
    data = index.graph.to_json()
    assert edge_set(data, "inherits") == EXPECTED_INHERITS
    view = next(e for e in data["entities"] if e["id"] == "ext:django.views.generic.base.View")
    assert view["path"] == str(site.resolve() / "django" / "views" / "generic" / "base.py")
    assert index.stats().files == len([p for p in (app / "shop").iterdir() if p.suffix == ".py"])


def test_what_with_binds_from_a_library_is_what_its_enter_returns(tmp_path: Path) -> None:
    """`with open(p) as fh: fh.read()`, the commonest way to read a file: `as` bound
    nothing for a value from outside, so `fh.read()` was unresolved. It binds what
    `__enter__` returns; typeshed's `_IOBase.__enter__(self) -> Self` is the instance it
    is called on (a TextIOWrapper), not _IOBase."""
    assert typeshed_stdlib(), "the test extras install jedi, whose typeshed this reads"
    app = tmp_path / "app"
    (app / "p").mkdir(parents=True)
    (app / "p" / "__init__.py").write_text("", encoding="utf-8")
    (app / "p" / "m.py").write_text(
        "def f(p):\n    with open(p) as fh:\n        return fh.read()\n", encoding="utf-8"
    )
    index = build(app, fake_environment(), use_cache=False)
    calls = {d for s, d in edge_set(index.graph.to_json(), "calls") if s == "p/m.py:f"}
    assert calls == {"ext:_io._TextIOBase.read"}
    assert index.graph.unresolved("p/m.py:f") == 0


BASES = FIXTURE / "bases"  # the repository of fixtures/libraries/bases, on the fake `kit`
KIT = "ext:kit.core"


def build_bases(tmp_path: Path, python: object = None) -> dict:
    root = tmp_path / "bases"
    shutil.copytree(BASES, root)
    environment = fake_environment() if python is None else python
    return build(root, environment, use_cache=False).graph.to_json()


def calls_from(data: dict, rel: str) -> dict[tuple[str, str], str | None]:
    return {
        (e["src"], e["dst"]): e.get("via")
        for e in data["edges"]
        if e["kind"] == "calls" and e["src"].startswith(rel)
    }


def test_a_name_only_a_later_library_base_defines_is_found_along_the_whole_mro(
    tmp_path: Path,
) -> None:
    """`class Two(First, Second)` then `self.second()`: only the first base from outside
    was asked, so the call reached nothing; `class Diamond(Second, Third)` then
    `self.shared()` reached Common.shared through Second's own MRO, where Python's
    (Diamond, Second, Third, Common) finds Third.shared first. Every base from outside is
    asked, in C3 order, the first definition wins (gallery/multi.py)."""
    data = build_bases(tmp_path)
    m = "gallery/multi.py"
    assert calls_from(data, m) == {
        (f"{m}:Two.run", f"{KIT}.Second.second"): "self",
        (f"{m}:Two.run", f"{KIT}.Common.shared"): "self",
        (f"{m}:Diamond.go", f"{KIT}.Third.shared"): "self",
        (f"{m}:SuperDiamond.shared", f"{KIT}.Third.shared"): "super",
        (f"{m}:use", f"{m}:Two"): "constructor",
        (f"{m}:use", f"{m}:Diamond"): "constructor",
        (f"{m}:use", f"{KIT}.Second.second"): "attribute",
        (f"{m}:use", f"{KIT}.Third.shared"): "attribute",
    }
    assert {(s, d) for s, d in edge_set(data, "overrides") if s.startswith(m)} == {
        (f"{m}:Two.both", f"{KIT}.Second.both"),
        (f"{m}:SuperDiamond.shared", f"{KIT}.Third.shared"),
    }
    without = build_bases(tmp_path / "bare", Environment())
    assert calls_from(without, m) == {
        (f"{m}:use", f"{m}:Two"): "constructor",
        (f"{m}:use", f"{m}:Diamond"): "constructor",
    }


def test_a_repository_method_hides_a_library_one_only_where_the_mro_puts_it_first(
    tmp_path: Path,
) -> None:
    """gallery/hidden.py. `self.save()` in `class Saver(Base)`, whose subclass Custom
    overrides save: the call reached Custom.save alone, though on a Saver it runs
    Base.save (a site with a target in the repository never asked outside). `class
    Mixed(Base, Local)`: `self.save()`, `super().save()` below it and `Mixed().save()`
    reached Local.save alone, though the MRO (Mixed, Base, Local) finds Base.save first.
    Both now reach the library's definition too; the repository's edges stay as they are
    without an environment (the binder cannot know what Base defines). `class
    Front(Local, Base)` puts Local first: no edge to Base.save."""
    data = build_bases(tmp_path)
    h = "gallery/hidden.py"
    internal = {
        (f"{h}:Saver.run", f"{h}:Custom.save"): "self",
        (f"{h}:Mixed.run", f"{h}:Local.save"): "self",
        (f"{h}:Mixed.run", f"{h}:Local.other"): "self",
        (f"{h}:Mixed.run", f"{h}:Below.save"): "self",
        (f"{h}:Below.save", f"{h}:Local.save"): "super",
        (f"{h}:Front.run", f"{h}:Local.save"): "self",
        (f"{h}:use", f"{h}:Mixed"): "constructor",
        (f"{h}:use", f"{h}:Front"): "constructor",
        (f"{h}:use", f"{h}:Local.save"): "attribute",
    }
    assert calls_from(data, h) == {
        **internal,
        (f"{h}:Saver.run", f"{KIT}.Base.save"): "self",
        (f"{h}:Mixed.run", f"{KIT}.Base.save"): "self",
        (f"{h}:Mixed.run", f"{KIT}.Base.other"): "self",
        (f"{h}:Below.save", f"{KIT}.Base.save"): "super",
        (f"{h}:use", f"{KIT}.Base.save"): "attribute",
    }
    assert {(s, d) for s, d in edge_set(data, "overrides") if s.startswith(h)} == {
        (f"{h}:Custom.save", f"{KIT}.Base.save"),
        (f"{h}:Below.save", f"{KIT}.Base.save"),
    }
    without = build_bases(tmp_path / "bare", Environment())
    assert calls_from(without, h) == internal


def test_typing_special_forms_and_aliases_as_bases_are_linked(tmp_path: Path) -> None:
    """gallery/forms.py. typeshed declares `Protocol: _SpecialForm`, `TypedDict:
    _SpecialForm`, `Generic: type[_Generic]` and `List = _Alias()`: a class deriving from
    one had no BASE (Generic's was typeshed's check-only `_Generic`). An alias is the class
    it stands for at run time (`List[int]` is `list`), a special form is an entity of its
    own, located at its declaration in typing.pyi; nothing of either's insides is linked."""
    stubs = typeshed_stdlib()
    assert stubs, "the test extras install jedi, whose typeshed this reads"
    data = build_bases(tmp_path)
    f = "gallery/forms.py"
    assert {(s, d) for s, d in edge_set(data, "inherits") if s.startswith(f)} == {
        (f"{f}:Shape", "ext:typing.Protocol"),
        (f"{f}:Box", "ext:typing.Generic"),
        (f"{f}:Holder", "ext:typing.Protocol"),
        (f"{f}:Numbers", "ext:builtins.list"),
        (f"{f}:Table", "ext:builtins.dict"),
        (f"{f}:Counts", "ext:collections.defaultdict"),
        (f"{f}:Point", "ext:typing.NamedTuple"),
        (f"{f}:Movie", "ext:typing.TypedDict"),
    }
    assert not [s for s, _d in edge_set(data, "overrides") if s.startswith(f)]
    entities = {e["id"]: e for e in data["entities"]}
    typing_stub = os.path.join(stubs[0], "typing.pyi")
    lines = Path(typing_stub).read_text(encoding="utf-8").splitlines()
    for name, declared in [
        ("Protocol", "Protocol: _SpecialForm"),
        ("TypedDict", "TypedDict: _SpecialForm"),
        ("Generic", "Generic: type[_Generic]"),
    ]:
        form = entities[f"ext:typing.{name}"]
        assert (form["kind"], form["path"]) == ("class", typing_stub)
        assert lines[form["line"] - 1].strip() == declared
    assert not [e for e in data["edges"] if e["src"].startswith(EXTERNAL_PREFIX)]


def test_a_mixins_super_call_reaches_the_library_base_its_subclasses_put_after_it(
    tmp_path: Path,
) -> None:
    """`class LoginMixin:` calling `super().dispatch(request)`, mixed into `class
    Page(LoginMixin, View)` with Django's View: Python runs View.dispatch there, the
    commonest shape of Django's own mixins (AccessMixin, ContextMixin); the mixin's own
    MRO has nothing after it, so the call was counted unresolved."""
    app = tmp_path / "app"
    (app / "site").mkdir(parents=True)
    (app / "site" / "__init__.py").write_text("", encoding="utf-8")
    (app / "site" / "mixins.py").write_text(
        "class LoginMixin:\n    def dispatch(self, request):\n"
        "        return super().dispatch(request)\n",
        encoding="utf-8",
    )
    (app / "site" / "pages.py").write_text(
        "from django.views.generic.base import View\n\nfrom site.mixins import LoginMixin\n\n\n"
        "class Page(LoginMixin, View):\n    pass\n",
        encoding="utf-8",
    )
    data = build(app, fake_environment(), use_cache=False).graph.to_json()
    assert calls_from(data, "site/mixins.py") == {
        ("site/mixins.py:LoginMixin.dispatch", "ext:django.views.generic.base.View.dispatch"): (
            "super"
        )
    }
    bare = build(app, Environment(), use_cache=False).graph.to_json()
    assert calls_from(bare, "site/mixins.py") == {}
