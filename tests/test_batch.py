"""`anchor-ls batch`: snapshots of many commits, chained, on a pool or Ray, resumable.

A git repository made here with several commits (files added, changed, removed, a module
turned package, a link, an executable) is the fixture. The referee of every snapshot is a
plain `anchor-ls tag --out` of a tree `git archive` wrote for that commit: the batch's
DIR/<id>/<name> must hold the same bytes, whether its index came from a fresh build or
was moved there from the commit before, on a pool or on Ray.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.library_env import APP, make_environment
from support.planted import marks_left, plant, plant_interpreter

from anchor_ls.batch import gittree
from anchor_ls.batch.manifest import parse_lines, read_manifest
from anchor_ls.batch.results import Results, last_results

ANCHOR_LS = shutil.which("anchor-ls", path=str(Path(sys.executable).parent))
NAME = "shop"  # the repository folder's name: the snapshots' too

# A module checked out in cp1251 (git keeps it in UTF-8: working-tree-encoding), as a
# checkout writes it and a tagged snapshot must hold it.
LEGACY = "# -*- coding: cp1251 -*-\nNAME = 'Привет'\n\n\ndef hello():\n    return NAME\n"

# Each commit: path -> text or bytes (None removes the path). Applied in order on one
# work tree.
COMMITS: list[dict[str, str | bytes | None]] = [
    {
        "shop/__init__.py": "",
        "shop/models.py": "class Order:\n    def add(self, sku):\n        return price(sku)\n\n\n"
        "def price(sku):\n    return 1\n",
        "shop/service.py": "from shop.models import Order\n\n\ndef checkout(skus):\n"
        "    order = Order()\n    for sku in skus:\n        order.add(sku)\n    return order\n",
        "README.md": "shop\n",
        "tests/test_service.py": "from shop.service import checkout\n\n\ndef test_checkout():\n"
        "    assert checkout([])\n",
    },
    {
        "shop/pricing.py": "def discount(total):\n    return total * 0.9\n",
        "shop/models.py": "from shop.pricing import discount\n\n\nclass Order:\n"
        "    def add(self, sku):\n        return discount(price(sku))\n\n\n"
        "def price(sku):\n    return 1\n",
        "run.sh": "#!/bin/sh\necho run\n",
        # a checkout writes run.cmd with CRLF and legacy.py in cp1251, git keeps LF and UTF-8
        ".gitattributes": "*.cmd text eol=crlf\nshop/legacy.py working-tree-encoding=cp1251\n",
        "run.cmd": "echo run\n",
        "shop/legacy.py": LEGACY.encode("cp1251"),
    },
    {
        "shop/service.py": None,
        "shop/service/__init__.py": "from shop.service.core import checkout\n",
        "shop/service/core.py": "from shop.models import Order, price\n\n\ndef checkout(skus):\n"
        "    return [price(s) for s in skus] and Order()\n",
        "docs/notes.txt": "windows line ends\r\n",
    },
    {
        "shop/pricing.py": None,
        "shop/models.py": "class Order:\n    def add(self, sku):\n        return price(sku)\n\n\n"
        "def price(sku):\n    return 2\r\n",
        "shop/cli.py": "from shop.service import checkout\n\n\ndef main():\n    checkout(['a'])\n",
        "shop/legacy.py": (LEGACY + "\n\ndef bye():\n    return hello()\n").encode("cp1251"),
    },
    {
        "shop/cli.py": "from shop.service import checkout\nfrom shop.models import price\n\n\n"
        "def main():\n    checkout(['a'])\n    price('b')\n",
    },
    {  # more Python files than a step updates one by one: the index is built again
        f"shop/gen/m{i}.py": f"from shop.models import price\n\n\ndef g{i}():\n"
        f"    return price({i})\n"
        for i in range(10)
    },
]


def _git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    done = subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    )
    return done.stdout.strip()


def make_repo(root: Path) -> tuple[Path, list[str]]:
    """The fixture repository at root/NAME and its commits, oldest first."""
    repo = root / NAME
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    shas = []
    for n, files in enumerate(COMMITS):
        for rel, text in files.items():
            path = repo / rel
            if text is None:
                shutil.rmtree(path) if path.is_dir() else path.unlink()
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text if isinstance(text, bytes) else text.encode())
            if rel.endswith(".sh"):
                path.chmod(0o755)
        if n == 1:
            (repo / "shop" / "alias.py").symlink_to("models.py")
        _git(repo, "add", "-A")
        stamp = f"{1_700_000_000 + n * 60} +0000"
        _git(repo, "commit", "-q", "-m", f"c{n}", f"--date={stamp}")
        shas.append(_git(repo, "rev-parse", "HEAD"))
    return repo, shas


def env() -> dict[str, str]:
    """The environment a user's shell gives: any hash seed, no PYTHONSAFEPATH (the programs
    set it for what they start)."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONHASHSEED", "PYTHONSAFEPATH")}


def anchor_ls(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    assert ANCHOR_LS is not None, "the console script is installed beside the interpreter"
    return subprocess.run(
        [ANCHOR_LS, *map(str, args)],
        cwd=cwd,
        env=env(),
        capture_output=True,
        text=True,
        timeout=600,
    )


def batch(*args: object, status: int = 0, counts: str) -> subprocess.CompletedProcess[str]:
    """`anchor-ls batch ARGS`, which exits with status and prints counts ("1 ok, 0
    failed, 5 skipped")."""
    done = anchor_ls("batch", *args)  # type: ignore[arg-type]
    assert done.returncode == status, done.stderr
    assert counts in done.stdout
    return done


def write_manifest(path: Path, lines: list[dict | str]) -> Path:
    path.write_text(
        "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), "utf-8"
    )
    return path


def plain_snapshots(repo: Path, shas: list[str], root: Path) -> Path:
    """`tag --out` per commit, of a tree written by `git archive`: root/t<n>/NAME."""
    for n, sha in enumerate(shas):
        tree = root / "trees" / f"c{n}" / NAME
        tree.mkdir(parents=True)
        archive = subprocess.run(
            ["git", "-C", str(repo), "archive", sha], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        done = anchor_ls("tag", tree, "--out", root / "plain" / f"t{n}" / NAME)
        assert done.returncode == 0, done.stderr
    return root / "plain"


def tree_bytes(root: Path) -> dict[str, bytes | str]:
    """Every path under root: a file's bytes (with its exec bit), a link's target."""
    out: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            out[rel] = "link -> " + os.readlink(path)
        elif path.is_file():
            out[rel] = path.read_bytes() + (b"+x" if os.access(path, os.X_OK) else b"")
        else:
            out[rel] = "dir"
    return out


def results(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "results.jsonl").read_text("utf-8").splitlines()]


def last_status(out: Path) -> dict[str, str]:
    return {r["id"]: r["status"] for r in results(out)}


@pytest.fixture(scope="module")
def fixture(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], Path]:
    """(the repository, its commits, the plain `tag --out` snapshots)."""
    root = tmp_path_factory.mktemp("batch")
    repo, shas = make_repo(root / "src")
    return repo, shas, plain_snapshots(repo, shas, root / "ref")


def tasks_of(repo: Path, shas: list[str]) -> list[dict]:
    return [{"id": f"t{n}", "repo": str(repo), "commit": sha} for n, sha in enumerate(shas)]


# ----- the manifest ----------------------------------------------------------------


