"""The command line, on the same layers as the server."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from anchor_ls import __version__
from anchor_ls.agent.queries import Queries, QueryError, without_line
from anchor_ls.console import progress
from anchor_ls.index import DENSE_KINDS, STRUCTURAL_KINDS, EnvironmentProblem, Index
from anchor_ls.index.cache import user_cache_folder
from anchor_ls.index.files import exclude_patterns, python_files
from anchor_ls.index.model import EXTERNAL, OVERRIDES
from anchor_ls.tags.policy import PolicyError


def _refuse(message: str) -> NoReturn:
    """A usage or I/O error: its message on stderr and exit 2 (as argparse does)."""
    print(f"anchor-ls: {message}", file=sys.stderr)
    raise SystemExit(2)


def _folder(path: str) -> Path:
    root = Path(path)
    if not root.exists():
        _refuse(f"no such file or folder: {path}")
    if not root.is_dir():
        _refuse(f"not a folder: {path}")
    return root


def _at_least(low: int, meaning: str = "") -> Callable[[str], int]:
    """An argparse type: a whole number >= low, refused (exit 2) before anything is indexed."""

    def number(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be {low}{meaning} or more, not {value}")
        return value

    return number


def _has_python(root: Path, exclude: Sequence[str]) -> bool:
    return any(isinstance(item, str) for item in python_files(root, exclude_patterns(exclude)))


# Every index a command opened, closed when it returns (main): an open SQLite connection at
# exit left the cache's -wal and -shm files beside it; closing the last one checkpoints
# the log into the .sqlite3 file and removes them.
_opened: list[Index] = []


def _close_indexes() -> None:
    while _opened:
        _opened.pop().close()


def _worth_a_cache(root: Path, path: str, exclude: Sequence[str], what: str) -> bool:
    """Whether the folder holds Python files; a warning when it holds none (its index then
    gets no cache: nothing is written for it, in it or in the user cache)."""
    if _has_python(root, exclude):
        return True
    print(f"anchor-ls: warning: {path}: no Python files here; {what}", file=sys.stderr)
    return False


def _index_for(args: argparse.Namespace, path: str, cache: str | None = None) -> Index:
    """The index of the folder at path, built with a progress bar on a terminal. A folder
    without Python files is indexed without a cache: nothing is written for it. main
    closes it when the command is done."""
    root = _folder(path)
    exclude = tuple(args.exclude or ())
    use_cache = _worth_a_cache(root, path, exclude, "nothing to index")
    try:
        index = Index(
            root,
            cache_dir=cache or args.cache,
            exclude=exclude,
            use_cache=use_cache,
            source_roots=args.source_root or (),
            python=args.python,
        )
        _opened.append(index)
        with progress("indexing", quiet=getattr(args, "quiet", True)) as step:
            index.build(progress=step)
    except EnvironmentProblem as err:  # --python names no usable interpreter
        _refuse(str(err))
    return index


def _print_problems(index: Index) -> None:
    for problem in sorted(index.problems.values(), key=lambda p: (p.path, p.kind)):
        print(
            f"anchor-ls: warning: {problem.path}: {problem.kind}: {problem.message}",
            file=sys.stderr,
        )


def cmd_index(args: argparse.Namespace) -> int:
    from anchor_ls.tags.apply import describe, policy_for

    index = _index_for(args, args.path)
    _print_problems(index)
    stats = index.stats()
    try:
        policy = describe(policy_for(index.graph, "auto", args.max_items))
    except PolicyError as err:
        _refuse(str(err))
    python = index.environment.python
    reached = len(index.graph.file_entities(EXTERNAL))
    if args.json:
        data = stats.as_dict()
        data["policy"] = policy
        data["python"] = python  # null: the environment anchor-ls runs in
        data["external_entities"] = reached
        _print_json(data, sort_keys=True)
        return 0
    kinds = (*STRUCTURAL_KINDS[:2], OVERRIDES, *STRUCTURAL_KINDS[2:])
    edges = ", ".join(f"{stats.edges.get(k, 0)} {k}" for k in kinds)
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
    print(f"hubs: {stats.hub_share:.1%} of functions and methods")
    where = python or f"{sys.executable} (the Python anchor-ls runs in)"
    print(f"libraries: {reached} definitions outside the repository reached, from {where}")
    print(f"tag policy: {policy}")
    if stats.problems:
        print("problems: " + ", ".join(f"{n} {k}" for k, n in stats.problems.items()))
    return 0


def cmd_graph(args: argparse.Namespace) -> int:
    index = _index_for(args, args.path)
    _print_problems(index)
    data = index.snapshot().graph.to_json()
    json.dump(data, sys.stdout, indent=1 if args.pretty else None, sort_keys=False)
    sys.stdout.write("\n")
    return 0


def _answer(args: argparse.Namespace, tool: str, ask: Callable[[Queries], dict]) -> int:
    """Answer one agent query (the MCP tool's object): JSON with --json, else text."""
    from anchor_ls.agent.render import as_text, error_text

    index = _index_for(args, args.path)
    try:
        answer = ask(Queries(index))
    except QueryError as err:
        if args.json:
            _print_json(err.as_dict())
        else:
            print(f"anchor-ls: {error_text(err.as_dict())}", file=sys.stderr)
        return 1
    if args.json:
        _print_json(answer)
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


def _file_arg(file: str, path: str) -> str:
    """FILE relative to PATH; one that names no file there but names one from the working
    folder (as a shell completes it, `repo/pkg/m.py`) is taken from there (absolute, so
    the queries still refuse it outside the repository)."""
    bare = without_line(file)
    if os.path.isabs(bare) or os.path.exists(os.path.join(path, bare)):
        return file
    if not os.path.isfile(bare):
        return file
    return os.path.abspath(bare) + file[len(bare) :]


def cmd_outline(args: argparse.Namespace) -> int:
    return _answer(args, "outline", lambda q: q.outline(_file_arg(args.file, args.path)))


def cmd_related_tests(args: argparse.Namespace) -> int:
    return _answer(args, "related_tests", lambda q: q.related_tests(args.target))


def cmd_mcp(args: argparse.Namespace) -> int:
    from anchor_ls.agent.mcp_server import serve

    root = _folder(args.path)
    exclude = tuple(args.exclude or ())
    # files an agent adds later are indexed all the same, in memory
    use_cache = _worth_a_cache(root, args.path, exclude, "serving without a cache")
    try:
        return serve(
            root,
            cache_dir=args.cache,
            use_cache=use_cache,
            exclude=exclude,
            max_items=args.max_items,
            source_roots=tuple(args.source_root or ()),
            python=args.python,
        )
    except EnvironmentProblem as err:
        _refuse(str(err))


def cmd_serve(args: argparse.Namespace) -> int:
    from anchor_ls.server.app import run

    try:
        run(args.tcp)
    except OSError as err:  # stdio cannot fail so; a TCP address can be taken or not ours
        if args.tcp is None:
            raise
        host, port = args.tcp
        _refuse(f"cannot listen on {host}:{port}: {err.strerror or err}")
    return 0


def _host_port(text: str) -> tuple[str, int]:
    """An argparse type: HOST:PORT (HOST defaults to 127.0.0.1), checked before serving."""
    host, _, port = text.rpartition(":")
    if not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"not HOST:PORT with a port from 0 to 65535: {text!r}")
    return host or "127.0.0.1", int(port)


