"""A cache file a repository ships never runs code: rows are signed with this user's key.

The attack: a repository commits `.anchor-ls/index.sqlite3` whose blobs are pickles that
run a command when loaded (the schema key and fingerprints can be computed by anyone). Each
test plants such a cache, then runs the real CLI or server on the repository and checks
that the marker the pickle would write never appears, and that the graph is still right.
"""

from __future__ import annotations

import os
import pickle
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient
from support.lsp import copy_example, lsp, pos, start

from anchor_ls.index import CALLS, Index
from anchor_ls.index.cache import FILE_NAME
from anchor_ls.index.cache_key import KEY_BYTES, CacheKey, load_key


class _Plant:
    """Unpickling this writes a marker file: what a hostile cache row would do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple:
        return (Path.write_text, (self.marker, "pwned"))


__all__ = ["lsp"]  # the fixture, used by name


def _fresh_json(root: Path) -> dict:
    """The graph of a build that never touches a cache."""
    index = Index(root, use_cache=False)
    index.build()
    return index.graph.to_json()


def _hostile(marker: Path) -> bytes:
    return pickle.dumps(_Plant(marker))


def _replace_rows(db: Path, blob_for: object) -> int:
    """Replace every blob of the cache by blob_for(table, row name); returns rows replaced."""
    with sqlite3.connect(db) as conn:
        count = 0
        for table, name_col in (("summaries", "path"), ("graph", "key"), ("graph_parts", "name")):
            for (name,) in conn.execute(f"SELECT {name_col} FROM {table}").fetchall():
                blob = blob_for(table, name)  # type: ignore[operator]
                conn.execute(f"UPDATE {table} SET blob = ? WHERE {name_col} = ?", (blob, name))
                count += 1
    conn.close()
    return count


def _callers_of_checkout(repo: Path, xdg: Path) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-P", "-m", "anchor_ls", "callers", "pkg/service.py:checkout", str(repo)],
        env=_env(xdg),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return {line.split()[0] for line in done.stdout.splitlines() if line.strip()}


def _other(repo: Path) -> set[str]:
    """checkout's callers in a build that never saw a cache."""
    index = Index(repo, use_cache=False)
    index.build()
    return set(index.graph.into(CALLS, "pkg/service.py:checkout"))


def _env(xdg: Path) -> dict[str, str]:
    return {**os.environ, "XDG_CACHE_HOME": str(xdg)}


def _index(repo: Path, xdg: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-P", "-m", "anchor_ls", "index", str(repo)],
        env=_env(xdg),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=repo.parent,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return copy_example(tmp_path)


def test_unsigned_pickles_in_a_shipped_cache_never_load(repo: Path, tmp_path: Path) -> None:
    """The reproduction of the report: a cache built, then each blob replaced by a plain
    hostile pickle, committed and cloned to a user whose anchor-ls has its own key."""
    marker = tmp_path / "PWNED"
    attacker, victim = tmp_path / "attacker-home", tmp_path / "victim-home"
    assert _index(repo, attacker).returncode == 0
    assert _replace_rows(repo / ".anchor-ls" / FILE_NAME, lambda *_: _hostile(marker)) > 9
    done = _index(repo, victim)
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    assert "not written by this user on this machine; rebuilt" in done.stderr
    callers = _callers_of_checkout(repo, victim)
    assert "pkg/service.py:quick_checkout" in callers and callers == _other(repo)


def test_pickles_signed_with_another_users_key_never_load(repo: Path, tmp_path: Path) -> None:
    """The attacker signs the hostile rows with a key of their own, as their anchor-ls
    would: the rows verify for them, never for the victim."""
    marker = tmp_path / "PWNED"
    attacker_home = tmp_path / "attacker-home"
    assert _index(repo, attacker_home).returncode == 0
    theirs = CacheKey((attacker_home / "anchor-ls" / "cache-key").read_bytes())
    names = {"summaries": "summary", "graph": "graph", "graph_parts": "part"}
    db = repo / ".anchor-ls" / FILE_NAME
    with sqlite3.connect(db) as conn:
        hashes = dict(conn.execute("SELECT path, hash FROM summaries"))
    conn.close()

    def signed(table: str, name: str) -> bytes:
        row = f"{names[table]}\0{name}" + (f"\0{hashes[name]}" if table == "summaries" else "")
        return theirs.sign(row, _hostile(marker))

    _replace_rows(db, signed)
    _index(repo, attacker_home)
    assert marker.exists()  # the planted rows do run code wherever they are trusted
    marker.unlink()
    done = _index(repo, tmp_path / "victim-home")
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    assert "rebuilt" in done.stderr


def test_a_users_own_cache_with_rows_replaced_loads_none_of_them(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even in a cache this user wrote (its owner row verifies), a replaced row is never
    unpickled: it is taken as missing, and the files are parsed again."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home"))
    marker = tmp_path / "PWNED"
    Index(repo).build()
    _replace_rows(repo / ".anchor-ls" / FILE_NAME, lambda *_: _hostile(marker))
    again = Index(repo)
    again.build()
    assert not marker.exists()
    assert again.stats().reparsed == again.stats().files == 10
    assert again.graph.to_json() == _fresh_json(repo)
    problem = again.problems[str(repo / ".anchor-ls")]
    assert "rows that do not verify" in problem.message
    again.close()


def test_key_is_private_and_stable(tmp_path: Path) -> None:
    path = tmp_path / "keys" / "cache-key"
    first, second = load_key(path), load_key(path)
    assert first.problem is None and second.problem is None
    assert first.sign("row", b"x") == second.sign("row", b"x")
    assert path.stat().st_mode & 0o777 == 0o600
    assert first.open("row", first.sign("row", b"x")) == b"x"
    assert first.open("other row", first.sign("row", b"x")) is None


def test_a_key_others_can_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "cache-key"
    path.write_bytes(b"k" * KEY_BYTES)
    path.chmod(0o644)
    key = load_key(path)
    assert key.problem is not None and "other users" in key.problem
    assert key.open("row", CacheKey(b"k" * KEY_BYTES).sign("row", b"x")) is None


def test_a_linked_key_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "planted"
    real.write_bytes(b"k" * KEY_BYTES)
    real.chmod(0o600)
    (tmp_path / "cache-key").symlink_to(real)
    assert load_key(tmp_path / "cache-key").problem is not None


async def test_server_opening_a_folder_with_a_shipped_cache_runs_nothing(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    """The server's key is the test user's (XDG_CACHE_HOME of this process), not the
    attacker's."""
    repo = copy_example(tmp_path)
    marker = tmp_path / "PWNED"
    assert _index(repo, tmp_path / "attacker-home").returncode == 0
    _replace_rows(repo / ".anchor-ls" / FILE_NAME, lambda *_: _hostile(marker))
    editor = await start(lsp, repo, lsp.profile)  # type: ignore[attr-defined]
    await editor.ready()
    service = "pkg/service.py"
    text = editor.text(service)
    items = await lsp.text_document_prepare_call_hierarchy_async(
        types.CallHierarchyPrepareParams(
            text_document=types.TextDocumentIdentifier(uri=editor.uri(service)),
            position=pos(text, "def checkout", editor.encoding, offset=4),
        )
    )
    assert items
    calls = await lsp.call_hierarchy_incoming_calls_async(
        types.CallHierarchyIncomingCallsParams(item=items[0])
    )
    assert {c.from_.detail or c.from_.name for c in calls} and not marker.exists()
    assert "quick_checkout" in {c.from_.name for c in calls}
    told = [m.message for m in lsp.messages]
    assert sum("was not written by this user on this machine; rebuilt" in m for m in told) == 1
