"""Tags on real files: one file from the graph, a tree in place, a snapshot, strip, check.

Nothing here writes a user's file except through `files.atomic_rewrite`, and only after
checking that the file still holds the bytes that were indexed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from anchor_ls.index.files import SKIP_DIRS as INDEX_SKIP_DIRS
from anchor_ls.index.model import Graph
from anchor_ls.index.repository import Progress
from anchor_ls.index.stats import graph_figures
from anchor_ls.tags import text
from anchor_ls.tags.files import (
    SKIP_DIRS,
    ChangedOnDisk,
    atomic_rewrite,
    inside,
    is_python,
    walk,
)
from anchor_ls.tags.policy import ResolvedPolicy, block_fields, resolve_policy, tags_file
from anchor_ls.tags.render import MARKER, block_lines
from anchor_ls.tags.scan import SourceError

TAGGED_KINDS = frozenset({"module", "class", "function", "method"})


class IndexLike(Protocol):
    """What the tag commands need from `anchor_ls.index.Index`."""

    root: Path
    graph: Graph

    def source(self, relpath: str) -> bytes | None: ...


class TagError(Exception):
    """A refused run (a non-empty output folder, an output inside the source tree...)."""


@dataclass(slots=True)
class Report:
    """What a tag command did: files changed (stale, for check) and problems found.

    `problems` lines read "relpath:line: message"; `ok` is False when check found
    anything or a file could not be handled. `unread` names the files the command could
    not read as they were indexed (check cannot vouch for them: exit 2, not 1).
    """

    action: str
    policy: ResolvedPolicy | None = None
    files: int = 0
    changed: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        if self.action == "check":
            return not self.changed and not self.problems
        return not self.problems

    @property
    def exit_code(self) -> int:
        """0 done; 1 problems (check: stale or damaged blocks only); 2 for a check that
        could not read a file (an I/O error, not a verdict on its tags)."""
        if self.action == "check":
            return 2 if self.unread else 1 if self.changed else 0
        return 0 if self.ok else 1

    def problem(self, relpath: str, line: int, message: str) -> None:
        self.problems.append(f"{relpath}:{line}: {message}" if line else f"{relpath}: {message}")

    def lines(self) -> list[str]:
        """Human-readable lines for the CLI: problems first, then a one-line summary."""
        out = list(self.problems)
        verb = {
            "tag": "tagged",
            "export": "tagged",
            "strip": "stripped",
            "check": "stale",
        }.get(self.action, self.action)
        summary = f"{self.action}: {len(self.changed)} of {self.files} files {verb}"
        if self.problems:
            summary += f", {len(self.problems)} problems"
        if self.policy is not None:
            summary += f" (policy {describe(self.policy)})"
        out.extend(self.notes)
        out.append(summary)
        return out


def describe(policy: ResolvedPolicy) -> str:
    """A policy as every command prints it: `topo, max 8; auto: mean call out-degree ...`."""
    return f"{policy.name}, max {policy.max_items or 'all'}; {policy.reason}"


# ----- one file -------------------------------------------------------------


def policy_for(
    graph: Graph,
    name: str,
    max_items: int,
    *,
    cross_file: bool = False,
    tests: bool = False,
    maybe: bool = False,
) -> ResolvedPolicy:
    """resolve_policy with the graph's mean call out-degree (what auto needs): the one place
    the commands take it from, so `index`, `tag` and `check` print the same figure."""
    mean_out, _hubs = graph_figures(graph)
    return resolve_policy(
        name, mean_out, max_items, cross_file=cross_file, tests=tests, maybe=maybe
    )


def file_blocks(
    graph: Graph, relpath: str, policy: ResolvedPolicy
) -> tuple[dict[int, list[str]], dict[int, str]]:
    """The blocks of one file keyed as `text.materialize` wants them, and the names guard.

    A file the policy leaves untagged (test code, by default) gets none: materialize then
    only strips it.
    """
    blocks: dict[int, list[str]] = {}
    names: dict[int, str] = {}
    if not tags_file(relpath, policy):
        return blocks, names
    for ent in graph.file_entities(relpath):
        if ent.kind not in TAGGED_KINDS:
            continue
        key = text.MODULE if ent.kind == "module" else ent.line
        if key in blocks:  # two entities on one line: the first (outermost) wins
            continue
        tags = block_fields(graph, ent.id, policy)
        if not tags:
            continue
        blocks[key] = block_lines(ent, tags)
        if ent.kind != "module":
            names[key] = ent.name
    return blocks, names


def render_file(
    graph: Graph, relpath: str, source: bytes, policy: ResolvedPolicy
) -> text.Materialized:
    """materialize_file with its notes (skipped definitions, problems)."""
    blocks, names = file_blocks(graph, relpath, policy)
    return text.materialize(source, blocks, names, path=relpath)


def materialize_file(graph: Graph, relpath: str, source: bytes, policy: ResolvedPolicy) -> bytes:
    """`source` with fresh blocks for the entities the graph has in relpath.

    The graph must describe `source` (its line numbers); old blocks are replaced.
    """
    return render_file(graph, relpath, source, policy).text


def check_file(
    graph: Graph, relpath: str, source: bytes, policy: ResolvedPolicy, require: bool = False
) -> list[tuple[int, str]]:
    """Stale, malformed (and with require, missing) blocks of one file; [] when up to date.
    Raises SourceError for a file whose tags cannot be read (see text.check)."""
    blocks, names = file_blocks(graph, relpath, policy)
    return text.check(source, blocks, names, require, path=relpath)


# ----- trees ----------------------------------------------------------------


def _read_indexed(index: IndexLike, relpath: str, report: Report) -> bytes | None:
    """The file's bytes on disk when they are still the indexed ones; else report and None."""
    path = index.root / relpath
    indexed = index.source(relpath)
    if indexed is None:
        return None
    try:
        if path.is_symlink() or not inside(path, index.root):
            report.notes.append(f"{relpath}: a symlink; its target is tagged on its own")
            return None
        data = path.read_bytes()
    except OSError as err:
        report.problem(relpath, 0, f"unreadable: {err.strerror or err}")
        report.unread.append(relpath)
        return None
    if data != indexed:
        report.problem(relpath, 0, "changed since it was indexed; skipped (index again)")
        report.unread.append(relpath)
        return None
    return data


