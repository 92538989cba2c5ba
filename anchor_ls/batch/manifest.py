"""The batch manifest: JSON Lines, one task a line, read with a clear error per bad line.

A bad line (not JSON, a missing field, an id that is no safe folder name, a duplicate id)
does not stop the run: it becomes a failed result and the other lines go on.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

POLICIES = ("auto", "topo", "inv", "dense")
# bytes of the id's UTF-8, the folder name's: with the ".XXXXXXXX" of its folder under
# DIR/.partial it stays under the 255 bytes of a file name
MAX_ID_LENGTH = 200
RESULTS_FILE = "results.jsonl"  # DIR/results.jsonl: no task's folder
_ID_FORBIDDEN = frozenset('/\\\0:*?"<>|')
# The fields of a line besides its origin (repo and commit, or source) that change the
# bytes of its snapshot: an `ok` line records them (chain.made_with) and a re-run compares
# them (results.stale). A new such field belongs here.
SNAPSHOT_FIELDS = ("policy", "max_items", "cross_file", "tests", "python")
_KNOWN = frozenset({"id", "repo", "commit", "source", *SNAPSHOT_FIELDS})


class ManifestError(Exception):
    """The manifest cannot be read at all (missing, unreadable, not UTF-8)."""


@dataclass(frozen=True, slots=True)
class Task:
    """One snapshot to make: `repo` at `commit`, or the folder `source` as it is."""

    id: str
    line: int
    repo: str | None = None
    commit: str | None = None
    source: str | None = None
    policy: str = "auto"
    max_items: int = 8
    cross_file: bool = False
    tests: bool = False
    # the interpreter whose packages the index reads, as `tag --python` (None: the one
    # anchor-ls runs in); `batch --python` gives it to the lines that name none
    python: str | None = None
    # DIR/<id> holds a snapshot made from what another line asked (results.stale): the new
    # one takes its place (set by the run, never read from a manifest line)
    replace: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "line": self.line,
            "repo": self.repo,
            "commit": self.commit,
            "source": self.source,
            "policy": self.policy,
            "max_items": self.max_items,
            "cross_file": self.cross_file,
            "tests": self.tests,
            "python": self.python,
        }


@dataclass(frozen=True, slots=True)
class Rejected:
    """A manifest line that is no task: its id when one could be read, and why."""

    id: str
    line: int
    error: str


def id_problem(ident: object) -> str | None:
    """Why `ident` cannot name a folder of the output (None when it can)."""
    if not isinstance(ident, str) or not ident:
        return "id must be a non-empty string"
    try:
        size = len(ident.encode("utf-8"))
    except UnicodeEncodeError:  # "\ud800" in the JSON: no folder name, no results line
        return f"id {ident!r} is not valid Unicode (it holds a lone surrogate)"
    if size > MAX_ID_LENGTH:
        return f"id is longer than {MAX_ID_LENGTH} bytes (UTF-8)"
    bad = sorted({c for c in ident if c in _ID_FORBIDDEN or ord(c) < 32})
    if bad:
        return f"id {ident!r} is not a safe folder name (it holds {''.join(bad)!r})"
    if ident in (".", ".."):
        return f"id {ident!r} is not a safe folder name"
    if ident.startswith("."):
        return f"id {ident!r} starts with '.' (reserved for the run's own folders)"
    if ident != ident.strip():
        return f"id {ident!r} starts or ends with white space"
    if ident == RESULTS_FILE:
        return f"id {ident!r} is the name of the results file"
    return None


def _valid_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _task(raw: Any, line: int) -> Task:
    """A Task from one parsed line; ValueError says what is wrong with it."""
    if not isinstance(raw, dict):
        raise ValueError("not a JSON object")
    for key, value in raw.items():
        for text in (key, value):
            if isinstance(text, str) and not _valid_unicode(text):
                raise ValueError(f"{key!r} is not valid Unicode (it holds a lone surrogate)")
    unknown = sorted(set(raw) - _KNOWN)
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(unknown)}")
    problem = id_problem(raw.get("id"))
    if problem:
        raise ValueError(problem)
    has_repo = "repo" in raw or "commit" in raw
    if has_repo == ("source" in raw):
        raise ValueError('give either "repo" and "commit", or "source"')
    fields: dict[str, Any] = {}
    names = ("repo", "commit") if has_repo else ("source",)
    for name in names:
        if name not in raw:
            raise ValueError(f'"{name}" is missing')
        value = raw[name]
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f'"{name}" must be a non-empty string')
        # paths count from the working folder, as on the command line; workers (Ray's)
        # run elsewhere, so they get them absolute
        fields[name] = value if name == "commit" else os.path.abspath(value)
    policy = raw.get("policy", "auto")
    if policy not in POLICIES:
        raise ValueError(f'"policy" must be one of {", ".join(POLICIES)}, not {policy!r}')
    max_items = raw.get("max_items", 8)
    if isinstance(max_items, bool) or not isinstance(max_items, int) or max_items < 0:
        raise ValueError(f'"max_items" must be a whole number >= 0, not {max_items!r}')
    for flag in ("cross_file", "tests"):
        if not isinstance(raw.get(flag, False), bool):
            raise ValueError(f'"{flag}" must be true or false')
    if "python" in raw:
        python = raw["python"]
        if not isinstance(python, str) or not python.strip():
            raise ValueError('"python" must be the path of an interpreter (a non-empty string)')
        # not resolved: a venv's python is a link to the base one, whose packages differ
        fields["python"] = os.path.abspath(python)
    return Task(
        id=raw["id"],
        line=line,
        policy=policy,
        max_items=max_items,
        cross_file=raw.get("cross_file", False),
        tests=raw.get("tests", False),
        **fields,
    )


def parse_lines(lines: list[str]) -> tuple[list[Task], list[Rejected]]:
    """Tasks in manifest order, and the lines that are none (blank lines are skipped)."""
    tasks: list[Task] = []
    rejected: list[Rejected] = []
    first: dict[str, int] = {}
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        raw: Any = None
        try:
            raw = json.loads(text)
            task = _task(raw, number)
        except ValueError as err:  # json.JSONDecodeError is one
            ident = raw.get("id") if isinstance(raw, dict) else None
            shown = ident if isinstance(ident, str) and ident else f"line {number}"
            rejected.append(Rejected(shown, number, f"manifest line {number}: {err}"))
            continue
        if task.id in first:
            message = f"manifest line {number}: duplicate id (first on line {first[task.id]})"
            rejected.append(Rejected(task.id, number, message))
            continue
        first[task.id] = number
        tasks.append(task)
    return tasks, rejected


def read_manifest(path: str | Path) -> tuple[list[Task], list[Rejected]]:
    """parse_lines of the file at path; ManifestError when it cannot be read."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")  # a BOM (Notepad) is no text
    except FileNotFoundError:
        raise ManifestError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ManifestError(f"{path}: a folder, not a manifest file") from None
    except UnicodeDecodeError as err:
        raise ManifestError(f"{path}: not UTF-8 ({err.reason} at byte {err.start})") from None
    except OSError as err:
        raise ManifestError(f"{path}: unreadable ({err.strerror or err})") from None
    # JSON Lines ends a line at "\n" only: str.splitlines also cuts at U+2028, U+0085 and
    # others, which a JSON string may hold as they are (json.dumps(ensure_ascii=False))
    return parse_lines(text.split("\n"))
