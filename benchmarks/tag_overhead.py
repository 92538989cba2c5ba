"""Tag overhead per policy: bytes of CodeAnchor blocks over bytes of source.

    python benchmarks/tag_overhead.py [TREE ...] [--max-items N]

Default tree: the standard library of this interpreter (its site-packages left out).
Django 5.1.4 for the study's comparison:
    pip download --no-binary :all: --no-deps django==5.1.4 -d benchmarks/.data
    tar -xzf benchmarks/.data/Django-5.1.4.tar.gz -C benchmarks/.data
    cd benchmarks/.data && python ../tag_overhead.py Django-5.1.4 Django-5.1.4/django
Targets (the issue): topo under 15 %, inv under 8 % of source bytes. The "x-file" rows
list only links to other files (`resolve_policy(..., cross_file=True)`).
"""

from __future__ import annotations

import argparse
import sysconfig
import tempfile
import time
from pathlib import Path

from anchor_ls.index import Index
from anchor_ls.index.stats import graph_figures
from anchor_ls.tags.apply import render_file
from anchor_ls.tags.policy import DEFAULT_MAX_ITEMS, DENSE_EDGE_KINDS, resolve_policy

STDLIB = sysconfig.get_paths()["stdlib"]
# The standard library folder may hold installed packages; they are not the standard library.
THIRD_PARTY = ["site-packages", "site-packages/*", "dist-packages", "dist-packages/*"]


def measure(
    index: Index, policy_name: str, max_items: int, cross_file: bool
) -> tuple[str, int, int, int, float]:
    graph = index.graph
    mean_out, _hubs = graph_figures(graph)
    policy = resolve_policy(policy_name, mean_out, max_items, cross_file=cross_file)
    source_bytes = tag_bytes = blocks = 0
    started = time.perf_counter()
    for relpath in graph.files():
        data = index.source(relpath)
        if data is None:
            continue
        result = render_file(graph, relpath, data, policy)
        source_bytes += len(data)
        tag_bytes += len(result.text) - len(data)
        blocks += result.inserted
    elapsed = time.perf_counter() - started
    label = policy_name if policy_name != "auto" else f"auto->{policy.name}/{policy.max_items}"
    return label + (" x-file" if cross_file else ""), source_bytes, tag_bytes, blocks, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="*", default=[STDLIB])
    parser.add_argument("--exclude", action="append", metavar="GLOB", help="leave out matches")
    parser.add_argument("--max-items", type=int, default=DEFAULT_MAX_ITEMS)
    parser.add_argument("--cache", metavar="DIR", help="reuse index caches here")
    args = parser.parse_args()
    for tree in args.trees:
        with tempfile.TemporaryDirectory() as scratch:
            cache = Path(args.cache) / Path(tree).resolve().name if args.cache else Path(scratch)
            started = time.perf_counter()
            exclude = args.exclude or (THIRD_PARTY if tree == STDLIB else [])
            index = Index(Path(tree), cache_dir=cache, exclude=exclude)
            stats = index.build()
            built = time.perf_counter() - started
        dense = any(index.graph.edge_count(k) for k in DENSE_EDGE_KINDS)
        policies = ["topo", "inv", "auto"] + (["dense"] if dense else [])
        print(
            f"\n{tree}: {stats.files} files, {stats.entities} entities, "
            f"mean call out-degree {stats.mean_out_degree:.2f}, hubs {stats.hub_share:.1%}, "
            f"indexed in {built:.1f} s, max items {args.max_items}"
        )
        print(
            f"{'policy':<20} {'source bytes':>14} {'tag bytes':>12} {'overhead':>9} "
            f"{'blocks':>8} {'time s':>7}"
        )
        for name, cross_file in [(p, False) for p in policies] + [("topo", True), ("inv", True)]:
            label, src, tags, blocks, elapsed = measure(index, name, args.max_items, cross_file)
            print(
                f"{label:<20} {src:>14,} {tags:>12,} {tags / max(src, 1):>9.1%} "
                f"{blocks:>8,} {elapsed:>7.1f}"
            )


if __name__ == "__main__":
    main()