def test_bad_manifest_lines_are_rejected_with_the_reason_and_the_rest_kept() -> None:
    good = {"id": "ok-1", "repo": "/r", "commit": "abc"}
    lines = [
        json.dumps(good),
        "not json",
        "",
        json.dumps(["a", "list"]),
        json.dumps({"id": "a/b", "repo": "/r", "commit": "abc"}),
        json.dumps({"id": "..", "repo": "/r", "commit": "abc"}),
        json.dumps({"id": ".hidden", "repo": "/r", "commit": "abc"}),
        json.dumps({"id": "no-commit", "repo": "/r"}),
        json.dumps({"id": "both", "repo": "/r", "commit": "abc", "source": "/s"}),
        json.dumps({"id": "pol", "source": "/s", "policy": "loud"}),
        json.dumps({"id": "cap", "source": "/s", "max_items": -1}),
        json.dumps({"id": "extra", "source": "/s", "colour": "red"}),
        json.dumps({**good, "commit": "def"}),
        json.dumps({"id": "src", "source": "/s", "policy": "inv", "tests": True}),
        json.dumps({"id": "py-empty", "source": "/s", "python": " "}),
        json.dumps({"id": "py-number", "source": "/s", "python": 3}),
        json.dumps({"id": "py", "source": "/s", "python": "env/bin/python"}),
    ]
    tasks, rejected = parse_lines(lines)
    assert [(t.id, t.line) for t in tasks] == [("ok-1", 1), ("src", 14), ("py", 17)]
    assert tasks[1].policy == "inv" and tasks[1].tests and tasks[1].source == "/s"
    # counted from the working folder like the paths of the repository, never resolved
    assert tasks[0].python is None and tasks[2].python == os.path.abspath("env/bin/python")
    why = {r.line: (r.id, r.error) for r in rejected}
    assert why[2] == ("line 2", why[2][1]) and "manifest line 2:" in why[2][1]
    assert "not a JSON object" in why[4][1]
    assert why[5][0] == "a/b" and "not a safe folder name" in why[5][1]
    assert "not a safe folder name" in why[6][1]
    assert "starts with '.'" in why[7][1]
    assert why[8] == ("no-commit", 'manifest line 8: "commit" is missing')
    assert 'give either "repo" and "commit", or "source"' in why[9][1]
    assert '"policy" must be one of' in why[10][1]
    assert '"max_items"' in why[11][1]
    assert "unknown field(s) colour" in why[12][1]
    assert why[13] == ("ok-1", "manifest line 13: duplicate id (first on line 1)")
    for line in (15, 16):
        assert '"python" must be the path of an interpreter' in why[line][1]
    assert 3 not in why  # a blank line is no task and no error


def test_ids_that_name_no_folder_or_no_results_line_are_rejected_up_front() -> None:
    # 124 x "é" is 248 bytes: within a file name, but not with the ".XXXXXXXX" of its
    # folder under DIR/.partial (the task failed with "File name too long" once indexed);
    # "results.jsonl" failed as "appeared while this task ran" on every run; a lone
    # surrogate (valid JSON: "\ud800") crashed the run on writing its results line
    lines = [
        json.dumps({"id": "é" * 100, "source": "/s"}),
        json.dumps({"id": "é" * 124, "source": "/s"}),
        json.dumps({"id": "results.jsonl", "source": "/s"}),
        json.dumps({"id": "sur\ud800", "source": "/s"}),
        json.dumps({"id": "path", "source": "/s\udce9"}),
    ]
    tasks, rejected = parse_lines(lines)
    assert [t.line for t in tasks] == [1]
    why = {r.line: r.error for r in rejected}
    assert "longer than 200 bytes" in why[2]
    assert "the name of the results file" in why[3]
    assert "not valid Unicode" in why[4] and "not valid Unicode" in why[5]


def test_a_manifest_line_ends_at_a_newline_only(tmp_path: Path) -> None:
    # str.splitlines cut a line at the U+2028 a JSON string may hold as it is (json.dumps
    # with ensure_ascii=False writes it so): the task was two broken lines; a BOM is no id
    rows = [{"id": "a\u2028b", "source": "/s"}, {"id": "c\x85d", "source": "/s"}]
    text = "\ufeff" + "".join(json.dumps(r, ensure_ascii=False) + "\r\n" for r in rows)
    (tmp_path / "m.jsonl").write_text(text, "utf-8", newline="")
    tasks, rejected = read_manifest(tmp_path / "m.jsonl")
    assert rejected == []
    assert [(t.id, t.line) for t in tasks] == [("a\u2028b", 1), ("c\x85d", 2)]


def test_a_results_line_holding_a_lone_surrogate_is_written_as_its_escape(
    tmp_path: Path,
) -> None:
    # a path of bytes that are no UTF-8 reaches an error message as surrogates: writing
    # the line raised UnicodeEncodeError and ended the run
    out = Results(tmp_path / "out")
    try:
        out.write({"id": "a", "status": "failed", "error": "/r/caf\udce9.py: broken"})
        out.write({"id": "b", "status": "ok"})
    finally:
        out.close()
    assert [r["id"] for r in results(tmp_path / "out")] == ["a", "b"]
    assert results(tmp_path / "out")[0]["error"] == "/r/caf\udce9.py: broken"


def test_a_results_line_cut_short_by_a_crash_does_not_swallow_the_next_runs_first(
    tmp_path: Path,
) -> None:
    # the next run appended its first line to the damaged one: both were lost
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.jsonl").write_text('{"id": "a", "status": "ok"}\n{"id": "b", "sta', "utf-8")
    run = Results(out)
    try:
        run.write({"id": "c", "status": "skipped"})
    finally:
        run.close()
    assert {i: r["status"] for i, r in last_results(out).items()} == {"a": "ok", "c": "skipped"}


def test_a_missing_manifest_is_a_refused_run(tmp_path: Path) -> None:
    done = anchor_ls("batch", tmp_path / "nope.jsonl", "--out", tmp_path / "out")
    assert done.returncode == 2
    assert "nope.jsonl: no such file" in done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("option", ["--workers", "--chain-size"])
def test_zero_workers_or_chain_size_is_a_refused_run(tmp_path: Path, option: str) -> None:
    # `--workers 0` ran with every core (0 read as "not given"), and handed Ray num_cpus=0
    manifest = write_manifest(tmp_path / "tasks.jsonl", [{"id": "a", "source": str(tmp_path)}])
    done = anchor_ls("batch", manifest, "--out", tmp_path / "out", option, "0")
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1].endswith(f"argument {option}: must be 1 or more, not 0")
    assert not (tmp_path / "out").exists()


def test_a_ray_that_cannot_be_joined_is_a_refused_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # `--ray auto` with no cluster running ended in ray's ConnectionError traceback (exit
    # 1, not the 2 of a refused run) and left the driver's empty folder in the temp folder
    import types

    from anchor_ls.cli import main

    def init(**_kwargs: object) -> None:
        raise ConnectionError("Could not find any running Ray instance.")

    monkeypatch.setitem(sys.modules, "ray", types.SimpleNamespace(init=init))
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    source = tmp_path / "src"
    source.mkdir()
    manifest = write_manifest(tmp_path / "m.jsonl", [{"id": "a", "source": str(source)}])
    code = main(["batch", str(manifest), "--out", str(tmp_path / "out"), "--ray", "auto"])
    assert code == 2
    said = capsys.readouterr().err
    assert "could not join the Ray cluster at auto: ConnectionError: Could not find" in said
    assert list((tmp_path / "tmp").iterdir()) == []