def cmd_tag(args: argparse.Namespace) -> int:
    from anchor_ls.tags import commands
    from anchor_ls.tags.apply import TagError, refuse_bad_output

    cache = args.cache
    if args.out:
        root = _folder(args.path)
        try:  # before the build, which can take a minute
            refuse_bad_output(root, Path(os.path.abspath(args.out)), args.force)
        except TagError as err:
            print(f"anchor-ls: {err}", file=sys.stderr)
            return 2
        if not cache:  # a snapshot leaves its source as it was: no .anchor-ls in it
            cache = str(user_cache_folder(root.resolve()))
    index = _index_for(args, args.path, cache)
    _print_problems(index)
    return commands.tag(args, index)


def cmd_strip(args: argparse.Namespace) -> int:
    from anchor_ls.tags import commands

    return commands.strip(args)


def cmd_check(args: argparse.Namespace) -> int:
    from anchor_ls.tags import commands

    index = _index_for(args, args.path)
    _print_problems(index)
    return commands.check(args, index)


POLICY_HELP = "tag policy: auto (by the mean call out-degree), topo, inv or dense (default auto)"
PATH_HELP = "the repository folder (default: the current folder)"
PYTHON_HELP = (
    "the Python interpreter of the environment the repository runs on: its installed "
    "packages and the standard library give the bases, overrides and calls that leave the "
    "repository (default: the Python anchor-ls runs in; an interpreter inside the "
    "repository, such as its .venv, is used only when named here)"
)


