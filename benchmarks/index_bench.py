"""Index speed on real corpora: ast.parse vs cold and warm builds, one-file re-index, memory.

    python benchmarks/index_bench.py [--only NAME] [--skip-download] [--stdlib-tests] [--workers N]
                                     [--repeat N]

Each measurement runs in a fresh subprocess (--child), so its peak memory is its own.
ast.parse and a cold build run in turn --repeat times (3): on a shared machine the speed of
a core drifts by a third from minute to minute, so one pair can land either side of a
target. Each pair is compared side by side; the table gives the median pair's ratio and
the range of all, the median seconds of each, and the warm start after the last cold build.
Targets (the issue): cold <= 5x ast.parse, warm <= 0.3x, re-index of one Django file < 50 ms,
peak memory on Django < 400 MB.

    python benchmarks/index_bench.py --libraries [--repeat N]

The library-aware index (issue #23) instead: cold builds of the djangorestframework sdist
and of the Django sdist without an environment and with a venv holding Django 5.1.4
(benchmarks/.data/django-5.1.4-env, made here), and of the Flask 3.1.0 sdist without and
with a venv holding Werkzeug 3.1.3 and Flask's other dependencies, pinned
(benchmarks/.data/flask-3.1.0-env), in turn --repeat times; then three warm starts of
each, in turn.
Targets: the library work costs at most 30% more cold time and nothing on a warm start;
the repository-internal graph is the same with and without the environment; DRF's
APIView inherits ext:django.views.generic.base.View and its dispatch overrides
View.dispatch; Flask's Request inherits Werkzeug's and its on_json_loading_failed
overrides Werkzeug's.
"""

import argparse
import ast
import cProfile
import json
import os
import pstats
import re
import resource
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
from pathlib import Path
from statistics import median

# the sdists and environments of the real-code tests (tests/support/sdists.py)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.sdists import DRF, FLASK, sdist_with_env

DATA = Path(__file__).resolve().parent / ".data"
SDISTS = {"Django-5.1.4": "django==5.1.4", "pytest-8.3.4": "pytest==8.3.4"}
# (relation, source, target) a corpus must have with its environment
FACTS = {
    "drf": [
        ("inherits", "rest_framework/views.py:APIView", "ext:django.views.generic.base.View"),
        (
            "overrides",
            "rest_framework/views.py:APIView.dispatch",
            "ext:django.views.generic.base.View.dispatch",
        ),
    ],
    "flask": [
        ("inherits", "src/flask/wrappers.py:Request", "ext:werkzeug.wrappers.request.Request"),
        (
            "overrides",
            "src/flask/wrappers.py:Request.on_json_loading_failed",
            "ext:werkzeug.wrappers.request.Request.on_json_loading_failed",
        ),
        ("calls", "src/flask/helpers.py:redirect", "ext:werkzeug.utils.redirect"),
    ],
}
RETURN_LINE = re.compile(rb"^([ \t]+)return\b", re.M)
NEW_DEF = b"\n\ndef _bench_edit_fn():\n    return 1\n"


def corpora(stdlib_tests: bool) -> dict[str, tuple[str, tuple[str, ...], str | None]]:
    """name -> (root, exclude, large file to re-index or None for the one with most defs)."""
    std_ex = ("site-packages", "site-packages/*") + (() if stdlib_tests else ("test", "test/*"))
    dj = str(DATA / "Django-5.1.4")
    return {
        "stdlib": (sysconfig.get_paths()["stdlib"], std_ex, None),
        "django": (dj, (), "django/db/models/query.py"),
        "django-pkg": (dj + "/django", (), "db/models/query.py"),
        "pytest": (str(DATA / "pytest-8.3.4"), (), None),
    }


