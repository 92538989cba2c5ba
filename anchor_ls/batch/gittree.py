"""A commit's tree written into a scratch folder with git plumbing, and moved to the next.

Only `git -C REPO` plumbing runs (rev-parse, cat-file, ls-tree, diff-tree): nothing reads
or writes the repository's work tree or its index file, no hook, filter or fsmonitor is
started. Files hold the blobs as committed (no smudge filters, no line-end conversion);
a submodule is an empty folder, as a checkout without `--recurse-submodules` leaves it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

_GIT_ENV_DROP = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY")
# Nothing git could start on a repository's say: no fsmonitor hook, no pager.
_SAFE_CONFIG = ("-c", "core.fsmonitor=false", "-c", "core.pager=cat")
_LINK, _GITLINK, _EXECUTABLE = "120000", "160000", "100755"


class GitError(Exception):
    """A git command failed: an unreadable repository, a missing commit..."""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV_DROP}
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_OPTIONAL_LOCKS"] = "0"
    return env


def git(repo: str | Path, *args: str, data: bytes | None = None) -> bytes:
    """stdout of `git -C repo args`; GitError with git's own message when it fails."""
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), *_SAFE_CONFIG, *args],
            input=data,
            capture_output=True,
            env=_env(),
            check=False,
        )
    except OSError as err:
        raise GitError(f"git could not be started: {err.strerror or err}") from None
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(said[-1] if said else f"git {args[0]} failed ({done.returncode})")
    return done.stdout


def repository_problem(repo: str | Path) -> str | None:
    """Why repo is no readable git repository (None when it is one)."""
    if not Path(repo).is_dir():
        return f"repository {repo}: no such folder"
    try:
        git(repo, "rev-parse", "--git-dir")
    except GitError as err:
        return f"repository {repo}: {err}"
    return None


def resolve(repo: str | Path, commits: Sequence[str]) -> dict[str, str | None]:
    """Each name's full commit id, or None where the repository has no such commit."""
    names = list(dict.fromkeys(commits))
    asked = "".join(f"{n}^{{commit}}\n" for n in names if "\n" not in n).encode()
    lines = git(repo, "cat-file", "--batch-check=%(objectname) %(objecttype)", data=asked)
    found: dict[str, str | None] = dict.fromkeys(names)
    answers = iter(lines.decode("utf-8", "replace").splitlines())
    for name in names:
        if "\n" in name:
            continue
        answer = next(answers, "").split()
        found[name] = answer[0] if len(answer) == 2 and answer[1] == "commit" else None
    return found


def commit_order(repo: str | Path, shas: Iterable[str]) -> dict[str, int]:
    """Each (resolved) commit's place in the history: parents before children, otherwise
    by commit time (`rev-list --date-order`), so a chain steps from a commit to its
    nearest successor."""
    wanted = sorted(set(shas))
    if not wanted:
        return {}
    out = git(
        repo, "rev-list", "--date-order", "--reverse", "--stdin", data="\n".join(wanted).encode()
    )
    keep = set(wanted)
    order: dict[str, int] = {}
    for n, sha in enumerate(out.decode().split()):
        if sha in keep:
            order[sha] = n
    return order


@dataclass(frozen=True, slots=True)
class Entry:
    """One path of a tree: its mode ('100644', '100755', '120000', '160000') and blob."""

    path: str
    mode: str
    blob: str


def _safe(path: str) -> bool:
    """A path git may hold but no checkout writes (.., .git, absolute): left out."""
    parts = path.split("/")
    return all(p not in ("", ".", "..") and p.lower() != ".git" for p in parts)


def tree_entries(repo: str | Path, sha: str) -> list[Entry]:
    out = git(repo, "ls-tree", "-r", "-z", "--full-tree", sha)
    entries = []
    for record in out.split(b"\0"):
        if not record:
            continue
        head, _, path = record.partition(b"\t")
        mode, _kind, blob = head.decode().split(" ")
        entries.append(Entry(os.fsdecode(path), mode, blob))
    return entries


def changes(repo: str | Path, old: str, new: str) -> tuple[list[str], list[Entry]]:
    """(paths gone, entries added or changed) from commit old to commit new."""
    out = git(repo, "diff-tree", "-r", "-z", "--no-renames", "--no-ext-diff", old, new)
    fields = out.split(b"\0")
    gone: list[str] = []
    put: list[Entry] = []
    i = 0
    while i + 1 < len(fields):
        head, path = fields[i].decode(), os.fsdecode(fields[i + 1])
        i += 2
        if not head.startswith(":"):
            continue
        _old_mode, new_mode, _old_blob, new_blob, status = head[1:].split(" ")
        if status == "D":
            gone.append(path)
        else:
            if status == "T":
                gone.append(path)  # a file turned link (or back): written anew
            put.append(Entry(path, new_mode, new_blob))
    return gone, put


class _Blobs:
    """One `git cat-file --batch` process: blob bytes by id, without a process per file."""

    def __init__(self, repo: str | Path) -> None:
        self._proc = subprocess.Popen(
            ["git", "-C", str(repo), *_SAFE_CONFIG, "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_env(),
        )

    def read(self, blob: str) -> bytes:
        proc = self._proc
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(f"{blob}\n".encode())
        proc.stdin.flush()
        header = proc.stdout.readline().decode().split()
        if len(header) != 3:
            raise GitError(f"object {blob} is missing from the repository")
        data = proc.stdout.read(int(header[2]))
        proc.stdout.read(1)  # the newline after the contents
        return data

    def close(self) -> None:
        if self._proc.stdin is not None:
            with contextlib.suppress(OSError):
                self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


@contextlib.contextmanager
def _blobs(repo: str | Path) -> Iterator[_Blobs]:
    reader = _Blobs(repo)
    try:
        yield reader
    finally:
        reader.close()


def _write(root: Path, entry: Entry, blobs: _Blobs) -> None:
    target = root / entry.path
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove(target)
    if entry.mode == _GITLINK:
        target.mkdir()
        return
    data = blobs.read(entry.blob)
    if entry.mode == _LINK:
        os.symlink(os.fsdecode(data), target)
        return
    with open(target, "xb") as handle:  # x: never through a link left in the way
        handle.write(data)
    if entry.mode == _EXECUTABLE:
        os.chmod(target, 0o755)


def _remove(target: Path) -> None:
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.is_dir():
        shutil.rmtree(target)


def _prune_empty(root: Path, path: str) -> None:
    """Remove the folders above path that the removal left empty (as a checkout does)."""
    folder = (root / path).parent
    while folder != root:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def materialize(repo: str | Path, sha: str, root: Path) -> None:
    """Write the tree of commit sha into root (which must not exist yet)."""
    root.mkdir(parents=True)
    entries = [e for e in tree_entries(repo, sha) if _safe(e.path)]
    with _blobs(repo) as blobs:
        for entry in entries:
            _write(root, entry, blobs)


def move(repo: str | Path, old: str, new: str, root: Path) -> set[str]:
    """Turn root, which holds commit old's tree, into commit new's; returns the paths
    changed."""
    gone, put = changes(repo, old, new)
    for path in gone:
        if _safe(path):
            _remove(root / path)
            _prune_empty(root, path)
    with _blobs(repo) as blobs:
        for entry in put:
            if _safe(entry.path):
                _write(root, entry, blobs)
    return set(gone) | {e.path for e in put}
