"""Score the call-graph engine against hand-written accuracy fixtures.

Each folder under fixtures/accuracy/ (and fixtures/example/) is a tiny repository with an
expected.json written by hand: the complete repository-internal "calls", "inherits" and
(optionally) "imports" edges, plus "allowed" edges that are right at run time but not required.
The engine's edges of a kind, minus the allowed ones, are compared with the expected set.

Run `python tests/support/accuracy.py [case ...]` for a precision/recall table; the exit
status is 0 only when every case is exactly right. tests/test_accuracy.py asserts the same facts.
"""

from __future__ import annotations

import ast
import json
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from anchor_ls.index.via import VIA_KINDS

ROOT = Path(__file__).resolve().parents[2]
ACCURACY_DIR = ROOT / "fixtures" / "accuracy"
EXAMPLE_DIR = ROOT / "fixtures" / "example"
EXAMPLE_NAME = "example"
DENSE_KINDS = ("references", "env_var", "const_ref", "config_usage", "io_dep", "test_ref")
# "via": how each call edge listed as [src, dst, via] was found; "unresolved": the lines of
# each entity's unresolved call sites ({id: [line, ...]}, complete when present).
EXTRA_KINDS = ("via", "unresolved")
SCORED_KINDS = ("calls", "inherits", "imports", *DENSE_KINDS, *EXTRA_KINDS)
_REQUIRED_KEYS = ("description", "calls", "inherits")
_KNOWN_KEYS = (*_REQUIRED_KEYS, "imports", *DENSE_KINDS, "allowed", "unresolved")
_CODE = frozenset({"module", "class", "function"})
_DEFINITIONS = frozenset({"class", "function"})
# Which definition kinds may stand at each end of an edge of a given kind.
_ENDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "calls": (_CODE, _DEFINITIONS),
    "inherits": (frozenset({"class"}), frozenset({"class"})),
    "imports": (frozenset({"module"}), frozenset({"module"})),
    "references": (_CODE, _DEFINITIONS),
    "env_var": (_CODE, frozenset()),
    "const_ref": (_CODE, frozenset({"constant"})),
    "config_usage": (_CODE, frozenset({"constant"})),
    "io_dep": (_CODE, frozenset()),
    "test_ref": (frozenset({"function"}), _DEFINITIONS),
}
# Targets that are names, not entities (DESIGN.md): env:NAME, io:KIND, setting:NAME.
_NAMED_TARGETS = {"env_var": "env:", "io_dep": "io:", "config_usage": "setting:"}
IO_KINDS = ("file", "network", "db", "subprocess")

Pair = tuple[str, str]


@dataclass(frozen=True)
class Expected:
    """One expected.json: required edges per scored kind, and the allowed (kind, src, dst)."""

    description: str
    edges: Mapping[str, frozenset[Pair]]
    allowed: frozenset[tuple[str, str, str]]

    def allowed_pairs(self, kind: str) -> frozenset[Pair]:
        return frozenset((s, d) for k, s, d in self.allowed if k == kind)


