"""Tags of definitions that lead out of the repository (fixtures/libraries): BASE and
OVERRIDES list external targets in every policy, OVERRIDDEN_BY the repository's overrides,
calls into libraries only the dense CALLS_EXTERNAL; materialized and stripped byte for byte,
by the library and by the command line (`--python`, an environment whose packages are the
fixture's). The expected blocks are written by hand from the fixture."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.library_env import SITE_PACKAGES, copy_app, make_environment

from anchor_ls.index import Environment, Index
from anchor_ls.index.environment import typeshed_stdlib
from anchor_ls.tags.apply import render_file
from anchor_ls.tags.policy import resolve_policy
from anchor_ls.tags.text import strip

ANCHOR_LS = shutil.which("anchor-ls", path=str(Path(sys.executable).parent))

VIEWS_TOPO = """\
# === CodeAnchor shop/views.py:ArticleView
# BASE: ext:django.views.generic.base.View
# DERIVED: :SpecialArticleView
# ===
class ArticleView(View):
    # === CodeAnchor shop/views.py:ArticleView.dispatch
    # OVERRIDES: ext:django.views.generic.base.View.dispatch
    # OVERRIDDEN_BY: :SpecialArticleView.dispatch
    # ===
    def dispatch(self, request, *args, **kwargs):
        return super().dispatch(request, *args, **kwargs)

    def get(self, request):
        return Path("article.txt").read_text()


# === CodeAnchor shop/views.py:SpecialArticleView
# BASE: :ArticleView
# ===
class SpecialArticleView(ArticleView):
    # === CodeAnchor shop/views.py:SpecialArticleView.dispatch
    # OVERRIDES: :ArticleView.dispatch
    # ===
    def dispatch(self, request, *args, **kwargs):
        return None


# === CodeAnchor shop/views.py:HomeView
# BASE: ext:django.views.generic.base.TemplateView
# ===
class HomeView(TemplateView):
    # === CodeAnchor shop/views.py:HomeView.render_to_response
    # OVERRIDES: ext:django.views.generic.base.TemplateResponseMixin.render_to_response
    # ===
    def render_to_response(self, context, **response_kwargs):
        return context
"""
HEAD = "from pathlib import Path\n\nfrom django.views.generic import TemplateView, View\n\n\n"

# inv: the links to definitions outside (nothing else can show them) and who depends on each
# definition (an override is found through DERIVED: inv has no OVERRIDDEN_BY); the bases of
# SpecialArticleView and its dispatch are inside, so they get no block.
VIEWS_INV = """\
# === CodeAnchor shop/views.py:ArticleView
# BASE: ext:django.views.generic.base.View
# DERIVED: :SpecialArticleView
# ===
class ArticleView(View):
    # === CodeAnchor shop/views.py:ArticleView.dispatch
    # OVERRIDES: ext:django.views.generic.base.View.dispatch
    # ===
    def dispatch(self, request, *args, **kwargs):
        return super().dispatch(request, *args, **kwargs)

    def get(self, request):
        return Path("article.txt").read_text()


class SpecialArticleView(ArticleView):
    def dispatch(self, request, *args, **kwargs):
        return None


# === CodeAnchor shop/views.py:HomeView
# BASE: ext:django.views.generic.base.TemplateView
# ===
class HomeView(TemplateView):
    # === CodeAnchor shop/views.py:HomeView.render_to_response
    # OVERRIDES: ext:django.views.generic.base.TemplateResponseMixin.render_to_response
    # ===
    def render_to_response(self, context, **response_kwargs):
        return context
"""

CLIENTS_DENSE = """\
import fastjson
import paymentgateway
import requests


# === CodeAnchor shop/clients.py:FastEncoder
# BASE: ext:fastjson._speedups.Encoder
# ===
class FastEncoder(fastjson.Encoder):
    # === CodeAnchor shop/clients.py:FastEncoder.encode
    # OVERRIDES: ext:fastjson._speedups.Encoder.encode
    # CALLS_EXTERNAL: ext:fastjson._speedups.dumps
    # ===
    def encode(self, obj):
        return fastjson.dumps(obj)


class Client:
    # === CodeAnchor shop/clients.py:Client.__init__
    # CALLS_EXTERNAL: ext:requests.sessions.Session
    # IO_DEP: io:network
    # ===
    def __init__(self):
        self.session = requests.Session()

    # === CodeAnchor shop/clients.py:Client.fetch
    # CALLS_EXTERNAL: ext:requests.models.Response.json, ext:requests.sessions.Session.get
    # IO_DEP: io:network
    # ===
    def fetch(self, url):
        return self.session.get(url).json()


def charge(amount):
    return paymentgateway.charge(amount)
"""
GET_DENSE = """\
    # === CodeAnchor shop/views.py:ArticleView.get
    # CALLS_EXTERNAL: ext:pathlib.Path, ext:pathlib.Path.read_text
    # IO_DEP: io:file
    # ===
    def get(self, request):
"""


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    app = copy_app(tmp_path_factory.mktemp("libraries"))
    env = Environment(paths=(str(SITE_PACKAGES),), stubs=typeshed_stdlib())
    index = Index(app, cache_dir=app.parent / "cache", python=env)
    index.build()
    return index


def tagged(index: Index, relpath: str, policy: str) -> str:
    source = index.source(relpath)
    assert source is not None
    result = render_file(index.graph, relpath, source, resolve_policy(policy, 0.0, 8))
    back = strip(result.text, relpath)
    assert back.text == source and back.damaged == []  # byte for byte
    return result.text.decode("utf-8")


def test_topo_lists_external_bases_and_overrides_but_no_external_calls(index: Index) -> None:
    assert tagged(index, "shop/views.py", "topo") == HEAD + VIEWS_TOPO


def test_inv_keeps_the_links_out_of_the_repository(index: Index) -> None:
    assert tagged(index, "shop/views.py", "inv") == HEAD + VIEWS_INV


def test_dense_adds_calls_into_libraries_as_calls_external(index: Index) -> None:
    assert tagged(index, "shop/clients.py", "dense") == CLIENTS_DENSE
    assert GET_DENSE in tagged(index, "shop/views.py", "dense")
    # the model's own call of save stays CALLS: it is inside
    models = tagged(index, "shop/models.py", "dense")
    assert "    # CALLS: .save\n    # ===\n    def publish(self):" in models
    assert "    # OVERRIDES: ext:django.db.models.base.Model.save\n" in models


def test_the_command_line_tags_checks_and_strips_with_the_named_environment(
    tmp_path: Path,
) -> None:
    app = copy_app(tmp_path)
    python = make_environment(tmp_path / "env")
    before = {p: p.read_bytes() for p in sorted(app.rglob("*.py"))}
    assert ANCHOR_LS is not None

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([ANCHOR_LS, *args], capture_output=True, text=True, cwd=tmp_path)

    tag = run("tag", str(app), "--in-place", "--policy", "topo", "--python", str(python), "-q")
    assert tag.returncode == 0, tag.stderr
    assert (app / "shop" / "views.py").read_text("utf-8") == HEAD + VIEWS_TOPO
    check = run("check", str(app), "--policy", "topo", "--python", str(python), "-q")
    assert check.returncode == 0, check.stdout + check.stderr
    # Without the environment the libraries are not found: the external links are stale.
    stale = run("check", str(app), "--policy", "topo", "-q")
    assert stale.returncode == 1 and "shop/views.py" in stale.stdout
    strip_run = run("strip", str(app), "-q")
    assert strip_run.returncode == 0, strip_run.stderr
    assert {p: p.read_bytes() for p in sorted(app.rglob("*.py"))} == before
