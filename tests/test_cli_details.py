"""What a new user of the command line meets: help for every option, clear messages for a
missing path, exit codes a script can rely on, one figure for the tag policy, and a
`tag --out` that leaves its source as it was."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from anchor_ls.cli import build_parser

EXAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "example"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "example"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".anchor-ls", "__pycache__"))
    return root


@pytest.fixture
def user_cache(tmp_path: Path) -> Path:
    return tmp_path / "user-cache"


def run(user_cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "anchor_ls", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "XDG_CACHE_HOME": str(user_cache)},
        timeout=300,
    )


def tree(root: Path) -> dict[str, tuple]:
    """Every entry under root with its bytes (or link target), mode and mtime."""
    found: dict[str, tuple] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            st = path.lstat()
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                found[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                found[rel] = ("dir", stat.S_IMODE(st.st_mode), st.st_mtime_ns)
            else:
                found[rel] = (path.read_bytes(), stat.S_IMODE(st.st_mode), st.st_mtime_ns)
    return found


# ----- the parser -------------------------------------------------------------------


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_every_option_of_every_subcommand_has_help() -> None:
    parser = build_parser()
    missing = [a.dest for a in parser._actions if not a.help]
    for name, sub in subcommands().items():
        missing += [f"{name} {a.option_strings or a.dest}" for a in sub._actions if not a.help]
    assert missing == []


def test_max_items_is_offered_only_where_it_changes_something() -> None:
    offering = {
        name
        for name, sub in subcommands().items()
        if any("--max-items" in a.option_strings for a in sub._actions)
    }
    # the policy index prints, the tags tag and check write or compare, MCP's tags tool
    assert offering == {"index", "tag", "check", "mcp"}


# ----- paths ------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["index", "graph", "callers", "tag", "check", "strip"])
def test_a_missing_path_says_no_such_file_or_folder_and_exits_2(
    tmp_path: Path, user_cache: Path, command: str
) -> None:
    missing = str(tmp_path / "nowhere")
    args = {
        "callers": ["callers", "checkout", missing],
        "tag": ["tag", missing, "--out", str(tmp_path / "snap")],
    }.get(command, [command, missing])
    done = run(user_cache, *args)
    assert done.returncode == 2
    assert done.stderr == f"anchor-ls: no such file or folder: {missing}\n"
    assert done.stdout == ""
    assert not (tmp_path / "snap").exists()


def test_a_file_where_a_folder_is_needed_says_not_a_folder(repo: Path, user_cache: Path) -> None:
    where = str(repo / "pkg" / "service.py")
    done = run(user_cache, "index", where)
    assert done.returncode == 2
    assert done.stderr == f"anchor-ls: not a folder: {where}\n"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["index", "--max-items", "-1"],
            "argument --max-items: must be 0 (no cap) or more, not -1",
        ),
        (
            ["check", "--max-items", "-2"],
            "argument --max-items: must be 0 (no cap) or more, not -2",
        ),
        (["mcp", "--max-items", "-1"], "argument --max-items: must be 0 (no cap) or more, not -1"),
        (["callers", "checkout", "--depth", "0"], "argument --depth: must be 1 or more, not 0"),
        (["impact", "checkout", "--limit", "-1"], "argument --limit: must be 0 or more, not -1"),
        (["find", "check", "--limit", "x"], "argument --limit: not a whole number: 'x'"),
    ],
)
def test_a_bad_number_is_refused_before_anything_is_indexed(
    repo: Path, user_cache: Path, args: list[str], said: str
) -> None:
    # refused as argparse refuses a bad choice (exit 2), before a build that takes a minute
    # on a large repository; `mcp` with a negative cap served, and failed every tags call
    command, *rest = args
    done = subprocess.run(
        [sys.executable, "-m", "anchor_ls", command, *rest[:1], str(repo), *rest[1:]]
        if command in ("callers", "impact", "find")
        else [sys.executable, "-m", "anchor_ls", command, str(repo), *rest],
        capture_output=True,
        text=True,
        env={**os.environ, "XDG_CACHE_HOME": str(user_cache)},
        stdin=subprocess.DEVNULL,
        timeout=300,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == f"anchor-ls {command}: error: {said}"
    assert done.stdout == ""
    assert not (repo / ".anchor-ls").exists()


@pytest.mark.parametrize("tcp", ["localhost", "127.0.0.1:http", "127.0.0.1:70000", ":-1"])
def test_serve_refuses_a_tcp_address_without_a_port(user_cache: Path, tcp: str) -> None:
    done = run(user_cache, "serve", "--tcp", tcp)
    assert done.returncode == 2
    said = f"argument --tcp: not HOST:PORT with a port from 0 to 65535: {tcp!r}"
    assert done.stderr.splitlines()[-1] == f"anchor-ls serve: error: {said}"
    assert "Traceback" not in done.stderr


def test_serve_on_a_port_in_use_says_so(user_cache: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run(user_cache, "serve", "--tcp", f"127.0.0.1:{port}")
    assert done.returncode == 2
    assert done.stderr.startswith(f"anchor-ls: cannot listen on 127.0.0.1:{port}: ")
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("case", ["not empty", "inside", "a file"])
def test_tag_refuses_its_output_before_indexing(
    repo: Path, user_cache: Path, tmp_path: Path, case: str
) -> None:
    # the refusal of a --out came after a whole build (a minute on a large repository)
    out = {"not empty": tmp_path / "full", "inside": repo / "snap", "a file": tmp_path / "f"}[case]
    if case == "not empty":
        out.mkdir()
        (out / "keep.txt").write_text("mine\n")
    elif case == "a file":
        out.write_text("mine\n")
    done = run(user_cache, "tag", str(repo), "--out", str(out))
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith("anchor-ls: output ")
    assert done.stdout == ""
    assert not (user_cache / "anchor-ls").exists()  # no index was built, no cache made
    assert not (repo / ".anchor-ls").exists()


def test_outline_takes_a_file_as_the_shell_completes_it(repo: Path, user_cache: Path) -> None:
    # from the folder above the repository, `example/pkg/service.py` is the file a shell
    # completes; relative to PATH it names nothing, so it is taken from the working folder
    for form in ("example/pkg/service.py", "example/pkg/service.py:16", "pkg/service.py"):
        done = subprocess.run(
            [sys.executable, "-m", "anchor_ls", "outline", form, "example", "--json"],
            capture_output=True,
            text=True,
            env={**os.environ, "XDG_CACHE_HOME": str(user_cache)},
            cwd=repo.parent,
            timeout=300,
        )
        assert done.returncode == 0, (form, done.stderr)
        assert json.loads(done.stdout)["path"] == "pkg/service.py"


def test_exclude_takes_a_folder_as_a_shell_writes_it(repo: Path, user_cache: Path) -> None:
    # `tests/` (a shell completes a folder so) and `./tests` left out nothing: no relpath
    # ends with a slash or starts with ./
    counts = {}
    for pattern in ("tests", "tests/", "./tests", "./tests/", "tests/*"):
        done = run(user_cache, "index", str(repo), "--exclude", pattern, "--json")
        assert done.returncode == 0, done.stderr
        counts[pattern] = json.loads(done.stdout)["files"]
    assert set(counts.values()) == {len(list((repo / "pkg").glob("*.py")))}, counts


# ----- check's exit codes -----------------------------------------------------------


def test_check_exits_1_only_for_stale_or_damaged_tags(repo: Path, user_cache: Path) -> None:
    cache = ["--cache", str(repo.parent / "c")]
    assert run(user_cache, "tag", str(repo), "--in-place", *cache).returncode == 0
    assert run(user_cache, "check", str(repo), *cache).returncode == 0
    service = repo / "pkg" / "service.py"
    service.write_text(service.read_text().replace("# CALLED_BY: ", "# CALLED_BY: x, ", 1))
    stale = run(user_cache, "check", str(repo), *cache)
    assert stale.returncode == 1
    assert stale.stdout.splitlines()[-1].startswith("check: 1 of 9 files stale")


def test_check_exits_2_for_usage_and_io_errors(repo: Path, user_cache: Path) -> None:
    cache = ["--cache", str(repo.parent / "c")]
    assert run(user_cache, "check", str(repo), "--max-items", "-1", *cache).returncode == 2
    assert run(user_cache, "check", str(repo), "--policy", "nope", *cache).returncode == 2
    assert run(user_cache, "check", str(repo / "nowhere"), *cache).returncode == 2
    # A Python file that cannot be read (a pipe here; any I/O error): the tags of the rest
    # are fine, but check cannot vouch for it.
    os.mkfifo(repo / "pkg" / "pipe.py")
    unread = run(user_cache, "check", str(repo), *cache)
    assert unread.returncode == 2
    assert "pkg/pipe.py: unreadable: not a regular file" in unread.stderr
    # the report says why it could not vouch: the summary alone read "0 of 9 files stale"
    assert unread.stdout.splitlines()[-2:] == [
        "pkg/pipe.py: not read (unreadable); its tags are not checked",
        "check: 0 of 9 files stale, 1 problems (policy topo, max 8; auto: mean call "
        "out-degree 1.65 < 5: topo)",
    ]
    # ...and it wins over stale tags: the run could not check everything
    assert run(user_cache, "check", str(repo), "--require", *cache).returncode == 2


# ----- the policy figure ------------------------------------------------------------


def test_index_tag_and_check_print_the_same_policy_and_mean_out_degree(
    repo: Path, tmp_path: Path, user_cache: Path
) -> None:
    cache = ["--cache", str(tmp_path / "c")]
    index = run(user_cache, "index", str(repo), *cache).stdout
    tag = run(user_cache, "tag", str(repo), "--out", str(tmp_path / "snap"), *cache).stdout
    check = run(user_cache, "check", str(repo), *cache).stdout
    shown = [
        re.search(r"policy:? (\w+, max \d+; auto: mean call out-degree [\d.]+ .*?: \w+)", text)
        for text in (index, tag, check)
    ]
    assert all(shown), (index, tag, check)
    assert len({m.group(1) for m in shown if m}) == 1
    assert index.count("out-degree") == 1  # the figure once, as the policy says it


# ----- tag --out --------------------------------------------------------------------


def test_tag_out_leaves_the_source_tree_untouched(
    repo: Path, tmp_path: Path, user_cache: Path
) -> None:
    before = tree(repo)
    done = run(user_cache, "tag", str(repo), "--out", str(tmp_path / "snap"))
    assert done.returncode == 0, done.stderr
    assert tree(repo) == before  # no .anchor-ls, not a byte or a time changed
    caches = [p for p in (user_cache / "anchor-ls").iterdir() if p.is_dir()]
    assert [p.name.startswith("example-") for p in caches] == [True]
    assert (caches[0] / "index.sqlite3").is_file()
    again = run(user_cache, "tag", str(repo), "--out", str(tmp_path / "snap"), "--force")
    assert again.returncode == 0 and tree(repo) == before
    assert [p for p in (user_cache / "anchor-ls").iterdir() if p.is_dir()] == caches


def test_tag_out_with_cache_puts_the_cache_there(
    repo: Path, tmp_path: Path, user_cache: Path
) -> None:
    before = tree(repo)
    cache = tmp_path / "mine"
    done = run(user_cache, "tag", str(repo), "--out", str(tmp_path / "snap"), "--cache", str(cache))
    assert done.returncode == 0, done.stderr
    assert (cache / "index.sqlite3").is_file() and tree(repo) == before


def test_a_folder_without_python_files_is_warned_about_and_gets_no_cache(
    tmp_path: Path, user_cache: Path
) -> None:
    source = tmp_path / "notes"
    source.mkdir()
    (source / "README.txt").write_text("no code here\n")
    before = tree(source)
    done = run(user_cache, "tag", str(source), "--out", str(tmp_path / "snap"))
    assert done.returncode == 0, done.stderr
    assert f"anchor-ls: warning: {source}: no Python files here" in done.stderr
    assert tree(source) == before
    assert not user_cache.exists()  # no cache folder, no key: nothing anywhere
    assert (tmp_path / "snap" / "README.txt").read_text() == "no code here\n"
    indexed = run(user_cache, "index", str(source))
    assert "no Python files here" in indexed.stderr
    assert tree(source) == before and not user_cache.exists()


def _sqlite_leftovers(*folders: Path) -> list[str]:
    """SQLite's write-ahead log and shared-memory files (and rollback journals) left in folders."""
    return sorted(
        str(p)
        for folder in folders
        if folder.exists()
        for p in folder.rglob("*")
        if p.name.endswith(("-wal", "-shm", "-journal"))
    )


