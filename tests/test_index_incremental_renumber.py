"""A definition added above others renumbers its file's later scopes: whatever other files
hold of them (their facts, the argument values they pass, their class-table shares) must
follow, though those files are not resolved again. Later edits read what they hold, so each
step is checked against a fresh build.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from test_index_incremental import all_sites, built, edit

from anchor_ls.index import CALLS, REFERENCES, Index

LIB = """\
def first():
    pass


def target():
    pass


class Base:
    def run(self):
        self.hook()

    def hook(self):
        pass
"""

# Calls lib's target, passes it on as a value, and subclasses lib's Base: none of it
# names what an insertion above adds, so an edit of lib.py leaves this file unresolved.
USER = """\
from lib import Base, target
import runner


def use():
    target()
    runner.run(target)


class Sub(Base):
    def hook(self):
        pass


def other():
    pass
"""

RUNNER = """\
def run(callback):
    callback()


def idle():
    pass
"""

CALLER = "from lib import target\n\n\ndef call():\n    target()\n"


def same_as_fresh(index: Index) -> None:
    fresh = Index(index.root, use_cache=False)
    fresh.build()
    assert index.graph.to_json() == fresh.graph.to_json()
    assert all_sites(index) == all_sites(fresh)


def above(name: str) -> str:
    return f"def {name}():\n    pass\n\n\n"


def settles_both_ways(index: Index, rel: str, insert: Callable[[str], str]) -> None:
    """The insert of _x, then its undo: each settles (nothing resolved afresh) into a
    fresh build's graph."""
    for change in (insert, lambda text: text.replace(above("_x"), "")):
        edit(index, rel, change)
        assert index.stats().resolved_afresh == 0
        same_as_fresh(index)


def indexed(tmp_path: Path, files: dict[str, str], edited: str) -> Index:
    """A built index of the files, with edited's tree kept as a server keeps it."""
    index = built(tmp_path / "r", files)
    index.prepare_edits(edited)
    return index


def test_a_def_inserted_above_others_in_a_much_called_file_equals_a_fresh_build(
    tmp_path: Path,
) -> None:
    root = tmp_path / "r"
    root.mkdir()
    for rel, text in (("lib.py", LIB), ("user.py", USER), ("runner.py", RUNNER)):
        (root / rel).write_text(text, encoding="utf-8")
    for n in range(4):
        (root / f"caller_{n}.py").write_text(CALLER, encoding="utf-8")
    index = Index(root, use_cache=False)
    index.build()
    assert "user.py:Sub.hook" in index.graph.out(CALLS, "lib.py:Base.run")
    assert "lib.py:target" in index.graph.out(CALLS, "runner.py:run")
    index.prepare_edits("lib.py")

    # Base.run's self.hook() reaches Sub.hook through user.py's class-table share.
    edit(index, "lib.py", lambda text: above("_x") + text)
    same_as_fresh(index)
    # run's callback holds what user.py passes: lib.py's target, at its new index.
    edit(
        index,
        "runner.py",
        lambda text: text.replace("    callback()\n", "    callback()\n    idle()\n"),
    )
    same_as_fresh(index)

    # Each of these resolves only what it changed and takes the other facts as held.
    edit(
        index,
        "user.py",
        lambda text: text.replace("def other():\n    pass", "def other():\n    return 1"),
    )
    same_as_fresh(index)
    for n in range(4):
        edit(index, f"caller_{n}.py", lambda text: text + "\n\ndef more():\n    return 2\n")
    same_as_fresh(index)
    # A file that calls into lib.py only after the first renumbering is renumbered too.
    edit(index, "late.py", lambda _text: CALLER.replace("call", "late"))
    edit(index, "lib.py", lambda text: above("_y") + text)
    same_as_fresh(index)
    edit(index, "late.py", lambda text: text + "\n\ndef more():\n    return 2\n")
    same_as_fresh(index)

    # And back: the definitions taken out again renumber the other way.
    edit(index, "lib.py", lambda text: text.replace(above("_y") + above("_x"), ""))
    same_as_fresh(index)
    edit(index, "user.py", lambda text: text.replace("return 1", "return 3"))
    edit(index, "runner.py", lambda text: text.replace("    idle()\n", ""))
    edit(index, "late.py", lambda text: text.replace("return 2", "return 3"))
    same_as_fresh(index)


