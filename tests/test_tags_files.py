"""atomic_rewrite against an editor that saves while a tag command writes the same file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from anchor_ls.tags import files
from anchor_ls.tags.apply import strip_tree
from anchor_ls.tags.files import ChangedOnDisk, atomic_rewrite

OLD = b"def f():\n    pass\n"
NEW = b"# === CodeAnchor m.py:f\n# CALLS: g\n# ===\ndef f():\n    pass\n"
SAVED = b"def f():\n    return 'the editor saved this'\n"


def _save_by_rename(path: Path) -> None:
    """How most editors save: a new file renamed over the old one."""
    tmp = path.with_name(path.name + ".editor~")
    tmp.write_bytes(SAVED)
    os.replace(tmp, path)


def _save_in_place(path: Path) -> None:
    """How others save: the same file truncated and written again."""
    with open(path, "r+b") as handle:
        handle.truncate(0)
        handle.write(SAVED)


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name != "m.py")


@pytest.mark.parametrize("save", [_save_by_rename, _save_in_place])
def test_a_save_just_before_the_swap_is_kept_and_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, save
) -> None:
    path = tmp_path / "m.py"
    path.write_bytes(OLD)
    monkeypatch.setattr(files, "_before_swap", save)
    with pytest.raises(ChangedOnDisk):
        atomic_rewrite(path, NEW, OLD)
    assert path.read_bytes() == SAVED
    assert _leftovers(tmp_path) == []


def test_without_a_save_the_new_bytes_replace_the_file_and_keep_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_bytes(OLD)
    path.chmod(0o640)
    atomic_rewrite(path, NEW, OLD)
    assert path.read_bytes() == NEW
    assert path.stat().st_mode & 0o777 == 0o640
    assert _leftovers(tmp_path) == []


def test_a_file_changed_before_the_write_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_bytes(SAVED)
    with pytest.raises(ChangedOnDisk):
        atomic_rewrite(path, NEW, OLD)
    assert path.read_bytes() == SAVED
    assert _leftovers(tmp_path) == []


def test_strip_reports_a_file_an_editor_saved_during_the_write_and_keeps_the_save(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.py"
    path.write_bytes(NEW)
    monkeypatch.setattr(files, "_before_swap", _save_by_rename)
    report = strip_tree(tmp_path)
    assert report.changed == []
    assert report.problems == ["m.py: changed while stripping; left as is"]
    assert path.read_bytes() == SAVED
    assert _leftovers(tmp_path) == []


def test_a_read_only_file_is_left_as_it_is_and_reported(tmp_path: Path) -> None:
    # the swap replaced a file its owner had made read-only (chmod a-w), where an editor
    # or a formatter refuses to write
    root = tmp_path / "repo"
    root.mkdir()
    tagged = b"# === CodeAnchor m.py:f\n# CALLED_BY: :g\n# ===\ndef f():\n    pass\n"
    path = root / "m.py"
    path.write_bytes(tagged)
    path.chmod(0o444)
    report = strip_tree(root)
    assert path.read_bytes() == tagged
    assert oct(path.stat().st_mode & 0o777) == "0o444"
    assert report.problems == ["m.py: not written: read-only file; left as is"]
    assert report.exit_code == 1


def test_a_hard_linked_file_is_left_as_it_is_and_reported_by_strip_and_tag(
    tmp_path: Path,
) -> None:
    # the swap puts a new inode under one name: the file's other names kept the old text
    # (an untagged twin of a tagged file, or tags that strip never removed from the other)
    from anchor_ls.index import Index
    from anchor_ls.tags.apply import tag_tree_in_place
    from anchor_ls.tags.policy import resolve_policy

    root = tmp_path / "repo"
    root.mkdir()
    path = root / "m.py"
    path.write_bytes(NEW)
    twin = tmp_path / "twin.py"
    os.link(path, twin)
    message = "m.py: not written: it has 2 hard links (a rewrite would split them); left as is"
    report = strip_tree(root)
    assert report.problems == [message]
    assert report.changed == []
    assert report.exit_code == 1
    assert path.read_bytes() == twin.read_bytes() == NEW
    assert path.stat().st_ino == twin.stat().st_ino

    path.write_bytes(OLD + b"\ndef g():\n    f()\n")
    index = Index(root, cache_dir=tmp_path / "cache")
    index.build()
    report = tag_tree_in_place(index, resolve_policy("topo", 0, 8))
    assert report.problems == [message]
    assert report.changed == []
    assert twin.read_bytes() == OLD + b"\ndef g():\n    f()\n"
    assert path.stat().st_ino == twin.stat().st_ino
    assert _leftovers(root) == []


def test_a_file_this_user_may_not_write_is_left_as_it_is_and_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # root's 0644 file in a user's checkout: the owner's write bit is set, so the swap (a
    # rename in the user's own folder) replaced it, and the user owned the new file, where
    # an editor's save fails with EACCES
    root = tmp_path / "repo"
    root.mkdir()
    path = root / "m.py"
    path.write_bytes(NEW)
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda p, mode, **kw: False if Path(p) == path else real_access(p, mode)
    )
    report = strip_tree(root)
    assert report.problems == ["m.py: not written: not writable by this user; left as is"]
    assert path.read_bytes() == NEW
    assert _leftovers(root) == []


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root")
def test_a_file_whose_owner_the_rewrite_cannot_keep_is_left_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # alice's group-writable file rewritten by bob: chown of the new file fails (bob is not
    # root) and the swap gave the file to bob, and his group: alice could no longer write it
    root = tmp_path / "repo"
    root.mkdir()
    path = root / "m.py"
    path.write_bytes(NEW)
    os.chown(path, 65534, 65534)
    monkeypatch.setattr(os, "chown", _refused_chown)
    report = strip_tree(root)
    assert report.problems == [
        "m.py: not written: owned by uid 65534, gid 65534, which a rewrite by this user "
        "cannot keep; left as is"
    ]
    assert path.read_bytes() == NEW
    assert (path.stat().st_uid, path.stat().st_gid) == (65534, 65534)
    assert _leftovers(root) == []


def _refused_chown(*args: object, **kwargs: object) -> None:
    raise PermissionError(1, "Operation not permitted")


def _tagged(name: str) -> bytes:
    return f"# === CodeAnchor {name}:f\n# CALLS: g\n# ===\ndef f():\n    pass\n".encode()


def test_strip_leaves_the_folders_the_index_never_reads_unless_given_as_path(
    tmp_path: Path,
) -> None:
    # strip walked every folder: a .venv's site-packages, node_modules, a virtual
    # environment of any name, tool caches, where `tag` never writes a block, and rewrote
    # the library files there that held block-like text
    root = tmp_path / "repo"
    inside = [
        ".venv/lib/python3.12/site-packages/lib.py",
        "venv/lib/v.py",
        "node_modules/pkg/n.py",
        ".tox/py312/t.py",
        "env/lib/e.py",  # a virtual environment by its pyvenv.cfg
        "src/.mypy_cache/c.py",
    ]
    for rel in ["m.py", "src/s.py", *inside]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(_tagged(Path(rel).name))
    (root / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    report = strip_tree(root)
    assert report.changed == ["m.py", "src/s.py"]
    assert report.files == 2
    for rel in inside:
        assert (root / rel).read_bytes() == _tagged(Path(rel).name), rel
    assert report.notes == [
        "6 folders left out as the index leaves them (virtual environments, node_modules, "
        "tool caches): .tox, .venv, env, ...; give one as PATH to strip it"
    ]
    assert report.ok

    report = strip_tree(root / ".venv")  # named: stripped
    assert report.changed == ["lib/python3.12/site-packages/lib.py"]
    assert report.notes == []
    report = strip_tree(root / "env")
    assert report.changed == ["lib/e.py"]
