"""DIR/results.jsonl and what a run finds already done in DIR.

A snapshot is whole when DIR/<id> exists: it is renamed into place only once complete, so
its presence alone says so, whatever happened to the run that wrote it. Every run appends a
line per task of its manifest (ok, failed with the error, or skipped as already done);
the last line of an id is its state, and its last `ok` line says what DIR/<id> holds: the
repository and the commit it resolved to, or the source folder, and in `made_with` the
line's fields and the run's options that change its bytes (policy, --graph, ...). A task
is done when that is what its manifest line and the run ask now: a line that names another
repository, another commit (or a branch that moved on), another folder or another policy,
or a run with another --exclude, has its snapshot made again (`stale`). A DIR/<id> without
an `ok` line (a run stopped between the rename and its line) is taken as done, as it always
was; one whose `ok` line records no `made_with` (an older anchor-ls wrote it) is kept
unchecked, and the run says so.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from anchor_ls.batch import gittree
from anchor_ls.batch.chain import PARTIAL, SNAPSHOT_OPTIONS, Settings, made_with
from anchor_ls.batch.manifest import RESULTS_FILE, Task

RESULTS = RESULTS_FILE
LOCK = ".lock"


class Busy(Exception):
    """Another batch run writes into the same output folder."""


class Results:
    """The open results file of a run (and its lock on the output folder)."""

    def __init__(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.out = out
        self._lock: IO[bytes] = open(out / LOCK, "wb")  # noqa: SIM115  (held for the run)
        try:
            fcntl.flock(self._lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock.close()
            raise Busy(f"another batch run is writing into {out}") from None
        # What a run stopped in the middle of (killed before it could clean up) is garbage.
        shutil.rmtree(out / PARTIAL, ignore_errors=True)
        # backslashreplace: a lone surrogate (a path of bytes that are no UTF-8, in an
        # error) is written as its JSON escape, \udce9, not a crash of the run
        self._file = open(  # noqa: SIM115  (held for the run)
            out / RESULTS, "a", encoding="utf-8", errors="backslashreplace"
        )
        if not _ends_a_line(out / RESULTS):  # a run killed as it wrote: its line stays
            self._file.write("\n")  # damaged, the next one is whole
            self._file.flush()
        self.counts: dict[str, int] = {"ok": 0, "failed": 0, "skipped": 0}

    def done(self, ident: str) -> bool:
        return (self.out / ident).is_dir()

    def write(self, result: dict[str, Any]) -> None:
        """One line, flushed: a crash loses at most the line being written."""
        self._file.write(json.dumps(result, ensure_ascii=False) + "\n")
        self._file.flush()
        self.counts[result["status"]] = self.counts.get(result["status"], 0) + 1

    def close(self) -> None:
        self._file.close()
        with contextlib.suppress(OSError):
            (self.out / PARTIAL).rmdir()  # empty unless a worker still writes (or was killed)
        self._lock.close()  # the file stays: removing it would race with a run starting


def _ends_a_line(path: Path) -> bool:
    """Whether the file at path is empty or ends with a newline."""
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        if handle.tell() == 0:
            return True
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


def _records(out: Path) -> Iterator[dict[str, Any]]:
    """The lines of DIR/results.jsonl that name an id, in order (damaged lines are passed
    over; no file: none)."""
    with contextlib.suppress(FileNotFoundError), open(out / RESULTS, encoding="utf-8") as handle:
        for line in handle:
            with contextlib.suppress(ValueError):
                item = json.loads(line)
                if isinstance(item, dict) and isinstance(item.get("id"), str):
                    yield item


def last_results(out: Path) -> dict[str, dict[str, Any]]:
    """The last line of each id in DIR/results.jsonl."""
    return {item["id"]: item for item in _records(out)}


def made_from(record: dict[str, Any]) -> dict[str, Any] | None:
    """What the snapshot of an `ok` line was made from: {"repo", "commit", "sha"} or
    {"source"} (None: a line that says neither)."""
    if isinstance(record.get("source"), str):
        return {"source": record["source"]}
    if all(isinstance(record.get(key), str) for key in ("repo", "commit", "sha")):
        return {key: record[key] for key in ("repo", "commit", "sha")}
    return None


def held(out: Path) -> dict[str, dict[str, Any]]:
    """For each id with an `ok` line in DIR/results.jsonl, its last one."""
    return {item["id"]: item for item in _records(out) if item.get("status") == "ok"}


def shown(made: dict[str, Any]) -> str:
    """A snapshot's origin as a person reads it: `REPO at SHA (commit NAME)` or `FOLDER`."""
    if "source" in made:
        return f"the folder {made['source']}"
    text = f"{made['repo']} at {made['sha'][:12]}"
    return text if made["commit"] == made["sha"] else f"{text} (commit {made['commit']})"


