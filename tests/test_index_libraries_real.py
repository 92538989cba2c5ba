"""Real code on real libraries: the djangorestframework sdist with Django installed in the
environment the index is pointed at, and the Flask sdist (a src/ layout) with Werkzeug.
The expected facts are written by hand from the sources of the pinned versions."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.sdists import DRF, FLASK, Pair, sdist_with_env

from anchor_ls.index import CALLS, EXTERNAL_PREFIX, INHERITS, OVERRIDES, Environment, Index

pytestmark = pytest.mark.slow


def _fetched(pair: Pair) -> tuple[Path, Path]:
    found = sdist_with_env(pair)
    if isinstance(found, str):  # a check that could not run is no pass (CI has PyPI)
        pytest.fail(found)
    return found


@pytest.fixture(scope="module")
def drf() -> tuple[Path, Path]:
    return _fetched(DRF)


@pytest.fixture(scope="module")
def flask() -> tuple[Path, Path]:
    return _fetched(FLASK)


def _in_environment(index: Index, ident: str, python: Path, rel: str, starts: str) -> None:
    """ident is an external entity at its definition in the file rel of python's venv."""
    entity = index.graph.entity(ident)
    assert entity is not None and entity.external, ident
    site = Path(entity.path)
    assert site.parts[-len(Path(rel).parts) :] == Path(rel).parts, entity.path
    assert os.path.realpath(python.parent.parent) in os.path.realpath(site)
    assert site.read_text(encoding="utf-8").splitlines()[entity.line - 1].startswith(starts)


def _internal_edges(index: Index) -> list[dict]:
    return [e for e in index.graph.to_json()["edges"] if not e["dst"].startswith(EXTERNAL_PREFIX)]


def test_apiview_inherits_and_overrides_djangos_view(drf: tuple[Path, Path]) -> None:
    root, python = drf
    index = Index(root, python=python, use_cache=False)
    index.build()
    graph = index.graph
    assert graph.bases("rest_framework/views.py:APIView") == ["ext:django.views.generic.base.View"]
    assert graph.out(OVERRIDES, "rest_framework/views.py:APIView.dispatch") == [
        "ext:django.views.generic.base.View.dispatch"
    ]
    view = "ext:django.views.generic.base.View"
    _in_environment(index, view, python, "django/views/generic/base.py", "class View")
    assert graph.entity(view).kind == "class"  # type: ignore[union-attr]
    # GenericAPIView's base is DRF's own: the first step out is APIView's alone
    assert graph.out(INHERITS, "rest_framework/generics.py:GenericAPIView") == [
        "rest_framework/views.py:APIView"
    ]
    assert index.problems == {}


def _with_and_without_environment(root: Path, python: Path) -> tuple[Index, Index]:
    """root built with python's packages, and with none at all."""
    with_env = Index(root, python=python, use_cache=False)
    with_env.build()
    bare = Index(root, python=Environment(), use_cache=False)
    bare.build()
    return with_env, bare


def test_drfs_own_graph_is_the_same_without_the_environment(drf: tuple[Path, Path]) -> None:
    with_env, bare = _with_and_without_environment(*drf)
    assert _internal_edges(with_env) == _internal_edges(bare)
    assert len(with_env.graph.external_targets()) > 100


# Flask 3.1.0 on Werkzeug 3.1.3. wrappers.py: `from werkzeug.wrappers import Request as
# RequestBase` (werkzeug/wrappers/__init__.py re-exports it from .request), `class
# Request(RequestBase)`, whose on_json_loading_failed and _load_form_data redefine
# Werkzeug's; helpers.py: `from werkzeug.utils import redirect as _wz_redirect` called in
# redirect, `from werkzeug.exceptions import abort as _wz_abort` called in abort;
# json/tag.py calls werkzeug.http's http_date and parse_date; config.py import_string;
# the two methods call Werkzeug's through super().
WRAPPERS = "src/flask/wrappers.py"
WZ_REQUEST = "ext:werkzeug.wrappers.request.Request"
WZ_RESPONSE = "ext:werkzeug.wrappers.response.Response"
FLASK_CALLS = {
    ("src/flask/helpers.py:redirect", "ext:werkzeug.utils.redirect"),
    ("src/flask/helpers.py:abort", "ext:werkzeug.exceptions.abort"),
    ("src/flask/json/tag.py:TagDateTime.to_json", "ext:werkzeug.http.http_date"),
    ("src/flask/json/tag.py:TagDateTime.to_python", "ext:werkzeug.http.parse_date"),
    ("src/flask/config.py:Config.from_object", "ext:werkzeug.utils.import_string"),
    # `super().on_json_loading_failed(e)`, `super()._load_form_data()`: Werkzeug's
    (f"{WRAPPERS}:Request.on_json_loading_failed", f"{WZ_REQUEST}.on_json_loading_failed"),
    (f"{WRAPPERS}:Request._load_form_data", f"{WZ_REQUEST}._load_form_data"),
}


def test_flasks_request_and_response_are_werkzeugs_one_step_out(
    flask: tuple[Path, Path],
) -> None:
    root, python = flask
    index = Index(root, python=python, use_cache=False)
    index.build()
    graph = index.graph
    assert graph.bases(f"{WRAPPERS}:Request") == [WZ_REQUEST]
    assert graph.bases(f"{WRAPPERS}:Response") == [WZ_RESPONSE]
    for method in ("on_json_loading_failed", "_load_form_data"):
        assert graph.out(OVERRIDES, f"{WRAPPERS}:Request.{method}") == [f"{WZ_REQUEST}.{method}"]
        _in_environment(
            index, f"{WZ_REQUEST}.{method}", python, "werkzeug/wrappers/request.py", "    def "
        )
    _in_environment(index, WZ_REQUEST, python, "werkzeug/wrappers/request.py", "class Request(")
    _in_environment(index, WZ_RESPONSE, python, "werkzeug/wrappers/response.py", "class Response(")
    for src, dst in sorted(FLASK_CALLS):
        assert dst in graph.out(CALLS, src), (src, dst)
    _in_environment(
        index, "ext:werkzeug.utils.redirect", python, "werkzeug/utils.py", "def redirect("
    )
    # testing.py: `import werkzeug.test`, `class EnvironBuilder(werkzeug.test.EnvironBuilder)`
    # (a base named through the module), `class FlaskClient(Client)` (imported from it)
    assert graph.bases("src/flask/testing.py:EnvironBuilder") == [
        "ext:werkzeug.test.EnvironBuilder"
    ]
    assert graph.bases("src/flask/testing.py:FlaskClient") == ["ext:werkzeug.test.Client"]
    assert index.problems == {}


def test_flasks_own_graph_is_the_same_without_the_environment(flask: tuple[Path, Path]) -> None:
    with_env, bare = _with_and_without_environment(*flask)
    assert _internal_edges(with_env) == _internal_edges(bare)
    assert not [e for e in _internal_edges(with_env) if e["src"].startswith(EXTERNAL_PREFIX)]
    assert with_env.graph.external_targets()
    assert not bare.graph.external_targets()
