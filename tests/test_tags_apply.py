"""Tags on real trees with the real Index: in place, snapshots, strip, check and the CLI."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from anchor_ls.cli import main
from anchor_ls.index import Index
from anchor_ls.tags.apply import (
    TagError,
    check_tree,
    export_snapshot,
    policy_for,
    strip_tree,
    tag_tree_in_place,
)
from anchor_ls.tags.policy import resolve_policy

TOPO = resolve_policy("topo", 0, 8)
FILES = {
    "pkg/__init__.py": b"",
    "pkg/models.py": (
        b'"""Models."""\n'
        b"class Base:\n"
        b"    def save(self):\n"
        b"        return 1\n"
        b"\n"
        b"class Order(Base):\n"
        b"    @property\n"
        b"    def total(self):\n"
        b"        return self.save()\n"
    ),
    "pkg/service.py": (
        b"#!/usr/bin/env python\r\n"
        b"# -*- coding: utf-8 -*-\r\n"
        b"from pkg.models import Order\r\n"
        b"\r\n"
        b"def checkout():\r\n"
        b"\torder = Order()\r\n"
        b"\treturn order.total\r\n"
        b"\r\n"
        b"class Shop:\r\n"
        b"\tdef run(self):\r\n"
        b"\t\treturn checkout()\r\n"
    ),
    "pkg/data.bin": bytes(range(256)),
    "README.md": b"# demo\n",
}


def make_tree(root: Path, files: dict[str, bytes] = FILES) -> Path:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def indexed(root: Path, cache: Path) -> Index:
    index = Index(root, cache_dir=cache)
    index.build()
    return index


def snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under root: bytes (or link target), mode and mtime."""
    found: dict[str, tuple] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            st = path.lstat()
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                found[rel] = ("link", os.readlink(path), st.st_mtime_ns)
            elif path.is_dir():
                found[rel] = ("dir", stat.S_IMODE(st.st_mode))
            else:
                found[rel] = (path.read_bytes(), stat.S_IMODE(st.st_mode), st.st_mtime_ns)
    return found


def contents(root: Path, skip: tuple[str, ...] = (".anchor-ls",)) -> dict[str, object]:
    """Bytes, link targets and modes of everything under root (mtimes left out)."""
    return {
        rel: (v[0], v[1]) if v[0] != "link" else v[:2]
        for rel, v in snapshot(root).items()
        if not rel.startswith(skip)
    }


# ----- in place ---------------------------------------------------------------------


def test_in_place_tags_then_a_second_run_touches_nothing(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "repo")
    (root / "pkg/service.py").chmod(0o750)
    report = tag_tree_in_place(indexed(root, tmp_path / "c1"), TOPO)
    assert sorted(report.changed) == ["pkg/models.py", "pkg/service.py"]
    assert report.problems == []
    service = (root / "pkg/service.py").read_bytes()
    assert service.startswith(
        b"#!/usr/bin/env python\r\n# -*- coding: utf-8 -*-\r\n# === CodeAnchor"
    )
    method = b"\n\t# === CodeAnchor pkg/service.py:Shop.run\r\n\t# CALLS: :checkout\r\n"
    assert method in service
    assert b"# === CodeAnchor pkg/service.py:checkout\r\n" in service
    assert stat.S_IMODE((root / "pkg/service.py").stat().st_mode) == 0o750
    before = snapshot(root)
    again = tag_tree_in_place(indexed(root, tmp_path / "c2"), TOPO)
    assert again.changed == [] and again.problems == []
    assert snapshot(root) == before  # bytes, modes and mtimes
    assert strip_tree(root).changed
    assert contents(root) == contents(make_tree(tmp_path / "fresh")) | {
        "pkg/service.py": (FILES["pkg/service.py"], 0o750)
    }