def cmd_batch(args: argparse.Namespace) -> int:
    from anchor_ls.batch.command import run

    return run(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="anchor-ls",
        description="Who calls whom in a Python repository, as CodeAnchor tags.",
    )
    parser.add_argument("--version", action="version", version=f"anchor-ls {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, help="what to do")

    def indexed(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument(
            "--cache", metavar="DIR", help="index cache folder (default: PATH/.anchor-ls)"
        )
        p.add_argument(
            "--exclude",
            action="append",
            metavar="GLOB",
            help="leave out files whose path relative to PATH matches (repeatable)",
        )
        p.add_argument(
            "--source-root",
            action="append",
            metavar="DIR",
            help="a folder absolute imports start from, relative to PATH (repeatable); "
            "nested projects, src/ layouts and conftest folders are found without it",
        )
        p.add_argument("--python", metavar="PATH", help=PYTHON_HELP)
        return p

    def max_items(p: argparse.ArgumentParser, what: str) -> None:
        p.add_argument(
            "--max-items",
            type=_at_least(0, " (no cap)"),
            default=8,
            metavar="N",
            help=f"{what} (default 8; 0: all)",
        )

    def quiet(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "-q",
            "--quiet",
            action="store_true",
            help="no progress bar and no notes (warnings and errors still print)",
        )

    p = sub.add_parser("serve", help="run the language server (stdio by default)")
    p.add_argument(
        "--tcp",
        type=_host_port,
        metavar="HOST:PORT",
        help="listen on a TCP port instead of stdio",
    )
    p.set_defaults(func=cmd_serve)

    p = indexed("index", "build or refresh the index; print statistics")
    p.add_argument("path", nargs="?", default=".", help=PATH_HELP)
    p.add_argument("--json", action="store_true", help="the statistics as one JSON object")
    max_items(p, "entries per tag field of the tag policy shown")
    quiet(p)
    p.set_defaults(func=cmd_index)

    p = indexed("graph", "print the graph")
    p.add_argument("path", nargs="?", default=".", help=PATH_HELP)
    p.add_argument("--json", action="store_true", help="JSON (the only format)")
    p.add_argument("--pretty", action="store_true", help="indent the JSON")
    quiet(p)
    p.set_defaults(func=cmd_graph)

    def query(name: str, help_text: str, func: Callable[[argparse.Namespace], int]) -> Any:
        p = indexed(name, help_text)
        p.add_argument("--json", action="store_true", help="the MCP tool's JSON object")
        quiet(p)  # the index is built first, with a bar on a terminal
        p.set_defaults(func=func)
        return p

    target_help = "an entity id (pkg/mod.py:Class.method) or a suffix of one (method)"
    for name, func in (("callers", cmd_callers), ("callees", cmd_callees)):
        p = query(name, f"list the {name} of TARGET (an id or an id's suffix)", func)
        p.add_argument("target", help=target_help)
        p.add_argument("path", nargs="?", default=".", help=PATH_HELP)
        p.add_argument("--depth", type=_at_least(1), default=1, help="levels to follow (default 1)")
        p.add_argument("--limit", type=_at_least(0), default=50, help="entries shown (default 50)")
        if name == "callers":
            p.add_argument(
                "--maybe",
                action="store_true",
                help="also list the unresolved call sites that call TARGET's name",
            )

    p = query("find", "find definitions by id, qualified name or name", cmd_find)
    p.add_argument("query", help="an id, a qualified name, a name or a part of one")
    p.add_argument("path", nargs="?", default=".", help=PATH_HELP)
    p.add_argument(
        "--kind",
        choices=["module", "class", "function", "method", "constant"],
        help="only definitions of this kind",
    )
    p.add_argument("--limit", type=_at_least(0), default=20, help="matches shown (default 20)")

    p = query("impact", "what can break if TARGET changes, and the tests that reach it", cmd_impact)
    p.add_argument("target", help=target_help)
    p.add_argument("path", nargs="?", default=".", help=PATH_HELP)
    p.add_argument("--depth", type=_at_least(1), default=3, help="levels to follow (default 3)")
    p.add_argument("--limit", type=_at_least(0), default=100, help="entries shown (default 100)")

    p = query("hierarchy", "a class's bases and subclasses; a method's overrides", cmd_hierarchy)
    p.add_argument("target", help=target_help)
    p.add_argument("path", nargs="?", default=".", help=PATH_HELP)

    p = query("outline", "every definition of FILE with its signature and tag fields", cmd_outline)
    p.add_argument(
        "file",
        help="relative to PATH (or to the working folder when it names no file in PATH), "
        "or absolute inside PATH; a :LINE after it is ignored",
    )
    p.add_argument("path", nargs="?", default=".", help=PATH_HELP)

    p = query("related-tests", "the tests that exercise TARGET", cmd_related_tests)
    p.add_argument("target", help=target_help)
    p.add_argument("path", nargs="?", default=".", help=PATH_HELP)

    p = indexed("mcp", "serve the queries to agents: an MCP server on stdio")
    p.add_argument("path", nargs="?", default=".", help=PATH_HELP)
    max_items(p, "entries per field of the tags tool")
    p.set_defaults(func=cmd_mcp)

    p = indexed("tag", "materialize CodeAnchor tags: a snapshot (--out) or in place")
    p.add_argument("path", help="the repository folder to tag")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--out",
        metavar="DIR",
        help="write a tagged copy to DIR and leave PATH untouched (the index cache goes "
        "to the user cache folder unless --cache says where)",
    )
    where.add_argument("--in-place", action="store_true", help="write the tags into PATH")
    p.add_argument(
        "--policy", default="auto", choices=["auto", "topo", "inv", "dense"], help=POLICY_HELP
    )
    max_items(p, "entries per tag field")
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
    quiet(p)
    p.set_defaults(func=cmd_tag)

    p = sub.add_parser("strip", help="remove every CodeAnchor block")
    p.add_argument(
        "path",
        help="a folder (every Python file under it, but in the folders the index leaves out: "
        "virtual environments, node_modules, tool caches; name one as PATH to strip it) or "
        "one file",
    )
    quiet(p)
    p.set_defaults(func=cmd_strip)

    p = indexed("check", "exit 1 where tag blocks are stale or damaged (2: could not check)")
    p.add_argument("path", nargs="?", default=".", help=PATH_HELP)
    p.add_argument(
        "--policy", default="auto", choices=["auto", "topo", "inv", "dense"], help=POLICY_HELP
    )
    max_items(p, "entries per tag field the tags were made with")
    p.add_argument("--require", action="store_true", help="flag definitions without blocks")
    p.add_argument("--cross-file", action="store_true", help="tags were made with --cross-file")
    p.add_argument("--tests", action="store_true", help="tags were made with --tests")
    p.add_argument("--maybe", action="store_true", help="tags were made with --maybe")
    quiet(p)
    p.set_defaults(func=cmd_check)

    p = sub.add_parser(
        "batch",
        help="tagged snapshots of many (repository, commit) pairs",
        usage="%(prog)s MANIFEST --out DIR [options]",
    )
    p.add_argument(
        "manifest",
        nargs="?",  # required all the same (batch.command): `--ray m.jsonl` may hold it
        metavar="MANIFEST",
        help='JSON Lines: {"id", "repo", "commit"} or {"id", "source"}, optionally "policy", '
        '"max_items", "cross_file", "tests", "python"',
    )
    p.add_argument("--out", metavar="DIR", required=True, help="DIR/<id>/, DIR/results.jsonl")
    p.add_argument("--graph", action="store_true", help="also write DIR/<id>/graph.json")
    p.add_argument(
        "--workers", type=_at_least(1), metavar="N", help="processes (default: the cores)"
    )
    p.add_argument(
        "--ray",
        nargs="?",
        const="",
        metavar="ADDRESS",
        help="run on Ray: a local one, or with --ray=ADDRESS the cluster there (auto: the one "
        "this machine belongs to). A file or a name ending in .jsonl right after a bare --ray "
        "is the manifest when no other is given (--ray m.jsonl --out DIR: a local Ray)",
    )
    p.add_argument("--timeout", type=float, metavar="SECONDS", help="limit per task")
    p.add_argument("--chain-size", type=_at_least(1), metavar="N", help="tasks per chain at most")
    p.add_argument(
        "--incremental",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="move the index from commit to commit with the files each step changes, as the "
        "server does (default); --no-incremental builds it again at every step from the "
        "cached summaries",
    )
    p.add_argument("--cache", metavar="DIR", help="index caches (default: the user cache)")
    p.add_argument("--work", metavar="DIR", help="scratch trees (default: the temp folder)")
    p.add_argument("--exclude", action="append", metavar="GLOB", help="leave out matches")
    p.add_argument(
        "--python",
        metavar="PATH",
        help="the interpreter whose installed packages every task's index reads, as tag "
        '--python (a manifest line\'s own "python" wins; default: the Python anchor-ls runs '
        "in; an interpreter inside a snapshot is never run unless named)",
    )
    p.set_defaults(func=cmd_batch)
    return parser


def _escape_what_cannot_print() -> None:
    """Print every name, path and source line whatever the streams' encoding: what the
    encoding lacks (non-ASCII under PYTHONIOENCODING=ascii or a C locale, the undecodable
    bytes of a file name) is written as a backslash escape, never a UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):  # a closed or odd stream
                reconfigure(errors="backslashreplace")


def _print_json(data: object, sort_keys: bool = False) -> None:
    """data as JSON on stdout: its text as it is where stdout can encode it, else \\u
    escapes (still valid JSON; a backslash escape of the stream would not be)."""
    text = json.dumps(data, indent=2, sort_keys=sort_keys, ensure_ascii=False)
    try:
        text.encode(sys.stdout.encoding or "utf-8")
    except (UnicodeEncodeError, LookupError):
        text = json.dumps(data, indent=2, sort_keys=sort_keys, ensure_ascii=True)
    print(text)


def main(argv: Sequence[str] | None = None) -> int:
    _escape_what_cannot_print()
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130
    finally:
        _close_indexes()


if __name__ == "__main__":
    raise SystemExit(main())
