"""Run one benchmark on an earlier commit and on the working tree, in turn, in one run.

    python benchmarks/before_after.py REV [--rounds N] -- SCRIPT [ARGS ...]

e.g. `python benchmarks/before_after.py adfbb8d -- index_bench.py --only django
--skip-download`. The shared machine's speed drifts from minute to minute, so a before
table from yesterday says little: here the two versions alternate (before, after, before,
after ... for --rounds rounds), each a fresh process, and each table is printed under its
label. REV is checked out in a git worktree under benchmarks/.data/before-REV with a venv
of its own (made once, with the test extras: lsp_latency needs pytest-lsp), sharing this
tree's benchmarks/.data corpora; SCRIPT is run from each tree's benchmarks/ folder, so each
measures its own code. `{label}` in ARGS becomes `before` or `after`: a script that keeps a
cache in the shared .data needs one per version (`--cache benchmarks/.data/lsp-{label}`).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / ".data"


def prepare(rev: str) -> Path:
    """A worktree of rev with its own venv; made once and reused."""
    sha = subprocess.run(
        ["git", "rev-parse", "--short", rev], cwd=HERE, check=True, capture_output=True, text=True
    ).stdout.strip()
    tree = DATA / f"before-{sha}"
    if not tree.is_dir():
        DATA.mkdir(exist_ok=True)
        subprocess.run(["git", "worktree", "add", "--detach", str(tree), sha], cwd=HERE, check=True)
    python = tree / ".venv" / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(tree / ".venv")], check=True)
        pip = [str(python), "-m", "pip", "install", "-q"]
        subprocess.run([*pip, "-e", f"{tree}[test]"], check=True)
    data = tree / "benchmarks" / ".data"
    if not data.exists():
        data.symlink_to(DATA, target_is_directory=True)
    return tree


def run(which: str, label: str, tree: Path, python: Path, script: str, args: list[str]) -> None:
    print(f"\n===== {which} {label} ({tree}) =====", flush=True)
    args = [a.replace("{label}", which) for a in args]
    subprocess.run([str(python), str(tree / "benchmarks" / script), *args], cwd=tree, check=False)


def main() -> None:
    argv = sys.argv[1:]
    if "--" not in argv:
        raise SystemExit(__doc__)
    split = argv.index("--")
    parser = argparse.ArgumentParser(usage=__doc__)
    parser.add_argument("rev", help="the commit to compare the working tree with")
    parser.add_argument("--rounds", type=int, default=1, help="before/after pairs (1)")
    opts = parser.parse_args(argv[:split])
    script, *args = argv[split + 1 :]
    before = prepare(opts.rev)
    after = HERE.parent
    here_python = Path(os.environ.get("VIRTUAL_ENV", after / ".venv")) / "bin" / "python"
    for n in range(opts.rounds):
        label = f"(round {n + 1})"
        run("before", f"{opts.rev} {label}", before, before / ".venv/bin/python", script, args)
        run("after", f"the working tree {label}", after, here_python, script, args)


if __name__ == "__main__":
    main()