def test_a_file_edited_after_indexing_is_not_overwritten(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "repo")
    index = indexed(root, tmp_path / "c")
    edited = FILES["pkg/models.py"] + b"\ndef late():\n    pass\n"
    (root / "pkg/models.py").write_bytes(edited)
    report = tag_tree_in_place(index, TOPO)
    assert (root / "pkg/models.py").read_bytes() == edited
    assert any("pkg/models.py" in p and "changed since" in p for p in report.problems)
    assert report.changed == ["pkg/service.py"]
    assert report.exit_code == 1


def test_a_symlinked_python_file_stays_a_symlink(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "repo")
    (root / "alias.py").symlink_to("pkg/models.py")
    tag_tree_in_place(indexed(root, tmp_path / "c"), TOPO)
    assert (root / "alias.py").is_symlink()
    assert os.readlink(root / "alias.py") == "pkg/models.py"


# ----- snapshots --------------------------------------------------------------------


@pytest.fixture
def odd_tree(tmp_path: Path) -> Path:
    root = make_tree(tmp_path / "repo")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_bytes(b"def secret(): pass\n")
    (root / "link_out").symlink_to(outside, target_is_directory=True)
    (root / "models_link.py").symlink_to("pkg/models.py")
    (root / "dangling").symlink_to("nowhere")
    (root / "empty").mkdir()
    (root / "run.sh").write_bytes(b"#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    (root / ".git").mkdir()
    (root / ".git/HEAD").write_bytes(b"ref: refs/heads/main\n")
    return root


def test_export_copies_everything_tags_python_and_leaves_the_tree_alone(
    odd_tree: Path, tmp_path: Path
) -> None:
    before = snapshot(odd_tree)
    out = tmp_path / "snap"
    report = export_snapshot(indexed(odd_tree, tmp_path / "c"), out, TOPO)
    assert snapshot(odd_tree) == before
    assert report.problems == []
    assert sorted(report.changed) == ["pkg/models.py", "pkg/service.py"]
    assert os.readlink(out / "link_out") == str(tmp_path / "outside")  # kept, not followed
    assert not (out / "secret.py").exists() and (tmp_path / "outside").exists()
    assert os.readlink(out / "models_link.py") == "pkg/models.py"
    assert os.readlink(out / "dangling") == "nowhere"
    assert (out / "empty").is_dir()
    assert stat.S_IMODE((out / "run.sh").stat().st_mode) == 0o755
    assert (out / "pkg/data.bin").read_bytes() == FILES["pkg/data.bin"]
    assert not (out / ".git").exists()
    assert b"# === CodeAnchor pkg/models.py\n" in (out / "pkg/models.py").read_bytes()
    stripped = strip_tree(out)
    assert sorted(stripped.changed) == ["pkg/models.py", "pkg/service.py"]
    assert contents(out) == {
        k: v for k, v in contents(odd_tree).items() if not k.startswith(".git")
    }


def test_export_includes_git_only_when_asked(odd_tree: Path, tmp_path: Path) -> None:
    export_snapshot(indexed(odd_tree, tmp_path / "c"), tmp_path / "snap", TOPO, include_git=True)
    assert (tmp_path / "snap/.git/HEAD").read_bytes() == b"ref: refs/heads/main\n"


def test_export_refuses_a_non_empty_folder_unless_forced(odd_tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "snap"
    out.mkdir()
    (out / "keep.txt").write_bytes(b"x")
    index = indexed(odd_tree, tmp_path / "c")
    with pytest.raises(TagError, match="not empty"):
        export_snapshot(index, out, TOPO)
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]
    export_snapshot(index, out, TOPO, force=True)
    assert (out / "pkg/models.py").exists() and (out / "keep.txt").exists()


def test_export_never_writes_through_a_symlink_left_in_the_output(
    odd_tree: Path, tmp_path: Path
) -> None:
    out = tmp_path / "snap"
    out.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / "pkg").symlink_to(elsewhere, target_is_directory=True)
    export_snapshot(indexed(odd_tree, tmp_path / "c"), out, TOPO, force=True)
    assert list(elsewhere.iterdir()) == []
    assert (out / "pkg").is_dir() and not (out / "pkg").is_symlink()
    assert (out / "pkg/models.py").exists()


