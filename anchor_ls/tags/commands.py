"""The `tag`, `strip` and `check` subcommands: argparse namespaces in, printed report, exit code.

Exit codes: 0 done (check: up to date), 1 problems found (check: only stale or damaged
blocks), 2 a refused run (bad output folder, bad policy or cap, missing path) or, for
check, a file it could not read, or not read as tagged text (an I/O error, an encoding
like utf-7: that says nothing about the tags).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from anchor_ls.console import progress
from anchor_ls.index import Index
from anchor_ls.index.repository import Progress
from anchor_ls.tags.apply import (
    IndexLike,
    Report,
    Reuse,
    TagError,
    check_tree,
    export_snapshot,
    policy_for,
    strip_tree,
    tag_tree_in_place,
)
from anchor_ls.tags.policy import DEFAULT_MAX_ITEMS, PolicyError, ResolvedPolicy

# Index problems that mean a Python file could not be read at all (check cannot vouch for it)
UNREAD_KINDS = frozenset({"unreadable", "vanished", "symlink-loop"})


def _fail(message: str) -> int:
    print(f"anchor-ls: {message}", file=sys.stderr)
    return 2


def _print(report: Report, quiet: bool) -> int:
    """The report's lines on stdout; its notes left out when quiet."""
    notes = set(report.notes) if quiet else set()
    for line in report.lines():
        if line not in notes:
            print(line)
    return report.exit_code


def _policy(args: argparse.Namespace, index: Index) -> ResolvedPolicy:
    return policy_for(
        index.graph,
        getattr(args, "policy", "auto"),
        args.max_items,
        cross_file=bool(getattr(args, "cross_file", False)),
        tests=bool(getattr(args, "tests", False)),
        maybe=bool(getattr(args, "maybe", False)),
    )


def export(
    index: IndexLike,
    out: str | Path,
    *,
    policy: str = "auto",
    max_items: int = DEFAULT_MAX_ITEMS,
    cross_file: bool = False,
    tests: bool = False,
    maybe: bool = False,
    force: bool = False,
    include_git: bool = False,
    progress: Progress | None = None,
    reuse: Reuse | None = None,
) -> Report:
    """`tag --out`: the tagged snapshot of the indexed tree in out (batch writes each of its
    snapshots through here, so they are byte for byte what `tag --out` writes; reuse: see
    apply.Reuse)."""
    resolved = policy_for(
        index.graph, policy, max_items, cross_file=cross_file, tests=tests, maybe=maybe
    )
    return export_snapshot(
        index,
        out,
        resolved,
        force=force,
        include_git=include_git,
        progress=progress,
        reuse=reuse,
    )


def tag(args: argparse.Namespace, index: Index) -> int:
    try:
        with progress("tagging", quiet=args.quiet) as step:
            if args.in_place:
                report = tag_tree_in_place(index, _policy(args, index), progress=step)
            else:
                report = export(
                    index,
                    args.out,
                    policy=getattr(args, "policy", "auto"),
                    max_items=args.max_items,
                    cross_file=bool(getattr(args, "cross_file", False)),
                    tests=bool(getattr(args, "tests", False)),
                    maybe=bool(getattr(args, "maybe", False)),
                    force=args.force,
                    include_git=args.include_git,
                    progress=step,
                )
    except (PolicyError, TagError) as err:
        return _fail(str(err))
    return _print(report, args.quiet)


def strip(args: argparse.Namespace) -> int:
    path = Path(args.path)
    if not path.exists() and not path.is_symlink():
        return _fail(f"no such file or folder: {args.path}")
    with progress("stripping", quiet=args.quiet) as step:
        report = strip_tree(path, progress=step)
    return _print(report, args.quiet)


def check(args: argparse.Namespace, index: Index) -> int:
    try:
        policy = _policy(args, index)
    except PolicyError as err:
        return _fail(str(err))
    with progress("checking", quiet=args.quiet) as step:
        report = check_tree(index, policy, require=args.require, progress=step)
    for problem in sorted(index.problems.values(), key=lambda p: p.path):
        if problem.kind in UNREAD_KINDS:  # said here too: the summary alone read "0 stale"
            report.problem(problem.path, 0, f"not read ({problem.kind}); its tags are not checked")
            report.unread.append(problem.path)
    return _print(report, args.quiet)
