"""Real code on a real library: the djangorestframework sdist, with Django installed in
the environment the index is pointed at."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.drf import drf_with_django

from anchor_ls.index import EXTERNAL_PREFIX, INHERITS, OVERRIDES, Environment, Index

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def drf() -> tuple[Path, Path]:
    found = drf_with_django()
    if isinstance(found, str):
        pytest.skip(found)
    return found


def test_apiview_inherits_and_overrides_djangos_view(drf: tuple[Path, Path]) -> None:
    root, python = drf
    index = Index(root, python=python, use_cache=False)
    index.build()
    graph = index.graph
    assert graph.bases("rest_framework/views.py:APIView") == ["ext:django.views.generic.base.View"]
    assert graph.out(OVERRIDES, "rest_framework/views.py:APIView.dispatch") == [
        "ext:django.views.generic.base.View.dispatch"
    ]
    view = graph.entity("ext:django.views.generic.base.View")
    assert view is not None and view.external and view.kind == "class"
    site = Path(view.path)
    assert site.parts[-4:] == ("django", "views", "generic", "base.py")
    assert os.path.realpath(python.parent.parent) in os.path.realpath(site)
    assert site.read_text(encoding="utf-8").splitlines()[view.line - 1].startswith("class View")
    # GenericAPIView's base is DRF's own: the first step out is APIView's alone
    assert graph.out(INHERITS, "rest_framework/generics.py:GenericAPIView") == [
        "rest_framework/views.py:APIView"
    ]
    assert index.problems == {}


def test_drfs_own_graph_is_the_same_without_the_environment(drf: tuple[Path, Path]) -> None:
    root, python = drf
    with_env = Index(root, python=python, use_cache=False)
    with_env.build()
    bare = Index(root, python=Environment(), use_cache=False)
    bare.build()

    def internal(index: Index) -> list[dict]:
        edges = index.graph.to_json()["edges"]
        return [e for e in edges if not e["dst"].startswith(EXTERNAL_PREFIX)]

    assert internal(with_env) == internal(bare)
    assert len(with_env.graph.external_targets()) > 100
