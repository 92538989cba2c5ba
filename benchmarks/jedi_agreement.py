"""How often the binder's call edges agree with jedi on real code: precision and recall in the wild.

    pip install -e '.[env]'  # jedi
    python benchmarks/jedi_agreement.py [--only NAME] [--sites N] [--budget SECONDS] [--examples K]

Per corpus: a seeded sample of call sites whose called name is the name of some repository
function, method or class. At each, jedi `goto` (then `infer` where goto stops on a variable
or a stub), mapped to entity ids by (file, def line), against the binder's call edges at that
span. jedi sees the corpus and the standard library only (site-packages holds a newer pytest),
so the corpus's imports land in the corpus. Sites are asked file by file in a seeded file
order until the per-corpus time budget runs out.
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
import traceback
import warnings
from collections import Counter, defaultdict
from pathlib import Path

import jedi

from anchor_ls.index.facts import scope_ids
from anchor_ls.index.repository import Index
from anchor_ls.syntax.summary import scope_bodies

DATA = Path(__file__).resolve().parent / ".data"
STDLIB = sysconfig.get_paths()["stdlib"]
# The brief's five plus what they import from each other (asyncio: concurrent; http: urllib).
STD_PACKAGES = ("json", "email", "logging", "asyncio", "http", "concurrent", "urllib")
SDISTS = {"Django-5.1.4": "django==5.1.4", "pytest-8.3.4": "pytest==8.3.4"}
CTORS = ("__init__", "__new__")  # jedi's goto on `C(...)` gives C only
KINDS = ("agree", "binder-only", "jedi-only", "wider", "differ", "both-empty")
TABLE_NOTE = """found: sites where it names a repository target. wider: the binder's set holds
jedi's and more; differ: other mismatches. precision = |binder & jedi| / |binder|, recall =
|binder & jedi| / |jedi|, summed over sites where both found something; 'overrides ok' leaves
out binder targets named like a jedi target (overrides reached through self). jedi by: goto;
infer after goto stopped on a variable; infer after goto gave a stub; goto left the corpus."""


def corpus_root(name: str, tmp: Path) -> tuple[Path, Path]:
    """(root to index, folder jedi imports from)."""
    if name == "stdlib":
        for pkg in STD_PACKAGES:
            shutil.copytree(Path(STDLIB, pkg), tmp / "std" / pkg)
        return tmp / "std", tmp / "std"
    if name == "pytest":
        return DATA / "pytest-8.3.4" / "src", DATA / "pytest-8.3.4" / "src"
    return DATA / "Django-5.1.4" / "django", DATA / "Django-5.1.4"


def fetch() -> None:
    """pip download the sdists that are missing and unpack them."""
    for name, spec in SDISTS.items():
        if not (DATA / name).is_dir():
            if not (DATA / f"{name}.tar.gz").is_file():
                cmd = [sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps"]
                subprocess.run([*cmd, spec, "-d", str(DATA)], check=True)
            with tarfile.open(DATA / f"{name}.tar.gz") as tar:
                tar.extractall(DATA, filter="data")


def called_name(func: tuple) -> str | None:
    return func[1] if func[0] == "n" else func[2] if func[0] == "a" else None


def last(ident: str) -> str:
    return ident.partition(":")[2].rpartition(".")[2]


class Corpus:
    """The index of one corpus plus the maps jedi's answers need."""

    def __init__(self, root: Path, import_root: Path) -> None:
        self.root = root.resolve()
        self.index = Index(root, use_cache=False)
        self.index.build()
        self.by_line: dict[tuple[str, int], str] = {}  # (relpath, def line) -> id
        self.scope_of: dict[str, tuple[str, int]] = {}  # id -> (relpath, last scope idx)
        for rel, summary in self.index.binder.summaries.items():
            for idx, ident in enumerate(scope_ids(summary)):
                if (scope := summary.scopes[idx]).kind in ("function", "class"):
                    self.by_line[(rel, scope.line)] = ident
                    self.scope_of[ident] = (rel, idx)
        self.names = {last(i) for i in self.scope_of}
        std = [p for p in sys.path if p.startswith(sys.base_prefix) and "site-packages" not in p]
        self.project = jedi.Project(root, sys_path=[str(import_root), *std], smart_sys_path=False)
        self.env = jedi.api.environment.InterpreterEnvironment()

    def sites(self) -> list[tuple[str, str, object]]:
        """Every call site worth asking about: (relpath, src id, CallSite)."""
        out = []
        for rel, summary in sorted(self.index.binder.summaries.items()):
            for (calls, _reads, _uses), src in zip(
                scope_bodies(summary), scope_ids(summary), strict=True
            ):
                out += [(rel, src, s) for s in calls if called_name(s.func) in self.names]
        return out

    def binder_targets(self, src: str, site: object) -> set[str]:
        """Call-edge targets at this span, minus constructors and implicit property getters."""
        graph, name, out = self.index.graph, called_name(site.func), set()
        method_kind = self.index.binder.method_kind
        for dst in graph.out("calls", src):
            where = self.scope_of.get(dst)
            getter = where and last(dst) != name and method_kind(*where) == "property"
            ctor = last(dst) in CTORS and name not in CTORS
            if site.span in graph.sites(src, dst) and not ctor and not getter:
                out.add(dst)
        return out

    def jedi_targets(self, script: jedi.Script, line: int, col: int) -> tuple[set[str], str]:
        """Repository entities jedi finds at (1-based line, col), and how it found them."""
        found, loose, stub, outside = set(), False, False, set()
        for name in script.goto(line, col, follow_imports=True):
            ident, is_stub = self.entity_of(name), str(name.module_path).endswith(".pyi")
            if ident:
                found.add(ident)
            elif name.type in ("statement", "param", "instance") or is_stub:
                loose, stub = True, stub or is_stub  # jedi bundles django-stubs
            elif name.module_path is None or not self.inside(name.module_path):
                outside.add(name.full_name or name.name)
        if found or not loose:
            return found, f"external {sorted(outside)[:2]}" if outside else "goto"
        for name in script.infer(line, col):
            ident = self.entity_of(name)
            if ident and name.type == "instance":  # calling an instance calls its __call__
                ident = ident + ".__call__" if ident + ".__call__" in self.scope_of else None
            if ident:
                found.add(ident)
        return found, "stub" if stub else "infer"

    def inside(self, path: Path) -> bool:
        return Path(path).resolve().is_relative_to(self.root)

    def entity_of(self, name: object) -> str | None:
        path = name.module_path
        if path is None or name.type not in ("function", "class", "instance"):
            return None
        rel = Path(path).resolve().relative_to(self.root).as_posix() if self.inside(path) else ""
        return self.by_line.get((rel, name.line))


