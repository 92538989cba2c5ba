"""Glimpses against the whole build on a real repository (Django 5.1.4 by default).

    python benchmarks/glimpse_bench.py [--root DIR] [--calls N] [--classes N] [--seed S]

A glimpse (anchor_ls/index/glimpse.py) answers who calls a function or subclasses a class
from the few files that can hold the answer while the first build runs. Here the whole
repository is indexed (its cache is benchmarks/.data/glimpse-cache), then N random
functions and methods that have callers and N random classes that have subclasses are
asked of a glimpse each, in this process. Printed: how many glimpses listed something the
build does not (the target: none), how many questions no glimpse answers (the server then
waits for the build), how many listed all of it, the callers and subclasses
found of those the build lists, and the glimpses' sizes and times (alone on the machine;
in the server they share it with the build).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

from anchor_ls.index import CALLS, INHERITS, Index
from anchor_ls.index.glimpse import Corpus, glimpse, users_scope, users_wanted

HERE = Path(__file__).resolve().parent
DEFAULT_ROOT = HERE / ".data" / "Django-5.1.4"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--calls", type=int, default=30, help="functions with callers to ask")
    parser.add_argument("--classes", type=int, default=10, help="classes with subclasses to ask")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--every-site", action="store_true", help="resolve every site (as before Index(wanted))"
    )
    args = parser.parse_args()
    root = args.root.resolve()
    whole = Index(root, cache_dir=HERE / ".data" / "glimpse-cache")
    whole.build()
    graph = whole.graph
    entities = [e for path in graph.files() for e in graph.file_entities(path)]
    called = sorted(
        e.id for e in entities if e.kind in ("function", "method") and graph.into(CALLS, e.id)
    )
    derived = sorted(e.id for e in entities if e.kind == "class" and graph.into(INHERITS, e.id))
    rng = random.Random(args.seed)
    asked = [(CALLS, i) for i in rng.sample(called, args.calls)]
    asked += [(INHERITS, i) for i in rng.sample(derived, args.classes)]
    corpus = Corpus.read(root, whole.exclude)
    wrong, complete, found, expected, declined = [], 0, 0, 0, 0
    missed: list[str] = []
    sizes, seconds = [], []
    for relation, entity_id in asked:
        started = time.perf_counter()
        scope = users_scope(corpus, entity_id)
        if scope is None:  # too many bases to read: the server waits for the build
            declined += 1
            continue
        entity = graph.entity(entity_id)
        wanted = None if args.every_site or entity is None else users_wanted(entity_id, entity.kind)
        seen = glimpse(
            corpus, scope, exclude=whole.exclude, source_roots=whole.source_roots, wanted=wanted
        )
        seconds.append(time.perf_counter() - started)
        sizes.append(len(scope))
        listed = set(seen.graph.into(relation, entity_id))
        truth = set(graph.into(relation, entity_id))
        if not listed <= truth:
            wrong.append(f"{entity_id}: {sorted(listed - truth)}")
        complete += listed == truth
        if listed != truth:
            missed.append(f"{entity_id}: {len(truth - listed)} of {len(truth)}")
        found += len(listed & truth)
        expected += len(truth)
    print(f"\nglimpses on {root.name}: {len(asked)} questions (seed {args.seed})\n")
    print("| measurement | value |")
    print("|---|---|")
    print(f"| glimpses listing something the build does not (target 0) | {len(wrong)} |")
    print(f"| questions no glimpse answers (too many bases to read) | {declined} |")
    print(f"| glimpses listing all the build lists | {complete} of {len(asked) - declined} |")
    print(f"| callers and subclasses found | {found} of {expected} |")
    print(f"| files read, median / max | {statistics.median(sizes):.0f} / {max(sizes)} |")
    print(f"| seconds, median / max | {statistics.median(seconds):.2f} / {max(seconds):.2f} |")
    for line in wrong:
        print("wrong:", line)
    for line in missed:
        print("missed:", line)


if __name__ == "__main__":
    main()
