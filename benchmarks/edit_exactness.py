"""Edits that renumber a file's scopes, on Django: seconds, and the graph against a fresh build.

    python benchmarks/edit_exactness.py [--skip-download] [FILE ...]

One index of a copy of the Django 5.1.4 sdist (benchmarks/.data, no environment: the
repository's own graph) takes, one file after another, a def inserted above the file's
first top-level def (above its decorators), then the edit undone. Each edit is timed
(`Index.update_file`, the file's tree kept first as a server does for the files opened
last); after it the graph is compared edge for edge with a fresh build of the edited tree,
and after the undo with the graph before the edit. The edits follow one another in the
same index, as in an editor session, so a step that leaves the index unlike a fresh build
shows in the steps after it too. FILE defaults to three much-called files.

The table: seconds of the edit and of its undo, whether the index resolved every file
again (IndexStats.resolved_afresh grew: the edit's rounds did not settle), and the edges
only the edited index has (+) or only the fresh build has (-). Goal: every row 0 / 0, in
about a second. Exit 1 when a row differs.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from index_bench import DATA, fetch

from anchor_ls.index import Environment, Index

FILES = (
    "django/db/models/fields/__init__.py",
    "django/db/models/query.py",
    "django/utils/html.py",
)
INSERTED = "def _inserted_above():\n    pass\n\n\n"


def above_first_def(text: str) -> str:
    """text with INSERTED above its first top-level def and that def's decorators."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith(("def ", "async def ")):
            while i > 0 and lines[i - 1].startswith("@"):
                i -= 1
            return "".join(lines[:i]) + INSERTED + "".join(lines[i:])
    return text + "\n\n" + INSERTED


def edges(index: Index) -> set[tuple[str, str, str]]:
    return {(e.kind, e.src, e.dst) for e in index.graph.edges()}


def fresh_edges(root: Path) -> set[tuple[str, str, str]]:
    return edges(_built(Index(root, python=Environment(), use_cache=False)))


def _built(index: Index) -> Index:
    index.build()
    return index


def timed_edit(index: Index, rel: str, text: str) -> tuple[float, bool]:
    """(seconds of update_file, whether it resolved every file again)."""
    before = index.stats().resolved_afresh
    index.prepare_edits(rel)
    t0 = time.perf_counter()
    index.update_file(rel, text)
    return time.perf_counter() - t0, index.stats().resolved_afresh > before


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", default=list(FILES))
    parser.add_argument("--skip-download", action="store_true", help="never run pip download")
    args = parser.parse_args()
    source = DATA / "Django-5.1.4"
    if not source.is_dir():
        if args.skip_download:
            raise SystemExit(f"{source} is missing (run without --skip-download)")
        fetch()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / source.name
        shutil.copytree(source, root, ignore=shutil.ignore_patterns(".anchor-ls"))
        index = Index(root, cache_dir=Path(tmp) / "cache", python=Environment())
        t0 = time.perf_counter()
        index.build()
        print(f"build of {root.name}: {time.perf_counter() - t0:.1f} s")
        rows, differs = [], False
        for rel in args.files:
            path = root / rel
            old = path.read_text(encoding="utf-8")
            start = edges(index)
            new = above_first_def(old)
            path.write_text(new, encoding="utf-8")
            edit_s, edit_all = timed_edit(index, rel, new)
            fresh = fresh_edges(root)
            after = edges(index)
            path.write_text(old, encoding="utf-8")
            undo_s, undo_all = timed_edit(index, rel, old)
            back = edges(index)
            diff = (len(after - fresh), len(fresh - after), len(back - start), len(start - back))
            differs = differs or any(diff)
            rows.append((rel, edit_s, edit_all, undo_s, undo_all, diff))
            for label, items in (("+", after - fresh), ("-", fresh - after)):
                for item in sorted(items)[:5]:
                    print(f"  {rel}: {label} {item}")
    print()
    print("| file | edit s | undo s | resolved all again | vs fresh +/- | undo vs before +/- |")
    print("|---|---|---|---|---|---|")
    for rel, edit_s, edit_all, undo_s, undo_all, (a, m, ua, um) in rows:
        again = ", ".join(w for w, hit in (("edit", edit_all), ("undo", undo_all)) if hit) or "no"
        print(f"| {rel} | {edit_s:.2f} | {undo_s:.2f} | {again} | {a} / {m} | {ua} / {um} |")
    return 1 if differs else 0


if __name__ == "__main__":
    sys.exit(main())