def run(name: str, args: argparse.Namespace, tmp: Path) -> dict:
    root, import_root = corpus_root(name, tmp)
    t0 = time.perf_counter()
    corpus = Corpus(root, import_root)
    build_s, sites = time.perf_counter() - t0, corpus.sites()
    sample = random.Random(0).sample(sites, min(args.sites, len(sites)))
    by_file: dict[str, list] = defaultdict(list)
    for item in sample:
        by_file[item[0]].append(item)
    files = sorted(by_file)
    random.Random(0).shuffle(files)
    counts, examples = Counter(), defaultdict(list)
    inter = n_binder = n_jedi = over = 0
    jedi_s, jedi_cpu, deadline = 0.0, 0.0, time.perf_counter() + args.budget
    for rel in files:
        if time.perf_counter() > deadline:
            break
        code = (root / rel).read_bytes()
        lines, project = code.splitlines(), corpus.project
        script = jedi.Script(code, path=root / rel, project=project, environment=corpus.env)
        for _rel, src, site in sorted(by_file[rel], key=lambda s: s[2].pos):
            line0, col0 = site.span[2], site.span[3]
            col = len(lines[line0][:col0].decode("utf-8", "replace")) - 1  # bytes -> characters
            t1, c1 = time.perf_counter(), time.process_time()
            try:
                jt, how = corpus.jedi_targets(script, line0 + 1, col)
            except Exception as exc:  # a jedi crash: the site counts as jedi finding nothing
                jt, how = set(), f"crashed ({type(exc).__name__}: {exc})"
            jedi_s += time.perf_counter() - t1
            jedi_cpu += time.process_time() - c1
            counts[how.split(" ")[0]] += 1
            bt = corpus.binder_targets(src, site)
            kind = "both-empty" if not bt and not jt else "jedi-only" if not bt else "binder-only"
            if bt and jt:
                kind = "agree" if bt == jt else "wider" if bt > jt else "differ"
                inter, n_binder, n_jedi = inter + len(bt & jt), n_binder + len(bt), n_jedi + len(jt)
                # binder extras named like a jedi target: overrides reachable through `self`
                over += len({b for b in bt - jt if last(b) in {last(j) for j in jt}})
            counts[kind] += 1
            if kind not in ("agree", "both-empty") and len(examples[kind]) < args.examples:
                code_line = lines[line0].decode("utf-8", "replace").strip()[:90]
                examples[kind].append(
                    f"{rel}:{line0 + 1} [{site.kind}; jedi {how}] {code_line}\n"
                    f"      binder: {sorted(bt)}\n      jedi:   {sorted(jt)}"
                )
    done, nan = sum(counts[k] for k in KINDS), float("nan")
    row = {
        "files indexed": len(corpus.index.binder.summaries),
        "candidate sites": len(sites),
        "sites sampled": len(sample),
        "sites asked (budget)": done,
        "jedi found": sum(counts[k] for k in ("agree", "jedi-only", "wider", "differ")),
        "binder found": sum(counts[k] for k in ("agree", "binder-only", "wider", "differ")),
        **{k: counts[k] for k in KINDS},
        "precision vs jedi": f"{inter / n_binder if n_binder else nan:.3f}",
        "prec, overrides ok": f"{inter / (n_binder - over) if n_binder > over else nan:.3f}",
        "recall vs jedi": f"{inter / n_jedi if n_jedi else nan:.3f}",
        "ms per jedi call": f"{1000 * jedi_s / done if done else nan:.0f}",
        "cpu ms per jedi call": f"{1000 * jedi_cpu / done if done else nan:.0f}",
        "build s": f"{build_s:.1f}",
        **{f"jedi by {k}": counts[k] for k in ("goto", "infer", "stub", "external", "crashed")},
    }
    return {"name": name, "examples": examples, "row": row}


def show_examples(r: dict) -> None:
    for kind in (k for k in KINDS if r["examples"][k]):
        print(f"\n== {r['name']}: {kind} ==\n  " + "\n  ".join(r["examples"][kind]), flush=True)


def table(results: list[dict]) -> None:
    print(f"{'':>22}" + "".join(f"{r['name']:>10}" for r in results))
    for key in results[0]["row"] if results else ():
        print(f"{key:>22}" + "".join(f"{r['row'][key]:>10}" for r in results))
    print(TABLE_NOTE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("pytest", "django", "stdlib"), action="append")
    parser.add_argument("--sites", type=int, default=300, help="sampled call sites per corpus")
    parser.add_argument("--budget", type=float, default=150.0, help="jedi seconds per corpus")
    parser.add_argument("--examples", type=int, default=10, help="examples listed per kind")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", module=r"jedi\.")  # "Module X not importable" noise
    fetch()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.only or ("pytest", "django", "stdlib"):
            print(f"{name}: indexing and asking jedi...", flush=True)
            try:
                results.append(run(name, args, Path(tmp)))
                show_examples(results[-1])
            except Exception:  # a crash in one corpus (an index bug) must not lose the others
                traceback.print_exc()
    table(results)


if __name__ == "__main__":
    main()
