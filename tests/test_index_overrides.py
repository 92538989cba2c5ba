"""The overrides relation: each method -> the next definition of its name along its
class's MRO (C3, not the first base's chain), kept right by edits in other files."""

from __future__ import annotations

from pathlib import Path

from anchor_ls.index import OVERRIDES, Environment, Index


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def overrides(index: Index) -> set[tuple[str, str]]:
    return {(e.src, e.dst) for e in index.graph.edges(OVERRIDES)}


def build(root: Path) -> Index:
    index = Index(root, use_cache=False, python=Environment())
    index.build()
    return index


FILES = {
    "base.py": "class Base:\n    def save(self):\n        pass\n",
    "mixins.py": (
        "class Loud:\n    def save(self):\n        pass\n\n    def shout(self):\n        pass\n"
    ),
    "models.py": (
        "from base import Base\nfrom mixins import Loud\n\n\n"
        "class Model(Base):\n    def run(self):\n        pass\n\n\n"
        "class LoudModel(Model, Loud):\n    def save(self):\n        pass\n\n"
        "    def shout(self):\n        pass\n"
    ),
}


def test_the_next_definition_along_the_mro_is_the_one_overridden(tmp_path: Path) -> None:
    write(tmp_path, FILES)
    assert overrides(build(tmp_path)) == {
        # LoudModel, Model, Base, Loud: Base.save comes before Loud.save
        ("models.py:LoudModel.save", "base.py:Base.save"),
        ("models.py:LoudModel.shout", "mixins.py:Loud.shout"),
    }


def test_a_method_added_to_a_base_in_another_file_is_overridden_after_the_edit(
    tmp_path: Path,
) -> None:
    write(tmp_path, FILES)
    index = build(tmp_path)
    text = FILES["base.py"] + "\n    def run(self):\n        pass\n"
    write(tmp_path, {"base.py": text})
    index.update_file("base.py", text)
    assert ("models.py:Model.run", "base.py:Base.run") in overrides(index)
    assert index.graph.to_json() == build(tmp_path).graph.to_json()
    text = "class Base:\n    pass\n"
    write(tmp_path, {"base.py": text})
    index.update_file("base.py", text)
    assert overrides(index) == {
        ("models.py:LoudModel.save", "mixins.py:Loud.save"),
        ("models.py:LoudModel.shout", "mixins.py:Loud.shout"),
    }
    assert index.graph.to_json() == build(tmp_path).graph.to_json()


def test_a_base_that_an_edit_elsewhere_points_at_another_class_moves_the_overrides(
    tmp_path: Path,
) -> None:
    """Only the classes of changed files and those whose bases moved are walked again
    after an edit (not every file whose callers moved): a base named through an alias
    in a module without classes moves when that module is edited, with no edit to the
    subclass's file or the bases' files."""
    files = {
        "plain.py": "class Plain:\n    def save(self):\n        pass\n",
        "fancy.py": "class Fancy:\n    def render(self):\n        pass\n",
        "kinds.py": "from fancy import Fancy\nfrom plain import Plain\n\nChosen = Plain\n",
        "shop.py": "from kinds import Chosen\n\n\n"
        "class Shop(Chosen):\n    def save(self):\n        pass\n\n"
        "    def render(self):\n        pass\n",
        "deep.py": "from shop import Shop\n\n\n"
        "class Deep(Shop):\n    def render(self):\n        pass\n",
    }
    write(tmp_path, files)
    index = build(tmp_path)
    assert overrides(index) == {
        ("shop.py:Shop.save", "plain.py:Plain.save"),
        ("deep.py:Deep.render", "shop.py:Shop.render"),
    }
    text = files["kinds.py"].replace("Chosen = Plain", "Chosen = Fancy")
    write(tmp_path, {"kinds.py": text})
    index.update_file("kinds.py", text)
    assert overrides(index) == {
        ("shop.py:Shop.render", "fancy.py:Fancy.render"),
        ("deep.py:Deep.render", "shop.py:Shop.render"),
    }
    assert index.graph.to_json() == build(tmp_path).graph.to_json()