def test_a_manifest_right_after_a_bare_ray_is_the_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`batch --ray m.jsonl --out DIR`: argparse gave m.jsonl to --ray as its address and
    refused the run for a missing manifest. A value that is a file or ends in .jsonl, with
    no manifest besides, is the manifest (on a local Ray); otherwise the error names
    --ray=ADDRESS."""
    from anchor_ls.batch import onray
    from anchor_ls.cli import main

    ran: list[tuple[list[str], str | None]] = []

    def run_ray(tasks: list, _settings: object, address: str | None, *_a: object, **_k: object):
        ran.append(([t.id for t in tasks], address))

    monkeypatch.setattr(onray, "run_ray", run_ray)
    source = tmp_path / "src"
    source.mkdir()
    manifest = write_manifest(tmp_path / "m.jsonl", [{"id": "a", "source": str(source)}])
    out = str(tmp_path / "out")
    assert main(["batch", "--ray", str(manifest), "--out", out]) == 0
    assert ran == [(["a"], None)]  # a local Ray, as a bare --ray starts
    monkeypatch.chdir(tmp_path)  # a file of another name, given relative
    (tmp_path / "tasks.txt").write_bytes(manifest.read_bytes())
    assert main(["batch", "--ray", "tasks.txt", "--out", "out2"]) == 0
    assert ran[-1] == (["a"], None)
    assert main(["batch", str(manifest), "--ray", "auto", "--out", out]) == 0  # as before
    assert ran[-1] == (["a"], "auto")
    capsys.readouterr()

    # a manifest given as well: the file after --ray is no address; nor is an address
    # that leaves the manifest out
    assert main(["batch", "--ray", "other.jsonl", str(manifest), "--out", out]) == 2
    said = capsys.readouterr().err
    assert "--ray 'other.jsonl' names a manifest, not a Ray address" in said
    assert "--ray=ADDRESS" in said
    assert main(["batch", "--ray", "head:6379", "--out", out]) == 2
    said = capsys.readouterr().err
    assert "no manifest given (--ray took 'head:6379' as the Ray address" in said
    assert "--ray=ADDRESS" in said
    assert len(ran) == 3


def test_bad_manifest_lines_are_said_on_stderr_as_the_tasks_are(tmp_path: Path) -> None:
    # they were only in results.jsonl: the progress lines counted "failed 0" and the run
    # then ended "0 ok, 2 failed" with no failure shown
    source = tmp_path / "src"
    source.mkdir()
    (source / "m.py").write_text("def f():\n    return 1\n", "utf-8")
    manifest = write_manifest(
        tmp_path / "m.jsonl",
        ["{broken", {"id": "../x", "source": str(source)}, {"id": "a", "source": str(source)}],
    )
    out = tmp_path / "out"
    done = anchor_ls("batch", manifest, "--out", out, "--workers", "1", "--cache", tmp_path / "c")
    assert done.returncode == 1, done.stderr
    assert "manifest line 1: Expecting property name" in done.stderr
    assert "manifest line 2: id '../x' is not a safe folder name" in done.stderr
    assert last_status(out) == {"line 1": "failed", "../x": "failed", "a": "ok"}


def test_a_snapshot_folder_has_the_mode_of_tag_outs(tmp_path: Path) -> None:
    # DIR/<id> was made by mkdtemp, mode 0700: readable by the user who ran the batch
    # alone, on the shared file system of a cluster too, where `tag --out`'s are 0755
    source = tmp_path / "src"
    source.mkdir()
    (source / "m.py").write_text("def f():\n    return 1\n", "utf-8")
    manifest = write_manifest(tmp_path / "m.jsonl", [{"id": "a", "source": str(source)}])
    out = tmp_path / "out"
    done = anchor_ls("batch", manifest, "--out", out, "--workers", "1", "--cache", tmp_path / "c")
    assert done.returncode == 0, done.stderr
    plain = tmp_path / "plain"
    assert anchor_ls("tag", source, "--out", plain, "--cache", tmp_path / "c2").returncode == 0
    mode = plain.stat().st_mode & 0o777
    assert (out / "a").stat().st_mode & 0o777 == mode
    assert (out / "a" / "src").stat().st_mode & 0o777 == mode
    # a source task's line has the figures of a repository's (it lacked "reindexed")
    assert results(out)[0]["reindexed"] == 1


# ----- outputs: pool, Ray, plain tag --out ----------------------------------------


@pytest.mark.slow
@pytest.mark.e2e
def test_pool_snapshots_are_the_bytes_of_tag_out_per_commit(
    fixture: tuple[Path, list[str], Path], tmp_path: Path
) -> None:
    repo, shas, plain = fixture
    source = {"id": "src", "source": str(_tree(plain, 4))}  # a folder as it is
    manifest = write_manifest(tmp_path / "m.jsonl", [*tasks_of(repo, shas), source])
    out = tmp_path / "out"
    done = anchor_ls(
        "batch",
        manifest,
        "--out",
        out,
        "--workers",
        "2",
        "--graph",
        "--cache",
        tmp_path / "cache",
    )
    assert done.returncode == 0, done.stderr
    assert "7 ok, 0 failed" in done.stdout
    assert "] ok t0 (" in done.stderr  # not a terminal: a line per task
    by_id = {r["id"]: r for r in results(out)}
    assert {r["status"] for r in by_id.values()} == {"ok"}
    # two chains of commits (3 + 3): each begins with a build, the next steps update the
    # index with the files they change (the last one's 10 new modules resolved with every
    # file again: Index.reload_files)
    steps = {ident: r["index"] for ident, r in by_id.items() if "repo" in r}
    assert steps == {
        "t0": "full",
        "t1": "incremental",
        "t2": "incremental",
        "t3": "full",
        "t4": "incremental",
        "t5": "incremental",
    }
    # a chain's first snapshot renders every file; the next ones copy the Python files
    # whose bytes and blocks did not change from the snapshot before, the same bytes
    copied = {ident: r["copied_files"] for ident, r in by_id.items() if "repo" in r}
    assert copied["t0"] == copied["t3"] == 0
    assert all(copied[ident] > 0 for ident in ("t1", "t2", "t4", "t5")), copied
    for n in range(len(shas)):
        assert tree_bytes(out / f"t{n}" / NAME) == tree_bytes(plain / f"t{n}" / NAME), n
        assert by_id[f"t{n}"]["snapshot"] == f"t{n}/{NAME}"
    assert tree_bytes(out / "src" / NAME) == tree_bytes(plain / "t4" / NAME)
    assert sorted(p.name for p in out.iterdir()) == [".lock", "results.jsonl", "src"] + [
        f"t{n}" for n in range(len(shas))
    ]
    # the graph of each step equals a fresh index of that commit's tree
    for n in range(len(shas)):
        graph = json.loads((out / f"t{n}" / "graph.json").read_text("utf-8"))
        assert graph["root"] == str(out / f"t{n}" / NAME)
        fresh = anchor_ls("graph", _tree(plain, n), "--json")
        assert fresh.returncode == 0, fresh.stderr
        expected = json.loads(fresh.stdout)
        assert (graph["entities"], graph["edges"]) == (expected["entities"], expected["edges"])


def _tree(plain: Path, n: int) -> Path:
    """The untagged tree `git archive` wrote for commit n (beside the plain snapshots)."""
    return plain.parent / "trees" / f"c{n}" / NAME


@pytest.mark.slow
@pytest.mark.e2e
def test_ray_snapshots_are_the_bytes_of_tag_out_per_commit(
    fixture: tuple[Path, list[str], Path], tmp_path: Path
) -> None:
    repo, shas, plain = fixture
    manifest = write_manifest(tmp_path / "m.jsonl", tasks_of(repo, shas))
    out = tmp_path / "out"
    done = anchor_ls(
        "batch",
        manifest,
        "--out",
        out,
        "--ray",
        "--workers",
        "2",
        "--cache",
        tmp_path / "c",
        "--no-incremental",
    )
    assert done.returncode == 0, done.stderr
    assert "6 ok, 0 failed" in done.stdout
    assert {r["status"] for r in results(out)} == {"ok"}
    # --no-incremental: each step after the first builds the index again from the cache
    assert sorted(r["index"] for r in results(out)) == ["full"] * 2 + ["rebuilt"] * 4
    for n in range(len(shas)):
        assert tree_bytes(out / f"t{n}" / NAME) == tree_bytes(plain / f"t{n}" / NAME), n


# ----- the environment: --python and a line's "python" -----------------------------


def bare_environment(where: Path) -> Path:
    """A virtual environment with no packages of its own; its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    return where / "bin" / "python"


def library_repo(root: Path, marks: Path) -> tuple[Path, list[str]]:
    """A repository (root/app) of fixtures/libraries' app, which subclasses and calls the
    packages of its fake site-packages, at two commits; it commits a .venv whose python
    leaves a mark in marks if anything runs it."""
    repo = root / "app"
    shutil.copytree(APP, repo, ignore=shutil.ignore_patterns(".anchor-ls", "__pycache__"))
    plant_interpreter(repo, marks)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "c0", "--date=1700000000 +0000")
    views = repo / "shop" / "views.py"
    views.write_text(
        views.read_text("utf-8") + "\n\nclass PlainView(View):\n    def get(self, request):\n"
        "        return self.dispatch(request)\n",
        "utf-8",
    )
    _git(repo, "commit", "-q", "-am", "c1", "--date=1700000060 +0000")
    return repo, [_git(repo, "rev-parse", "HEAD~1"), _git(repo, "rev-parse", "HEAD")]


def tagged_with(repo: Path, sha: str, python: Path, where: Path) -> Path:
    """`tag --out --python` of a tree `git archive` wrote for sha: where/app."""
    tree = where / "tree" / "app"
    tree.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", sha], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    done = anchor_ls("tag", tree, "--out", where / "out" / "app", "--python", python)
    assert done.returncode == 0, done.stderr
    return where / "out" / "app"