def test_export_refuses_to_write_over_the_source_tree(odd_tree: Path, tmp_path: Path) -> None:
    index = indexed(odd_tree, tmp_path / "c")
    before = snapshot(odd_tree)
    for out in (odd_tree, tmp_path):
        with pytest.raises(TagError, match="holds the source tree"):
            export_snapshot(index, out, TOPO, force=True)
    assert snapshot(odd_tree) == before


def test_export_refuses_an_output_folder_inside_the_tree_however_spelled(
    odd_tree: Path, tmp_path: Path
) -> None:
    index = indexed(odd_tree, tmp_path / "c")
    (tmp_path / "alias").symlink_to(odd_tree / "pkg", target_is_directory=True)
    before = snapshot(odd_tree)
    for out in (
        odd_tree / "tagged",
        odd_tree / "pkg",  # an existing folder of the tree, even with force
        tmp_path / "alias" / "snap",  # through a symlink into the tree
        odd_tree / "link_out" / "snap",  # below the tree as spelled
        Path(os.path.relpath(odd_tree / "empty")),  # relative to the working folder
    ):
        with pytest.raises(TagError, match="inside the source tree"):
            export_snapshot(index, out, TOPO, force=True)
    assert snapshot(odd_tree) == before


def test_cli_tag_out_dot_inside_the_tree_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_tree(tmp_path / "repo")
    before = snapshot(root)
    monkeypatch.chdir(root / "pkg")
    assert main(["tag", str(root), "--out", ".", "--cache", str(tmp_path / "c")]) == 2
    assert "inside the source tree" in capsys.readouterr().err
    assert snapshot(root) == before


def test_stripping_an_edited_snapshot_leaves_exactly_the_agent_patch(
    tmp_path: Path,
) -> None:
    root = make_tree(tmp_path / "repo")
    out = tmp_path / "snap"
    export_snapshot(indexed(root, tmp_path / "c"), out, TOPO)
    models = out / "pkg/models.py"
    models.write_bytes(models.read_bytes().replace(b"return 1", b"return 2  # fixed"))
    (out / "pkg/new.py").write_bytes(b"def added():\n    pass\n")
    strip_tree(out)
    expected = contents(root) | {
        "pkg/models.py": (FILES["pkg/models.py"].replace(b"return 1", b"return 2  # fixed"), 0o644),
        "pkg/new.py": (b"def added():\n    pass\n", 0o644),
    }
    assert contents(out) == expected


def test_two_exports_in_processes_with_different_hash_seeds_are_identical(
    tmp_path: Path,
) -> None:
    root = make_tree(tmp_path / "repo", FILES | {"pkg/more.py": _many_callers()})
    outs = []
    for seed in ("1", "4242"):
        out = tmp_path / f"snap{seed}"
        env = os.environ | {"PYTHONHASHSEED": seed}
        args = [sys.executable, "-m", "anchor_ls", "tag", str(root), "--out", str(out)]
        args += ["--cache", str(tmp_path / f"cache{seed}"), "--policy", "topo", "--max-items", "3"]
        subprocess.run(args, check=True, env=env, capture_output=True)
        outs.append(contents(out))
    assert outs[0] == outs[1]
    assert b"[+" in outs[0]["pkg/more.py"][0]  # the cap was exercised


def _many_callers() -> bytes:
    lines = [b"from pkg.models import Order", b"def hub():", b"    return Order()"]
    for i in range(9):
        lines += [f"def caller_{i}():".encode(), b"    hub()", b"    return Order()"]
    return b"\n".join(lines) + b"\n"


# ----- check ------------------------------------------------------------------------