@pytest.mark.parametrize(
    "command",
    [
        ["index", "REPO"],
        ["graph", "REPO", "--json"],
        ["check", "REPO"],
        ["callers", "checkout", "REPO"],
        ["callers", "no_such_name_anywhere", "REPO"],  # exit 1: the answer is an error
        ["find", "Order", "REPO"],
        ["outline", "pkg/service.py", "REPO"],
        ["tag", "REPO", "--in-place"],
        ["tag", "REPO", "--out", "SNAP"],
    ],
)
def test_a_command_leaves_only_the_sqlite_files_behind(
    repo: Path, tmp_path: Path, user_cache: Path, command: list[str]
) -> None:
    # connections left open at exit kept index.sqlite3-wal and -shm beside the cache (and
    # beside libraries.sqlite3 in the user cache): a closed, checkpointed cache is one file
    places = {"REPO": str(repo), "SNAP": str(tmp_path / "snap")}
    done = run(user_cache, *(places.get(a, a) for a in command))
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
    caches = [p for p in (repo / ".anchor-ls", user_cache) if p.exists()]
    assert any(p.name.endswith(".sqlite3") for c in caches for p in c.rglob("*"))
    assert _sqlite_leftovers(*caches) == []


UNICODE_FILES = {
    "pkgé/__init__.py": "",
    "pkgé/mödule.py": (
        '"""Ünïcode module."""\n\n\n'
        "def grüß(x):\n    return x  # ☃\n\n\n"
        'def caller_ß():\n    grüß("naïve ☃")\n\n\n'
        "class Klaß:\n    def méthode(self):\n        return caller_ß()\n\n\n"
        "class Kind(Klaß):\n    def méthode(self):\n        return 1\n"
    ),
    "tests/test_ü.py": (
        "from pkgé.mödule import grüß\n\n\ndef test_grüß():\n    assert grüß('é') == 'é'\n"
    ),
}