@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.parametrize("engine", ["pool", "ray"])
def test_each_task_is_tagged_with_its_environment_as_tag_out_python_does(
    tmp_path: Path, engine: str
) -> None:
    marks = tmp_path / "marks"
    repo, shas = library_repo(tmp_path / "src", marks)
    libs = make_environment(tmp_path / "libs-env")  # the fake django, requests, fastjson
    bare = bare_environment(tmp_path / "bare-env")
    broken = tmp_path / "broken-python"
    broken.write_text("#!/bin/sh\nexit 3\n", "utf-8")
    broken.chmod(0o755)
    expected = {
        (n, env): tagged_with(repo, sha, python, tmp_path / f"ref-{n}-{env}")
        for n, sha in enumerate(shas)
        for env, python in (("libs", libs), ("bare", bare))
    }
    # the environment is in the tags: a base from the fake Django, or none
    block = b"# BASE: ext:django.views.generic.base.View"
    assert block in (expected[1, "libs"] / "shop" / "views.py").read_bytes()
    assert block not in (expected[1, "bare"] / "shop" / "views.py").read_bytes()

    cache = tmp_path / "cache"
    lines: list[dict | str] = [
        {"id": "libs0", "repo": str(repo), "commit": shas[0]},  # --python's
        {"id": "libs1", "repo": str(repo), "commit": shas[1]},
        {"id": "bare1", "repo": str(repo), "commit": shas[1], "python": str(bare)},
        {"id": "missing", "repo": str(repo), "commit": shas[1], "python": "nowhere/python"},
        {"id": "broken", "repo": str(repo), "commit": shas[0], "python": str(broken)},
        {"id": "folder", "source": str(expected[0, "libs"].parent.parent / "tree" / "app")},
    ]
    manifest = write_manifest(tmp_path / "m.jsonl", lines)
    out = tmp_path / "out"
    extra = ["--ray"] if engine == "ray" else []
    done = anchor_ls(
        "batch",
        manifest,
        "--out",
        out,
        "--python",
        libs,
        "--workers",
        "2",
        "--cache",
        cache,
        *extra,
        cwd=tmp_path,  # where "nowhere/python" is counted from
    )
    assert done.returncode == 1, done.stderr
    assert "4 ok, 2 failed" in done.stdout
    by_id = {r["id"]: r for r in results(out)}
    assert by_id["missing"]["error"].startswith(f"python {tmp_path / 'nowhere' / 'python'}: ")
    assert by_id["broken"]["error"].startswith(f"python {broken}: not a usable interpreter")
    for ident, key in (("libs0", (0, "libs")), ("libs1", (1, "libs")), ("bare1", (1, "bare"))):
        assert by_id[ident]["status"] == "ok"
        assert tree_bytes(out / ident / "app") == tree_bytes(expected[key]), ident
    assert tree_bytes(out / "folder" / "app") == tree_bytes(expected[0, "libs"])

    # the same commit in the same cache with another environment: its own graph, not the
    # one libs0 stored for that commit
    again = write_manifest(
        tmp_path / "again.jsonl",
        [{"id": "bare0", "repo": str(repo), "commit": shas[0], "python": str(bare)}],
    )
    done = anchor_ls("batch", again, "--out", tmp_path / "out2", "--cache", cache, *extra)
    assert done.returncode == 0, done.stderr
    assert tree_bytes(tmp_path / "out2" / "bare0" / "app") == tree_bytes(expected[0, "bare"])
    # the .venv inside every snapshot was never run: only the interpreters named were
    assert marks_left(marks) == []


# ----- failures, resumption ---------------------------------------------------------


@pytest.mark.slow
@pytest.mark.e2e
def test_failing_tasks_are_recorded_and_the_others_go_on(
    fixture: tuple[Path, list[str], Path], tmp_path: Path
) -> None:
    repo, shas, plain = fixture
    not_git = tmp_path / "plain-folder"
    not_git.mkdir()
    lines: list[dict | str] = [
        {"id": "t0", "repo": str(repo), "commit": shas[0]},
        {"id": "gone", "repo": str(repo), "commit": "0" * 40},
        {"id": "t1", "repo": str(repo), "commit": shas[1]},
        {"id": "no-repo", "repo": str(tmp_path / "missing"), "commit": "HEAD"},
        {"id": "not-git", "repo": str(not_git), "commit": "HEAD"},
        {"id": "../escape", "repo": str(repo), "commit": shas[2]},
        {"id": "t0", "repo": str(repo), "commit": shas[3]},
        {"id": "no-source", "source": str(tmp_path / "nowhere")},
        "{broken",
    ]
    manifest = write_manifest(tmp_path / "m.jsonl", lines)
    out = tmp_path / "out"
    done = anchor_ls("batch", manifest, "--out", out, "--workers", "2", "--cache", tmp_path / "c")
    assert done.returncode == 1, done.stderr
    errors = {(r["id"], r.get("line")): r.get("error", "") for r in results(out)}
    assert errors[("gone", None)] == f"commit {'0' * 40!r} not found in {repo}"
    assert errors[("no-repo", None)].endswith("missing: no such folder")
    assert errors[("not-git", None)].startswith(f"repository {not_git}: ")
    assert "not a safe folder name" in errors[("../escape", 6)]
    assert "duplicate id (first on line 1)" in errors[("t0", 7)]
    assert "no such folder" in errors[("no-source", None)]
    assert "manifest line 9" in errors[("line 9", 9)]
    for n in (0, 1):
        assert tree_bytes(out / f"t{n}" / NAME) == tree_bytes(plain / f"t{n}" / NAME)
    assert not (tmp_path / "escape").exists()
    assert sorted(p.name for p in out.iterdir()) == [".lock", "results.jsonl", "t0", "t1"]


@pytest.mark.slow
@pytest.mark.e2e
def test_timed_out_tasks_fail_leave_nothing_and_a_rerun_finishes_them(
    fixture: tuple[Path, list[str], Path], tmp_path: Path
) -> None:
    repo, shas, plain = fixture
    manifest = write_manifest(tmp_path / "m.jsonl", tasks_of(repo, shas))
    out = tmp_path / "out"
    cache = tmp_path / "cache"
    done = anchor_ls(
        "batch", manifest, "--out", out, "--workers", "1", "--timeout", "1e-6", "--cache", cache
    )
    assert done.returncode == 1
    assert {r["status"] for r in results(out)} == {"failed"}
    assert {r["error"] for r in results(out)} == {"timed out after 1e-06 s"}
    assert sorted(p.name for p in out.iterdir()) == [".lock", "results.jsonl"]

    again = anchor_ls("batch", manifest, "--out", out, "--workers", "1", "--cache", cache)
    assert again.returncode == 0, again.stderr
    assert last_status(out) == {f"t{n}": "ok" for n in range(len(shas))}
    for n in range(len(shas)):
        assert tree_bytes(out / f"t{n}" / NAME) == tree_bytes(plain / f"t{n}" / NAME)


@pytest.mark.slow
@pytest.mark.e2e
def test_a_rerun_skips_finished_tasks_and_redoes_only_the_missing(
    fixture: tuple[Path, list[str], Path], tmp_path: Path
) -> None:
    repo, shas, plain = fixture
    manifest = write_manifest(tmp_path / "m.jsonl", tasks_of(repo, shas))
    out = tmp_path / "out"
    cache = tmp_path / "cache"
    first = anchor_ls("batch", manifest, "--out", out, "--workers", "1", "--cache", cache)
    assert first.returncode == 0, first.stderr
    # as a run killed mid-way leaves it: one task not done, one snapshot half written
    shutil.rmtree(out / "t2")
    half = out / ".partial" / "t2.abc" / NAME
    half.mkdir(parents=True)
    (half / "half.py").write_text("def half(", "utf-8")
    kept = (out / "t0" / NAME / "shop" / "models.py").stat()

    batch(
        manifest,
        "--out",
        out,
        "--workers",
        "1",
        "--cache",
        cache,
        counts="1 ok, 0 failed, 5 skipped",
    )
    second = results(out)[len(shas) :]
    assert {r["id"]: r["status"] for r in second} == {
        "t0": "skipped",
        "t1": "skipped",
        "t2": "ok",
        "t3": "skipped",
        "t4": "skipped",
        "t5": "skipped",
    }
    assert not (out / ".partial").exists()
    assert (out / "t0" / NAME / "shop" / "models.py").stat().st_mtime_ns == kept.st_mtime_ns
    assert tree_bytes(out / "t2" / NAME) == tree_bytes(plain / "t2" / NAME)


@pytest.fixture
def moving_branch(fixture: tuple[Path, list[str], Path]) -> Iterator[str]:
    """A branch of the fixture repository for one test (the repository is shared)."""
    repo, shas, _plain = fixture
    _git(repo, "branch", "-f", "rerun-moving", shas[1])
    yield "rerun-moving"
    _git(repo, "branch", "-D", "rerun-moving")


