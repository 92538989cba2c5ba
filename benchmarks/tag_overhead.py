"""Tag overhead per policy: bytes of materialized CodeAnchor blocks over bytes of source.

    python benchmarks/tag_overhead.py [TREE ...] [--max-items N] [--cache DIR] [--breakdown]
                                      [--tests] [--ranking]

Default trees: the standard library of this interpreter (its site-packages left out, its
`test/` package kept) and, when they have been unpacked, the Django 5.1.4 sdist (the
`django` package plus its `tests/`) and the rich 13.9.4 sdist (the `rich` package; its
modules end in `if __name__ == "__main__":` demos):
    pip download --no-binary :all: --no-deps django==5.1.4 -d benchmarks/.data
    tar -xzf benchmarks/.data/Django-5.1.4.tar.gz -C benchmarks/.data
    pip download --no-binary :all: --no-deps rich==13.9.4 -d benchmarks/.data
    tar -xzf benchmarks/.data/rich-13.9.4.tar.gz -C benchmarks/.data
Each tree gets one table: topo, inv, dense and auto, then the same with --cross-file (only
links to other files). "overhead" is tag bytes over all source bytes (the issue's
measure; test code carries no blocks by default, see anchor_ls/tags/policy.py), "non-test"
the tag bytes in files that are not test code over their source bytes. Targets (the
issue): topo under 15 %, inv under 8 % of source bytes; auto is held to the target of the
policy it resolves to. `--breakdown` adds where the bytes of the topo and inv blocks go;
`--tests` measures every policy with test code tagged too (`anchor-ls tag --tests`).
`--ranking` shows what ranking the capped lists does (anchor_ls/tags/rank.py): over every
CALLED_BY field the cap cuts, how many demo entries the cut keeps when sorted by id (as
before ranking) and ranked, and for the hubs with the most demo callers, which entries each
order keeps.
Dense fields appear once the index emits dense edges; until then dense equals topo.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sysconfig
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from anchor_ls.index import Index
from anchor_ls.index.model import Graph, path_of
from anchor_ls.index.stats import graph_figures
from anchor_ls.tags import text
from anchor_ls.tags.apply import render_file
from anchor_ls.tags.policy import (
    DEFAULT_MAX_ITEMS,
    DENSE_EDGE_KINDS,
    ResolvedPolicy,
    fields_for,
    is_test_path,
    resolve_policy,
)
from anchor_ls.tags.rank import DEMO, PRODUCTION, ROLE_NAMES, TESTS, fan_in, role
from anchor_ls.tags.render import CLOSE, OPEN

STDLIB = sysconfig.get_paths()["stdlib"]
DJANGO = Path(__file__).resolve().parent / ".data" / "Django-5.1.4"
RICH = Path(__file__).resolve().parent / ".data" / "rich-13.9.4"
RANKING_HUBS = 3  # hubs whose kept CALLED_BY entries --ranking prints
# The standard library folder may hold installed packages; they are not the standard library.
THIRD_PARTY = ["site-packages", "site-packages/*", "dist-packages", "dist-packages/*"]
TARGETS = {"topo": 0.15, "inv": 0.08}
ROWS = [(p, x) for x in (False, True) for p in ("topo", "inv", "dense", "auto")]


@dataclass(slots=True)
class Row:
    requested: str  # the policy asked for (auto included)
    label: str
    policy: ResolvedPolicy
    source: int
    source_lib: int
    tags: int
    tags_lib: int
    blocks: int
    seconds: float
    parts: Counter[str]

    @property
    def overhead(self) -> float:
        return self.tags / max(self.source, 1)


def measure(
    index: Index, name: str, max_items: int, cross_file: bool, args: argparse.Namespace
) -> Row:
    graph = index.graph
    mean_out, _hubs = graph_figures(graph)
    policy = resolve_policy(name, mean_out, max_items, cross_file=cross_file, tests=args.tests)
    source = source_lib = tags = tags_lib = blocks = 0
    parts: Counter[str] = Counter()
    started = time.perf_counter()
    for relpath in graph.files():
        data = index.source(relpath)
        if data is None:
            continue
        result = render_file(graph, relpath, data, policy)
        source += len(data)
        tags += len(result.text) - len(data)
        if not is_test_path(relpath):
            source_lib += len(data)
            tags_lib += len(result.text) - len(data)
        blocks += result.inserted
        if args.breakdown and result.inserted:
            count_parts(parts, result.text, relpath)
    elapsed = time.perf_counter() - started
    label = name if name != "auto" else f"auto->{policy.name}/{policy.max_items}"
    label += (" x-file" if cross_file else "") + (" +tests" if args.tests else "")
    return Row(name, label, policy, source, source_lib, tags, tags_lib, blocks, elapsed, parts)


def count_parts(parts: Counter[str], tagged: bytes, relpath: str) -> None:
    """Add the bytes of each kind of block line (indentation and line ends apart)."""
    eol = len(text.split_lines(tagged).eol)
    for block in text.strip(tagged, relpath).blocks:
        for line in block.lines:
            body = line.lstrip(b" \t\f")
            parts["indentation"] += len(line) - len(body)
            parts["line ends"] += eol
            if body.startswith(OPEN.encode()):
                parts["opening line: '# === CodeAnchor '"] += len(OPEN) + 1
                ident = body[len(OPEN) + 1 :]
                kind = "module" if b":" not in ident else "definition"
                parts[f"opening line: {kind} id"] += len(ident)
            elif body.rstrip() == CLOSE.encode():
                parts["closing line: '# ==='"] += len(body)
            else:
                name, _, items = body[2:].partition(b": ")
                parts[f"field {name.decode()}: '# NAME: '"] += len(name) + 4
                for item in items.split(b", "):
                    if item.startswith(b"[+"):
                        parts["  of which [+N more]"] += len(item) + 2
                    elif item.startswith((b":", b".")):
                        parts[f"field {name.decode()}: same-file links"] += len(item) + 2
                    else:
                        parts[f"field {name.decode()}: other-file links"] += len(item) + 2
                        if path_of(item.decode("utf-8", "replace")) == relpath:
                            parts["  of which a same-file module id"] += len(item) + 2
        parts["blocks"] += 1


def print_table(rows: list[Row]) -> None:
    print(
        f"{'policy':<26} {'source bytes':>13} {'tag bytes':>12} {'overhead':>9} "
        f"{'non-test':>9} {'blocks':>8} {'time s':>7}  target"
    )
    for r in rows:
        target = TARGETS.get(r.policy.name)
        verdict = ""
        if target is not None:
            verdict = f"< {target:.0%} {'PASS' if r.overhead < target else 'MISS'}"
        print(
            f"{r.label:<26} {r.source:>13,} {r.tags:>12,} {r.overhead:>9.1%} "
            f"{r.tags_lib / max(r.source_lib, 1):>9.1%} {r.blocks:>8,} {r.seconds:>7.1f}  {verdict}"
        )


def print_breakdown(row: Row) -> None:
    parts = row.parts
    total = max(row.tags, 1)
    print(f"\n  where the {row.label} bytes go ({parts['blocks']:,} blocks):")
    for key, value in sorted(parts.items(), key=lambda kv: -kv[1]):
        if key == "blocks":
            continue
        print(f"    {key:<46} {value:>11,} {value / total:>7.1%} of tags")


def print_ranking(index: Index, max_items: int) -> None:
    """What the cap keeps of each CALLED_BY field: sorted by id (before ranking) or ranked."""
    graph = index.graph
    uncapped = resolve_policy("topo", 0.0, 0)
    uncapped = ResolvedPolicy("topo", ("CALLED_BY",), 0, uncapped.reason)
    cut = 0
    kept: dict[str, Counter[int]] = {"by id": Counter(), "ranked": Counter()}
    callers = {"by id": 0, "ranked": 0}  # sum of the kept entries' own callers (fan-in)
    swapped = 0  # entries the ranked cut keeps that the cut by id did not
    hubs: list[tuple[int, str, list[str]]] = []
    for ident in sorted(graph.entities):
        found = fields_for(graph, ident, uncapped)
        if not found or len(found[0].entries) <= max_items:
            continue
        cut += 1
        ranked = list(found[0].entries)
        roles = {i: role(graph, i, "calls", ident) for i in ranked}
        by_id = sorted(ranked)[:max_items]
        kept["by id"].update(roles[i] for i in by_id)
        kept["ranked"].update(roles[i] for i in ranked[:max_items])
        callers["by id"] += sum(fan_in(graph, i) for i in by_id)
        callers["ranked"] += sum(fan_in(graph, i) for i in ranked[:max_items])
        swapped += len(set(ranked[:max_items]) - set(by_id))
        demo = sum(1 for r in roles.values() if r == DEMO)
        if demo:
            hubs.append((-demo, ident, ranked))
    print(
        f"\n  ranking: {cut:,} CALLED_BY fields cut at {max_items}; ranked, the cut keeps "
        f"{swapped:,} entries the cut by id did not. Entries kept, by role, and their callers:"
    )
    for order, counts in kept.items():
        shown = ", ".join(f"{counts[r]:,} {ROLE_NAMES[r]}" for r in (PRODUCTION, DEMO, TESTS))
        print(f"    {order:<7} {shown}; {callers[order]:,} callers of their own")
    for minus_demo, ident, ranked in sorted(hubs)[:RANKING_HUBS]:
        print(f"  {ident}: {len(ranked)} callers, {-minus_demo} in demo code; kept")
        for order, first in (("by id", sorted(ranked)), ("ranked", ranked)):
            names = ", ".join(_marked(graph, i, ident) for i in first[:max_items])
            print(f"    {order:<7} {names}")


def _marked(graph: Graph, ident: str, callee: str) -> str:
    return ident + (" (demo)" if role(graph, ident, "calls", callee) == DEMO else "")


def commit() -> str:
    git = ["git", "-C", str(Path(__file__).resolve().parent.parent)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run([*git, "diff", "--quiet", "HEAD", "--", "anchor_ls"]).returncode
    return head.stdout.strip() + (" + uncommitted changes in anchor_ls" if dirty else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="*")
    parser.add_argument("--exclude", action="append", metavar="GLOB", help="leave out matches")
    parser.add_argument("--max-items", type=int, default=DEFAULT_MAX_ITEMS)
    parser.add_argument("--cache", metavar="DIR", help="reuse index caches here")
    parser.add_argument("--breakdown", action="store_true", help="where the tag bytes go")
    parser.add_argument("--tests", action="store_true", help="tag test code too")
    parser.add_argument(
        "--ranking", action="store_true", help="what the cap keeps, sorted by id and ranked"
    )
    args = parser.parse_args()
    trees = args.trees or [STDLIB] + [str(t) for t in (DJANGO, RICH) if t.is_dir()]
    for corpus in (DJANGO, RICH):
        if not args.trees and not corpus.is_dir():
            print(f"(no {corpus}: left out; see the docstring to fetch it)")
    verdicts: list[str] = []
    for tree in trees:
        with tempfile.TemporaryDirectory() as scratch:
            cache = Path(args.cache) / Path(tree).resolve().name if args.cache else Path(scratch)
            started = time.perf_counter()
            exclude = args.exclude or (THIRD_PARTY if tree == STDLIB else [])
            index = Index(Path(tree), cache_dir=cache, exclude=exclude)
            stats = index.build()
            built = time.perf_counter() - started
        dense = sum(index.graph.edge_count(k) for k in DENSE_EDGE_KINDS)
        print(
            f"\n{tree}: {stats.files} files, {stats.entities} entities, "
            f"mean call out-degree {stats.mean_out_degree:.2f}, hubs {stats.hub_share:.1%}, "
            f"{dense:,} dense edges, indexed in {built:.1f} s, max items {args.max_items}"
        )
        rows = [measure(index, p, args.max_items, x, args) for p, x in ROWS]
        print_table(rows)
        if args.ranking:
            print_ranking(index, rows[0].policy.max_items)
        if args.breakdown:
            for row in rows:
                if row.requested in TARGETS and not row.policy.cross_file:
                    print_breakdown(row)
        for r in rows:
            if r.requested in TARGETS and not r.policy.cross_file:
                target = TARGETS[r.policy.name]
                ok = r.overhead < target
                verdicts.append(
                    f"{Path(tree).name} {r.label} {r.overhead:.1%} < {target:.0%}: "
                    f"{'PASS' if ok else 'MISS'}"
                )
    print("\ntargets: " + "; ".join(verdicts))
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{os.cpu_count()} cores, load average after the run {load}; commit {commit()}")


if __name__ == "__main__":
    main()