@pytest.fixture
def unicode_repo(tmp_path: Path) -> Path:
    root = tmp_path / "répo"
    for rel, text in UNICODE_FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


@pytest.mark.parametrize(
    "command",
    [
        ["index", "REPO"],
        ["callers", "grüß", "REPO"],
        ["callers", "grüß", "REPO", "--maybe", "--depth", "2"],
        ["callees", "caller_ß", "REPO"],
        ["find", "grüß", "REPO"],
        ["find", "é", "REPO"],
        ["impact", "grüß", "REPO"],
        ["hierarchy", "Klaß", "REPO"],
        ["hierarchy", "Klaß.méthode", "REPO"],
        ["outline", "pkgé/mödule.py", "REPO"],
        ["related-tests", "grüß", "REPO"],
        ["callers", "grü", "REPO"],  # an error naming the nearest names
    ],
)
@pytest.mark.parametrize("as_json", [False, True])
def test_an_ascii_only_stdout_gets_escapes_never_a_traceback(
    unicode_repo: Path, user_cache: Path, command: list[str], as_json: bool
) -> None:
    # PYTHONIOENCODING=ascii (a C locale, a pipe into an old tool) made every print of a
    # non-ASCII name, path or source line raise UnicodeEncodeError
    args = [str(unicode_repo) if a == "REPO" else a for a in command]
    if as_json:
        args.append("--json")
    done = subprocess.run(
        [sys.executable, "-m", "anchor_ls", *args],
        capture_output=True,
        env={**os.environ, "XDG_CACHE_HOME": str(user_cache), "PYTHONIOENCODING": "ascii"},
        timeout=300,
    )
    assert b"Traceback" not in done.stderr, done.stderr.decode()
    assert done.returncode == (1 if command[1] == "grü" else 0), done.stderr.decode()
    out = done.stdout.decode("ascii")  # nothing but ASCII reached the stream
    if as_json:
        answer = json.dumps(json.loads(out), ensure_ascii=False)  # valid JSON: \u escapes
        assert command[0] == "index" or "ü" in answer or "é" in answer  # the names intact
    elif command[0] != "index" and command[1] != "grü":
        assert "\\xfc" in out or "\\xe9" in out or "\\xdf" in out  # grü, é, ß escaped