@dataclass
class CaseScore:
    """Counts for one kind in one case (or summed over cases for the totals)."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    missing: list[Pair] = field(default_factory=list)
    extra: list[Pair] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def perfect(self) -> bool:
        return not self.missing and not self.extra

    def add(self, other: CaseScore) -> None:
        self.tp += other.tp
        self.fp += other.fp
        self.fn += other.fn


# ----- cases ---------------------------------------------------------------


def case_dirs() -> dict[str, Path]:
    """Every accuracy case by folder name, plus the example repository as `example`."""
    cases = {
        p.name: p
        for p in sorted(ACCURACY_DIR.iterdir())
        if p.is_dir() and (p / "expected.json").is_file()
    }
    if (EXAMPLE_DIR / "expected.json").is_file():
        cases[EXAMPLE_NAME] = EXAMPLE_DIR
    return cases


def _pairs(raw: object, where: str, vias: dict[Pair, str] | None = None) -> frozenset[Pair]:
    """[src, dst] pairs; with vias (calls), [src, dst, via] too, its via put in vias."""
    if not isinstance(raw, list):
        raise ValueError(f"{where}: expected a list of [src, dst] pairs")
    out: set[Pair] = set()
    for item in raw:
        sizes = (2, 3) if vias is not None else (2,)
        if not (
            isinstance(item, list) and len(item) in sizes and all(isinstance(x, str) for x in item)
        ):
            raise ValueError(f"{where}: {item!r} is not a [src, dst] pair of strings")
        pair = (item[0], item[1])
        if len(item) == 3 and vias is not None:
            if item[2] not in VIA_KINDS:
                raise ValueError(f"{where}: {item!r}: {item[2]!r} is not one of {VIA_KINDS}")
            vias[pair] = item[2]
        if pair in out:
            raise ValueError(f"{where}: {list(pair)} is listed twice")
        out.add(pair)
    return frozenset(out)


def load_case(path: str | Path) -> Expected:
    """Read and structurally check <case>/expected.json (or the file itself)."""
    path = Path(path)
    file = path / "expected.json" if path.is_dir() else path
    data = json.loads(file.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{file}: the top level must be an object")
    unknown = sorted(set(data) - set(_KNOWN_KEYS))
    absent = [k for k in _REQUIRED_KEYS if k not in data]
    if unknown or absent:
        raise ValueError(f"{file}: unknown keys {unknown}, missing keys {absent}")
    if not isinstance(data["description"], str) or not data["description"].strip():
        raise ValueError(f"{file}: description must be a non-empty string")
    vias: dict[Pair, str] = {}
    edges = {
        k: _pairs(data[k], f"{file}:{k}", vias if k == "calls" else None)
        for k in SCORED_KINDS
        if k in data and k not in EXTRA_KINDS
    }
    if vias:
        edges["via"] = frozenset((f"{s} -> {d}", via) for (s, d), via in vias.items())
    if "unresolved" in data:
        raw = data["unresolved"]
        if not isinstance(raw, dict) or not all(
            isinstance(v, list) and all(isinstance(n, int) for n in v) for v in raw.values()
        ):
            raise ValueError(f"{file}:unresolved: expected {{id: [line, ...]}}")
        edges["unresolved"] = frozenset((k, str(n)) for k, v in raw.items() for n in v)
    allowed: set[tuple[str, str, str]] = set()
    for item in data.get("allowed", []):
        if not (
            isinstance(item, list)
            and len(item) == 3
            and all(isinstance(x, str) for x in item)
            and item[0] in SCORED_KINDS
        ):
            raise ValueError(f"{file}:allowed: {item!r} is not a [kind, src, dst] triple")
        triple = (item[0], item[1], item[2])
        if triple in allowed:
            raise ValueError(f"{file}:allowed: {item} is listed twice")
        allowed.add(triple)
    return Expected(data["description"], edges, frozenset(allowed))


# ----- well-formedness, from the fixture sources alone ---------------------


def _walk(stmts: Iterable[ast.stmt], rel: str, prefix: str, out: dict[str, str]) -> None:
    for node in stmts:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            qual = prefix + node.name
            out[f"{rel}:{qual}"] = "class" if isinstance(node, ast.ClassDef) else "function"
            _walk(node.body, rel, qual + ".", out)
            continue
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if not isinstance(target, ast.Name):
                    continue
                if isinstance(node.value, ast.Lambda):
                    out[f"{rel}:{prefix}{target.id}"] = "function"
                elif not prefix and _is_constant(target.id):
                    out[f"{rel}:{target.id}"] = "constant"
            continue
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if isinstance(block, list):
                _walk(block, rel, prefix, out)
        for handler in getattr(node, "handlers", []):
            _walk(handler.body, rel, prefix, out)
        for case in getattr(node, "cases", []):
            _walk(case.body, rel, prefix, out)


def _is_constant(name: str) -> bool:
    """PEP 8's module constants: UPPER_CASE, more than one letter, not a dunder."""
    return len(name) > 1 and name.isupper() and not name.startswith("__")


def defined_ids(case_dir: str | Path) -> dict[str, str]:
    """Entity id -> 'module' | 'class' | 'function' | 'constant' for every definition."""
    case_dir = Path(case_dir)
    out: dict[str, str] = {}
    for path in sorted(case_dir.rglob("*.py")):
        rel = path.relative_to(case_dir).as_posix()
        if any(part.startswith(".") or part == "__pycache__" for part in rel.split("/")):
            continue
        out[rel] = "module"
        tree = ast.parse(path.read_bytes(), filename=str(path))
        _walk(tree.body, rel, "", out)
    return out


def check_expected(case_dir: str | Path) -> list[str]:
    """Problems with a case's expected.json: unknown ids, wrong entity kinds, overlaps."""
    case_dir = Path(case_dir)
    try:
        expected = load_case(case_dir)
    except (ValueError, json.JSONDecodeError) as exc:
        return [str(exc)]
    ids = defined_ids(case_dir)
    problems: list[str] = []

    def check(kind: str, src: str, dst: str, where: str) -> None:
        src_kinds, dst_kinds = _ENDS[kind]
        ends = [("src", src, src_kinds)]
        named = _NAMED_TARGETS.get(kind)
        if named and dst.startswith(named):
            name = dst.removeprefix(named)
            if not name or (kind == "io_dep" and name not in IO_KINDS):
                problems.append(f"{where} {kind} {src} -> {dst}: not a valid target")
        else:
            ends.append(("dst", dst, dst_kinds))
        for end, ident, kinds in ends:
            found = ids.get(ident)
            if found is None:
                problems.append(f"{where} {kind} {src} -> {dst}: {end} {ident} is not defined")
            elif found not in kinds:
                problems.append(f"{where} {kind} {src} -> {dst}: {end} {ident} is a {found}")

    for kind, pairs in expected.edges.items():
        if kind in EXTRA_KINDS:
            continue
        for src, dst in sorted(pairs):
            check(kind, src, dst, "required")
    for ident, _line in sorted(expected.edges.get("unresolved", ())):
        if ident not in ids:
            problems.append(f"unresolved: {ident} is not defined")
    for kind, src, dst in sorted(expected.allowed):
        check(kind, src, dst, "allowed")
        if (src, dst) in expected.edges.get(kind, frozenset()):
            problems.append(f"allowed {kind} {src} -> {dst} is also required")
        if kind not in expected.edges:
            problems.append(f"allowed {kind} {src} -> {dst}: the case does not score {kind}")
    return problems


