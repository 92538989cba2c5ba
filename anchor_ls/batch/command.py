"""The `batch` subcommand: a manifest in, DIR/<id>/ snapshots and DIR/results.jsonl out.

Exit codes: 0 every task ok (or already done), 1 some failed (see results.jsonl),
2 a refused run (unreadable manifest, bad options, another run on DIR, no Ray),
130 interrupted (run the same command again to go on).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

from anchor_ls.batch import plan
from anchor_ls.batch.chain import Settings
from anchor_ls.batch.manifest import ManifestError, read_manifest
from anchor_ls.batch.progress import Progress
from anchor_ls.batch.results import RESULTS, Busy, Results, held, shown, stale

SHOWN_REJECTED = 20  # bad manifest lines printed (results.jsonl has every one)


def _fail(message: str) -> int:
    print(f"anchor-ls: {message}", file=sys.stderr)
    return 2


_MANIFEST_SUFFIXES = (".jsonl", ".json")
_RAY_WORDS = ("auto", "local")  # addresses Ray itself knows, never a manifest


def _looks_like_manifest(value: str) -> bool:
    if value in _RAY_WORDS:
        return False
    return value.lower().endswith(_MANIFEST_SUFFIXES) or os.path.isfile(value)


def _manifest_and_ray(args: argparse.Namespace) -> str | None:
    """Sort out `--ray VALUE` (its value optional): `batch --ray m.jsonl --out DIR` gave
    m.jsonl to --ray as an address and left no manifest. A value that is a file or ends in
    .jsonl (.json) with no manifest besides is the manifest, on a local Ray; an address
    with no manifest, or a manifest-like value beside a manifest, is a refused run that
    says how to write it. Returns the problem, or None (args set right)."""
    ray = args.ray
    if args.manifest is None:
        if ray and _looks_like_manifest(ray):
            args.manifest, args.ray = ray, ""
            return None
        if ray:
            return (
                f"no manifest given (--ray took {ray!r} as the Ray address): write "
                "`batch MANIFEST --out DIR --ray=ADDRESS`"
            )
        return "no manifest given: `batch MANIFEST --out DIR`"
    if ray and _looks_like_manifest(ray):
        return (
            f"--ray {ray!r} names a manifest, not a Ray address, and the manifest is "
            f"{args.manifest!r}: give one manifest, and --ray alone for a local Ray or "
            "--ray=ADDRESS for a cluster"
        )
    return None


SHOWN_UNCHECKED = 5  # ids named in the line about snapshots kept unchecked


def _unchecked(out: Path, ids: list[str]) -> str:
    """The one line a run says about the snapshots it keeps without knowing what they
    were made with (their ok lines, of an older anchor-ls, do not record it)."""
    named = ", ".join(ids[:SHOWN_UNCHECKED]) + (", ..." if len(ids) > SHOWN_UNCHECKED else "")
    what = "1 snapshot" if len(ids) == 1 else f"{len(ids)} snapshots"
    were = "was" if len(ids) == 1 else "were"
    return (
        f"anchor-ls: {what} in {out} ({named}) {were} made by an older anchor-ls, whose "
        "results.jsonl does not say with which policy, fields and options: kept unchecked "
        f"(delete {out / '<id>'} to make one again with what its line and this run ask)"
    )


def run(args: argparse.Namespace) -> int:
    problem = _manifest_and_ray(args)
    if problem:
        return _fail(problem)
    workers = args.workers or os.cpu_count() or 1
    if workers < 1:
        return _fail("--workers must be at least 1")
    if args.timeout is not None and args.timeout <= 0:
        return _fail("--timeout must be a positive number of seconds")
    if args.chain_size is not None and args.chain_size < 1:
        return _fail("--chain-size must be at least 1")
    if args.python is not None and not args.python.strip():
        return _fail("--python must be the path of an interpreter")
    try:
        tasks, rejected = read_manifest(args.manifest)
    except ManifestError as err:
        return _fail(str(err))
    if args.python is not None:  # a line's own "python" wins
        default = os.path.abspath(args.python)
        tasks = [t if t.python else dataclasses.replace(t, python=default) for t in tasks]
    out = Path(os.path.abspath(args.out))
    if out.exists() and not out.is_dir():
        return _fail(f"output {out} exists and is not a folder")
    try:
        results = Results(out)
    except Busy as err:
        return _fail(str(err))
    except OSError as err:
        return _fail(f"output {out}: {err.strerror or err}")
    settings = Settings(
        out=str(out),
        graph=args.graph,
        timeout=args.timeout,
        cache=os.path.abspath(args.cache) if args.cache else None,
        work=os.path.abspath(args.work) if args.work else None,
        exclude=tuple(args.exclude or ()),
        incremental=args.incremental,
    )
    start = time.monotonic()
    redo: dict[str, tuple[dict, str]] = {}
    try:
        for n, bad in enumerate(rejected):
            results.write({"id": bad.id, "line": bad.line, "status": "failed", "error": bad.error})
            # said here too: the progress counts only the tasks run, the summary all
            if n < SHOWN_REJECTED:
                print(f"anchor-ls: {bad.error}", file=sys.stderr)
        if len(rejected) > SHOWN_REJECTED:
            more = len(rejected) - SHOWN_REJECTED
            print(f"anchor-ls: ... and {more} more bad manifest lines", file=sys.stderr)
        there = [task for task in tasks if results.done(task.id)]
        # a DIR/<id> made from what the line or the run no longer asks (another commit, a
        # branch that moved on, another folder, another policy, --exclude, ...) is made
        # again, never kept silently; one whose ok line does not say is kept, said once
        unchecked: list[str] = []
        if there:
            redo, unchecked = stale(there, held(out), settings)
        if unchecked:
            print(_unchecked(out, unchecked), file=sys.stderr)
        kept_unchecked = set(unchecked)
        todo = []
        for task in tasks:
            if task.id in redo:
                made, why = redo[task.id]
                print(
                    f"anchor-ls: {task.id}: {out / task.id} holds {shown(made)}; {why}: "
                    "made again (the old snapshot stays until the new one is whole)",
                    file=sys.stderr,
                )
                todo.append(dataclasses.replace(task, replace=True))
            elif results.done(task.id):
                reason = "already done"
                if task.id in kept_unchecked:
                    reason += " (unchecked: its ok line does not say what it was made with)"
                results.write({"id": task.id, "status": "skipped", "reason": reason})
            else:
                todo.append(task)
        progress = Progress(len(todo))

        def deliver(result: dict) -> None:
            if result["id"] in redo:  # what DIR/<id> held before: replaced, or kept
                made = redo[result["id"]][0]
                result = {**result, "replaced" if result["status"] == "ok" else "kept": made}
            results.write(result)
            progress.update(result)

        try:
            if args.ray is not None:
                from anchor_ls.batch.onray import RayMissing, run_ray

                try:
                    run_ray(
                        todo,
                        settings,
                        args.ray or None,
                        deliver,
                        num_cpus=args.workers,
                        chain_size=args.chain_size,
                    )
                except RayMissing as err:
                    return _fail(str(err))
            else:
                from anchor_ls.batch.pool import run_pool

                chains = plan.chains(todo, workers, args.chain_size)
                run_pool(chains, settings, workers, deliver)
        finally:
            progress.close()
    except KeyboardInterrupt:
        counts = results.counts
        print(
            f"batch: interrupted after {counts['ok']} ok, {counts['failed']} failed; "
            "run the same command again to go on",
            file=sys.stderr,
        )
        return 130
    finally:
        results.close()
    counts = results.counts
    again = f"; {len(redo)} made again (their lines or options ask another snapshot)"
    again = again if redo else ""
    print(
        f"batch: {counts['ok']} ok, {counts['failed']} failed, {counts['skipped']} skipped "
        f"(already done) in {time.monotonic() - start:.1f} s{again}; results in {out / RESULTS}"
    )
    return 1 if counts["failed"] else 0
