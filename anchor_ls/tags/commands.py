"""The `tag`, `strip` and `check` subcommands: argparse namespaces in, printed report, exit code.

Exit codes: 0 done (check: up to date), 1 problems found (check: stale or malformed
blocks), 2 a refused run (bad output folder, bad policy or cap, missing path).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from anchor_ls.tags.apply import (
    IndexLike,
    Report,
    TagError,
    check_tree,
    export_snapshot,
    policy_for,
    strip_tree,
    tag_tree_in_place,
)
from anchor_ls.tags.policy import PolicyError, ResolvedPolicy


def _fail(message: str) -> int:
    print(f"anchor-ls: {message}", file=sys.stderr)
    return 2


def _print(report: Report) -> int:
    for line in report.lines():
        print(line)
    return report.exit_code


def _policy(args: argparse.Namespace, index: IndexLike) -> ResolvedPolicy:
    return policy_for(
        index.graph,
        getattr(args, "policy", "auto"),
        args.max_items,
        cross_file=bool(getattr(args, "cross_file", False)),
        tests=bool(getattr(args, "tests", False)),
        maybe=bool(getattr(args, "maybe", False)),
    )


def tag(args: argparse.Namespace, index: IndexLike) -> int:
    try:
        policy = _policy(args, index)
        if args.in_place:
            return _print(tag_tree_in_place(index, policy))
        return _print(
            export_snapshot(index, args.out, policy, force=args.force, include_git=args.include_git)
        )
    except (PolicyError, TagError) as err:
        return _fail(str(err))


def strip(args: argparse.Namespace) -> int:
    path = Path(args.path)
    if not path.exists() and not path.is_symlink():
        return _fail(f"{args.path}: no such file or folder")
    return _print(strip_tree(path))


def check(args: argparse.Namespace, index: IndexLike) -> int:
    try:
        policy = _policy(args, index)
    except PolicyError as err:
        return _fail(str(err))
    return _print(check_tree(index, policy, require=args.require))
