"""A name defined more than once in one scope (both branches of an `if`, `@overload`
stubs) is one entity, located at its last definition: asking at any of its definitions
finds it, in a fresh build, after a warm start from the cache and after an edit.

The shape is pytest's `_pytest/_argcomplete.py`: `try_argcomplete` defined in each branch.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from anchor_ls.index import CALLS, Index

SOURCE = """\
import os


def complete(parser):
    return parser


def ignore(parser):
    return None


if os.environ.get("_ARGCOMPLETE"):

    def try_argcomplete(parser):
        complete(parser)

else:

    def try_argcomplete(parser):
        ignore(parser)


def main(parser):
    try_argcomplete(parser)
"""
FUNCTION = "argcomplete.py:try_argcomplete"


def lines_of(text: str, needle: str) -> list[int]:
    """0-based lines holding needle."""
    return [n for n, line in enumerate(text.splitlines()) if needle in line]


def definition_lines(text: str) -> list[int]:
    """Every 0-based line of each `def try_argcomplete` (its header and body)."""
    headers = lines_of(text, "def try_argcomplete")
    return [line for at in headers for line in (at, at + 1)]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "argcomplete.py").write_text(SOURCE, encoding="utf-8")
    return root


def answers_at_every_definition(index: Index, text: str) -> None:
    graph = index.graph
    first, second = lines_of(text, "def try_argcomplete")
    assert graph.entity(FUNCTION).line == second + 1  # located at its last definition
    for line in definition_lines(text):
        found = graph.entity_at("argcomplete.py", line)
        assert found is not None and found.id == FUNCTION, (line, found)
    # the lines between the two are the module's
    assert graph.entity_at("argcomplete.py", first + 3).id == "argcomplete.py"
    assert graph.out(CALLS, FUNCTION) == [
        "argcomplete.py:complete",
        "argcomplete.py:ignore",
    ]


def test_either_definition_finds_the_entity(repo: Path) -> None:
    index = Index(repo, cache_dir=repo.parent / "cache")
    index.build()
    answers_at_every_definition(index, SOURCE)
    index.close()


def test_a_warm_start_keeps_every_definition(repo: Path) -> None:
    cache = repo.parent / "cache"
    cold = Index(repo, cache_dir=cache)
    cold.build()
    cold.close()
    warm = Index(repo, cache_dir=cache)
    warm.build()
    assert warm.stats().reparsed == 0  # read from the cache, not built again
    answers_at_every_definition(warm, SOURCE)
    warm.close()


def test_an_edit_moves_every_definition(repo: Path) -> None:
    index = Index(repo, cache_dir=repo.parent / "cache")
    index.build()
    edited = "# a comment\n# and another\n" + SOURCE
    index.update_file("argcomplete.py", edited.encode("utf-8"))
    answers_at_every_definition(index, edited)
    index.close()


def test_overload_stubs_find_the_function(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    text = (
        "from typing import overload\n\n\n"
        "@overload\ndef parse(x: int) -> int: ...\n\n\n"
        "@overload\ndef parse(x: str) -> str: ...\n\n\n"
        "def parse(x):\n    return x\n"
    )
    (root / "mod.py").write_text(text, encoding="utf-8")
    index = Index(root, use_cache=False)
    index.build()
    for line in lines_of(text, "def parse") + lines_of(text, "@overload"):
        found = index.graph.entity_at("mod.py", line)
        assert found is not None and found.id == "mod.py:parse", line
