"""Incremental equals fresh, on a real history: move one index from commit to commit
file by file (Freshness.sync: update_file / remove_file) and compare its graph JSON, at
every step, with an index built fresh at that commit.

    python benchmarks/incremental_check.py REPO [COMMIT ...]

REPO: a git repository (benchmarks/batch_bench.py builds one of consecutive Django sdists
under benchmarks/.data/batch-django); the commits default to its whole history, oldest
first. Prints, per step, the Python files changed, the seconds of the update and of the
fresh build, and the edges and entities only one side has (the first ones). Exit 1 when
a step differs.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
import time
from pathlib import Path

from anchor_ls.agent.freshness import Freshness
from anchor_ls.batch import gittree
from anchor_ls.index import Index


def _edges(data: dict) -> set[tuple]:
    return {(e["kind"], e["src"], e["dst"], e.get("via")) for e in data["edges"]}


def _entities(data: dict) -> set[tuple]:
    return {tuple(sorted(e.items())) for e in data["entities"]}


def _report(label: str, items: set[tuple], shown: int = 15) -> None:
    for item in sorted(items)[:shown]:
        print(f"    {label} {item}")
    if len(items) > shown:
        print(f"    {label} ... {len(items) - shown} more")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo")
    parser.add_argument("commits", nargs="*")
    args = parser.parse_args()
    repo = str(Path(args.repo).resolve())
    shas = args.commits or gittree.git(repo, "rev-list", "--reverse", "HEAD").decode().split()
    bad = 0
    with tempfile.TemporaryDirectory(prefix="incremental-check-") as tmp:
        root = Path(tmp) / "tree" / Path(repo).name
        gittree.materialize(repo, shas[0], root)
        index = Index(root, cache_dir=Path(tmp) / "cache-incremental", workers=1)
        fresh = Freshness(index, watch=False)
        fresh.build()
        for old, new in itertools.pairwise(shas):
            changed = gittree.move(repo, old, new, root)
            python = sorted(p for p in changed if p.endswith(".py"))
            start = time.perf_counter()
            fresh.sync()
            updated = time.perf_counter() - start
            start = time.perf_counter()
            other = Index(root, cache_dir=Path(tmp) / "cache-fresh", workers=1)
            other.build()
            built = time.perf_counter() - start
            a, b = index.snapshot().graph.to_json(), other.snapshot().graph.to_json()
            other.close()
            lost, extra = _edges(b) - _edges(a), _edges(a) - _edges(b)
            gone, more = _entities(b) - _entities(a), _entities(a) - _entities(b)
            same = not (lost or extra or gone or more)
            bad += not same
            print(
                f"{old[:8]} -> {new[:8]}: {len(python)} Python files changed, update "
                f"{updated:.1f} s, fresh build {built:.1f} s: "
                + (
                    "same graph"
                    if same
                    else f"DIFFERENT ({len(lost)} edges lost, "
                    f"{len(extra)} extra, {len(gone) + len(more)} entities differ)"
                ),
                flush=True,
            )
            _report("only fresh:", lost)
            _report("only incremental:", extra)
            _report("entity only fresh:", gone)
            _report("entity only incremental:", more)
        index.close()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
