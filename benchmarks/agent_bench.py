"""`anchor-ls mcp` on the Django 5.1.4 sdist, driven by the MCP SDK's stdio client.

    python benchmarks/agent_bench.py [--skip-download] [--symbols N] [--grep N] [--seed S]

Prints:
- the time from starting the server to its first answer, with an empty cache (cold) and
  with the cache the cold run left (warm);
- per tool, p50/p95 latency over --symbols (200) random symbols, round trip through the
  client (the freshness check of the whole tree included), and p50/p95 answer size in
  tokens (characters / 4); PASS/MISS against the issue's goals (p95 < 50 ms for callers,
  callees, hierarchy, outline, find_symbol; < 200 ms for impact at depth 3; median answer
  under 1,000 tokens);
- the grep comparison on --grep (100) random functions and methods: what `grep -rnwI NAME`
  over the tree returns (lines, files, lines that are true call sites) against the
  index's callers: how many lines an agent reads without the tool, and how many true
  callers it would still miss (callers none of whose call lines has the name as a word).

The random choices are seeded (--seed, 0). Corpora: benchmarks/.data (index_bench's fetch).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index_bench import DATA, fetch  # the corpora's one download helper

from anchor_ls.agent.queries import MAX_OUTLINE
from anchor_ls.index import CALLS, Index

ROOT = DATA / "Django-5.1.4"
GOALS_MS = {
    "find_symbol": 50,
    "callers": 50,
    "callees": 50,
    "hierarchy": 50,
    "outline": 50,
    "impact": 200,
}
TOKEN_GOAL = 1000


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def server(cache: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-P", "-m", "anchor_ls", "mcp", str(ROOT), "--cache", cache],
        cwd=tempfile.gettempdir(),
    )


async def first_answer(cache: str) -> float:
    """Seconds from spawning the server to its first tool answer."""
    start = time.perf_counter()
    async with (
        stdio_client(server(cache), errlog=open(os.devnull, "w")) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        result = await session.call_tool("stats", {})
        took = time.perf_counter() - start
        assert not result.is_error, result
    return took


def requests(index: Index, count: int, rng: random.Random) -> dict[str, list[dict[str, Any]]]:
    """Each tool's arguments for `count` random symbols (classes and methods for hierarchy)."""
    graph = index.graph
    ents = sorted(graph.entities.values(), key=lambda e: e.id)
    callables = [e for e in ents if e.kind in ("function", "method", "class")]
    typed = [e for e in ents if e.kind in ("class", "method")]
    picked = rng.sample(callables, count)
    for_types = rng.sample(typed, count)
    return {
        "find_symbol": [{"query": e.name} for e in picked],
        "callers": [{"symbol": e.id} for e in picked],
        "callees": [{"symbol": e.id} for e in picked],
        "impact": [{"symbol": e.id, "depth": 3} for e in picked],
        "hierarchy": [{"symbol": e.id} for e in for_types],
        "outline": [{"path": e.path} for e in picked],
        "related_tests": [{"symbol": e.id} for e in picked],
        "tags": [{"target": e.id} for e in picked],
    }


