"""The agent's hierarchy answers (MCP tool and command line) reach into libraries: a class's
bases outside the repository, a method's overridden definition outside, each with its
absolute file and line and `"external": true` (fixtures/libraries, places written by hand)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from support.library_env import SITE_PACKAGES, copy_app, make_environment

from anchor_ls.agent.queries import Queries
from anchor_ls.index import Environment, Index

ANCHOR_LS = shutil.which("anchor-ls", path=str(Path(sys.executable).parent))
GENERIC = str(SITE_PACKAGES / "django" / "views" / "generic" / "base.py")
VIEW = {
    "id": "ext:django.views.generic.base.View",
    "kind": "class",
    "path": GENERIC,
    "line": 1,
    "external": True,
}
VIEW_DISPATCH = {
    "id": "ext:django.views.generic.base.View.dispatch",
    "kind": "method",
    "path": GENERIC,
    "line": 10,
    "external": True,
}


def test_hierarchy_lists_bases_and_overridden_definitions_outside(tmp_path: Path) -> None:
    app = copy_app(tmp_path)
    index = Index(
        app, cache_dir=tmp_path / "cache", python=Environment(paths=(str(SITE_PACKAGES),))
    )
    index.build()
    q = Queries(index)
    special = q.hierarchy("SpecialArticleView")
    assert special["mro"] == [
        {"id": "shop/views.py:ArticleView", "kind": "class", "path": "shop/views.py", "line": 6},
        VIEW,
    ]
    assert q.hierarchy("ArticleView.dispatch")["overridden"] == [VIEW_DISPATCH]
    nearest_first = q.hierarchy("SpecialArticleView.dispatch")["overridden"]
    assert [o["id"] for o in nearest_first] == [
        "shop/views.py:ArticleView.dispatch",
        "ext:django.views.generic.base.View.dispatch",
    ]
    assert q.hierarchy("ArticleView.dispatch")["overrides"] == [
        {
            "id": "shop/views.py:SpecialArticleView.dispatch",
            "kind": "method",
            "path": "shop/views.py",
            "line": 15,
        }
    ]


def test_the_hierarchy_command_takes_the_environment(tmp_path: Path) -> None:
    app = copy_app(tmp_path)
    python = make_environment(tmp_path / "env")
    assert ANCHOR_LS is not None
    run = subprocess.run(
        [ANCHOR_LS, "hierarchy", "ArticleView", str(app), "--python", str(python), "--json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["mro"] == [VIEW]
    text = subprocess.run(
        [ANCHOR_LS, "hierarchy", "ArticleView.dispatch", str(app), "--python", str(python)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert f"  ext:django.views.generic.base.View.dispatch  ({GENERIC}:10)" in text.stdout
