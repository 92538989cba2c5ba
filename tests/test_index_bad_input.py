"""Bad files in a real tree: each one is a Problem with a clear message, none stops the index.

One repository holds good modules next to every kind of bad file; the good modules' facts
(including edges into and out of the bad-but-readable ones) must all be there.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from anchor_ls.index import CALLS, Index

LIMIT = 64 * 1024

GOOD = {
    "good/__init__.py": "",
    "good/core.py": "def helper():\n    return 1\n\n\ndef use():\n    return helper()\n",
    "good/caller.py": "from good.core import helper\n\n\ndef call():\n    return helper()\n",
}
BROKEN = (
    "from good.core import helper\n"  # 1
    "\n"
    "def before():\n"  # 3
    "    return helper()\n"
    "\n"
    "def broken(:\n"  # 6
    "    x = (1,\n"
    "\n"
    "def after():\n"  # 9
    "    before()\n"
    "    return helper()\n"
)
LATIN1 = (
    "# -*- coding: latin-1 -*-\n"
    "from good.core import helper\n"
    'café = "naïve"\n'
    "def fée():\n"
    "    return helper()\n"
    "def appel():\n"
    "    return fée()\n"
)
ENDINGS = [b"from good.core import helper", b"", b"def c():", b"    helper()", b"", b"def d():"]
ENDINGS += [b"    c()"]

EXPECTED_PROBLEMS = {
    "binary": ["nul.py", "picture.py"],
    "decode": ["undecodable.py"],
    "outside": ["outside.py"],
    "symlink-loop": ["loop_a.py", "loop_b.py"],
    "syntax": ["broken.py", "template.py"],
    "too-deep": ["deep.py"],
    "too-large": ["big.py"],
    # Names the file system holds as non-UTF-8 bytes, shown with U+FFFD.
    "unreadable": ["bad\ufffd", "caf\ufffd.py", "folder_link.py"],
}
DEEP = "x = " + "(" * 10000 + "1" + ")" * 10000 + "\n"


def write_tree(root: Path, outside: Path) -> None:
    for rel, text in GOOD.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    (root / "broken.py").write_text(BROKEN, encoding="utf-8")
    (root / "latin.py").write_bytes(LATIN1.encode("latin-1"))
    (root / "bom.py").write_bytes(b"\xef\xbb\xbfdef b():\n    return 1\n")
    (root / "crlf.py").write_bytes(b"\r\n".join(ENDINGS) + b"\r\n")
    (root / "cr.py").write_bytes(b"\r".join(ENDINGS) + b"\r")
    (root / "tabs.py").write_bytes(
        b"class T:\n\tdef m(self):\n\t\treturn self.n()\n\tdef n(self):\n\t\tpass\n"
    )
    (root / "undecodable.py").write_bytes(b'def u():\n    return "\xff"\n')
    (root / "nul.py").write_bytes(b"def n():\n    pass\n\x00")
    (root / "picture.py").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    (root / "template.py").write_text(
        "{% for x in xs %}\n{{ x }}\n{% endfor %}\n", encoding="utf-8"
    )
    (root / "big.py").write_text("x = 1\n" * (LIMIT // 6 + 1), encoding="utf-8")
    (root / "deep.py").write_text(DEEP, encoding="utf-8")
    os.symlink("loop_b.py", root / "loop_a.py")
    os.symlink("loop_a.py", root / "loop_b.py")
    (outside / "secret.py").write_text("def stolen():\n    pass\n", encoding="utf-8")
    os.symlink(outside / "secret.py", root / "outside.py")
    # A folder named like a module is walked as a folder; a link to it is not a file.
    (root / "folder.py").mkdir()
    (root / "folder.py" / "inner.py").write_text("def inner():\n    pass\n", encoding="utf-8")
    os.symlink("folder.py", root / "folder_link.py")
    # Latin-1 bytes in a file and a folder name: not valid UTF-8.
    (root / "caf\udce9.py").write_text("def cafe():\n    pass\n", encoding="utf-8")
    (root / "bad\udcff").mkdir()
    (root / "bad\udcff" / "m.py").write_text("def m():\n    pass\n", encoding="utf-8")
    # A symlinked folder pointing at its parent: never followed, so no loop.
    os.symlink(".", root / "good" / "again")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Index:
    base = tmp_path_factory.mktemp("bad")
    root, outside = base / "repo", base / "outside"
    root.mkdir()
    outside.mkdir()
    write_tree(root, outside)
    index = Index(root, cache_dir=base / "cache", max_file_bytes=LIMIT)
    index.build()
    yield index
    index.close()


def calls(index: Index) -> set[tuple[str, str]]:
    return {(e.src, e.dst) for e in index.graph.edges(CALLS)}


def test_every_bad_file_is_one_problem_of_its_kind(built: Index) -> None:
    found: dict[str, list[str]] = {}
    for problem in built.problems.values():
        found.setdefault(problem.kind, []).append(problem.path)
        assert problem.message.strip(), problem
    assert {k: sorted(v) for k, v in found.items()} == EXPECTED_PROBLEMS
    counts = {kind: len(paths) for kind, paths in EXPECTED_PROBLEMS.items()}
    assert built.stats().problems == counts


def test_good_files_keep_their_facts(built: Index) -> None:
    edges = calls(built)
    assert ("good/core.py:use", "good/core.py:helper") in edges
    assert ("good/caller.py:call", "good/core.py:helper") in edges
    assert "folder.py/inner.py:inner" in built.graph.entities
    stats = built.stats()
    # good (3), folder.py/inner.py, broken, latin, bom, crlf, cr, tabs, undecodable, template,
    # deep (read around its expression)
    assert stats.files == 13
    assert stats.reparsed == 13 and stats.from_cache == 0


def test_broken_function_costs_only_itself(built: Index) -> None:
    g = built.graph
    assert g.entity("broken.py:before").line == 3
    assert g.entity("broken.py:after").line == 9
    edges = calls(built)
    assert ("broken.py:before", "good/core.py:helper") in edges
    assert ("broken.py:after", "broken.py:before") in edges
    assert ("broken.py:after", "good/core.py:helper") in edges
    assert "line 6" in built.problems["broken.py"].message


def test_latin1_cookie_file_is_linked_both_ways(built: Index) -> None:
    edges = calls(built)
    assert ("latin.py:appel", "latin.py:fée") in edges
    assert ("latin.py:fée", "good/core.py:helper") in edges
    assert built.graph.entity("latin.py:fée").line == 4
    assert "latin.py" not in built.problems


@pytest.mark.parametrize("rel", ["crlf.py", "cr.py"])
def test_crlf_and_lone_cr_lines(built: Index, rel: str) -> None:
    g = built.graph
    c, d = g.entity(f"{rel}:c"), g.entity(f"{rel}:d")
    assert (c.line, c.end_line, d.line, d.end_line) == (3, 4, 6, 7)
    assert g.entity(rel).end_line == 7
    assert g.sites(f"{rel}:d", f"{rel}:c") == [(6, 4, 6, 5)]
    assert (f"{rel}:c", "good/core.py:helper") in calls(built)


def test_bom_tabs_and_undecodable_still_give_definitions(built: Index) -> None:
    g = built.graph
    assert g.entity("bom.py:b").line == 1
    assert g.entity("tabs.py:T.m").kind == "method"
    assert ("tabs.py:T.m", "tabs.py:T.n") in calls(built)
    assert g.entity("undecodable.py:u").end_line == 2
    assert "replaced" in built.problems["undecodable.py"].message


def test_unreadable_files_have_no_entities(built: Index) -> None:
    files = set(built.graph.files())
    for paths in EXPECTED_PROBLEMS.values():
        for rel in paths:
            if rel not in ("broken.py", "template.py", "undecodable.py", "deep.py"):
                assert rel not in files
                assert built.source(rel) is None
    assert "template.py" in files  # a module with nothing in it, and its syntax problem
    assert not any(e.startswith("outside.py") for e in built.graph.entities)
    assert not any("stolen" in e for e in built.graph.entities)
    assert not any(rel.startswith("good/again/") for rel in files)


def test_messages_name_the_cause(built: Index) -> None:
    p = built.problems
    assert "loop" in p["loop_a.py"].message
    assert "outside" in p["outside.py"].message
    size = (built.root / "big.py").stat().st_size
    assert size > LIMIT
    assert f"{size} bytes, over the limit" in p["big.py"].message
    assert "NUL" in p["nul.py"].message
    assert "not a file" in p["folder_link.py"].message
    assert "not valid UTF-8" in p["caf\ufffd.py"].message


def test_every_id_is_text_the_cache_and_editors_can_carry(built: Index) -> None:
    for ident in built.graph.entities:
        ident.encode("utf-8")  # raises on surrogate escapes
    assert not any(e.startswith(("caf", "bad")) for e in built.graph.entities)


def test_every_edge_joins_two_entities(built: Index) -> None:
    for edge in built.graph.edges():
        assert edge.src in built.graph.entities, edge
        assert edge.dst in built.graph.entities, edge


# ----- cases that need their own tree ----------------------------------------


def small_repo(root: Path) -> None:
    for rel, text in GOOD.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def test_a_fifo_named_py_is_unreadable_not_a_hang(tmp_path: Path) -> None:
    small_repo(tmp_path)
    os.mkfifo(tmp_path / "pipe.py")
    index = Index(tmp_path, use_cache=False)
    worker = threading.Thread(target=index.build, daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive(), "build() blocked on a FIFO"
    assert index.problems["pipe.py"].kind == "unreadable"
    assert "regular file" in index.problems["pipe.py"].message
    assert ("good/caller.py:call", "good/core.py:helper") in calls(index)


def test_reload_of_a_folder_named_py_is_unreadable(tmp_path: Path) -> None:
    small_repo(tmp_path)
    index = Index(tmp_path, use_cache=False)
    index.build()
    (tmp_path / "late.py").mkdir()
    assert index.reload_file("late.py") == set()
    assert index.problems["late.py"].kind == "unreadable"
    assert "late.py" not in index.graph.files()


class DeletingIndex(Index):
    """Deletes a file the walk has listed but the index has not read yet.

    The walk lists every file before any is read, so the race is made deterministic by
    removing the victim just before the first read.
    """

    victim = "good/core.py"

    def _read(self, rel: str) -> bytes | None:
        victim = self.root / self.victim
        if victim.exists():
            victim.unlink()
        return super()._read(rel)


def test_a_file_deleted_while_indexing_is_reported(tmp_path: Path) -> None:
    small_repo(tmp_path)
    index = DeletingIndex(tmp_path, use_cache=False)
    stats = index.build()
    assert index.problems["good/core.py"].kind == "vanished"
    assert stats.problems == {"vanished": 1}
    assert "good/core.py" not in index.graph.files()
    assert "good/caller.py:call" in index.graph.entities
    assert stats.files == 2


def test_reload_of_a_deleted_file_removes_it_without_a_problem(tmp_path: Path) -> None:
    small_repo(tmp_path)
    index = Index(tmp_path, use_cache=False)
    index.build()
    (tmp_path / "good/core.py").unlink()
    changed = index.reload_file("good/core.py")
    assert {"good/core.py", "good/caller.py"} <= changed
    assert "good/core.py" not in index.graph.files()
    assert index.problems == {}
    assert calls(index) == set()


def _drop_file_permission_override() -> None:
    """Run as root without CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH, so mode 000 means unreadable.

    prctl(PR_CAPBSET_DROP) removes them from the bounding set; the exec that follows then
    gives the child root's uid without those capabilities. A non-root user needs nothing.
    """
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def test_a_mode_000_file_is_unreadable(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    small_repo(root)
    (root / "locked.py").write_text("def locked():\n    pass\n", encoding="utf-8")
    (root / "locked.py").chmod(0)
    script = (
        "import json, sys\n"
        "from anchor_ls.index import Index\n"
        "index = Index(sys.argv[1], cache_dir=sys.argv[2])\n"
        "index.build()\n"
        "print(json.dumps({'problems': {p: [v.kind, v.message] "
        "for p, v in index.problems.items()}, 'entities': sorted(index.graph.entities)}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(root), str(tmp_path / "cache")],
        preexec_fn=_drop_file_permission_override,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["problems"] == {"locked.py": ["unreadable", "Permission denied"]}
    assert "good/core.py:helper" in result["entities"]
    assert not any(e.startswith("locked.py") for e in result["entities"])