def _add_notes(report: Report, relpath: str, result: text.Materialized) -> None:
    for line, message in result.problems:
        report.problem(relpath, line, message)


def _step(progress: Progress | None, done: int, total: int, relpath: str) -> None:
    if progress is not None:
        progress(done, total, relpath)


def tag_tree_in_place(
    index: IndexLike, policy: ResolvedPolicy, progress: Progress | None = None
) -> Report:
    """Materialize tags into every indexed file; a file already up to date is not touched."""
    report = Report("tag", policy)
    files = index.graph.files()
    for done, relpath in enumerate(files, 1):
        _step(progress, done, len(files), relpath)
        data = _read_indexed(index, relpath, report)
        if data is None:
            continue
        report.files += 1
        result = render_file(index.graph, relpath, data, policy)
        _add_notes(report, relpath, result)
        if result.text == data:
            continue
        try:
            atomic_rewrite(index.root / relpath, result.text, data)
        except ChangedOnDisk:
            report.problem(relpath, 0, "changed while tagging; left as is")
            continue
        except OSError as err:
            report.problem(relpath, 0, f"not written: {err.strerror or err}")
            continue
        report.changed.append(relpath)
    return report


# What strip leaves out below its root: the folders the index never reads (virtual
# environments, node_modules, tool caches), where tag never writes a block.
STRIP_SKIP_DIRS = SKIP_DIRS | INDEX_SKIP_DIRS
SHOWN_SKIPPED = 3  # folders named in strip's note


def strip_tree(root: str | Path, progress: Progress | None = None) -> Report:
    """Remove every tag block from the Python files under root (or from one file).

    A block's id may name its file by any trailing part of the file's path, so a
    snapshot strips the same from its root or from any folder in it. The folders below
    root the index leaves out (its SKIP_DIRS, a folder holding a pyvenv.cfg) are left
    out too, and counted in a note: root itself is stripped whatever it is.
    """
    report = Report("strip")
    root = Path(root)
    if root.is_symlink():
        report.notes.append(f"{root}: a symlink; strip its target instead")
        targets: list[tuple[str, Path]] = []
    elif root.is_file():
        targets = [(root.name, root)]
    else:
        targets = []
        skipped: list[str] = []
        for e in walk(root, STRIP_SKIP_DIRS, skip_venvs=True, skipped=skipped):
            if e.kind == "file" and is_python(e.relpath):
                targets.append((e.relpath, e.path))
            elif e.kind == "unreadable":  # its files keep whatever tags they hold
                report.problem(e.relpath, 0, f"folder not read: {e.error}; not stripped")
        # VCS data and caches (ours) were always left out and hold no source: not counted
        left = [rel for rel in skipped if rel.rpartition("/")[2] not in SKIP_DIRS]
        if left:
            shown = ", ".join(left[:SHOWN_SKIPPED]) + (", ..." if len(left) > SHOWN_SKIPPED else "")
            report.notes.append(
                f"{len(left)} folder{'s' if len(left) > 1 else ''} left out as the index leaves "
                f"them (virtual environments, node_modules, tool caches): {shown}; give one "
                "as PATH to strip it"
            )
    for done, (relpath, path) in enumerate(targets, 1):
        _step(progress, done, len(targets), relpath)
        report.files += 1
        try:
            data = path.read_bytes()
        except OSError as err:
            report.problem(relpath, 0, f"unreadable: {err.strerror or err}")
            continue
        if MARKER not in data:
            continue
        result = text.strip(data, path.absolute().as_posix())
        for line, message in result.damaged:
            report.problem(relpath, line, message)
        if result.text == data:
            continue
        try:
            atomic_rewrite(path, result.text, data)
        except ChangedOnDisk:
            report.problem(relpath, 0, "changed while stripping; left as is")
            continue
        except OSError as err:
            report.problem(relpath, 0, f"not written: {err.strerror or err}")
            continue
        report.changed.append(relpath)
    return report


