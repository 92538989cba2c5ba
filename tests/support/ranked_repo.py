"""A repository whose hub `lib/core.py:emit` has callers of every role, for the ranking tests
(no tests here). Expectations are written by hand from the rule in anchor_ls/tags/rank.py.

Callers of emit: production `zeta` (3 callers of its own), `omega` (1), `alpha` (0) and the
module-level code of `lib/setup.py` (imported by nobody: 0); demo code: `inner`, defined in
`lib/aaa_demo.py`'s `__main__` block (1 caller: that block), `show` in `examples/` (0), and
`lib/aaa_demo.py` itself, whose only call of emit is in its `__main__` block (0); and three
tests. Sorted by id, the demo callers came first (`examples/...`, `lib/aaa_demo.py...`).
"""

from __future__ import annotations

from pathlib import Path

HUB = "lib/core.py:emit"
MAX_ITEMS = 3
PRODUCTION = ["lib/service.py:zeta", "lib/service.py:omega", "lib/service.py:alpha", "lib/setup.py"]
DEMO = ["lib/aaa_demo.py:inner", "examples/aaa_example.py:show", "lib/aaa_demo.py"]
TESTS = ["tests/test_core.py:test_emit", "tests/test_core.py:test_emit_again",
         "tests/test_core.py:test_third"]  # fmt: skip
BY_ID_BEFORE = sorted(PRODUCTION + DEMO)[:MAX_ITEMS]  # what the cap kept before ranking

FILES = {
    "pyproject.toml": '[project]\nname = "ranked"\n',
    "lib/__init__.py": "",
    "lib/core.py": "def emit(x):\n    return x\n",
    "lib/service.py": (
        "from lib.core import emit\n"
        "\n"
        "\n"
        "def alpha():\n"
        "    emit(1)\n"
        "\n"
        "\n"
        "def zeta():\n"
        "    emit(2)\n"
        "\n"
        "\n"
        "def omega():\n"
        "    emit(3)\n"
        "\n"
        "\n"
        "def use_zeta():\n"
        "    zeta()\n"
        "\n"
        "\n"
        "def use_zeta_again():\n"
        "    zeta()\n"
        "\n"
        "\n"
        "def use_both():\n"
        "    omega()\n"
        "    zeta()\n"
    ),
    "lib/setup.py": 'from lib.core import emit\n\nemit("boot")\n',
    "lib/aaa_demo.py": (
        "from lib.core import emit\n"
        "\n"
        "\n"
        "def build():\n"
        "    return 1\n"
        "\n"
        "\n"
        'if __name__ == "__main__":\n'
        "    emit(build())\n"
        "\n"
        "    def inner():\n"
        "        emit(0)\n"
        "\n"
        "    inner()\n"
    ),
    "examples/aaa_example.py": "from lib.core import emit\n\n\ndef show():\n    emit(5)\n",
    "tests/test_core.py": (
        "from lib.core import emit\n"
        "\n"
        "\n"
        "def test_emit():\n"
        "    emit(1)\n"
        "\n"
        "\n"
        "def test_emit_again():\n"
        "    emit(2)\n"
        "\n"
        "\n"
        "def test_third():\n"
        "    emit(3)\n"
    ),
}


def write_repo(root: Path) -> Path:
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root