@pytest.mark.slow
@pytest.mark.e2e
def test_a_rerun_redoes_a_task_whose_line_now_asks_another_snapshot(
    fixture: tuple[Path, list[str], Path], tmp_path: Path, moving_branch: str
) -> None:
    """A re-run skipped every id with a DIR/<id>, whatever its line asked now: another
    commit, a branch moved on, another source folder all kept the old snapshot, silently."""
    repo, shas, plain = fixture
    branch = moving_branch  # at shas[1]
    first = [
        {"id": "t0", "repo": str(repo), "commit": shas[0]},
        {"id": "tb", "repo": str(repo), "commit": branch},
        {"id": "src", "source": str(_tree(plain, 0))},
        {"id": "keep", "repo": str(repo), "commit": shas[4]},
        {"id": "lost", "repo": str(repo), "commit": shas[0]},
    ]
    out, cache = tmp_path / "out", tmp_path / "cache"
    args = ["--out", out, "--workers", "1", "--cache", cache]
    done = anchor_ls("batch", write_manifest(tmp_path / "m1.jsonl", first), *args)
    assert done.returncode == 0, done.stderr
    kept = (out / "keep" / NAME / "shop" / "models.py").stat().st_mtime_ns

    _git(repo, "branch", "-f", branch, shas[3])
    second = [
        {"id": "t0", "repo": str(repo), "commit": shas[2]},  # another commit
        {"id": "tb", "repo": str(repo), "commit": branch},  # the same name, moved on
        {"id": "src", "source": str(_tree(plain, 1))},  # another folder
        {"id": "keep", "repo": str(repo), "commit": shas[4]},
        {"id": "lost", "repo": str(repo), "commit": "0" * 40},  # asks what cannot be made
    ]
    again = batch(
        write_manifest(tmp_path / "m2.jsonl", second),
        *args,
        status=1,
        counts="3 ok, 1 failed, 1 skipped",
    )
    for ident in ("t0", "tb", "src", "lost"):
        assert f"anchor-ls: {ident}: {out / ident} holds " in again.stderr
    assert "keep:" not in again.stderr
    lines = {r["id"]: r for r in results(out)[len(first) :]}
    assert {i: r["status"] for i, r in lines.items()} == {
        "t0": "ok",
        "tb": "ok",
        "src": "ok",
        "keep": "skipped",
        "lost": "failed",
    }
    made_with = lines["t0"]["made_with"]  # the same fields and options: no reason here
    assert lines["t0"]["replaced"] == {
        "repo": str(repo),
        "commit": shas[0],
        "sha": shas[0],
        "made_with": made_with,
    }
    assert lines["tb"]["replaced"] == {
        "repo": str(repo),
        "commit": branch,
        "sha": shas[1],
        "made_with": made_with,
    }
    assert lines["src"]["replaced"] == {"source": str(_tree(plain, 0)), "made_with": made_with}
    assert lines["lost"]["kept"] == {
        "repo": str(repo),
        "commit": shas[0],
        "sha": shas[0],
        "made_with": made_with,
    }
    assert tree_bytes(out / "t0" / NAME) == tree_bytes(plain / "t2" / NAME)
    assert tree_bytes(out / "tb" / NAME) == tree_bytes(plain / "t3" / NAME)
    assert tree_bytes(out / "src" / NAME) == tree_bytes(plain / "t1" / NAME)
    assert tree_bytes(out / "lost" / NAME) == tree_bytes(plain / "t0" / NAME)  # never lost
    assert (out / "keep" / NAME / "shop" / "models.py").stat().st_mtime_ns == kept
    assert not (out / ".partial").exists()

    # what a redo made is what its line asks: the next run skips it
    third = batch(
        write_manifest(tmp_path / "m3.jsonl", second[:4]), *args, counts="0 ok, 0 failed, 4 skipped"
    )
    assert " holds " not in third.stderr


def _strip_made_with(out: Path) -> None:
    """results.jsonl as a run of an older anchor-ls wrote it: no `made_with` in its lines."""
    lines = [{k: v for k, v in r.items() if k != "made_with"} for r in results(out)]
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines), "utf-8")


@pytest.mark.slow
@pytest.mark.e2e
def test_a_rerun_redoes_a_task_whose_line_now_asks_another_policy_or_field(
    fixture: tuple[Path, list[str], Path], tmp_path: Path
) -> None:
    """Only the origin was compared: a line whose policy, max_items or tests changed kept
    the snapshot made with the old ones, silently."""
    repo, shas, plain = fixture
    first = [
        {"id": "t0", "repo": str(repo), "commit": shas[4], "policy": "topo"},
        {"id": "t1", "repo": str(repo), "commit": shas[4]},
        {"id": "src", "source": str(_tree(plain, 1))},
        {"id": "keep", "repo": str(repo), "commit": shas[4], "policy": "topo"},
    ]
    out, cache = tmp_path / "out", tmp_path / "cache"
    args = ["--out", out, "--workers", "1", "--cache", cache]
    done = anchor_ls("batch", write_manifest(tmp_path / "m1.jsonl", first), *args)
    assert done.returncode == 0, done.stderr
    kept = (out / "keep" / NAME / "shop" / "models.py").stat().st_mtime_ns

    second = [
        {**first[0], "policy": "dense"},
        {**first[1], "max_items": 1},
        {**first[2], "tests": True},
        first[3],
    ]
    again = batch(
        write_manifest(tmp_path / "m2.jsonl", second), *args, counts="3 ok, 0 failed, 1 skipped"
    )
    assert (
        f"anchor-ls: t0: {out / 't0'} holds {repo} at {shas[4][:12]}; "
        "policy was topo, the line now asks dense: made again"
    ) in again.stderr
    assert "max_items was 8, the line now asks 1: made again" in again.stderr
    assert "tests was false, the line now asks true: made again" in again.stderr
    assert "keep:" not in again.stderr
    assert "unchecked" not in again.stderr
    lines = {r["id"]: r for r in results(out)[len(first) :]}
    assert {i: r["status"] for i, r in lines.items()} == {
        "t0": "ok",
        "t1": "ok",
        "src": "ok",
        "keep": "skipped",
    }
    assert lines["t0"]["made_with"]["policy"] == "dense"
    assert lines["t0"]["replaced"]["made_with"]["policy"] == "topo"
    assert lines["t1"]["made_with"]["max_items"] == 1
    assert lines["src"]["made_with"]["tests"] is True
    dense = anchor_ls(
        "tag", _tree(plain, 4), "--out", tmp_path / "dense" / NAME, "--policy", "dense"
    )
    assert dense.returncode == 0, dense.stderr
    assert tree_bytes(out / "t0" / NAME) == tree_bytes(tmp_path / "dense" / NAME)
    assert (out / "keep" / NAME / "shop" / "models.py").stat().st_mtime_ns == kept

    third = batch(
        write_manifest(tmp_path / "m3.jsonl", second), *args, counts="0 ok, 0 failed, 4 skipped"
    )
    assert " holds " not in third.stderr


@pytest.mark.slow
@pytest.mark.e2e
def test_a_rerun_redoes_the_tasks_whose_snapshots_another_option_changes(
    fixture: tuple[Path, list[str], Path], tmp_path: Path
) -> None:
    """--exclude and --graph change what DIR/<id> holds; a re-run with another one kept
    every snapshot made with the old one, silently."""
    repo, shas, _plain = fixture
    manifest = write_manifest(tmp_path / "m.jsonl", tasks_of(repo, shas)[4:])
    out, cache = tmp_path / "out", tmp_path / "cache"
    args = ["--out", out, "--workers", "1", "--cache", cache]
    done = anchor_ls("batch", manifest, *args)
    assert done.returncode == 0, done.stderr
    assert (
        (out / "t5" / NAME / "shop" / "gen" / "m0.py")
        .read_text("utf-8")
        .startswith("# === CodeAnchor")
    )

    excluded = batch(manifest, *args, "--exclude", "shop/gen/*", counts="2 ok, 0 failed, 0 skipped")
    for ident in ("t4", "t5"):
        assert f"anchor-ls: {ident}: {out / ident} holds " in excluded.stderr
    assert "--exclude was none, the run now asks shop/gen/*: made again" in excluded.stderr
    gen = out / "t5" / NAME / "shop" / "gen" / "m0.py"
    assert (
        gen.read_text("utf-8")
        == "from shop.models import price\n\n\ndef g0():\n    return price(0)\n"
    )
    assert results(out)[-1]["made_with"]["exclude"] == ["shop/gen/*"]

    graphed = batch(
        manifest, *args, "--exclude", "shop/gen/*", "--graph", counts="2 ok, 0 failed, 0 skipped"
    )
    assert "made without --graph, which the run now asks: made again" in graphed.stderr
    assert (out / "t4" / "graph.json").is_file() and (out / "t5" / "graph.json").is_file()

    same = batch(
        manifest, *args, "--graph", "--exclude", "./shop/gen/*", counts="0 ok, 0 failed, 2 skipped"
    )
    assert " holds " not in same.stderr


