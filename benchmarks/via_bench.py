"""How the call graph's edges were found and what it leaves unresolved, on real corpora.

    python benchmarks/via_bench.py [--only stdlib|django] [--samples N] [--cache DIR]

For the standard library (without test/ and site-packages/) and the Django sdist
(benchmarks/.data/Django-5.1.4, as index_bench.py downloads it): the share of call edges
of each via kind (anchor_ls/index/via.py), the share of call sites left unresolved, and
a deterministic sample of unresolved sites (the N whose `path:line:col` hashes lowest),
each as `path:line  entity  called-name  source line`, to read against the binder's rules.
"""

from __future__ import annotations

import argparse
import hashlib
import sysconfig
import tempfile
from collections import Counter
from pathlib import Path

from anchor_ls.index.model import CALLS
from anchor_ls.index.repository import Index
from anchor_ls.index.via import VIA_KINDS

DATA = Path(__file__).resolve().parent / ".data"


def corpora() -> dict[str, tuple[Path, tuple[str, ...]]]:
    return {
        "stdlib": (Path(sysconfig.get_paths()["stdlib"]), ("test/*", "site-packages/*")),
        "django": (DATA / "Django-5.1.4", ()),
    }


def report(name: str, root: Path, exclude: tuple[str, ...], cache: Path, samples: int) -> None:
    index = Index(root, cache_dir=cache / name, exclude=exclude)
    stats = index.build()
    graph = index.snapshot().graph
    kinds = Counter(graph.via(src, dst) or "-" for _k, src, dst in graph.edges(CALLS))
    missed = [site for rel in graph.files() for site in graph.file_missed(rel)]
    total = sum(kinds.values())
    print(f"\n## {name}: {root}")
    print(f"call edges: {total}")
    print("| via | edges | share |\n|---|---:|---:|")
    for kind in (*VIA_KINDS, "-"):
        if kinds.get(kind):
            print(f"| {kind} | {kinds[kind]} | {kinds[kind] / total:.1%} |")
    sites = stats.call_sites or 1
    print(
        f"call sites: {stats.call_sites}: {stats.resolved_binder} resolved, {stats.external} "
        f"outside the repository, {stats.unresolved} unresolved ({stats.unresolved / sites:.1%})"
    )
    named = sum(1 for _src, called, _span in missed if called)
    print(f"unresolved sites that call a name (possible callers of a definition): {named}")

    def key(site: tuple[str, str, tuple[int, int, int, int]]) -> bytes:
        src, _called, span = site
        where = f"{src.partition(':')[0]}:{span[0]}:{span[1]}".encode()
        return hashlib.blake2b(where, digest_size=8).digest()

    print(f"{samples} sampled unresolved sites:")
    for src, called, span in sorted(missed, key=key)[:samples]:
        path = src.partition(":")[0]
        text = (index.source(path) or b"").splitlines()
        line = text[span[0]].decode("utf-8", "replace").strip() if span[0] < len(text) else ""
        entity = src.partition(":")[2] or "<module>"
        print(f"  {path}:{span[0] + 1}\t{entity}\t{called or '-'}\t{line}")
    index.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--only", choices=tuple(corpora()), action="append")
    p.add_argument("--samples", type=int, default=30)
    p.add_argument("--cache", type=Path, help="index caches (default: a temporary folder)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="via-bench-") as tmp:
        cache = args.cache or Path(tmp)
        for name, (root, exclude) in corpora().items():
            if args.only and name not in args.only:
                continue
            if not root.is_dir():
                print(f"\n## {name}: {root} is missing (index_bench.py downloads it)")
                continue
            report(name, root, exclude, cache, args.samples)


if __name__ == "__main__":
    main()
