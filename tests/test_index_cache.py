"""The SQLite cache: where it lives, warm starts, damage, foreign versions and concurrent writers.

Every check compares against a build without any cache, so a cache can only ever save time,
never change an answer.
"""

from __future__ import annotations

import ctypes
import json
import multiprocessing
import multiprocessing.queues
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from anchor_ls.index import CALLS, Index
from anchor_ls.index.cache import FILE_NAME, SCHEMA, Cache

EXAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "example"


def copy_example(dest: Path) -> Path:
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns(".anchor-ls", "__pycache__"))
    return dest


def fresh_json(root: Path) -> dict:
    """The graph of a build that never touches a cache."""
    index = Index(root, use_cache=False)
    index.build()
    return index.graph.to_json()


def build(root: Path, **kwargs: object) -> Index:
    index = Index(root, **kwargs)
    index.build()
    index.close()
    return index


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return copy_example(tmp_path / "repo")


# ----- where the cache lives -------------------------------------------------


def test_cache_is_in_the_root_and_ignores_itself(repo: Path) -> None:
    build(repo)
    folder = repo / ".anchor-ls"
    assert (folder / FILE_NAME).is_file()
    assert (folder / ".gitignore").read_text(encoding="utf-8").splitlines() == ["*"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    status = subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "pkg/service.py" in status
    assert ".anchor-ls" not in status


def test_cache_option_puts_it_elsewhere(repo: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "caches" / "shop"
    first = build(repo, cache_dir=elsewhere)
    assert (elsewhere / FILE_NAME).is_file()
    assert not (repo / ".anchor-ls").exists()
    second = build(repo, cache_dir=elsewhere)
    assert second.stats().reparsed == 0
    assert second.graph.to_json() == first.graph.to_json()


def test_root_where_the_cache_folder_cannot_be_made_falls_back_to_user_cache(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (repo / ".anchor-ls").write_text("a file where the cache folder would go\n", encoding="utf-8")
    user_cache = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(user_cache))
    first = build(repo)
    (db,) = user_cache.glob(f"anchor-ls/*/{FILE_NAME}")
    assert db.parent.name.startswith("repo-")
    assert (repo / ".anchor-ls").is_file()  # untouched
    assert first.problems == {}
    second = build(repo)
    assert second.stats().reparsed == 0
    assert second.graph.to_json() == fresh_json(repo)


def _drop_file_permission_override() -> None:
    """As root, give up CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH so file modes apply (see exec)."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def _index_json_as_restricted(root: Path, env: dict[str, str], *args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "anchor_ls", "index", str(root), "--json", *args],
        preexec_fn=_drop_file_permission_override,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return {"stats": json.loads(done.stdout), "stderr": done.stderr}


def test_read_only_root_falls_back_to_user_cache(repo: Path, tmp_path: Path) -> None:
    user_cache = tmp_path / "xdg"
    for folder in [repo, *[p for p in repo.rglob("*") if p.is_dir()]]:
        folder.chmod(0o555)
    try:
        env = {"XDG_CACHE_HOME": str(user_cache)}
        first = _index_json_as_restricted(repo, env)
        second = _index_json_as_restricted(repo, env)
    finally:
        for folder in [repo, *[p for p in repo.rglob("*") if p.is_dir()]]:
            folder.chmod(0o755)
    assert not (repo / ".anchor-ls").exists()
    assert len(list(user_cache.glob(f"anchor-ls/*/{FILE_NAME}"))) == 1
    assert first["stats"]["reparsed"] == first["stats"]["files"] == 9
    assert second["stats"]["reparsed"] == 0
    assert second["stats"]["problems"] == {}
    assert "warning" not in first["stderr"] + second["stderr"]


def test_no_writable_cache_anywhere_still_indexes(repo: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("", encoding="utf-8")
    index = build(repo, cache_dir=blocker / "cache")
    assert index.problems[str(blocker / "cache")].kind == "cache"
    assert "without" in index.problems[str(blocker / "cache")].message
    assert index.graph.to_json() == fresh_json(repo)


# ----- warm starts -----------------------------------------------------------


def test_warm_start_parses_nothing_and_answers_the_same(repo: Path) -> None:
    cold = build(repo)
    assert cold.stats().reparsed == 9 and cold.stats().from_cache == 0
    warm = build(repo)
    stats = warm.stats()
    assert (stats.reparsed, stats.from_cache, stats.files) == (0, 9, 9)
    assert warm.graph.to_json() == cold.graph.to_json() == fresh_json(repo)
    assert warm.stats().as_dict() | {"reparsed": 9, "from_cache": 0} == cold.stats().as_dict()


def test_warm_start_with_bad_files_parses_nothing_and_keeps_their_problems(repo: Path) -> None:
    (repo / "pkg" / "blob.py").write_bytes(b"\x00\x01binary")
    (repo / "pkg" / "oops.py").write_text("def oops(:\n", encoding="utf-8")
    cold = build(repo)
    assert set(cold.problems) == {"pkg/blob.py", "pkg/oops.py"}
    warm = build(repo)
    assert warm.stats().reparsed == 0
    assert warm.problems == cold.problems
    assert warm.stats().problems == {"binary": 1, "syntax": 1}


def test_problems_of_files_gone_since_are_not_replayed(repo: Path) -> None:
    os.symlink("loop_b.py", repo / "loop_a.py")
    os.symlink("loop_a.py", repo / "loop_b.py")
    assert build(repo).stats().problems == {"symlink-loop": 2}
    (repo / "loop_a.py").unlink()
    (repo / "loop_b.py").unlink()
    warm = build(repo)
    assert warm.stats().reparsed == 0
    assert warm.problems == {}


def test_changing_one_file_reparses_only_it(repo: Path) -> None:
    build(repo)
    pricing = repo / "pkg" / "pricing.py"
    text = pricing.read_text(encoding="utf-8")
    pricing.write_text(
        text.replace("    return total\n", "    return price_of('apple') and total\n"),
        encoding="utf-8",
    )
    warm = build(repo)
    stats = warm.stats()
    assert (stats.reparsed, stats.from_cache) == (1, 8)
    assert "pkg/pricing.py:price_of" in warm.graph.out(CALLS, "pkg/pricing.py:no_discount")
    assert warm.graph.to_json() == fresh_json(repo)


# ----- damage and foreign versions --------------------------------------------


def test_corrupt_cache_file_is_rebuilt_with_a_warning(repo: Path) -> None:
    build(repo)
    db = repo / ".anchor-ls" / FILE_NAME
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    db.write_bytes(b"this is not a database\x00\xff" * 64)
    rebuilt = build(repo)
    problem = rebuilt.problems[str(repo / ".anchor-ls")]
    assert problem.kind == "cache" and "rebuilt" in problem.message
    assert rebuilt.stats().reparsed == 9
    assert rebuilt.graph.to_json() == fresh_json(repo)
    after = build(repo)
    assert after.problems == {}  # the warning is about that run, not replayed later
    assert after.stats().reparsed == 0


def _poison(db: Path, schema: str | None) -> None:
    """Swap two files' cached summaries and break the stored graph; optionally relabel."""
    with sqlite3.connect(db) as conn:
        rows = dict(conn.execute("SELECT path, blob FROM summaries").fetchall())
        a, b = "pkg/pricing.py", "pkg/models.py"
        conn.execute("UPDATE summaries SET blob = ? WHERE path = ?", (rows[b], a))
        conn.execute("UPDATE summaries SET blob = ? WHERE path = ?", (rows[a], b))
        conn.execute("UPDATE graph SET blob = ?", (b"Iabc\n.",))  # pickle raises ValueError
        if schema is not None:
            conn.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (schema,))
    conn.close()


def test_cache_from_another_schema_version_is_not_trusted(repo: Path) -> None:
    build(repo)
    db = repo / ".anchor-ls" / FILE_NAME
    foreign = SCHEMA.replace("cache", "cache-from-elsewhere")
    _poison(db, foreign)
    index = build(repo)
    assert index.stats().reparsed == 9
    assert index.graph.to_json() == fresh_json(repo)
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone() == (SCHEMA,)
    conn.close()


def test_damaged_rows_are_parsed_again(repo: Path) -> None:
    build(repo)
    db = repo / ".anchor-ls" / FILE_NAME
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE graph SET blob = ?", (b"Iabc\n.",))
        conn.execute("UPDATE summaries SET blob = x'00' WHERE path = 'pkg/repo.py'")
    conn.close()
    index = build(repo)
    assert (index.stats().reparsed, index.stats().from_cache) == (1, 8)
    assert index.graph.to_json() == fresh_json(repo)
    cache = str(repo / ".anchor-ls")
    assert list(index.problems) == [cache]
    assert "rows that do not verify (damaged, or written by another user)" in (
        index.problems[cache].message
    )
    assert build(repo).problems == {}  # said once: the rows were replaced


# ----- two writers ----------------------------------------------------------


def write_generated_tree(root: Path, modules: int) -> None:
    """A package big enough that the index parses it with a process pool."""
    pkg = root / "gen"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "m0.py").write_text("class C0:\n    def go(self):\n        return 0\n", encoding="utf-8")
    for i in range(1, modules):
        (pkg / f"m{i}.py").write_text(
            f"from gen.m{i - 1} import C{i - 1}\n\n\n"
            f"class C{i}(C{i - 1}):\n"
            f"    def go(self):\n"
            f"        return super().go() + helper{i}()\n\n\n"
            f"def helper{i}():\n"
            f"    return C{i - 1}().go()\n",
            encoding="utf-8",
        )