def test_check_and_tag_print_non_ascii_paths_on_an_ascii_stdout(
    unicode_repo: Path, user_cache: Path
) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(user_cache), "PYTHONIOENCODING": "ascii"}

    def cli(*args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "anchor_ls", *args], capture_output=True, env=env, timeout=300
        )

    tagged = cli("tag", str(unicode_repo), "--in-place")
    assert tagged.returncode == 0 and b"Traceback" not in tagged.stderr, tagged.stderr.decode()
    module = unicode_repo / "pkgé" / "mödule.py"
    module.write_text(module.read_text("utf-8") + "\n\ndef more():\n    grüß(1)\n", "utf-8")
    checked = cli("check", str(unicode_repo))
    assert b"Traceback" not in checked.stderr, checked.stderr.decode()
    assert checked.returncode == 1
    assert "pkg\\xe9/m\\xf6dule.py" in checked.stdout.decode("ascii")


@pytest.mark.parametrize(
    "source",
    [
        # an encoding whose lines do not read on their own as ASCII-compatible text
        b"# -*- coding: utf-7 -*-\n# === CodeAnchor m.py:f\n# CALLS: :g\n# ===\n"
        b"def f():\n    g()\n\n\ndef g():\n    pass\n",
        # an f-string that does not close where Python 3.12 would close it
        b"# === CodeAnchor m.py:f\n# CALLS: :g\n# ===\ndef f():\n    g()\n\n\n"
        b"def g():\n    return f'{\"a\nb\"}'\n",
    ],
    ids=["utf-7", "f-string"],
)
def test_check_exits_2_for_a_file_it_cannot_read_as_tagged_text(
    tmp_path: Path, user_cache: Path, source: bytes
) -> None:
    # it exited 1, as for stale tags: but its tags were never read, stale or not
    root = tmp_path / "repo"
    root.mkdir()
    (root / "m.py").write_bytes(source)
    (root / "ok.py").write_bytes(b"def h():\n    pass\n")
    done = run(user_cache, "check", str(root))
    assert done.returncode == 2, done.stdout
    lines = done.stdout.splitlines()
    assert lines[0].startswith("m.py: not checked: cannot tell where its strings are (")
    assert lines[0].endswith("; its tags are not read")
    assert lines[-1].startswith("check: 0 of 2 files stale, 1 problems")
    assert (root / "m.py").read_bytes() == source