# Each function hands its argument one call deeper: a build's rounds stop with the values
# still flowing down the chain, so resolved in the present argument facts the file passes
# more than its facts say.
CHAIN = "".join(f"def step_{n}(value):\n    step_{n + 1}(value)\n\n\n" for n in range(10)) + (
    "def step_10(value):\n    value.run()\n\n\n"
    "class Job:\n    def run(self):\n        pass\n\n\n"
    "def start():\n    step_0(Job())\n"
)


def test_a_def_inserted_above_a_chain_still_flowing_settles_as_a_body_edit_does(
    tmp_path: Path,
) -> None:
    user = "from chain import step_0, Job\n\n\ndef use():\n    step_0(Job())\n"
    index = indexed(tmp_path, {"chain.py": CHAIN, "user.py": user}, "chain.py")

    # What flowed after the build's last round is no change of the edit's: it is taken
    # as held, not carried on down the chain (which no round limit settles).
    settles_both_ways(index, "chain.py", lambda text: above("_x") + text)


def test_a_def_inserted_above_a_subclass_leaves_its_bases_file_as_it_is(tmp_path: Path) -> None:
    # chain.py's Base dispatches self.hook(): only a change of a subclass's hook concerns it.
    base = (
        "class Base:\n    def go(self):\n        self.hook()\n\n    def hook(self):\n        pass\n"
    )
    lib = (
        "from chain import Base\n\n\ndef first():\n    pass\n\n\n"
        "class Sub(Base):\n    def hook(self):\n        pass\n"
    )
    index = indexed(tmp_path, {"chain.py": CHAIN + "\n\n" + base, "lib.py": lib}, "lib.py")

    # Sub only moves: chain.py, still flowing, is not resolved again as if it had changed.
    settles_both_ways(
        index, "lib.py", lambda text: text.replace("def first", above("_x") + "def first")
    )


# Each step takes its argument as a callback, a local that names a function, and hands
# that on: a reference to what it holds. A build's rounds stop with the callback three
# calls down the chain, so the last steps it reached never took it as a reference.
KEPT_CHAIN = "".join(
    f"def step_{n}(value):\n    callback = value\n    step_{n + 1}(callback)\n\n\n"
    for n in range(8)
) + (
    "def step_8(value):\n    pass\n\n\ndef callback():\n    pass\n\n\n"
    "def start():\n    step_0(callback)\n"
)


def test_a_def_inserted_above_others_leaves_their_references_as_a_build_found_them(
    tmp_path: Path,
) -> None:
    index = indexed(tmp_path, {"chain.py": KEPT_CHAIN}, "chain.py")
    assert "chain.py:callback" in index.graph.out(REFERENCES, "chain.py:step_1")
    assert "chain.py:callback" not in index.graph.out(REFERENCES, "chain.py:step_7")

    # Only the def added (and the module binding it) is resolved: the steps keep what a
    # build of the new text finds, not what the argument facts grown since would give.
    settles_both_ways(index, "chain.py", lambda text: above("_x") + text)


JOB = "class Job:\n    def run(self):\n        pass\n\n\n"
SUB = "class _Sub(Job):\n    def run(self):\n        pass\n\n\n"


def test_a_def_inserted_above_others_that_the_file_reads_equals_a_fresh_build(
    tmp_path: Path,
) -> None:
    """A subclass with an override, or a def that start calls: the file is resolved whole
    again, its scopes taking in what arrived after the build's last round. The graph
    must still be a fresh build's (by the rounds, else by resolving afresh), never one
    that settled with edges no build has (references step_3 -> callback)."""
    index = indexed(tmp_path, {"chain.py": JOB + KEPT_CHAIN}, "chain.py")
    edit(index, "chain.py", lambda text: text.replace(JOB, JOB + SUB))
    same_as_fresh(index)
    edit(index, "chain.py", lambda text: JOB + KEPT_CHAIN)
    same_as_fresh(index)
    edit(
        index,
        "chain.py",
        lambda text: text.replace(JOB, JOB + above("_x")).replace(
            "def start():\n", "def start():\n    _x()\n"
        ),
    )
    same_as_fresh(index)
