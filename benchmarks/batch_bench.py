"""Batch export on a chain of consecutive snapshots: `anchor-ls batch` (pool, Ray) vs a
shell loop of `anchor-ls tag --out`.

    python benchmarks/batch_bench.py [--versions N] [--skip-download] [--history REPO [--rev REV]]
        [--no-ray] [--workers N] [--no-shared-loop] [--no-rebuild] [--no-single]

Two chains, each of --versions snapshots (8):
- the Django 5.1 .. 5.1.7 sdists (`pip download --no-binary :all:`), committed one after
  another into a git repository the script builds under benchmarks/.data/batch-django
  (point releases: 6 to 38 Python files change per step);
- with --history REPO, a real history instead: the last N commits on REV's first-parent
  line (default HEAD) that change a Python file, oldest first, of any git repository (a
  bare one too: everything is read with git plumbing). Consecutive SWE-bench tasks of one
  repository are commits of such a line.
Every run starts from an empty cache folder, so each pays its first snapshot in full:
- loop: per commit, the tree written out with `git archive`, then `anchor-ls tag --out`
  (with a cache folder of its own: every snapshot indexed from nothing, as a shell loop
  of fresh checkouts does);
- loop, shared cache: the same with one `--cache` for all (file summaries reused by hash);
- batch, one worker: one chain, each step handing the index the files the commit changed
  (the incremental engine the server uses);
- batch, one worker, --no-incremental: each step building the index again from the cached
  summaries (only the changed files parsed);
- batch, pool: `--workers N` (the chain cut in N);
- batch, Ray: a local Ray with N CPUs.
The table gives wall seconds, the speed-up over the loop, snapshots per minute, the peak
memory of one worker (max RSS, from results.jsonl; for the loop, of the `tag` process), and
whether each run's snapshots are byte for byte the loop's. Goal (the issue): batch at
least 3x faster than the loop on a chain of 8.
"""

from __future__ import annotations

import argparse
import filecmp
import itertools
import json
import os
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parent / ".data" / "batch-django"
VERSIONS = ["5.1", "5.1.1", "5.1.2", "5.1.3", "5.1.4", "5.1.5", "5.1.6", "5.1.7"]
PIP_DOWNLOAD = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:"]
ANCHOR_LS = [sys.executable, "-m", "anchor_ls"]


def sdists(versions: list[str], skip_download: bool) -> list[Path]:
    folder = DATA / "sdists"
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for version in versions:
        path = folder / f"Django-{version}.tar.gz"
        if not path.exists():
            if skip_download:
                raise SystemExit(f"{path} is missing (run without --skip-download)")
            subprocess.run(
                [*PIP_DOWNLOAD, f"django=={version}", "-d", str(folder)],
                check=True,
            )
        out.append(path)
    return out


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} in {repo} failed: {done.stderr.strip()}")
    return done.stdout.strip()


def build_repo(archives: list[Path]) -> tuple[Path, list[str]]:
    """A repository whose commits are the sdists' trees in order; their ids."""
    repo = DATA / f"repo-{len(archives)}" / "django"
    if (repo / ".git").exists():
        shas = git(repo, "rev-list", "--reverse", "HEAD").split()
        if len(shas) == len(archives):
            return repo, shas
        shutil.rmtree(repo.parent)
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    for n, archive in enumerate(archives):
        for child in repo.iterdir():
            if child.name != ".git":
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        with tarfile.open(archive) as tar:
            top = tar.getmembers()[0].name.split("/")[0]
            with tempfile.TemporaryDirectory() as tmp:
                tar.extractall(tmp, filter="data")
                for child in (Path(tmp) / top).iterdir():
                    shutil.move(str(child), repo / child.name)
        git(repo, "add", "-A")
        stamp = f"{1_700_000_000 + n * 86_400} +0000"
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "bench",
            "GIT_AUTHOR_EMAIL": "bench@example.invalid",
            "GIT_COMMITTER_NAME": "bench",
            "GIT_COMMITTER_EMAIL": "bench@example.invalid",
            "GIT_AUTHOR_DATE": stamp,
            "GIT_COMMITTER_DATE": stamp,
        }
        git(repo, "commit", "-q", "-m", archive.name, env=env)
    return repo, git(repo, "rev-list", "--reverse", "HEAD").split()


def history(repo: Path, rev: str, n: int) -> list[str]:
    """The last n commits of rev's first-parent line that change a Python file, oldest
    first (a step between two of them spans the commits in between)."""
    out = git(repo, "log", "--first-parent", "--format=%H", rev, "--", "*.py").split()
    if len(out) < n:
        raise SystemExit(f"{repo} has {len(out)} commits changing Python files on {rev}")
    return out[:n][::-1]


def python_changes(repo: Path, shas: list[str]) -> list[int]:
    """Python files each step of the chain changes (added, modified or removed)."""
    counts = []
    for before, after in itertools.pairwise(shas):
        names = git(repo, "diff-tree", "-r", "--name-only", before, after).split("\n")
        counts.append(sum(name.endswith(".py") for name in names))
    return counts