async def latencies(
    cache: str, asks: dict[str, list[dict[str, Any]]]
) -> dict[str, tuple[list[float], list[float], int]]:
    """tool -> (milliseconds, tokens, errors) over its requests, round trip."""
    out: dict[str, tuple[list[float], list[float], int]] = {}
    async with (
        stdio_client(server(cache), errlog=open(os.devnull, "w")) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        await session.call_tool("stats", {})  # waits for the build
        for tool, calls in asks.items():
            ms: list[float] = []
            tokens: list[float] = []
            errors = 0
            for args in calls:
                start = time.perf_counter()
                result = await session.call_tool(tool, args)
                ms.append((time.perf_counter() - start) * 1000)
                text = "".join(getattr(c, "text", "") for c in result.content)
                tokens.append(len(text) / 4)
                errors += bool(result.is_error)
            out[tool] = (ms, tokens, errors)
    return out


def grep_comparison(index: Index, count: int, rng: random.Random) -> dict[str, float]:
    """grep -rnwI NAME over the tree against the index's callers of count random functions."""
    graph = index.graph
    funcs = sorted(
        (e for e in graph.entities.values() if e.kind in ("function", "method")),
        key=lambda e: e.id,
    )
    funcs = [e for e in funcs if not (e.name.startswith("__") and e.name.endswith("__"))]
    rows = []
    for ent in rng.sample(funcs, count):
        done = subprocess.run(
            ["grep", "-rnwI", "--exclude-dir=.anchor-ls", ent.name, "."],
            cwd=ROOT,
            capture_output=True,
            text=True,
            errors="replace",
        )
        hits: set[tuple[str, int]] = set()
        for line in done.stdout.splitlines():
            path, _, rest = line.partition(":")
            number = rest.partition(":")[0]
            if number.isdigit():
                hits.add((path.removeprefix("./"), int(number)))
        callers = graph.into(CALLS, ent.id)
        site_lines = {
            caller: {
                (graph.entity(caller).path, span[0] + 1) for span in graph.sites(caller, ent.id)
            }  # type: ignore[union-attr]
            for caller in callers
            if graph.entity(caller) is not None
        }
        true_sites = set().union(*site_lines.values()) if site_lines else set()
        missed = sum(1 for lines in site_lines.values() if lines and not lines & hits)
        rows.append(
            {
                "hits": len(hits),
                "files": len({p for p, _ in hits}),
                "real": len(hits & true_sites),
                "callers": len(callers),
                "missed": missed,
            }
        )

    def med(key: str) -> float:
        return median(r[key] for r in rows)

    total = {k: sum(r[k] for r in rows) for k in ("hits", "files", "real", "callers", "missed")}
    return {
        **{f"median_{k}": med(k) for k in ("hits", "files", "real", "callers")},
        **{f"total_{k}": v for k, v in total.items()},
        "p95_hits": pct([r["hits"] for r in rows], 0.95),
        "functions_with_missed": sum(1 for r in rows if r["missed"]),
        "noise": 1 - total["real"] / total["hits"] if total["hits"] else 0.0,
    }


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def table(
    starts: tuple[float, float],
    measured: dict[str, tuple[list[float], list[float], int]],
    grep: dict[str, float],
    symbols: int,
    index: Index,
    asks: dict[str, list[dict[str, Any]]],
) -> None:
    print(f"## anchor-ls mcp on Django 5.1.4 ({symbols} random symbols per tool)\n")
    print("| start to first answer | seconds |\n|---|---|")
    print(f"| cold (empty cache) | {starts[0]:.2f} |")
    print(f"| warm (cache from the cold run) | {starts[1]:.2f} |")
    print()
    print(f"load average (1 min) at the end: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)\n")
    print("| tool | p50 ms | p95 ms | goal p95 | p50 tokens | p95 tokens | errors |")
    print("|---|---|---|---|---|---|---|")
    all_tokens: list[float] = []
    for tool, (ms, tokens, errors) in measured.items():
        goal = GOALS_MS.get(tool)
        p95 = pct(ms, 0.95)
        mark = f"< {goal} ms {verdict(p95 < goal)}" if goal else "-"
        all_tokens += tokens
        print(
            f"| {tool} | {pct(ms, 0.5):.1f} | {p95:.1f} | {mark} | {pct(tokens, 0.5):.0f} "
            f"| {pct(tokens, 0.95):.0f} | {errors} |"
        )
    outlined = [len(index.source(a["path"]) or b"") / 4 for a in asks["outline"]]
    print(
        f"\noutline lists a file's first {MAX_OUTLINE} definitions: the files it outlined are "
        f"{pct(outlined, 0.5):.0f} tokens at p50, {pct(outlined, 0.95):.0f} at p95"
    )
    mid = pct(all_tokens, 0.5)
    print(f"\nmedian answer over all tools: {mid:.0f} tokens ({verdict(mid < TOKEN_GOAL)} < 1,000)")
    print(f"\n### grep -rnwI NAME vs the index's callers ({grep['total_callers']} callers)\n")
    print("| | median | total |\n|---|---|---|")
    print(f"| grep lines | {grep['median_hits']:.0f} | {grep['total_hits']} |")
    print(f"| grep files | {grep['median_files']:.0f} | {grep['total_files']} |")
    real = f"{grep['median_real']:.0f} | {grep['total_real']}"
    print(f"| grep lines that are true call sites | {real} |")
    print(f"| true callers (index) | {grep['median_callers']:.0f} | {grep['total_callers']} |")
    print(f"| callers with no grep line at any call site | - | {grep['total_missed']} |")
    print(
        f"\ngrep lines that are not call sites: {grep['noise']:.1%}; p95 grep lines per "
        f"function: {grep['p95_hits']:.0f}; functions with a caller grep misses: "
        f"{grep['functions_with_missed']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-download", action="store_true")
    parser.add_argument("--symbols", type=int, default=200)
    parser.add_argument("--grep", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--cache", metavar="DIR", help="keep the cache here (cold is measured only when empty)"
    )
    args = parser.parse_args()
    if not args.skip_download:
        fetch()
    with tempfile.TemporaryDirectory(prefix="agent-bench-") as scratch:
        cache = args.cache or scratch
        empty = not Path(cache).is_dir() or not any(Path(cache).iterdir())
        cold = asyncio.run(first_answer(cache)) if empty else float("nan")
        warm = asyncio.run(first_answer(cache))
        index = Index(ROOT, cache_dir=cache)
        index.build()
        rng = random.Random(args.seed)
        asks = requests(index, args.symbols, rng)
        measured = asyncio.run(latencies(cache, asks))
        grep = grep_comparison(index, args.grep, random.Random(args.seed + 1))
        table((cold, warm), measured, grep, args.symbols, index, asks)
        index.close()


if __name__ == "__main__":
    main()