def test_two_processes_building_on_one_cache(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write_generated_tree(root, 90)
    cache = tmp_path / "shared-cache"
    command = [sys.executable, "-m", "anchor_ls", "graph", str(root), "--json", "--cache"]
    procs = [
        subprocess.Popen(
            [*command, str(cache)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=300) for p in procs]
    for proc, (_out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        assert err == ""
    expected = fresh_json(root)
    assert expected["edges"], "the generated tree must have edges"
    for out, _err in outputs:
        assert json.loads(out) == expected
    with sqlite3.connect(cache / FILE_NAME) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("SELECT count(*) FROM summaries").fetchone() == (91,)
    conn.close()
    third = build(root, cache_dir=cache)
    assert third.stats().reparsed == 0
    assert third.graph.to_json() == expected


def _open_and_report(folder: str, go: Any, out: multiprocessing.queues.Queue) -> None:
    go.wait()
    out.put(Cache(Path(folder)).warning)


def test_processes_opening_one_new_cache_at_once_never_take_it_for_broken(tmp_path: Path) -> None:
    """Switching a new file to WAL needs it alone for a moment: the others wait for it,
    they never delete it as unreadable (each used to, now and then, under another's feet)."""
    fork = multiprocessing.get_context("fork")
    for trial in range(20):
        folder = tmp_path / f"cache{trial}"
        go, out = fork.Event(), fork.Queue()
        procs = [
            fork.Process(target=_open_and_report, args=(str(folder), go, out)) for _ in range(6)
        ]
        for proc in procs:
            proc.start()
        go.set()  # all at once
        warnings = [out.get(timeout=60) for _ in procs]
        for proc in procs:
            proc.join(timeout=60)
            assert proc.exitcode == 0
        assert warnings == [None] * 6
        with sqlite3.connect(folder / FILE_NAME) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        conn.close()


def test_failed_cache_writes_are_one_problem_naming_the_cache_given(
    repo: Path, tmp_path: Path
) -> None:
    """A full disk: SQLite refuses every page past the ones the file has. The index goes
    on without the cache, and says so once, under the folder --cache named."""
    folder = tmp_path / "my-cache"
    index = Index(repo, cache_dir=folder)
    cache = index._open_cache()
    assert cache is not None
    pages = cache.db.execute("PRAGMA page_count").fetchone()[0]
    cache.db.execute(f"PRAGMA max_page_count = {pages}")
    index.build()
    assert list(index.problems) == [str(folder)]
    problem = index.problems[str(folder)]
    assert problem.kind == "cache"
    assert f"cache {folder / FILE_NAME} could not be written" in problem.message
    assert "full" in problem.message and problem.message.count("could not be written") == 1
    assert index.graph.to_json() == fresh_json(repo)
    index.close()


def test_a_change_in_any_engine_module_retires_old_rows(tmp_path: Path) -> None:
    """The schema hashes every module of syntax/ and index/, those of index/bind/ too: a
    binder change under an old cache must rebuild it, not trust rows an older engine made."""
    package = Path(__file__).resolve().parent.parent / "anchor_ls"
    copy = tmp_path / "anchor_ls"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))

    def schema() -> str:
        done = subprocess.run(
            [sys.executable, "-c", "from anchor_ls.index.cache import SCHEMA; print(SCHEMA)"],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(tmp_path)},
            cwd=tmp_path,
            check=True,
        )
        return done.stdout.strip()

    before = schema()
    with (copy / "index" / "bind" / "memo.py").open("a") as f:
        f.write("\n# a change of the binder\n")
    assert schema() != before


def test_a_cache_whose_summaries_cannot_be_read_says_so(tmp_path: Path) -> None:
    """Every file is then parsed again: slower, and said, never silently."""
    cache = Cache(tmp_path / "cache")
    cache.store_summaries([("a.py", "h", b"x")])
    with sqlite3.connect(cache.path) as other:
        other.execute("DROP TABLE summaries")
    other.close()
    assert cache.take_problem() is None
    assert cache.summaries({"a.py": "h"}) == {}
    said = cache.take_problem()
    assert said is not None and "could not be read (no such table: summaries)" in said
    cache.close()