def fetch() -> None:
    """pip download the sdists that are missing and unpack them."""
    missing = [n for n in SDISTS if not (DATA / n).is_dir()]
    if need := [SDISTS[n] for n in missing if not (DATA / f"{n}.tar.gz").is_file()]:
        cmd = [sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps"]
        subprocess.run([*cmd, *need, "-d", str(DATA)], check=True)
    for name in missing:
        with tarfile.open(DATA / f"{name}.tar.gz") as tar:
            tar.extractall(DATA, filter="data")


def fetch_libraries() -> None:
    """The DRF sdist with a venv holding Django, Flask's with one holding Werkzeug, when
    missing (made as the tests make them)."""
    for pair in (DRF, FLASK):
        found = sdist_with_env(pair)
        if isinstance(found, str):
            raise SystemExit(found)


def cpu() -> float:
    """CPU seconds of this process and its waited-for children (the parse workers)."""
    own, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def child_ast(job: dict) -> dict:
    """read bytes + ast.parse of the files the index walks (the table compares the counts)."""
    from anchor_ls.index.files import Skipped, python_files

    rels = [
        r for r in python_files(Path(job["root"]), job["exclude"]) if not isinstance(r, Skipped)
    ]
    lines = failed = 0
    t0, c0 = time.perf_counter(), cpu()
    for rel in rels:
        data = Path(job["root"], rel).read_bytes()
        lines += data.count(b"\n")
        try:
            ast.parse(data, rel)
        except (SyntaxError, ValueError, RecursionError):
            failed += 1
    secs, cpu_s = time.perf_counter() - t0, cpu() - c0
    return {"secs": secs, "cpu": cpu_s, "files": len(rels), "lines": lines, "failed": failed}


def edited(data: bytes) -> bytes:
    """A statement inserted in a function body, before the `return` nearest mid-file."""
    m = min(RETURN_LINE.finditer(data), key=lambda h: abs(h.start() - len(data) // 2), default=None)
    if m is None:
        return data + b"\n# bench edit\n"
    return data[: m.start()] + m.group(1) + b"_bench_edit = 1\n" + data[m.start() :]


def child_index(job: dict) -> dict:
    """A build (cold or warm per the cache folder); peak RSS of this process and its workers."""
    from anchor_ls.index import Environment, Index

    if job.get("xdg"):  # the user cache (library summaries, a named interpreter's path)
        os.environ["XDG_CACHE_HOME"] = job["xdg"]
    python = job.get("python", "default")  # "default": anchor-ls's own; "none": no libraries
    chosen = {"default": None, "none": Environment()}.get(python, python)
    t0, c0 = time.perf_counter(), cpu()
    index = Index(**{k: job[k] for k in ("root", "cache_dir", "exclude", "workers")}, python=chosen)
    made = time.perf_counter() - t0  # a named interpreter is asked for its sys.path here
    stats = index.build()
    out = {"secs": time.perf_counter() - t0, "cpu": cpu() - c0, "stats": stats.as_dict()}
    out["made"] = made
    if job.get("graph_out"):  # the repository-internal edges, and the external ones counted
        graph = index.graph
        edges = [(e.kind, e.src, e.dst) for e in graph.edges() if not e.dst.startswith("ext:")]
        Path(job["graph_out"]).write_text(json.dumps(edges), encoding="utf-8")
        out["external_edges"] = sum(1 for e in graph.edges() if e.dst.startswith("ext:"))
        out["external_entities"] = len(graph.external_targets())
        facts = FACTS.get(job.get("corpus", ""), [])
        out["facts"] = [f"{r} {s} -> {d}" for r, s, d in facts if d not in graph.out(r, s)]
    if job["mode"] == "warm":
        out["load"], out["first"], out["edits"] = reindex(index, job["big"])
    out["peak"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux
    out["worker_peak"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    index.close()
    return out


def timed(index: object, rel: str, text: bytes, original: bytes) -> float:
    """ms for update_file(rel, text); then the indexed text is put back, untimed."""
    t0 = time.perf_counter()
    index.update_file(rel, text)
    ms = (time.perf_counter() - t0) * 1000
    index.update_file(rel, original)
    return ms


def reindex(index: object, big: str | None) -> tuple[float, float, list]:
    """ms to load the resolver state a warm start defers (a server does it while idle), ms of
    the first edit after it, then 5 median-size files and one large file, a body edit and an
    appended def each: [(file, bytes, body ms, def ms)]. Each file's tree is kept first, as
    a server does for the files opened last once the editor is quiet (prepare_edits,
    untimed): its edits reparse from that tree."""
    srcs = {rel: data for rel in index.graph.files() if (data := index.source(rel))}
    picks = sorted(srcs, key=lambda r: len(srcs[r]))[max(0, len(srcs) // 2 - 2) :][:5]
    if big not in srcs:
        big = max(srcs, key=lambda r: srcs[r].count(b"\ndef ") + srcs[r].count(b"    def "))
    t0 = time.perf_counter()
    index.ensure_engine()
    load = (time.perf_counter() - t0) * 1000
    first = timed(index, picks[0], srcs[picks[0]] + b"\n# first edit\n", srcs[picks[0]])
    edits = []
    for rel in [*picks, big]:
        data = srcs[rel]
        index.prepare_edits(rel)
        body = timed(index, rel, edited(data), data)
        edits.append((rel, len(data), body, timed(index, rel, data + NEW_DEF, data)))
    return load, first, edits


def run_child(
    mode: str, root: str, exclude: tuple[str, ...], cache: str, args, big=None, **more
) -> dict:
    job = {"mode": mode, "root": root, "exclude": exclude, "cache_dir": cache, "big": big}
    job |= more
    cmd = [sys.executable, __file__, "--child", json.dumps(job | {"workers": args.workers})]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{mode} run failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(name: str, root: str, exclude: tuple[str, ...], big: str | None, args) -> dict:
    print(
        f"[{name}] {args.repeat} x (ast.parse, cold build), warm build + re-index ...",
        file=sys.stderr,
        flush=True,
    )
    if not Path(root).is_dir():
        raise RuntimeError(f"{root} is missing")
    pairs = []
    for turn in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="anchor-bench-") as cache:
            pair = (
                run_child("ast", root, exclude, "", args),
                run_child("cold", root, exclude, cache, args),
            )
            pairs.append(pair)
            if turn == args.repeat - 1:
                warm = run_child("warm", root, exclude, cache, args, big)
    asts, colds = [a for a, _ in pairs], [c for _, c in pairs]
    cold = middle(colds) | {"peak": max(c["peak"] for c in colds)}
    cold["worker_peak"] = max(c["worker_peak"] for c in colds)
    return {"ast": middle(asts), "cold": cold, "warm": warm, "pairs": pairs}


def middle(runs: list[dict]) -> dict:
    """The run of median wall time (the lower of the two middle ones for an even count)."""
    return sorted(runs, key=lambda r: r["secs"])[(len(runs) - 1) // 2]


def ratios(pairs: list[tuple[dict, dict]], key: str) -> list[float]:
    """cold / ast.parse of each pair, by wall time or cpu time, sorted."""
    return sorted(c[key] / a[key] for a, c in pairs)


HEADS = (
    "corpus | exclude | files | lines | ast.parse s (cpu), median | cold s (cpu), median"
    " | cold/ast (cpu), median pair [range] | warm s"
    " (cpu) | warm/ast (cpu) | deferred load ms | first edit ms | re-index median ms"
    " | re-index max ms | new-def re-index median / max ms | peak MB cold | peak MB warm"
    " | worker peak MB | call_sites"
    " | resolved_binder | external | unresolved | edges | problems"
)


def secs(run: dict, ast_run: dict | None = None) -> str:
    """Wall seconds (CPU seconds), or both as ratios to the ast.parse run."""
    if ast_run is None:
        return f"{run['secs']:.2f} ({run['cpu']:.2f})"
    return f"{run['secs'] / ast_run['secs']:.2f}x ({run['cpu'] / ast_run['cpu']:.2f}x)"


def paired(pairs: list[tuple[dict, dict]]) -> str:
    """The median pair's cold/ast ratio (cpu), and the range of all pairs by wall time."""
    wall, cpu_ratio = ratios(pairs, "secs"), ratios(pairs, "cpu")
    spread = f" [{wall[0]:.2f}-{wall[-1]:.2f}]" if len(wall) > 1 else ""
    return f"{median(wall):.2f}x ({median(cpu_ratio):.2f}x){spread}"


def report(rows: dict[str, dict]) -> None:
    print(f"| {HEADS} |\n|" + "---|" * len(HEADS.split(" | ")))
    for name, r in rows.items():
        a, c, w, s = r["ast"], r["cold"], r["warm"], r["cold"]["stats"]
        body, nd = [e[2] for e in w["edits"]], [e[3] for e in w["edits"]]
        cells = [
            f"{name} | {', '.join(r['exclude']) or '-'} | {s['files']} (ast {a['files']}, "
            f"{a['failed']} fail) | {a['lines']} | {secs(a)} | {secs(c)} | {paired(r['pairs'])}",
            f"{secs(w)}, {w['stats']['from_cache']} from cache | {secs(w, a)}",
            f"{w['load']:.0f} | {w['first']:.1f} | {median(body):.1f} | {max(body):.1f}",
            f"{median(nd):.1f} / {max(nd):.1f}",
            f"{c['peak']:.0f} | {w['peak']:.0f} | {c['worker_peak']:.0f}",
            f"{s['call_sites']} | {s['resolved_binder']} | {s['external']} | {s['unresolved']}",
            ", ".join(f"{k} {v}" for k, v in s["edges"].items()),
            ", ".join(f"{k} {v}" for k, v in s["problems"].items()) or "-",
        ]
        print("| " + " | ".join(cells) + " |")
    print("\n| corpus | target | measured (cpu ratio) | PASS/MISS by wall |\n|---|---|---|---|")
    for name, r in rows.items():
        a, c, w = r["ast"], r["cold"], r["warm"]
        checks = []
        wall, cpu_ratio = ratios(r["pairs"], "secs"), ratios(r["pairs"], "cpu")
        ok, cpu_ok = median(wall) <= 5, median(cpu_ratio) <= 5
        checks.append(("cold <= 5x ast.parse (median pair)", paired(r["pairs"]), ok, cpu_ok))
        ok, cpu_ok = w["secs"] <= 0.3 * a["secs"], w["cpu"] <= 0.3 * a["cpu"]
        checks.append(("warm <= 0.3x ast.parse (median one)", secs(w, a), ok, cpu_ok))
        if name.startswith("django"):
            worst, peak = max(max(e[2:]) for e in w["edits"]), max(c["peak"], w["peak"])
            shown = f"max {worst:.1f} ms, first edit after the deferred load {w['first']:.1f} ms"
            checks.append(("re-index 1 file < 50 ms", shown, max(worst, w["first"]) < 50, None))
            shown = f"{peak:.0f} MB (largest worker {c['worker_peak']:.0f} MB)"
            checks.append(("peak memory < 400 MB (main process)", shown, peak < 400, None))
        for label, shown, ok, cpu_ok in checks:
            note = "" if cpu_ok in (None, ok) else f" (by cpu: {'PASS' if cpu_ok else 'MISS'})"
            print(f"| {name} | {label} | {shown} | {'PASS' if ok else 'MISS'}{note} |")
    print("\nre-index detail (file, bytes, ms for a body edit / an appended def):")
    for name, r in rows.items():
        edits = r["warm"]["edits"]
        print(f"- {name}: " + "; ".join(f"{f} {n} {b:.1f}/{d:.1f}" for f, n, b, d in edits))
    git = ["git", "-C", str(DATA.parent.parent)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run([*git, "diff", "--quiet", "HEAD", "--", "anchor_ls/index"]).returncode
    tree = head.stdout.strip() + (" + uncommitted changes in anchor_ls/index" if dirty else "")
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\n{os.cpu_count()} cores, load average after the run {load}; commit {tree}")


WARM_TURNS = 3  # warm starts of each, in turn: one alone drifts by a tenth


def measure_libraries(args) -> None:
    """Per turn, cold builds: without an environment; with one and nothing in the user
    cache (the first repository ever: every library file read, the interpreter asked);
    with one and the user cache another repository filled (library summaries shared).
    Then warm starts of each, in turn (WARM_TURNS); the internal graphs compared; one
    table."""
    django_env = str(DATA / DRF.env / "bin" / "python")
    corpora_ = {  # name -> (root, the python of its environment)
        "drf": (str(DATA / DRF.folder), django_env),
        "django": (str(DATA / "Django-5.1.4"), django_env),
        "flask": (str(DATA / FLASK.folder), str(DATA / FLASK.env / "bin" / "python")),
    }
    rows = []
    for name, (root, python) in corpora_.items():
        if args.only and name != args.only:
            continue
        print(f"[{name}] {args.repeat} x 3 cold builds, warm of each", file=sys.stderr)
        turns: list[tuple[dict, dict, dict]] = []
        with tempfile.TemporaryDirectory(prefix="anchor-libs-") as tmp:
            for turn in range(args.repeat):
                user = {"none": f"{tmp}/xdg-none-{turn}", "env": f"{tmp}/xdg-env-{turn}"}
                none = run_child(
                    "cold", root, (), f"{tmp}/none-{turn}", args, python="none",
                    graph_out=f"{tmp}/none.json", xdg=user["none"],
                )  # fmt: skip
                first = run_child(
                    "cold", root, (), f"{tmp}/env-{turn}", args, python=python,
                    graph_out=f"{tmp}/env.json", xdg=user["env"], corpus=name,
                )  # fmt: skip
                shared = run_child(
                    "cold", root, (), f"{tmp}/shared-{turn}", args, python=python,
                    xdg=user["env"],
                )  # fmt: skip
                turns.append((none, first, shared))
            last = args.repeat - 1
            warm: dict[str, list[dict]] = {"none": [], "env": []}
            for _ in range(WARM_TURNS):  # in turn, as the cold builds: a core's speed drifts
                warm["none"].append(
                    run_child(
                        "cold", root, (), f"{tmp}/none-{last}", args, python="none",
                        xdg=f"{tmp}/xdg-none-{last}",
                    )
                )  # fmt: skip
                warm["env"].append(
                    run_child(
                        "cold", root, (), f"{tmp}/env-{last}", args, python=python,
                        xdg=f"{tmp}/xdg-env-{last}",
                    )
                )  # fmt: skip
            same = Path(f"{tmp}/none.json").read_text() == Path(f"{tmp}/env.json").read_text()
        rows.append((name, turns, warm, same))
    print(
        "| corpus | files | cold s without (cpu) | cold s with, nothing cached (cpu)"
        " | cold s with, library cache shared (cpu) | extra cold: nothing cached / shared,"
        " median turn [range] | warm s without | warm s with | external edges / entities"
        " | overrides without / with | unresolved without / with | internal graph identical"
        " | facts (relations written by hand) |"
    )
    print("|" + "---|" * 13)
    verdicts = []
    for name, turns, warm_runs, same in rows:
        warm = {k: middle(v) for k, v in warm_runs.items()}
        first = sorted(f["secs"] / n["secs"] - 1 for n, f, _s in turns)
        shared = sorted(s["secs"] / n["secs"] - 1 for n, _f, s in turns)
        n, f, sh = (middle([t[i] for t in turns]) for i in range(3))
        ns, fs = n["stats"], f["stats"]
        facts = "-" if name not in FACTS else ("; ".join(f["facts"]) or "all")
        facts = facts if facts in ("-", "all") else f"MISSING {facts}"

        def spread(xs: list[float]) -> str:
            return f"{median(xs):+.0%}" + (f" [{xs[0]:+.0%}..{xs[-1]:+.0%}]" if len(xs) > 1 else "")

        print(
            f"| {name} | {fs['files']} | {secs(n)} | {secs(f)} | {secs(sh)}"
            f" | {spread(first)} / {spread(shared)} | {secs(warm['none'])} | {secs(warm['env'])}"
            f" | {f['external_edges']} / {f['external_entities']}"
            f" | {ns['edges']['overrides']} / {fs['edges']['overrides']}"
            f" | {ns['unresolved']} / {fs['unresolved']} | {'yes' if same else 'NO'} | {facts} |"
        )
        # by CPU time (on a shared machine a second of wall time comes and goes), the
        # median of the pairs' differences
        pairs = zip(warm_runs["none"], warm_runs["env"], strict=True)
        costs = sorted(e["cpu"] - o["cpu"] for o, e in pairs)
        cost = median(costs)
        verdicts += [
            (name, "cold extra <= 30%, nothing cached", spread(first), median(first) <= 0.3),
            (
                name,
                "cold extra <= 30%, library cache shared",
                spread(shared),
                median(shared) <= 0.3,
            ),
            (
                name,
                "warm start costs nothing more (cpu, within 10% or 0.05 s)",
                f"{cost:+.2f} s cpu [{costs[0]:+.2f}..{costs[-1]:+.2f}]"
                f" ({secs(warm['env'])} vs {secs(warm['none'])})",
                cost <= max(0.05, 0.1 * warm["none"]["cpu"]),
            ),
            (name, "internal graph identical", str(same), same),
        ]
        if name in FACTS:
            verdicts.append((name, "the facts written by hand", facts, facts == "all"))
    print("\n| corpus | target | measured | PASS/MISS |\n|---|---|---|---|")
    for name, label, shown, ok in verdicts:
        print(f"| {name} | {label} | {shown} | {'PASS' if ok else 'MISS'} |")
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\n{os.cpu_count()} cores, load average after the run {load}")


def profile(name: str, args) -> None:
    """cProfile of one cold build (main process only: parse workers are forked)."""
    from anchor_ls.index import Index

    root, exclude, _ = corpora(args.stdlib_tests)[name]
    with tempfile.TemporaryDirectory(prefix="anchor-prof-") as cache, cProfile.Profile() as prof:
        Index(root, cache_dir=cache, exclude=exclude, workers=args.workers).build()
    stats = pstats.Stats(prof).sort_stats("tottime").print_stats(10)
    stats.sort_stats("cumulative").print_stats("index/repository.py", 8)  # the phases


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--only", help="one corpus: stdlib, django, django-pkg, pytest (drf, django, flask)"
    )
    p.add_argument("--skip-download", action="store_true", help="never run pip download")
    p.add_argument("--stdlib-tests", action="store_true", help="include the CPython test suite")
    p.add_argument("--workers", type=int, help="Index(workers=N); default: the Index default")
    p.add_argument("--repeat", type=int, default=3, help="ast.parse + cold build pairs (3)")
    p.add_argument("--profile", metavar="NAME", help="cProfile a cold build of one corpus")
    p.add_argument(
        "--libraries", action="store_true", help="the library-aware index: with and without"
    )
    p.add_argument("--child", type=json.loads, help=argparse.SUPPRESS)  # a job, as JSON
    args = p.parse_args()
    if job := args.child:  # one measurement, as JSON on stdout
        return print(json.dumps(child_ast(job) if job["mode"] == "ast" else child_index(job)))
    if not args.skip_download:
        fetch()
        if args.libraries:
            fetch_libraries()
    if args.libraries:
        return measure_libraries(args)
    if args.profile:
        return profile(args.profile, args)
    rows: dict[str, dict] = {}
    for name, (root, exclude, big) in corpora(args.stdlib_tests).items():
        if args.only and name != args.only:
            continue
        try:
            rows[name] = measure(name, root, exclude, big, args) | {"exclude": exclude}
        except RuntimeError as err:
            print(f"{name}: FAILED ({str(err).splitlines()[-1]})")
            print(f"[{name}] FAILED: {err}", file=sys.stderr)
    report(rows)


if __name__ == "__main__":
    main()
