"""The `python` setting from the Neovim plugin to the server, in a real headless Neovim 0.11:
editors/nvim/test/environment.lua sets it in setup() on a copy of fixtures/libraries/app,
with an environment whose packages are the fixture's; the server names it in anchor.stats,
and the hint on `class ArticleView(View)` links `View` to the library's file."""

from __future__ import annotations

from typing import Any

import pytest
from pygls.uris import from_fs_path
from support.library_env import SITE_PACKAGES, copy_app, make_environment
from support.nvim import run_script

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("nvim-env")
    app = copy_app(work)
    python = make_environment(work / "env")
    env = {
        "ANCHOR_NVIM_PYTHON": str(python),
        "ANCHOR_NVIM_FILE": str(app / "shop" / "views.py"),
        "ANCHOR_NVIM_CLASS": "ArticleView",
        "ANCHOR_NVIM_METHOD": "dispatch",
        "ANCHOR_NVIM_TIMEOUT": "120000",
    }
    result, _ = run_script("environment.lua", work, app, env)
    result["python"] = str(python)
    return result


def test_the_python_setting_reaches_the_server(run: dict[str, Any]) -> None:
    assert run["config_python"] == run["python"]
    assert run["init_python"] == run["python"]
    assert run["stats"]["settings"]["python"] == run["python"]
    assert [f["python"] for f in run["stats"]["folders"]] == [run["python"]]


def test_the_class_hint_links_its_library_base(run: dict[str, Any]) -> None:
    view = [p for p in run["hint"] if p["value"] == "View"]
    assert len(view) == 1, run["hint"]
    location = view[0]["location"]
    assert location["uri"] == from_fs_path(str(SITE_PACKAGES / "django/views/generic/base.py"))
    assert location["range"] == {
        "start": {"line": 0, "character": 6},
        "end": {"line": 0, "character": 10},
    }


def test_the_lens_says_what_the_method_overrides(run: dict[str, Any]) -> None:
    assert "overrides View.dispatch" in run["lenses"]
    assert "1 override" in run["lenses"]