def test_check_passes_fresh_tags_and_flags_stale_ones(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "repo")
    assert check_tree(indexed(root, tmp_path / "c"), TOPO).ok  # nothing tagged yet
    missing = check_tree(indexed(root, tmp_path / "c"), TOPO, require=True)
    assert not missing.ok and any("missing: pkg/service.py:checkout" in p for p in missing.problems)
    tag_tree_in_place(indexed(root, tmp_path / "c"), TOPO)
    assert check_tree(indexed(root, tmp_path / "c"), TOPO, require=True).ok
    # A new caller in another file makes the callee's block stale.
    (root / "pkg/extra.py").write_bytes(b"from pkg.service import checkout\ncheckout()\n")
    stale = check_tree(indexed(root, tmp_path / "c"), TOPO)
    assert stale.exit_code == 1
    assert "pkg/service.py" in stale.changed


def test_check_reports_a_damaged_block(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "repo")
    tag_tree_in_place(indexed(root, tmp_path / "c"), TOPO)
    path = root / "pkg/models.py"
    lines = path.read_bytes().split(b"\n")
    closer = max(i for i, ln in enumerate(lines) if ln == b"# ===")
    path.write_bytes(b"\n".join(lines[:closer] + lines[closer + 1 :]))
    report = check_tree(indexed(root, tmp_path / "c"), TOPO)
    assert any(p.startswith("pkg/models.py:") and "not" in p for p in report.problems)
    again = strip_tree(root)
    assert again.exit_code == 1 and any("pkg/models.py" in p for p in again.problems)


# ----- the user's own lookalike blocks ----------------------------------------------

NOTES = b"# === CodeAnchor my notes\n# NOTE: mine\n# ===\n"


def test_hand_written_blocks_survive_tag_strip_and_check(tmp_path: Path) -> None:
    models = FILES["pkg/models.py"].replace(b"class Base:", NOTES + b"class Base:")
    root = make_tree(tmp_path / "repo", FILES | {"pkg/models.py": models})
    never_tagged = contents(root)
    stripped = strip_tree(root)
    assert stripped.ok and stripped.changed == [] and contents(root) == never_tagged
    assert check_tree(indexed(root, tmp_path / "c"), TOPO).ok
    tagged = tag_tree_in_place(indexed(root, tmp_path / "c"), TOPO)
    assert tagged.ok and "pkg/models.py" in tagged.changed
    assert NOTES in (root / "pkg/models.py").read_bytes()
    assert check_tree(indexed(root, tmp_path / "c"), TOPO, require=True).ok
    strip_tree(root / "pkg")  # from a folder below the root: ids still name their files
    assert contents(root) == never_tagged


# ----- command line -------------------------------------------------------------------


def test_cli_tag_check_strip_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    root = make_tree(tmp_path / "repo")
    cache = ["--cache", str(tmp_path / "cache")]
    original = contents(root)
    assert main(["check", str(root), *cache, "--require"]) == 1
    assert main(["tag", str(root), "--in-place", *cache]) == 0
    assert "tag: 2 of" in capsys.readouterr().out
    assert main(["check", str(root), *cache, "--require"]) == 0
    assert main(["tag", str(root), "--in-place", *cache, "--policy", "inv"]) == 0
    assert main(["check", str(root), *cache]) == 1  # tagged with inv, checked with auto (topo)
    assert main(["strip", str(root)]) == 0
    assert contents(root) == original


