"""Small repositories several tests write: one big enough for parse workers, loose files."""

from __future__ import annotations

from pathlib import Path

FILES = 240  # over the size from which a threaded process parses in workers


def write_repo(root: Path) -> None:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    for i in range(FILES):
        prev = f"from pkg.m{i - 1} import Base{i - 1} as Parent, run{i - 1} as before\n\n\n"
        text = (prev if i else "class Parent:\n    pass\n\n\ndef before():\n    pass\n\n\n") + (
            f"class Base{i}(Parent):\n"
            f"    def go(self):\n"
            f"        return run{i}()\n"
            f"\n\n"
            f"def run{i}():\n"
            f"    before()\n"
            f"    return Base{i}().go\n"
        )
        (root / "pkg" / f"m{i}.py").write_text(text, encoding="utf-8")
    (root / "pkg" / "broken.py").write_text("def oops(:\n    pass\n", encoding="utf-8")


# Loose files: no pyproject.toml, setup.py or .git anywhere above them.
LOOSE = {
    "shapes.py": "def area(w, h):\n    return w * h\n",
    "report.py": (
        "from shapes import area\n\n\ndef summary():\n    return area(2, 3)\n\n\n"
        "def twice():\n    return area(4, 4)\n"
    ),
}


# Glimpses (tests/test_glimpse.py, test_server_first_contact.py): `Shape.area` is called
# where Shape is named (report.py) and, through a factory's return
# value, where it is not (use.py): only the build sees that one.
SHAPES = {
    "pkg/__init__.py": "",
    "pkg/shapes.py": (
        "class Shape:\n"
        "    def area(self):\n"
        "        return 0\n"
        "\n\n"
        "class Square(Shape):\n"
        "    def area(self):\n"
        "        return 4\n"
    ),
    "pkg/report.py": (
        "from pkg.shapes import Shape\n\n\ndef describe():\n    return Shape().area()\n"
    ),
    "pkg/factory.py": "from pkg.shapes import Shape\n\n\ndef make():\n    return Shape()\n",
    "pkg/use.py": "from pkg.factory import make\n\n\ndef measure():\n    return make().area()\n",
    "tools/__init__.py": "",
    "tools/area.py": "def area():\n    return 1\n\n\ndef run():\n    return area()\n",
    "conftest.py": "",
}
