"""`tag --maybe` writes MAYBE_CALLED_BY (who may call through what the index could not
follow); check re-renders it, strip removes it byte for byte; off by default."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.via_case import copy_case, run


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return copy_case(tmp_path)


def test_maybe_tags_round_trip_and_are_checked(repo: Path, tmp_path: Path) -> None:
    original = {p.name: p.read_bytes() for p in repo.glob("*.py")}
    plain = run("tag", str(repo), "--out", str(tmp_path / "plain"), "--cache", str(tmp_path / "c"))
    assert plain.returncode == 0, plain.stderr
    assert "MAYBE_CALLED_BY" not in (tmp_path / "plain" / "lib.py").read_text()
    out = tmp_path / "maybe"
    done = run("tag", str(repo), "--out", str(out), "--maybe", "--cache", str(tmp_path / "c"))
    assert done.returncode == 0, done.stderr
    lines = (out / "lib.py").read_text().splitlines()
    at = lines.index("    # === CodeAnchor lib.py:Base.run")
    assert lines[at + 2 : at + 4] == [
        "    # CALLED_BY: main.py:entry",
        "    # MAYBE_CALLED_BY: main.py:blind",
    ]
    fresh = run("check", str(out), "--maybe", "--cache", str(tmp_path / "c2"))
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr
    stale = run("check", str(out), "--cache", str(tmp_path / "c3"))
    assert stale.returncode == 1 and "lib.py:15: stale: lib.py:Base.run" in stale.stdout
    stripped = run("strip", str(out))
    assert stripped.returncode == 0, stripped.stderr
    assert {p.name: p.read_bytes() for p in out.glob("*.py")} == original
