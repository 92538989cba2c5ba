"""Progress on long CLI work: a bar on a terminal's stderr, nothing when piped, nothing
with --quiet. The real CLI runs in a process whose stderr is a pseudo-terminal."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "example"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "example"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".anchor-ls", "__pycache__"))
    return root


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "user-cache"), "NO_COLOR": "1"}


def on_terminal(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of the CLI run with stderr on a pseudo-terminal."""
    master, slave = os.openpty()
    with subprocess.Popen(
        [sys.executable, "-m", "anchor_ls", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
        env=_env(tmp_path),
    ) as process:
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer of the terminal has closed it
                break
            if not data:
                break
            chunks.append(data)
        os.close(master)
        assert process.stdout is not None
        out = process.stdout.read().decode()
        code = process.wait(timeout=300)
    return code, out, b"".join(chunks).decode("utf-8", "replace")


def piped(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "anchor_ls", *args],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=300,
    )


def commands(repo: Path, tmp_path: Path) -> list[tuple[str, list[str]]]:
    cache = ["--cache", str(tmp_path / "cache")]
    return [
        ("indexing", ["index", str(repo), *cache]),
        ("indexing", ["graph", str(repo), "--json", *cache]),
        ("tagging", ["tag", str(repo), "--out", str(tmp_path / "snap"), "--force", *cache]),
        ("checking", ["check", str(repo), *cache]),
        ("stripping", ["strip", str(tmp_path / "snap")]),
        # a query builds the index first: a minute on a large repository, said nowhere
        ("indexing", ["callers", "checkout", str(repo), *cache]),
        ("indexing", ["outline", "pkg/service.py", str(repo), "--json", *cache]),
    ]


def test_a_terminal_sees_a_bar_for_each_long_command(repo: Path, tmp_path: Path) -> None:
    for label, args in commands(repo, tmp_path):
        code, out, err = on_terminal(tmp_path, *args)
        assert code == 0, err
        assert f"{label}:" in err and "100%|" in err and "file/s" in err, (args, err)
        assert "%|" not in out  # the bar never reaches stdout


def test_piped_stderr_gets_no_bar(repo: Path, tmp_path: Path) -> None:
    for _label, args in commands(repo, tmp_path):
        done = piped(tmp_path, *args)
        assert done.returncode == 0, done.stderr
        assert done.stderr == "", args


def test_quiet_on_a_terminal_prints_nothing_on_stderr_for_a_clean_run(
    repo: Path, tmp_path: Path
) -> None:
    for _label, args in commands(repo, tmp_path):
        code, out, err = on_terminal(tmp_path, *args, "--quiet")
        assert code == 0, err
        assert err == "", args
        assert out  # the answer itself still prints


def test_quiet_leaves_out_notes_but_not_errors(repo: Path, tmp_path: Path) -> None:
    (repo / "pkg" / "alias.py").symlink_to("models.py")
    cache = ["--cache", str(tmp_path / "cache")]
    noted = piped(tmp_path, "tag", str(repo), "--in-place", *cache)
    assert "pkg/alias.py: a symlink" in noted.stdout
    quiet = piped(tmp_path, "check", str(repo), *cache, "-q")
    assert quiet.returncode == 0 and "a symlink" not in quiet.stdout
    assert quiet.stdout.startswith("check: 0 of ")
    refused = piped(tmp_path, "check", str(tmp_path / "missing"), "--quiet")
    assert refused.returncode == 2
    assert "no such file or folder" in refused.stderr