def check_tree(
    index: IndexLike,
    policy: ResolvedPolicy,
    require: bool = False,
    progress: Progress | None = None,
) -> Report:
    """Every indexed file whose blocks differ from what would be generated now."""
    report = Report("check", policy)
    files = index.graph.files()
    for done, relpath in enumerate(files, 1):
        _step(progress, done, len(files), relpath)
        data = _read_indexed(index, relpath, report)
        if data is None:
            continue
        report.files += 1
        try:
            findings = check_file(index.graph, relpath, data, policy, require)
        except SourceError as err:  # not a verdict on its tags: check cannot vouch for it
            why = f"cannot tell where its strings are ({err}); its tags are not read"
            report.problem(relpath, 0, f"not checked: {why}")
            report.unread.append(relpath)
            continue
        for line, message in findings:
            report.problem(relpath, line, message)
        if findings:
            report.changed.append(relpath)
    return report


# ----- snapshot -------------------------------------------------------------


@dataclass(slots=True)
class Reuse:
    """What the last snapshot of a chain made of each Python file, so that the next one
    copies the files whose bytes and blocks did not change instead of rendering them
    again (batch: consecutive commits of a repository share almost every file).

    `root` is the last snapshot's output folder; `made` maps a relpath to the digest of
    what its output was made from (source, blocks, names), whether the output differs
    from the source, and the problems its rendering found. An export fills `next` (and
    counts the files it `copied`); `advance` makes it the last one once the snapshot is
    in place at its new root, `discard` drops it (a snapshot not written)."""

    root: Path | None = None
    made: dict[str, tuple[bytes, bool, tuple[tuple[int, str], ...]]] = field(default_factory=dict)
    next: dict[str, tuple[bytes, bool, tuple[tuple[int, str], ...]]] = field(default_factory=dict)

    copied: int = 0

    def advance(self, root: Path) -> None:
        self.root, self.made = root, self.next
        self.discard()

    def discard(self) -> None:
        self.next, self.copied = {}, 0

    def forget(self) -> None:
        self.root, self.made = None, {}
        self.discard()


def _digest(data: bytes, blocks: dict[int, list[str]], names: dict[int, str]) -> bytes:
    """What a file's tagged output is a function of (materialize's inputs)."""
    made = hashlib.blake2b(data, digest_size=20)
    made.update(repr((sorted(blocks.items()), sorted(names.items()))).encode())
    return made.digest()


def export_snapshot(
    index: IndexLike,
    out_dir: str | Path,
    policy: ResolvedPolicy,
    force: bool = False,
    include_git: bool = False,
    progress: Progress | None = None,
    reuse: Reuse | None = None,
) -> Report:
    """Copy the tree to out_dir with tags in every indexed Python file.

    Symlinks are copied as links (never followed), `.git` is left out unless asked, and
    nothing is written outside out_dir; `progress` counts the indexed Python files. With
    reuse, a Python file made from the same bytes and blocks as in the last snapshot is
    copied from it (the bytes rendering it again would give). Raises TagError for a
    refused run: out_dir holds the tree or is inside it (however spelled), exists as a
    file, or is not empty without `force`.
    """
    root = Path(index.root).resolve()
    out = Path(os.path.abspath(out_dir))
    refuse_bad_output(Path(index.root), out, force)
    out.mkdir(parents=True, exist_ok=True)
    out = out.resolve()
    report = Report("export", policy)
    skip = frozenset({".anchor-ls"} if include_git else {".git", ".anchor-ls"})
    python_files = set(index.graph.files())
    dir_modes: list[tuple[Path, int]] = []
    made: set[Path] = {out}  # folders this run made (or checked): never symlinks
    tagged = 0
    for entry in walk(root, skip=skip, prune=out):
        if entry.kind == "unreadable":  # the snapshot would lack its contents without a word
            report.problem(entry.relpath, 0, f"folder not read: {entry.error}; left out")
            continue
        target = out / entry.relpath
        if target.parent not in made:
            report.problem(entry.relpath, 0, "its folder could not be made in the output")
            continue
        try:
            if entry.kind == "dir":
                _make_dir(target)
                made.add(target)
                dir_modes.append((target, stat.S_IMODE(entry.mode)))
            elif entry.kind == "link":
                _clear(target)
                os.symlink(os.readlink(entry.path), target)
            elif entry.kind == "file":
                report.files += 1
                if entry.relpath in python_files:
                    tagged += 1
                    _step(progress, tagged, len(python_files), entry.relpath)
                    _export_python(index, entry.relpath, entry.path, target, policy, report, reuse)
                else:
                    _clear(target)
                    shutil.copyfile(entry.path, target, follow_symlinks=False)
                os.chmod(target, stat.S_IMODE(entry.mode))
            else:
                report.problem(entry.relpath, 0, "not a regular file, folder or symlink; left out")
        except OSError as err:
            report.problem(entry.relpath, 0, f"not copied: {err.strerror or err}")
    for path, mode in reversed(dir_modes):  # after the contents: a read-only folder stays so
        os.chmod(path, mode)
    return report