@pytest.mark.slow
@pytest.mark.e2e
def test_an_older_ok_line_that_records_no_options_keeps_its_snapshot_and_says_so_once(
    fixture: tuple[Path, list[str], Path], tmp_path: Path
) -> None:
    """An ok line written before `made_with` was recorded cannot say what its snapshot
    was made with: it is kept (every task redone after an upgrade would cost a whole
    run), said once; its origin is still compared."""
    repo, shas, _plain = fixture
    first = tasks_of(repo, shas)[:3]
    out, cache = tmp_path / "out", tmp_path / "cache"
    args = ["--out", out, "--workers", "1", "--cache", cache]
    done = anchor_ls("batch", write_manifest(tmp_path / "m1.jsonl", first), *args)
    assert done.returncode == 0, done.stderr
    _strip_made_with(out)
    kept = (out / "t0" / NAME / "shop" / "models.py").stat().st_mtime_ns

    second = [
        {**first[0], "policy": "dense"},
        {**first[1], "tests": True},
        {**first[2], "commit": shas[3]},  # another origin: made again all the same
    ]
    again = batch(
        write_manifest(tmp_path / "m2.jsonl", second), *args, counts="1 ok, 0 failed, 2 skipped"
    )
    assert again.stderr.count("kept unchecked") == 1
    assert (
        f"anchor-ls: 2 snapshots in {out} (t0, t1) were made by an older anchor-ls"
    ) in again.stderr
    assert f"anchor-ls: t2: {out / 't2'} holds " in again.stderr
    assert "t0:" not in again.stderr and "t1:" not in again.stderr
    assert last_status(out) == {"t0": "skipped", "t1": "skipped", "t2": "ok"}
    for ident in ("t0", "t1"):
        assert "unchecked" in [r for r in results(out) if r["id"] == ident][-1]["reason"]
    assert (out / "t0" / NAME / "shop" / "models.py").stat().st_mtime_ns == kept


@pytest.mark.slow
@pytest.mark.e2e
def test_an_unchanged_rerun_skips_every_task_and_its_ok_lines_say_what_they_were_made_with(
    fixture: tuple[Path, list[str], Path], tmp_path: Path
) -> None:
    """What an ok line records is what the next run compares: the same fields and options,
    however written (a default spelled out, --python or the line's own, the globs of
    --exclude in another order or with a ./), skip every task, quietly."""
    repo, shas, plain = fixture
    python = os.path.abspath(sys.executable)
    first = [
        {
            "id": "t0",
            "repo": str(repo),
            "commit": shas[4],
            "policy": "topo",
            "max_items": 3,
            "cross_file": True,
            "tests": True,
        },
        {"id": "t1", "repo": str(repo), "commit": shas[5]},
        {"id": "src", "source": str(_tree(plain, 1))},
    ]
    out, cache = tmp_path / "out", tmp_path / "cache"
    args = ["--out", out, "--workers", "1", "--cache", cache, "--graph"]
    done = anchor_ls(
        "batch",
        write_manifest(tmp_path / "m1.jsonl", first),
        *args,
        "--exclude",
        "docs/*",
        "--exclude",
        "shop/gen/*",
        "--python",
        python,
    )
    assert done.returncode == 0, done.stderr
    made = {r["id"]: r["made_with"] for r in results(out)}
    options = {"python": python, "graph": True, "exclude": ["docs/*", "shop/gen/*"]}
    assert made == {
        "t0": {"policy": "topo", "max_items": 3, "cross_file": True, "tests": True, **options},
        "t1": {"policy": "auto", "max_items": 8, "cross_file": False, "tests": False, **options},
        "src": {"policy": "auto", "max_items": 8, "cross_file": False, "tests": False, **options},
    }

    second = [first[0], {**first[1], "policy": "auto", "python": python}, first[2]]
    again = anchor_ls(
        "batch",
        write_manifest(tmp_path / "m2.jsonl", second),
        *args,
        "--exclude",
        "./shop/gen/*",
        "--exclude",
        "docs/*",
        "--python",
        python,
    )
    assert again.returncode == 0, again.stderr
    assert "0 ok, 0 failed, 3 skipped" in again.stdout
    assert " holds " not in again.stderr
    assert "unchecked" not in again.stderr


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "aside"])
def test_a_snapshot_made_again_takes_the_old_ones_place_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exchange: bool
) -> None:
    """Where the system swaps two folders in one step (Linux) and where the old one is
    moved aside first: DIR/<id> ends up the new snapshot, and nothing else is left."""
    from anchor_ls.batch import chain

    if not exchange:
        monkeypatch.setattr(chain, "_exchange", lambda _a, _b: False)
    final = tmp_path / "t0"
    (final / NAME).mkdir(parents=True)
    (final / NAME / "old.py").write_text("old\n")
    partial = tmp_path / ".partial" / "t0.1234"
    (partial / NAME).mkdir(parents=True)
    (partial / NAME / "new.py").write_text("new\n")
    chain._into_place(partial, final, replace=True)
    assert tree_bytes(final) == {NAME: "dir", f"{NAME}/new.py": b"new\n"}
    assert list((tmp_path / ".partial").iterdir()) == []
    with pytest.raises(OSError):  # without replace, a snapshot there is never overwritten
        (partial / NAME).mkdir(parents=True)
        chain._into_place(partial, final, replace=False)
    assert tree_bytes(final) == {NAME: "dir", f"{NAME}/new.py": b"new\n"}


# ----- nothing of a repository runs ------------------------------------------------


@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.parametrize("engine", ["pool", "ray"])
def test_batch_run_in_a_repository_imports_nothing_from_it(
    fixture: tuple[Path, list[str], Path], tmp_path: Path, engine: str
) -> None:
    repo, shas, _plain = fixture
    here, marks = tmp_path / "here", tmp_path / "marks"
    here.mkdir()
    plant(here, marks)
    manifest = write_manifest(tmp_path / "m.jsonl", tasks_of(repo, shas[:2]))
    extra = ["--ray"] if engine == "ray" else []
    done = anchor_ls(
        "batch",
        manifest,
        "--out",
        tmp_path / "out",
        "--workers",
        "2",
        "--cache",
        tmp_path / "c",
        *extra,
        cwd=here,
    )
    assert done.returncode == 0, done.stderr
    assert marks_left(marks) == []