def test_cli_refusals_exit_2_with_a_message(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    root = make_tree(tmp_path / "repo")
    cache = ["--cache", str(tmp_path / "cache")]
    assert main(["tag", str(root), "--out", str(root), *cache]) == 2
    with pytest.raises(SystemExit) as refused:  # argparse's refusal, before the index
        main(["tag", str(root), "--in-place", "--max-items", "-1", *cache])
    assert refused.value.code == 2
    assert main(["strip", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert "source tree" in err and "--max-items" in err and "no such file" in err


def test_policy_for_uses_the_graph_degree(tmp_path: Path) -> None:
    index = indexed(make_tree(tmp_path / "repo"), tmp_path / "c")
    policy = policy_for(index.graph, "auto", 8)
    assert policy.name == "topo" and "auto" in policy.reason


def test_export_reports_special_files_and_goes_on(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "repo")
    os.mkfifo(root / "pipe")
    report = export_snapshot(indexed(root, tmp_path / "c"), tmp_path / "snap", TOPO)
    assert report.problems == ["pipe: not a regular file, folder or symlink; left out"]
    assert not (tmp_path / "snap/pipe").exists()
    assert (tmp_path / "snap/pkg/models.py").exists()


def test_test_code_gets_no_blocks_unless_asked_and_loses_old_ones(tmp_path: Path) -> None:
    test_file = (
        b"from pkg.service import checkout\n"
        b"def helper():\n"
        b"    return checkout()\n"
        b"def test_checkout():\n"
        b"    assert helper()\n"
    )
    root = make_tree(tmp_path / "repo", {**FILES, "tests/test_shop.py": test_file})
    with_tests = resolve_policy("topo", 0, 8, tests=True)
    report = tag_tree_in_place(indexed(root, tmp_path / "c"), with_tests)
    assert "tests/test_shop.py" in report.changed
    tagged = (root / "tests/test_shop.py").read_bytes()
    assert b"# === CodeAnchor tests/test_shop.py:helper\n# CALLED_BY: :test_checkout\n" in tagged
    assert check_tree(indexed(root, tmp_path / "c"), with_tests, require=True).ok
    # The default policy tags no test code: a check calls the blocks there stale...
    stale = check_tree(indexed(root, tmp_path / "c"), TOPO)
    assert stale.changed == ["tests/test_shop.py"]
    # ...and tagging strips them, while the code under test keeps its blocks.
    again = tag_tree_in_place(indexed(root, tmp_path / "c"), TOPO)
    assert again.changed == ["tests/test_shop.py"]
    assert (root / "tests/test_shop.py").read_bytes() == test_file
    assert b"# === CodeAnchor pkg/service.py:checkout\r\n" in (root / "pkg/service.py").read_bytes()


def _listing_refused(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """os.scandir of `folder` fails as it does for a non-root user in a folder of mode 000."""
    real = os.scandir

    def scandir(path=".", *args, **kwargs):  # type: ignore[no-untyped-def]
        if Path(path) == folder:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "scandir", scandir)


def test_a_folder_that_cannot_be_listed_is_reported_by_export_and_strip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the walk returned nothing for it: the snapshot lacked the folder's files and strip
    # left their tags, both without a word (exit 0)
    root = make_tree(tmp_path / "repo")
    index = indexed(root, tmp_path / "c")
    _listing_refused(monkeypatch, root / "pkg")
    report = export_snapshot(index, tmp_path / "snap", TOPO)
    assert report.problems == ["pkg: folder not read: Permission denied; left out"]
    assert report.exit_code == 1
    assert (tmp_path / "snap/README.md").exists()
    monkeypatch.undo()

    tagged = tmp_path / "tagged"
    export_snapshot(index, tagged, TOPO)
    _listing_refused(monkeypatch, tagged / "pkg")
    report = strip_tree(tagged)
    assert report.problems == ["pkg: folder not read: Permission denied; not stripped"]
    assert report.exit_code == 1


def test_an_entry_removed_while_the_tree_is_walked_is_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # vim saves with a probe file `4913` it removes at once: a stat after the listing raised
    # FileNotFoundError out of the walk and stopped the export half-way
    root = make_tree(tmp_path / "repo")
    index = indexed(root, tmp_path / "c")
    real = os.scandir

    def scandir(path=".", *args, **kwargs):  # type: ignore[no-untyped-def]
        listing = list(real(path, *args, **kwargs))
        if Path(path) == root:
            (root / "4913").write_bytes(b"")
            listing.append(next(e for e in real(path) if e.name == "4913"))
            (root / "4913").unlink()
        return _Listing(listing)

    monkeypatch.setattr(os, "scandir", scandir)
    report = export_snapshot(index, tmp_path / "snap", TOPO)
    assert report.problems == []
    assert (tmp_path / "snap/pkg/service.py").exists()
    assert strip_tree(tmp_path / "snap").problems == []


class _Listing(list):  # type: ignore[type-arg]
    def __enter__(self) -> _Listing:
        return self

    def __exit__(self, *exc: object) -> None:
        pass