def refuse_output_in(root: str | Path, out_dir: str | Path) -> None:
    """Raise TagError when out_dir holds the tree at root or lies inside it, as spelled or
    resolved through symlinks (relative paths count from the working folder): a snapshot
    never writes into a tree it copies or that an editor has open."""
    out = Path(os.path.abspath(out_dir))
    outs = {out, out.resolve()}
    roots = {Path(os.path.abspath(root)), Path(root).resolve()}
    shown = Path(root).resolve()
    if any(r == o or r.is_relative_to(o) for r in roots for o in outs):
        raise TagError(f"output folder {out} holds the source tree {shown}; choose another")
    if any(o.is_relative_to(r) for r in roots for o in outs):
        raise TagError(f"output folder {out} is inside the source tree {shown}; choose another")


def refuse_bad_output(root: Path, out: Path, force: bool) -> None:
    """Raise TagError for an output folder `tag --out` cannot write: one that holds the tree
    or is inside it, a file, or a non-empty folder without force (the CLI asks before it
    builds the index, export_snapshot again before it writes)."""
    refuse_output_in(root, out)
    if out.exists() or out.is_symlink():
        if not out.is_dir():
            raise TagError(f"output {out} exists and is not a folder")
        if any(out.iterdir()) and not force:
            raise TagError(f"output folder {out} is not empty (use --force to write into it)")


def _make_dir(target: Path) -> None:
    """A real folder at target; a link or file left there by an earlier export is replaced."""
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        target.unlink()
    target.mkdir(exist_ok=True)
    os.chmod(target, 0o700 | stat.S_IMODE(target.stat().st_mode))


def _clear(target: Path) -> None:
    """Make room for a file or link at target (only existing non-folders are removed)."""
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.exists():
        raise IsADirectoryError(21, "a folder is in the way", str(target))


def _export_python(
    index: IndexLike,
    relpath: str,
    path: Path,
    target: Path,
    policy: ResolvedPolicy,
    report: Report,
    reuse: Reuse | None = None,
) -> None:
    data = path.read_bytes()
    indexed = index.source(relpath)
    _clear(target)
    if indexed is None or indexed != data:
        report.problem(relpath, 0, "changed since it was indexed; copied untagged")
        target.write_bytes(data)
        return
    blocks, names = file_blocks(index.graph, relpath, policy)
    digest = _digest(data, blocks, names) if reuse is not None else b""
    if reuse is not None and reuse.root is not None:
        last = reuse.made.get(relpath)
        if last is not None and last[0] == digest:
            try:
                shutil.copyfile(reuse.root / relpath, target, follow_symlinks=False)
            except OSError:
                pass  # the last snapshot lost it: rendered again below
            else:
                _reused(report, relpath, last[1], last[2])
                reuse.next[relpath] = last
                reuse.copied += 1
                return
    result = text.materialize(data, blocks, names, path=relpath)
    _add_notes(report, relpath, result)
    target.write_bytes(result.text)
    changed = result.text != data
    if changed:
        report.changed.append(relpath)
    if reuse is not None:
        reuse.next[relpath] = (digest, changed, tuple(result.problems))


def _reused(
    report: Report, relpath: str, changed: bool, problems: tuple[tuple[int, str], ...]
) -> None:
    for line, message in problems:
        report.problem(relpath, line, message)
    if changed:
        report.changed.append(relpath)