# ----- scoring ---------------------------------------------------------------


def score_edges(expected: Expected, edges: Iterable[tuple[str, str, str]]) -> dict[str, CaseScore]:
    """Compare (kind, src, dst) edges with the expectation, for the kinds the case scores."""
    found: dict[str, set[Pair]] = {kind: set() for kind in expected.edges}
    for kind, src, dst in edges:
        if kind in found:
            found[kind].add((src, dst))
    if "via" in found:  # scored for the edges that name their via only
        named = {edge for edge, _via in expected.edges["via"]}
        found["via"] = {(edge, via) for edge, via in found["via"] if edge in named}
    scores: dict[str, CaseScore] = {}
    for kind, want in expected.edges.items():
        got = found[kind] - expected.allowed_pairs(kind)
        missing = sorted(want - got)
        extra = sorted(got - want)
        scores[kind] = CaseScore(len(want & got), len(extra), len(missing), missing, extra)
    return scores


def engine_edges(case_dir: str | Path) -> set[tuple[str, str, str]]:
    """Build the engine's index of one case (no cache) and return its repository-internal
    edges (those into libraries are scored by tests/test_index_libraries.py), plus
    ("via", "src -> dst", via) for each call edge and ("unresolved", id, line) for each
    unresolved call site."""
    from anchor_ls.index import Index

    idx = Index(case_dir, use_cache=False)
    idx.build()
    graph = idx.graph
    out = {(e.kind, e.src, e.dst) for e in graph.edges() if not e.dst.startswith("ext:")}
    for _kind, src, dst in graph.edges("calls"):
        if not dst.startswith("ext:"):
            out.add(("via", f"{src} -> {dst}", graph.via(src, dst) or ""))
    for rel in graph.files():
        out |= {("unresolved", s, str(span[0] + 1)) for s, _n, span in graph.file_missed(rel)}
    return out


def score(case_dir: str | Path) -> dict[str, CaseScore]:
    """Score the engine on one case: kind -> CaseScore."""
    return score_edges(load_case(case_dir), engine_edges(case_dir))


def totals(results: Mapping[str, Mapping[str, CaseScore]]) -> dict[str, CaseScore]:
    """Micro-averaged counts per kind over the cases that score that kind."""
    out = {kind: CaseScore() for kind in SCORED_KINDS}
    for per_kind in results.values():
        for kind, case_score in per_kind.items():
            out[kind].add(case_score)
    return out


def format_table(
    results: Mapping[str, Mapping[str, CaseScore]], errors: Mapping[str, str] | None = None
) -> str:
    errors = errors or {}
    names = sorted({*results, *errors})
    width = max([len("TOTAL (micro)"), *map(len, names)])
    head = f"{'case':<{width}}" + "".join(f"  {k + ' P':>10}  {k + ' R':>10}" for k in SCORED_KINDS)
    lines = [head, "-" * len(head)]

    def cells(per_kind: Mapping[str, CaseScore]) -> str:
        row = ""
        for kind in SCORED_KINDS:
            if kind in per_kind:
                row += f"  {per_kind[kind].precision:>10.3f}  {per_kind[kind].recall:>10.3f}"
            else:
                row += f"  {'-':>10}  {'-':>10}"
        return row

    for name in names:
        if name in errors:
            lines.append(f"{name:<{width}}  error: {errors[name]}")
        else:
            lines.append(f"{name:<{width}}" + cells(results[name]))
    lines.append("-" * len(head))
    total = totals(results)
    lines.append(f"{'TOTAL (micro)':<{width}}" + cells(total))
    counts = ", ".join(f"{k}: tp={t.tp} fp={t.fp} fn={t.fn}" for k, t in total.items())
    lines.append(f"{len(results)} cases scored, {len(errors)} failed to index; {counts}")
    details: list[str] = []
    for name in names:
        for kind, case_score in results.get(name, {}).items():
            details += [f"  {name}: missing {kind} {s} -> {d}" for s, d in case_score.missing]
            details += [f"  {name}: extra   {kind} {s} -> {d}" for s, d in case_score.extra]
    if details:
        lines += ["", "Differences (missing: expected but not found; extra: found, not expected):"]
        lines += details
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    cases = case_dirs()
    unknown = [name for name in argv if name not in cases]
    if unknown:
        print(f"unknown case(s): {', '.join(unknown)}; known: {', '.join(cases)}", file=sys.stderr)
        return 2
    results: dict[str, dict[str, CaseScore]] = {}
    errors: dict[str, str] = {}
    for name in argv or list(cases):
        try:
            results[name] = score(cases[name])
        except Exception as exc:  # report every case, even when the engine fails on one
            errors[name] = f"{type(exc).__name__}: {exc}"
    print(format_table(results, errors))
    perfect = all(s.perfect for per_kind in results.values() for s in per_kind.values())
    return 0 if perfect and not errors else 1


if __name__ == "__main__":
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