def test_batch_runs_no_filter_driver_and_leaves_the_blob(tmp_path: Path) -> None:
    # A checkout runs the smudge filter a configuration defines for a path (git-lfs...);
    # the snapshot keeps the blob as committed and nothing runs: here the filter, set in
    # the repository's own config and in no checkout's, would leave a mark.
    repo, marks = tmp_path / NAME, tmp_path / "marks"
    marks.mkdir()
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / ".gitattributes").write_text("*.dat filter=mark\n*.bin filter=proc\n", "utf-8")
    (repo / "a.dat").write_text("pointer 1\n", "utf-8")
    (repo / "b.bin").write_text("pointer 2\n", "utf-8")
    (repo / "m.py").write_text("def f():\n    return 1\n", "utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "one")
    (repo / "a.dat").write_text("pointer 3\n", "utf-8")
    _git(repo, "commit", "-q", "-am", "two")
    shas = _git(repo, "rev-list", "--reverse", "HEAD").split()
    for driver, key in (("mark", "smudge"), ("mark", "clean"), ("proc", "process")):
        _git(repo, "config", f"filter.{driver}.{key}", f"touch {marks}/{driver}-{key}; cat")
    _git(repo, "config", "filter.mark.required", "true")
    assert marks_left(marks) == []
    manifest = write_manifest(tmp_path / "m.jsonl", tasks_of(repo, shas))
    out = tmp_path / "out"
    done = anchor_ls("batch", manifest, "--out", out, "--workers", "1", "--cache", tmp_path / "c")
    assert done.returncode == 0, done.stderr
    assert [r["index"] for r in results(out)] == ["full", "incremental"]
    assert (out / "t0" / NAME / "a.dat").read_bytes() == b"pointer 1\n"
    assert (out / "t1" / NAME / "a.dat").read_bytes() == b"pointer 3\n"
    assert (out / "t1" / NAME / "b.bin").read_bytes() == b"pointer 2\n"
    assert marks_left(marks) == []


def test_no_hook_of_the_repository_runs(tmp_path: Path) -> None:
    # read-tree runs the repository's post-index-change hook when it writes an index file,
    # even the scratch one: a hook in .git/hooks ran on every snapshot and every step
    repo, marks = tmp_path / NAME, tmp_path / "marks"
    marks.mkdir()
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "m.py").write_text("def f():\n    return 1\n", "utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "one")
    (repo / "m.py").write_text("def f():\n    return 2\n", "utf-8")
    _git(repo, "commit", "-q", "-am", "two")
    shas = _git(repo, "rev-list", "--reverse", "HEAD").split()
    hooks = repo / ".git" / "hooks"
    for name in ("post-index-change", "post-checkout", "reference-transaction", "pre-auto-gc"):
        (hooks / name).write_text(f'#!/bin/sh\ntouch "{marks}/{name}"\n', "utf-8")
        (hooks / name).chmod(0o755)
    root = tmp_path / "scratch" / NAME
    gittree.materialize(repo, shas[0], root)
    gittree.move(repo, shas[0], shas[1], root)
    assert (root / "m.py").read_text("utf-8") == "def f():\n    return 2\n"
    assert marks_left(marks) == []


def test_a_repository_is_named_by_its_top_folder_its_git_folder_or_a_bare_one(
    tmp_path: Path,
) -> None:
    # git -C finds the repository above any folder: a folder inside one (or a folder of
    # no repository that sits in one) was snapshotted as the whole repository under the
    # folder's name; and NAME/.git gave a snapshot folder named ".git"
    repo = tmp_path / NAME
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "m.py").write_text("def f():\n    return 1\n", "utf-8")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "one")
    sha = _git(repo, "rev-parse", "HEAD")
    (repo / "untracked").mkdir()
    bare = tmp_path / f"{NAME}.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(bare)], check=True)
    for good in (repo, repo / ".git", bare):
        assert gittree.repository_problem(good) is None, good
    for inside, top in ((repo / "pkg", repo), (repo / "untracked", repo)):
        problem = gittree.repository_problem(inside)
        assert problem is not None and "not the top of a repository" in problem, inside
        assert str(top) in problem
    problem = gittree.repository_problem(repo / ".git" / "objects")
    assert problem is not None and "inside the git folder" in problem
    assert gittree.repository_problem(repo / "pkg" / "m.py") == (
        f"repository {repo / 'pkg' / 'm.py'}: not a folder"
    )
    manifest = write_manifest(
        tmp_path / "m.jsonl",
        [
            {"id": "dotgit", "repo": str(repo / ".git"), "commit": sha},
            {"id": "sub", "repo": str(repo / "pkg"), "commit": sha},
        ],
    )
    out = tmp_path / "out"
    done = anchor_ls("batch", manifest, "--out", out, "--workers", "1", "--cache", tmp_path / "c")
    assert done.returncode == 1, done.stderr
    assert last_status(out) == {"dotgit": "ok", "sub": "failed"}
    assert os.listdir(out / "dotgit") == [NAME]
    assert not (out / "sub").exists()


def test_a_step_that_changes_gitattributes_writes_the_files_it_governs_again(
    tmp_path: Path,
) -> None:
    # A commit that only adds `*.txt eol=crlf` changes the bytes git archive (and a fresh
    # checkout) gives for every .txt file; a step wrote only the paths diff-tree names, so
    # the chain's snapshot kept the LF bytes of the commit before (and its index, a.py's).
    repo = tmp_path / NAME
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "notes.txt").write_text("one\ntwo\n", "utf-8")
    (repo / "a.py").write_text("def f():\n    return 1\n", "utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "one")
    (repo / ".gitattributes").write_text("*.txt eol=crlf\n*.py eol=crlf\n", "utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "two")
    shas = _git(repo, "rev-list", "--reverse", "HEAD").split()
    moved, fresh = tmp_path / "moved" / NAME, tmp_path / "fresh" / NAME
    gittree.materialize(repo, shas[0], moved)
    gittree.move(repo, shas[0], shas[1], moved)
    gittree.materialize(repo, shas[1], fresh)
    assert (fresh / "notes.txt").read_bytes() == b"one\r\ntwo\r\n"
    assert tree_bytes(moved) == tree_bytes(fresh)


def test_a_step_that_changes_the_roots_pyproject_states_reads_them_again(
    tmp_path: Path,
) -> None:
    # pytest's pythonpath, added to pyproject.toml alone, makes lib/ a source root: `tag
    # --out` links app.py to lib/helpers.py; an incremental step handed the index no
    # Python file, so its snapshot had no tag at all. A pyproject.toml changed elsewhere
    # (a version, a linter's settings: sphinx's every few commits) costs no build.
    repo = tmp_path / NAME
    (repo / "lib").mkdir(parents=True)
    (repo / "lib" / "helpers.py").write_text("def h():\n    return 1\n", "utf-8")
    (repo / "app.py").write_text("from helpers import h\n\n\ndef run():\n    return h()\n", "utf-8")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "one")
    (repo / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\npythonpath = ["lib"]\n', "utf-8"
    )
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "two")
    with (repo / "pyproject.toml").open("a", encoding="utf-8") as config:
        config.write("\n[tool.ruff]\nline-length = 100\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "three")
    shas = _git(repo, "rev-list", "--reverse", "HEAD").split()
    plain = plain_snapshots(repo, shas[1:], tmp_path / "ref")
    manifest = write_manifest(tmp_path / "m.jsonl", tasks_of(repo, shas))
    out = tmp_path / "out"
    done = anchor_ls("batch", manifest, "--out", out, "--workers", "1", "--cache", tmp_path / "c")
    assert done.returncode == 0, done.stderr
    assert [r["index"] for r in results(out)] == ["full", "incremental", "incremental"]
    assert "lib/helpers.py:h" in (out / "t1" / NAME / "app.py").read_text("utf-8")
    for n in (1, 2):
        assert tree_bytes(out / f"t{n}" / NAME) == tree_bytes(plain / f"t{n - 1}" / NAME)


def test_a_commit_holding_a_path_no_checkout_writes_fails_and_writes_nothing(
    tmp_path: Path,
) -> None:
    # a tree made by hand with .git/config in it: git itself refuses to check it out, so
    # the snapshot is refused with git's reason rather than written without the path
    repo = tmp_path / NAME
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    blob = (
        subprocess.run(
            ["git", "-C", str(repo), "hash-object", "-w", "--stdin"],
            input=b"[core]\n\tfsmonitor = touch marked\n",
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
    )

    def tree(listing: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(repo), "mktree"], input=listing.encode(), capture_output=True
        )
        return done.stdout.decode().strip()

    inner = tree(f"100644 blob {blob}\tconfig\n")
    top = tree(f"040000 tree {inner}\t.git\n100644 blob {blob}\tok.py\n")
    sha = _git(repo, "commit-tree", "-m", "evil", top)
    with pytest.raises(gittree.GitError, match=r"invalid path '\.git/config'"):
        gittree.materialize(repo, sha, tmp_path / "scratch" / NAME)
    assert list((tmp_path / "scratch" / NAME).iterdir()) == []


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def make_big_repo(root: Path, modules: int = 1500) -> tuple[Path, str]:
    """A repository of one commit whose snapshot takes seconds to index, not milliseconds."""
    repo = root / NAME
    for n in range(modules):
        path = repo / "big" / f"m{n // 100}" / f"mod{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        other = f"big.m{(n + 1) % modules // 100}.mod{(n + 1) % modules}"
        path.write_text(
            f"from {other} import f{(n + 1) % modules}\n\n\n"
            f"class C{n}:\n    def go(self, x):\n        return f{n}(x) + 1\n\n\n"
            f"def f{n}(x):\n    return x if x > {n} else f{(n + 1) % modules}(x + 1)\n",
            "utf-8",
        )
    for folder in [repo / "big", *sorted((repo / "big").iterdir())]:
        (folder / "__init__.py").write_text("", "utf-8")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "big")
    return repo, _git(repo, "rev-parse", "HEAD")


@pytest.mark.slow
@pytest.mark.e2e
def test_a_worker_that_dies_fails_its_chain_and_the_other_chains_go_on(tmp_path: Path) -> None:
    # A killed worker (the kernel's OOM killer, a crash) broke the process pool, and every
    # task of the run failed with BrokenProcessPool, the queued chains' too.
    generated, _sha = make_big_repo(tmp_path / "gen")
    repo = tmp_path / "src" / NAME
    (repo / "m.py").parent.mkdir(parents=True)
    (repo / "m.py").write_text("def f():\n    return 1\n", "utf-8")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "small")
    shutil.copytree(generated / "big", repo / "big")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "big")  # a step that takes seconds
    small, smalls = tmp_path / "small" / "lib", []
    small.mkdir(parents=True)
    _git(small, "init", "-q", "-b", "main")
    for n in range(4):
        (small / "lib.py").write_text(f"def g():\n    return {n}\n", "utf-8")
        _git(small, "add", "-A")
        _git(small, "commit", "-q", "-m", f"c{n}")
        smalls.append(_git(small, "rev-parse", "HEAD"))
    shas = _git(repo, "rev-list", "--reverse", "HEAD").split()
    tasks = [{"id": f"big{n}", "repo": str(repo), "commit": sha} for n, sha in enumerate(shas)]
    tasks += [{"id": f"s{n}", "repo": str(small), "commit": sha} for n, sha in enumerate(smalls)]
    manifest = write_manifest(tmp_path / "m.jsonl", tasks)
    out = tmp_path / "out"
    # one worker: the big chain first (manifest order), the small ones queued behind it
    args = [ANCHOR_LS, "batch", manifest, "--out", out, "--workers", "1", "--chain-size", "2"]
    args += ["--cache", tmp_path / "cache", "--work", tmp_path / "work"]
    run = subprocess.Popen(list(map(str, args)), env=env(), stderr=subprocess.PIPE, text=True)
    try:
        results_file = out / "results.jsonl"
        while run.poll() is None and not (
            results_file.exists() and '"big0"' in results_file.read_text("utf-8")
        ):
            time.sleep(0.02)
        first = results(out)[0]
        assert first["id"] == "big0" and first["status"] == "ok"
        os.kill(int(first["worker"].rpartition(":")[2]), signal.SIGKILL)  # now on big1
        _, stderr = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 1, stderr
    state = {r["id"]: r for r in results(out)}
    assert state["big1"]["status"] == "failed"
    assert "the worker died (signal 9, SIGKILL)" in state["big1"]["error"]
    assert {i: r["status"] for i, r in state.items() if i != "big1"} == dict.fromkeys(
        ["big0", "s0", "s1", "s2", "s3"], "ok"
    )
    assert not (out / "big1").exists()
    # the killed worker's scratch tree (no cleanup of its own ran) was removed by the
    # worker that took the other chains after it
    assert list((tmp_path / "work").iterdir()) == []
    again = anchor_ls("batch", manifest, "--out", out, "--workers", "1", "--cache", tmp_path / "c")
    assert again.returncode == 0, again.stderr
    assert last_status(out)["big1"] == "ok"


