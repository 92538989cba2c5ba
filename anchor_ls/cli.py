"""The command line, on the same layers as the server."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from anchor_ls import __version__
from anchor_ls.agent.queries import Queries, QueryError
from anchor_ls.index import DENSE_KINDS, STRUCTURAL_KINDS, Index


def _index_for(args: argparse.Namespace, path: str) -> Index:
    root = Path(path)
    if not root.is_dir():
        raise SystemExit(f"anchor-ls: {path}: not a folder")
    index = Index(root, cache_dir=args.cache, exclude=args.exclude or ())
    index.build()
    return index


def _print_problems(index: Index) -> None:
    for problem in sorted(index.problems.values(), key=lambda p: (p.path, p.kind)):
        print(
            f"anchor-ls: warning: {problem.path}: {problem.kind}: {problem.message}",
            file=sys.stderr,
        )


def cmd_index(args: argparse.Namespace) -> int:
    index = _index_for(args, args.path)
    _print_problems(index)
    stats = index.stats()
    policy = _policy_choice(stats.mean_out_degree, args.max_items)
    if args.json:
        data = stats.as_dict()
        data["policy"] = policy
        print(json.dumps(data, indent=2, sort_keys=True))
        return 0
    edges = ", ".join(f"{stats.edges.get(k, 0)} {k}" for k in STRUCTURAL_KINDS)
    dense = ", ".join(f"{stats.edges.get(k, 0)} {k}" for k in DENSE_KINDS)
    print(f"root: {index.root}")
    print(f"files: {stats.files} ({stats.reparsed} parsed, {stats.from_cache} from cache)")
    print(f"entities: {stats.entities}")
    print(f"edges: {edges}")
    print(f"dense facts: {dense}")
    share = stats.unresolved / stats.call_sites if stats.call_sites else 0.0
    print(
        f"call sites: {stats.call_sites} ({stats.resolved_binder} resolved, "
        f"{stats.external} outside the repository, {stats.unresolved} unresolved: {share:.1%})"
    )
    print(f"mean call out-degree: {stats.mean_out_degree:.2f}; hubs: {stats.hub_share:.1%}")
    print(f"tag policy (auto): {policy}")
    if stats.problems:
        print("problems: " + ", ".join(f"{n} {k}" for k, n in stats.problems.items()))
    return 0


def _policy_choice(mean_out_degree: float, max_items: int) -> str:
    try:
        from anchor_ls.tags.policy import resolve_policy
    except ImportError:
        return "topo" if mean_out_degree < 5 else "inv" if mean_out_degree > 8 else "topo-capped"
    resolved = resolve_policy("auto", mean_out_degree, max_items)
    return f"{resolved.name} (max {resolved.max_items} items; {resolved.reason})"


def cmd_graph(args: argparse.Namespace) -> int:
    index = _index_for(args, args.path)
    _print_problems(index)
    with index.graph.lock:
        data = index.graph.to_json()
    json.dump(data, sys.stdout, indent=1 if args.pretty else None, sort_keys=False)
    sys.stdout.write("\n")
    return 0


def _answer(args: argparse.Namespace, tool: str, ask: Callable[[Queries], dict]) -> int:
    """Answer one agent query (the MCP tool's object): JSON with --json, else text."""
    from anchor_ls.agent.render import as_text, error_text

    index = _index_for(args, args.path)
    try:
        answer = ask(Queries(index, max_items=args.max_items))
    except QueryError as err:
        if args.json:
            print(json.dumps(err.as_dict(), indent=2, ensure_ascii=False))
        else:
            print(f"anchor-ls: {error_text(err.as_dict())}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(answer, indent=2, ensure_ascii=False))
    else:
        print(as_text(tool, answer))
    return 0


def cmd_callers(args: argparse.Namespace) -> int:
    return _answer(
        args, "callers", lambda q: q.callers(args.target, args.depth, args.limit, args.maybe)
    )


def cmd_callees(args: argparse.Namespace) -> int:
    return _answer(args, "callees", lambda q: q.callees(args.target, args.depth, args.limit))


def cmd_find(args: argparse.Namespace) -> int:
    return _answer(args, "find_symbol", lambda q: q.find_symbol(args.query, args.kind, args.limit))


def cmd_impact(args: argparse.Namespace) -> int:
    return _answer(args, "impact", lambda q: q.impact(args.target, args.depth, args.limit))


def cmd_hierarchy(args: argparse.Namespace) -> int:
    return _answer(args, "hierarchy", lambda q: q.hierarchy(args.target))


def cmd_outline(args: argparse.Namespace) -> int:
    return _answer(args, "outline", lambda q: q.outline(args.file))


def cmd_related_tests(args: argparse.Namespace) -> int:
    return _answer(args, "related_tests", lambda q: q.related_tests(args.target))


def cmd_mcp(args: argparse.Namespace) -> int:
    from anchor_ls.agent.mcp_server import serve

    root = Path(args.path)
    if not root.is_dir():
        raise SystemExit(f"anchor-ls: {args.path}: not a folder")
    return serve(
        root, cache_dir=args.cache, exclude=tuple(args.exclude or ()), max_items=args.max_items
    )


def cmd_serve(args: argparse.Namespace) -> int:
    from anchor_ls.server.app import run

    tcp = None
    if args.tcp:
        host, _, port = args.tcp.rpartition(":")
        tcp = (host or "127.0.0.1", int(port))
    run(tcp)
    return 0


def cmd_tag(args: argparse.Namespace) -> int:
    from anchor_ls.tags import commands

    return commands.tag(args, _index_for(args, args.path))


def cmd_strip(args: argparse.Namespace) -> int:
    from anchor_ls.tags import commands

    return commands.strip(args)


def cmd_check(args: argparse.Namespace) -> int:
    from anchor_ls.tags import commands

    return commands.check(args, _index_for(args, args.path))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="anchor-ls",
        description="Who calls whom in a Python repository, as CodeAnchor tags.",
    )
    parser.add_argument("--version", action="version", version=f"anchor-ls {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def indexed(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--cache", metavar="DIR", help="cache folder (default: PATH/.anchor-ls)")
        p.add_argument("--exclude", action="append", metavar="GLOB", help="leave out matches")
        p.add_argument("--max-items", type=int, default=8, help="entries per tag field")
        return p

    p = sub.add_parser("serve", help="run the language server (stdio by default)")
    p.add_argument("--tcp", metavar="HOST:PORT")
    p.set_defaults(func=cmd_serve)

    p = indexed("index", "build or refresh the index; print statistics")
    p.add_argument("path", nargs="?", default=".")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_index)

    p = indexed("graph", "print the graph")
    p.add_argument("path", nargs="?", default=".")
    p.add_argument("--json", action="store_true", help="JSON (the only format)")
    p.add_argument("--pretty", action="store_true", help="indent the JSON")
    p.set_defaults(func=cmd_graph)

    def query(name: str, help_text: str, func: Callable[[argparse.Namespace], int]) -> Any:
        p = indexed(name, help_text)
        p.add_argument("--json", action="store_true", help="the MCP tool's JSON object")
        p.set_defaults(func=func)
        return p

    for name, func in (("callers", cmd_callers), ("callees", cmd_callees)):
        p = query(name, f"list the {name} of TARGET (an id or an id's suffix)", func)
        p.add_argument("target")
        p.add_argument("path", nargs="?", default=".")
        p.add_argument("--depth", type=int, default=1, help="levels to follow (default 1)")
        p.add_argument("--limit", type=int, default=50, help="entries shown (default 50)")
        if name == "callers":
            p.add_argument(
                "--maybe",
                action="store_true",
                help="also list the unresolved call sites that call TARGET's name",
            )

    p = query("find", "find definitions by id, qualified name or name", cmd_find)
    p.add_argument("query")
    p.add_argument("path", nargs="?", default=".")
    p.add_argument("--kind", choices=["module", "class", "function", "method", "constant"])
    p.add_argument("--limit", type=int, default=20, help="matches shown (default 20)")

    p = query("impact", "what can break if TARGET changes, and the tests that reach it", cmd_impact)
    p.add_argument("target")
    p.add_argument("path", nargs="?", default=".")
    p.add_argument("--depth", type=int, default=3, help="levels to follow (default 3)")
    p.add_argument("--limit", type=int, default=100, help="entries shown (default 100)")

    p = query("hierarchy", "a class's bases and subclasses; a method's overrides", cmd_hierarchy)
    p.add_argument("target")
    p.add_argument("path", nargs="?", default=".")

    p = query("outline", "every definition of FILE with its signature and tag fields", cmd_outline)
    p.add_argument("file", help="relative to PATH, or absolute inside it")
    p.add_argument("path", nargs="?", default=".")

    p = query("related-tests", "the tests that exercise TARGET", cmd_related_tests)
    p.add_argument("target")
    p.add_argument("path", nargs="?", default=".")

    p = indexed("mcp", "serve the queries to agents: an MCP server on stdio")
    p.add_argument("path", nargs="?", default=".")
    p.set_defaults(func=cmd_mcp)

    p = indexed("tag", "materialize CodeAnchor tags: a snapshot (--out) or in place")
    p.add_argument("path")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", metavar="DIR")
    where.add_argument("--in-place", action="store_true")
    p.add_argument("--policy", default="auto", choices=["auto", "topo", "inv", "dense"])
    p.add_argument(
        "--cross-file", action="store_true", help="only links to other files (smaller tags)"
    )
    p.add_argument(
        "--tests", action="store_true", help="tag test code too (default: only the code under test)"
    )
    p.add_argument(
        "--maybe",
        action="store_true",
        help="also write MAYBE_CALLED_BY: definitions with unresolved calls of the name",
    )
    p.add_argument("--force", action="store_true", help="write into a non-empty --out")
    p.add_argument("--include-git", action="store_true", help="copy .git into the snapshot")
    p.set_defaults(func=cmd_tag)

    p = sub.add_parser("strip", help="remove every CodeAnchor block")
    p.add_argument("path")
    p.set_defaults(func=cmd_strip)

    p = indexed("check", "exit 1 where tag blocks are stale or malformed")
    p.add_argument("path", nargs="?", default=".")
    p.add_argument("--policy", default="auto", choices=["auto", "topo", "inv", "dense"])
    p.add_argument("--require", action="store_true", help="flag definitions without blocks")
    p.add_argument("--cross-file", action="store_true", help="tags were made with --cross-file")
    p.add_argument("--tests", action="store_true", help="tags were made with --tests")
    p.add_argument("--maybe", action="store_true", help="tags were made with --maybe")
    p.set_defaults(func=cmd_check)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
