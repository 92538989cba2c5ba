"""Index time of generated hostile files that CPython compiles, at growing sizes.

Each file alone in a fresh folder, indexed cold in a fresh subprocess (no cache, one
worker); the time must grow in proportion to the file, not faster.
`python benchmarks/hostile_sizes.py [--only SHAPE] [--sizes N,N,...] [--timeout S]
[--profile SHAPE:N]`
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.hostile import self_chain, stacked_decorators


def inheritance_chain(n: int, chains: int = 1) -> str:
    """chains linear chains of n classes each: class C1(C0), class C2(C1), ..."""
    out = []
    for c in range(chains):
        out.append(f"class K{c}_0:\n    def m(self):\n        return 0\n\n\n")
        for i in range(1, n):
            out.append(f"class K{c}_{i}(K{c}_{i - 1}):\n    pass\n\n\n")
        out.append(f"def use{c}():\n    return K{c}_{n - 1}().m()\n\n\n")
    return "".join(out)


def bool_chain(n: int) -> str:
    """A function with an n-term `and` chain and a call of an n-term `or` chain."""
    terms = " and ".join(f"a{i}" for i in range(n))
    ors = " or ".join(f"b{i}" for i in range(n))
    return (
        "def before():\n    return 1\n\n\n"
        f"def deep():\n    before()\n    x = {terms}\n    before(x)\n    return before({ors})\n\n\n"
        "def after():\n    return deep()\n"
    )


SHAPES: dict[str, tuple[Callable[[int], str], list[int]]] = {
    "decorators": (lambda n: stacked_decorators(n, wraps=True), [2000, 4000, 8000, 100_000]),
    "chain": (inheritance_chain, [500, 1000, 2000, 2500]),
    "4chains": (lambda n: inheritance_chain(n, 4), [600, 1200, 2400]),
    "self-calls": (self_chain, [1000, 2500, 5000]),
    "self-steps": (lambda n: self_chain(n, "steps"), [1000, 2500, 5000]),
    "self-stores": (lambda n: self_chain(n, "stores"), [1000, 2500, 5000]),
    "and-or": (bool_chain, [500, 1000, 2000, 20_000]),
}

RUN = """
import json, sys, time
from anchor_ls.index import Index
t = time.perf_counter()
index = Index(sys.argv[1], use_cache=False, workers=1)
index.build()
seconds = time.perf_counter() - t
g = index.graph
print(json.dumps({"seconds": seconds, "entities": len(g.entities),
                  "edges": sum(1 for _ in g.edges()),
                  "problems": sorted(p.kind for p in index.problems.values())}))
"""

PROFILE = """
import cProfile, pstats, sys
from anchor_ls.index import Index
index = Index(sys.argv[1], use_cache=False, workers=1)
cProfile.run("index.build()", sys.argv[2])
pstats.Stats(sys.argv[2]).sort_stats("tottime").print_stats(15)
"""


def measure(shape: str, n: int, timeout: float) -> str:
    make = SHAPES[shape][0]
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "hostile.py").write_text(make(n), encoding="utf-8")
        start = time.perf_counter()
        try:
            done = subprocess.run(
                [sys.executable, "-c", RUN, tmp],
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return f"{shape:>10} {n:>7}  >{timeout:.0f} s (stopped)"
        wall = time.perf_counter() - start
        if done.returncode:
            return f"{shape:>10} {n:>7}  failed: {done.stderr.strip().splitlines()[-1:]}"
        return f"{shape:>10} {n:>7}  {wall:7.2f} s wall  {done.stdout.strip()}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--only", choices=sorted(SHAPES))
    ap.add_argument("--sizes", help="comma-separated sizes instead of the defaults")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--profile", metavar="SHAPE:N", help="cProfile one build instead")
    args = ap.parse_args()
    if args.profile:
        shape, _, n = args.profile.partition(":")
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "hostile.py").write_text(SHAPES[shape][0](int(n)), encoding="utf-8")
            subprocess.run([sys.executable, "-c", PROFILE, tmp, f"{tmp}/prof"], check=False)
        return
    for shape, (_make, sizes) in SHAPES.items():
        if args.only and shape != args.only:
            continue
        chosen = [int(s) for s in args.sizes.split(",")] if args.sizes else sizes
        for n in chosen:
            print(measure(shape, n, args.timeout), flush=True)


if __name__ == "__main__":
    main()