def _asked(task: Task, sha: str | None) -> str:
    if task.source is not None:
        return f"the folder {task.source}"
    text = f"{task.repo} at {sha[:12]}" if sha else f"{task.repo}, where it is not found"
    return text if task.commit == sha else f"{text} (commit {task.commit})"


def _same_path(a: str, b: str) -> bool:
    return a == b or os.path.realpath(a) == os.path.realpath(b)


def _value(name: str, value: Any) -> str:
    if value is None:
        return "none (the Python anchor-ls runs in)" if name == "python" else "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "none"
    return str(value)


def _differences(record: Any, asked: dict[str, Any]) -> tuple[list[str], bool]:
    """How the `made_with` of an ok line differs from what a task asks now, as a person
    reads it ("policy was topo, the line now asks dense"), and whether some of it is not
    recorded (an ok line of an older anchor-ls: that part is unknown, and kept)."""
    if not isinstance(record, dict):
        return [], True
    said: list[str] = []
    unknown = False
    for name, now in asked.items():
        if name not in record:
            unknown = True
            continue
        was = record[name]
        if was == now:
            continue
        if name == "graph":
            said.append(
                "made with --graph, which the run now leaves out"
                if was
                else "made without --graph, which the run now asks"
            )
        elif name in SNAPSHOT_OPTIONS:
            said.append(f"--{name} was {_value(name, was)}, the run now asks {_value(name, now)}")
        else:
            whose = "the line or --python" if name == "python" else "the line"
            said.append(f"{name} was {_value(name, was)}, {whose} now asks {_value(name, now)}")
    return said, unknown


def stale(
    tasks: list[Task], records: dict[str, dict[str, Any]], settings: Settings
) -> tuple[dict[str, tuple[dict[str, Any], str]], list[str]]:
    """The tasks among `tasks` (each with a DIR/<id>) whose line or run asks for another
    snapshot than their `ok` line says DIR/<id> holds: id -> (what it holds, why it is made
    again); and the ids kept without knowing what their snapshot was made with (an ok line
    of an older anchor-ls, without `made_with`: kept, as one without an origin is).

    Compared: the origin (repo and the commit it resolved to, or source) and made_with
    (the line's SNAPSHOT_FIELDS, the run's SNAPSHOT_OPTIONS). A commit given by name is
    resolved (one `git cat-file` per repository), so a branch that moved on is another
    snapshot; one that cannot be resolved is, too (the task then fails with the reason,
    and DIR/<id> is kept)."""
    found: dict[str, tuple[dict[str, Any], str]] = {}
    unchecked: list[str] = []  # in manifest order; those made again are dropped below
    to_resolve: dict[str, list[tuple[Task, dict[str, Any], list[str]]]] = {}
    for task in tasks:
        record = records.get(task.id)
        if record is None:  # no ok line (a run stopped before writing it): taken as done
            continue
        made = made_from(record)
        if made is None:  # an ok line of an older form: nothing to compare, kept
            unchecked.append(task.id)
            continue
        recorded = record.get("made_with")
        if isinstance(recorded, dict):  # what it held, for the `replaced` or `kept` line
            made = {**made, "made_with": recorded}
        said, unknown = _differences(recorded, made_with(task, settings))
        if unknown:
            unchecked.append(task.id)
        origin: str | None = None
        if task.source is not None:
            if "source" not in made or not _same_path(made["source"], task.source):
                origin = f"the manifest now asks {_asked(task, None)}"
        else:
            assert task.repo is not None and task.commit is not None
            if "repo" not in made or not _same_path(made["repo"], task.repo):
                origin = f"the manifest now asks {task.repo} (commit {task.commit})"
            elif task.commit != made["sha"]:  # a full id names one commit forever: no git
                to_resolve.setdefault(task.repo, []).append((task, made, said))
                continue
        if origin is not None or said:
            found[task.id] = (made, "; ".join(filter(None, [origin, *said])))
    for repo, pending in to_resolve.items():
        try:
            shas = gittree.resolve(repo, [task.commit or "" for task, _made, _said in pending])
        except gittree.GitError:
            shas = {}
        for task, made, said in pending:
            sha = shas.get(task.commit or "")
            origin = f"the manifest now asks {_asked(task, sha)}" if sha != made["sha"] else None
            if origin is not None or said:
                found[task.id] = (made, "; ".join(filter(None, [origin, *said])))
    return found, [ident for ident in unchecked if ident not in found]