def test_a_dead_workers_scratch_tree_is_removed_and_a_live_ones_kept(tmp_path: Path) -> None:
    """A worker killed outright (the OOM killer) leaves its scratch tree, a whole checkout:
    nothing removed them, and a long run on large repositories filled the disk."""
    from anchor_ls.batch.chain import _scratch_prefix, _sweep_dead_scratch

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead = tmp_path / f"{_scratch_prefix(gone.pid)}abc"
    live = tmp_path / f"{_scratch_prefix(os.getpid())}abc"
    other_host = tmp_path / f"anchor-ls-batch-elsewhere.example-{gone.pid}-abc"
    unrelated = tmp_path / f"{_scratch_prefix(gone.pid)}file"
    for folder in (dead, live, other_host):
        (folder / NAME).mkdir(parents=True)
        (folder / NAME / "m.py").write_text("x = 1\n", "utf-8")
    unrelated.write_text("a file, not a tree\n", "utf-8")
    _sweep_dead_scratch(str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name for p in (live, other_host, unrelated)
    )


@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.parametrize("engine", ["pool", "ray"])
def test_ctrl_c_leaves_only_whole_snapshots_and_a_rerun_goes_on(
    fixture: tuple[Path, list[str], Path], tmp_path: Path, engine: str
) -> None:
    repo, shas, plain = fixture
    big, big_sha = make_big_repo(tmp_path / "bigsrc")
    # Two small tasks, then four that take seconds each, one task per chain on one worker,
    # in manifest order: the interrupt after the second result lands among the big ones
    # (with small tasks only, a worker running ahead of a busy driver ended them all first).
    tasks = [{"id": f"t{n}", "repo": str(repo), "commit": sha} for n, sha in enumerate(shas[:2])]
    tasks += [{"id": f"big{k}", "repo": str(big), "commit": big_sha} for k in range(4)]
    manifest = write_manifest(tmp_path / "m.jsonl", tasks)
    out, work = tmp_path / "out", tmp_path / "work"
    args = [ANCHOR_LS, "batch", manifest, "--out", out, "--workers", "1", "--work", work]
    args += ["--chain-size", "1", "--cache", tmp_path / "cache"]
    args += ["--ray"] if engine == "ray" else []
    run = subprocess.Popen(
        list(map(str, args)),
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
        # A job started in the background inherits SIGINT ignored, and Python keeps it so:
        # a terminal's foreground job gets the default action, as here.
        preexec_fn=_sigint_default,
    )
    try:
        results_file = out / "results.jsonl"
        while run.poll() is None and (
            not results_file.exists() or results_file.read_text("utf-8").count("\n") < 2
        ):
            time.sleep(0.05)
        os.killpg(run.pid, signal.SIGINT)  # Ctrl-C: the driver and its workers
        _stdout, stderr = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 130, stderr
    assert "run the same command again to go on" in stderr
    done = sorted(p.name for p in out.iterdir() if p.name.startswith(("t", "big")))
    assert {"t0", "t1"} <= set(done) and len(done) < len(tasks), done
    big_files = {p.relative_to(big).as_posix() for p in big.rglob("*.py")}
    for ident in done:
        snapshot = out / ident / NAME
        if ident.startswith("t"):
            assert tree_bytes(snapshot) == tree_bytes(plain / ident / NAME), ident
        else:  # whole: every module is there, tagged
            assert {p.relative_to(snapshot).as_posix() for p in snapshot.rglob("*.py")} == big_files
    assert not (out / ".partial").exists() or not any((out / ".partial").iterdir())
    assert list(work.iterdir()) == []  # no scratch tree left behind

    batch(
        manifest,
        "--out",
        out,
        "--workers",
        "2",
        "--cache",
        tmp_path / "c",
        counts=f"{len(tasks) - len(done)} ok, 0 failed, {len(done)} skipped",
    )
    assert set(last_status(out).values()) <= {"ok", "skipped"}


def test_a_chain_interrupted_as_it_starts_leaves_no_scratch_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker stopped between making its scratch tree and starting the chain (Ctrl-C
    reaching a pool worker as it takes its next chain) removes the tree: it was made
    before the code that removes it ran, and a test of Ctrl-C found it left now and then."""
    from anchor_ls.batch import chain as chainlib

    def interrupted(*_args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(chainlib, "_Step", interrupted)
    work = tmp_path / "work"
    settings = chainlib.Settings(out=str(tmp_path / "out"), work=str(work))
    with pytest.raises(KeyboardInterrupt):
        list(chainlib.run_chain(chainlib.Chain("repo", ()), settings))
    assert list(work.iterdir()) == []


@pytest.mark.parametrize("feeder", [False, True], ids=["one thread", "a feeder thread"])
def test_a_stop_that_arrives_while_a_chain_cleans_up_waits_for_the_cleanup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, feeder: bool
) -> None:
    """A pool worker's SIGTERM (the driver's Ctrl-C) raises KeyboardInterrupt wherever the
    worker is: arriving while a chain that just ended removes its scratch tree, it cut the
    removal short and left the tree (the Ctrl-C test found one now and then). The stop
    now waits until the tree is gone. A worker has a second thread once it has put a
    result on its queue (the queue's feeder): blocking SIGTERM in the main thread's mask
    alone, the kernel gave the signal to the feeder and the handler raised all the same."""
    import threading

    from anchor_ls.batch import chain as chainlib

    def stop(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    done = threading.Event()
    if feeder:
        threading.Thread(target=done.wait, daemon=True).start()  # signals unblocked
    removing = shutil.rmtree

    def stopped_while_removing(path: object, *args: object, **kwargs: object) -> None:
        os.kill(os.getpid(), signal.SIGTERM)  # to the process: any thread not blocking it
        time.sleep(0.05)  # the handler runs in the main thread once a thread took it
        removing(path, *args, **kwargs)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        monkeypatch.setattr(chainlib.shutil, "rmtree", stopped_while_removing)
        work = tmp_path / "work"
        settings = chainlib.Settings(out=str(tmp_path / "out"), work=str(work))
        with pytest.raises(KeyboardInterrupt):
            list(chainlib.run_chain(chainlib.Chain("repo", ()), settings))
    finally:
        signal.signal(signal.SIGTERM, previous)
        done.set()
    assert list(work.iterdir()) == []
