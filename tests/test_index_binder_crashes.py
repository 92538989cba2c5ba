"""Valid Python that once stopped a whole build with an exception from the binder.

Each case is the smallest file found (by delta debugging a stdlib module) that raised;
the build must finish and keep the file's plain facts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from anchor_ls.index import CALLS, Index
from anchor_ls.index.bind import evaluate
from anchor_ls.index.bind.db import BinderState

CASES = {
    # http/cookiejar.py: `h = standard.get; expires = h("expires")` on a dict whose keys
    # and values come from a loop; IndexError in Binder.call_result ("dv" branch reads the
    # method name from the call expression, which is a plain name here).
    "bound_dict_method": (
        "import re\n"
        "\n"
        'TOKEN = re.compile("a")\n'
        "\n"
        "\n"
        "def split(text):\n"
        "    pairs = []\n"
        "    pairs.append((TOKEN.search(text).group(1), None))\n"
        "    return [pairs]\n"
        "\n"
        "\n"
        "def load(line):\n"
        "    for data in split(line):\n"
        "        standard = {}\n"
        "        for k, v in data[1:]:\n"
        "            standard[k] = v\n"
        "        get = standard.get\n"
        '        domain = get("domain")\n'
        '        return domain.startswith(".")\n',
        ("m.py:load", "m.py:split"),
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_valid_code_builds(tmp_path: Path, case: str) -> None:
    source, edge = CASES[case]
    (tmp_path / "m.py").write_text(source, encoding="utf-8")
    index = Index(tmp_path, use_cache=False)
    index.build()
    assert index.problems == {}
    assert edge[1] in index.graph.out(CALLS, edge[0])


def test_a_binder_error_between_rounds_widens_the_next_round(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a function gives its callers is compared between rounds; should evaluating it
    fail, the function counts as changed: its callers are resolved again."""
    (tmp_path / "m.py").write_text(
        "def on_save():\n    pass\n\n\n"
        "class Hook:\n    def __init__(self, action):\n        self.action = action\n\n\n"
        "def main():\n    hook = Hook(on_save)\n    hook.action()\n",
        encoding="utf-8",
    )

    def broken(db: BinderState, fn: tuple[str, int]) -> frozenset:
        raise RuntimeError("a binder bug")

    monkeypatch.setattr(evaluate, "yields", broken)  # read by the comparison alone here
    index = Index(tmp_path, use_cache=False)
    index.build()
    assert "m.py:on_save" in index.graph.out(CALLS, "m.py:main")
