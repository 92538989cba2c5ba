"""Precision and recall against published call-graph benchmarks with hand-made ground truth.

    python benchmarks/callgraph_bench.py [--suite NAME] [--category NAME] [--diff]

Suites (downloaded once from PyPI into benchmarks/.data):
- `pycg`: PyCG 0.0.8's micro-benchmark, the yardstick the issue quotes (PyCG reports 99.2%
  precision and 69.9% recall on it, ICSE 2021): 118 small programs in 18 categories, each with
  its expected call graph written by hand (`callgraph.json`).
- `jarviscg`: JARVIS's extension of it (jarviscg 0.1.0rc7's evaluation data): the same kind
  of programs plus context managers, control flow and more imports and assignments.
- `macro`: JARVIS's macro-benchmark, six real projects (bpytop, sqlparse, TextRank4ZH, furl,
  rich-cli, sshtunnel) with call graphs built by hand (`EA.json`).

The ground truth is written in PyCG's notation (`module.Qual.name`, `<builtin>.x`). Compared
here: edges whose both ends are in the program (repository-internal edges, what the issue's
bar is about). Our call edges are mapped to that notation: `pkg/mod.py:C.m` -> `pkg.mod.C.m`,
a module to its dotted name, a lambda bound to a name to PyCG's `<lambdaN>`. An edge to a
class is our note of the instantiation itself; the ground truth records the `__init__` it
runs, so class targets are left out of the comparison.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from anchor_ls.index.model import CALLS
from anchor_ls.index.repository import Index

DATA = Path(__file__).resolve().parent / ".data"
SDISTS = {"pycg": "pycg-0.0.8", "jarviscg": "jarviscg-0.1.0rc7"}
PINS = {"pycg": "pycg==0.0.8", "jarviscg": "jarviscg==0.1.0rc7"}
Edges = set[tuple[str, str]]


def fetch(tool: str) -> Path:
    """The unpacked source distribution of tool (pycg or jarviscg)."""
    root = DATA / SDISTS[tool]
    if not root.is_dir():
        tarball = DATA / f"{SDISTS[tool]}.tar.gz"
        if not tarball.is_file():
            cmd = [sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps"]
            subprocess.run([*cmd, PINS[tool], "-d", str(DATA)], check=True)
        with tarfile.open(tarball) as tar:
            tar.extractall(DATA, filter="data")
    return root


def cases(suite: str) -> Iterator[tuple[str, Path, Path]]:
    """(category/name, program directory, ground-truth file) of each case of the suite."""
    if suite == "pycg":
        snippets = fetch("pycg") / "micro-benchmark" / "snippets"
        for truth in sorted(snippets.glob("*/*/callgraph.json")):
            yield truth.parent.relative_to(snippets).as_posix(), truth.parent, truth
    elif suite == "jarviscg":
        evaluation = fetch("jarviscg") / "evaluation"
        programs = evaluation / "dataset" / "micro_benchmark"
        truths = evaluation / "ground_truth" / "micro_benchmark"
        for truth in sorted(truths.glob("*/*/callgraph.json")):
            name = truth.parent.relative_to(truths).as_posix()
            if (programs / name / "main.py").is_file():
                yield name, programs / name, truth
    else:
        evaluation = fetch("jarviscg") / "evaluation"
        for truth in sorted((evaluation / "ground_truth" / "macro_benchmark").glob("*/EA.json")):
            project = truth.parent.name
            yield f"macro/{project}", evaluation / "dataset/macro_benchmark/pj" / project, truth


def dotted(relpath: str) -> str:
    parts = relpath.removeprefix("src/").removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def lambda_names(program: Path, files: list[str]) -> dict[str, str]:
    """Our id of a lambda bound to a name (`mod.x`) -> PyCG's (`mod.<lambda1>`, numbered in
    source order within the enclosing function or module)."""
    out: dict[str, str] = {}

    def walk(node: ast.AST, scope: str, counter: list[int]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                walk(child, f"{scope}.{child.name}", [0])
                continue
            if isinstance(child, ast.Lambda):
                counter[0] += 1
                if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                    out[f"{scope}.{node.targets[0].id}"] = f"{scope}.<lambda{counter[0]}>"
            walk(child, scope, counter)

    for rel in files:
        try:
            tree = ast.parse((program / rel).read_bytes())
        except (SyntaxError, ValueError):
            continue
        walk(tree, dotted(rel), [0])
    return out


def ours(program: Path) -> tuple[Edges, set[str], set[str]]:
    """Our call edges in PyCG's notation, the program's module and class names."""
    with tempfile.TemporaryDirectory() as cache:
        index = Index(program, cache_dir=cache, workers=1)
        index.build()
    graph = index.graph
    files = graph.files()
    lambdas = lambda_names(program, files)
    classes = {e.id for rel in files for e in graph.file_entities(rel) if e.kind == "class"}

    def name(entity_id: str) -> str:
        rel, _, qual = entity_id.partition(":")
        full = f"{dotted(rel)}.{qual}" if qual else dotted(rel)
        return lambdas.get(full, full)

    edges = {(name(e.src), name(e.dst)) for e in graph.edges(CALLS) if e.dst not in classes}
    return edges, {dotted(rel) for rel in files}, {name(c) for c in classes}


def internal(edges: Edges, modules: set[str]) -> Edges:
    def inside(name: str) -> bool:
        head = name
        while head:
            if head in modules:
                return True
            head = head.rpartition(".")[0]
        return False

    return {(a, b) for a, b in edges if inside(a) and inside(b)}


def expected(truth: Path) -> Edges:
    graph = json.loads(truth.read_text())
    return {(src, dst) for src, dsts in graph.items() for dst in dsts}


def score(t: Counter) -> tuple[float, float]:
    prec = t["tp"] / (t["tp"] + t["fp"]) if t["tp"] + t["fp"] else 1.0
    rec = t["tp"] / (t["tp"] + t["fn"]) if t["tp"] + t["fn"] else 1.0
    return prec, rec


def run(suite: str, category: str | None, diff: bool) -> None:
    tally: dict[str, Counter] = {}
    for name, program, truth in cases(suite):
        group = name.split("/")[0] if suite != "macro" else name.split("/")[1]
        if category and group != category:
            continue
        got, modules, classes = ours(program)
        want = internal(expected(truth), modules)
        got = internal(got, modules)
        if suite == "macro":
            # The hand-made graphs cover the package (no tests, no setup.py) and count
            # running a module's or a class's body as a call of it: compare the rest.
            known = {a for a, _ in want} | {b for _, b in want}
            want = {(a, b) for a, b in want if b not in modules and b not in classes}
            got = {(a, b) for a, b in got if a in known}
        t = tally.setdefault(group, Counter())
        t["programs"] += 1
        t["tp"] += len(got & want)
        t["fp"] += len(got - want)
        t["fn"] += len(want - got)
        t["exact"] += got == want
        if diff and got != want:
            print(f"{name}:")
            for a, b in sorted(want - got):
                print(f"  missed {a} -> {b}")
            for a, b in sorted(got - want):
                print(f"  extra  {a} -> {b}")
    total = sum(tally.values(), Counter())
    print(f"\n{suite}")
    print("| category | programs | exact | edges expected | found | precision | recall |")
    print("|---|---|---|---|---|---|---|")
    for group, t in [*sorted(tally.items()), ("all", total)]:
        prec, rec = score(t)
        want, found = t["tp"] + t["fn"], t["tp"] + t["fp"]
        print(
            f"| {group} | {t['programs']} | {t['exact']} | {want} | {found} "
            f"| {prec:.1%} | {rec:.1%} |"
        )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--suite", choices=("pycg", "jarviscg", "macro"), action="append")
    p.add_argument("--category", help="only this category (or macro project)")
    p.add_argument("--diff", action="store_true", help="print each program's missed/extra edges")
    args = p.parse_args()
    for suite in args.suite or ("pycg", "jarviscg", "macro"):
        run(suite, args.category, args.diff)


if __name__ == "__main__":
    main()