def run_loop(repo: Path, name: str, shas: list[str], out: Path, shared_cache: Path | None) -> dict:
    """`tag --out` per commit on a tree `git archive` wrote; peak RSS of the tag runs."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="batch-bench-loop-") as tmp:
        for n, sha in enumerate(shas):
            tree = Path(tmp) / f"c{n}" / name
            tree.mkdir(parents=True)
            archive = subprocess.run(
                ["git", "-C", str(repo), "archive", sha], check=True, capture_output=True
            ).stdout
            subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
            # its own cache folder, or the shared one (not the user cache: nothing left behind)
            cache = ["--cache", str(shared_cache or Path(tmp) / f"cache-c{n}")]
            cmd = [*ANCHOR_LS, "tag", str(tree), "--out", str(out / f"t{n}" / name), *cache]
            subprocess.run(cmd, check=True, capture_output=True)
            shutil.rmtree(tree.parent)
            if not shared_cache:
                shutil.rmtree(Path(tmp) / f"cache-c{n}")
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"seconds": seconds, "peak_mb": peak}


def run_batch(manifest: Path, out: Path, cache: Path, extra: list[str]) -> dict:
    start = time.perf_counter()
    cmd = [*ANCHOR_LS, "batch", str(manifest), "--out", str(out), "--cache", str(cache), *extra]
    done = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        print(done.stdout, done.stderr, file=sys.stderr)
        raise SystemExit(f"batch {' '.join(extra)} failed ({done.returncode})")
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    ok = [r for r in results if r["status"] == "ok"]
    return {
        "seconds": seconds,
        "peak_mb": max(r["worker_peak_mb"] for r in ok),
        "steps": [(r["id"], r["index"], r["reindexed"], r["seconds"]) for r in ok],
    }


def same_trees(a: Path, b: Path) -> bool:
    cmp = filecmp.dircmp(a, b, ignore=[])
    if cmp.left_only or cmp.right_only or cmp.funny_files:
        return False
    _match, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    if mismatch or errors:
        return False
    return all(same_trees(a / d, b / d) for d in cmp.common_dirs)


def identical(batch_out: Path, loop_out: Path, n: int, name: str) -> bool:
    return all(same_trees(batch_out / f"t{i}" / name, loop_out / f"t{i}" / name) for i in range(n))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", type=int, default=8, help="snapshots in the chain")
    parser.add_argument("--skip-download", action="store_true")
    parser.add_argument(
        "--history", type=Path, help="a git repository: chain its commits instead of sdists"
    )
    parser.add_argument("--rev", default="HEAD", help="with --history: the line's last commit")
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--no-shared-loop", action="store_true", help="skip the shared-cache loop")
    parser.add_argument(
        "--no-rebuild", action="store_true", help="skip the one-worker --no-incremental run"
    )
    parser.add_argument(
        "--no-single", action="store_true", help="skip the one-worker runs (pool and Ray only)"
    )
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    if args.history is not None:
        repo = args.history.resolve()
        shas = history(repo, args.rev, args.versions)
        what = f"the last {len(shas)} commits of {repo.name} changing Python files on {args.rev}"
    else:
        archives = sdists(VERSIONS[: args.versions], args.skip_download)
        repo, shas = build_repo(archives)
        what = f"consecutive Django sdists ({archives[0].name} .. {archives[-1].name})"
    n = len(shas)
    name = repo.name[:-4] if repo.name.endswith(".git") else repo.name
    DATA.mkdir(parents=True, exist_ok=True)  # --history on a fresh checkout made nothing yet
    with tempfile.TemporaryDirectory(prefix="batch-bench-", dir=DATA) as tmp:
        work = Path(tmp)
        manifest = work / "manifest.jsonl"
        manifest.write_text(
            "".join(
                json.dumps({"id": f"t{i}", "repo": str(repo), "commit": sha}) + "\n"
                for i, sha in enumerate(shas)
            )
        )
        rows: list[tuple[str, dict, bool | None]] = []
        loop = run_loop(repo, name, shas, work / "loop", None)
        rows.append(("loop of tag --out", loop, None))
        if not args.no_shared_loop:
            shared = run_loop(repo, name, shas, work / "loop-shared", work / "cache-loop")
            same = identical(work / "loop-shared", work / "loop", n, name)
            rows.append(("loop of tag --out, one --cache", shared, same))
        runs: list[tuple[str, list[str]]] = []
        if not args.no_single:
            runs.append(("batch, 1 worker (one chain)", ["--workers", "1"]))
        if not (args.no_single or args.no_rebuild):
            runs.append(
                ("batch, 1 worker, --no-incremental", ["--workers", "1", "--no-incremental"])
            )
        runs.append((f"batch, pool of {args.workers}", ["--workers", str(args.workers)]))
        if not args.no_ray:
            runs.append((f"batch, local Ray, {args.workers} CPUs", ["--ray"]))
            runs[-1][1].extend(["--workers", str(args.workers)])
        for label, extra in runs:
            out = work / f"out-{len(rows)}"
            result = run_batch(manifest, out, work / f"cache-{len(rows)}", extra)
            rows.append((label, result, identical(out, work / "loop", n, name)))
        changes = ", ".join(map(str, python_changes(repo, shas)))
        print(f"\nchain: {n} snapshots, {what}; Python files changed per step: {changes}")
        print("\n| run | seconds | speed-up over loop | snapshots/min | peak MB | same bytes")
        print("|---|---|---|---|---|---")
        base = loop["seconds"]
        for label, result, same in rows:
            shown = "-" if same is None else ("yes" if same else "NO")
            print(
                f"| {label} | {result['seconds']:.1f} | {base / result['seconds']:.2f}x | "
                f"{n / result['seconds'] * 60:.1f} | {result['peak_mb']:.0f} | {shown}"
            )
        for label, result, _same in rows:
            if "steps" in result:
                steps = ", ".join(f"{i} {how} {k} {s:.1f}s" for i, how, k, s in result["steps"])
                print(f"\n{label}: {steps}")
        load = os.getloadavg()
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
        ).stdout.strip()
        print(f"\nload average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; commit {commit}")


if __name__ == "__main__":
    main()
