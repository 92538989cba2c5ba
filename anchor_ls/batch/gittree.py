"""A commit's tree written into a scratch folder with git plumbing, and moved to the next.

Only `git -C REPO` plumbing runs (rev-parse, cat-file, ls-tree, diff-tree, read-tree into
an index file of the scratch folder, checkout-index into the scratch tree): nothing reads
or writes the repository's work tree or its index file, no hook or fsmonitor is started.
Files hold the bytes a checkout writes, by the commit's own `.gitattributes`: line ends
(`eol`, `text`), `working-tree-encoding`, `ident`, the same on every machine (the user's
core.autocrlf, core.eol and attributes file are set aside) and with no filter driver run
(a smudge filter such as git-lfs's leaves its pointer file, as in the blob). A submodule is
an empty folder, as a checkout without `--recurse-submodules` leaves it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

_GIT_ENV_DROP = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY")
# Nothing git could start on a repository's say: no hook (read-tree runs the repository's
# post-index-change hook when it writes even a scratch index file), no fsmonitor hook, no
# pager; and the bytes of a checkout by the commit's attributes alone, whoever's machine
# writes them.
_SAFE_CONFIG = (
    *("-c", "core.hooksPath=/dev/null"),
    *("-c", "core.fsmonitor=false", "-c", "core.pager=cat"),
    *("-c", "core.autocrlf=false", "-c", "core.eol=lf", "-c", "core.symlinks=true"),
    *("-c", "core.attributesFile=/dev/null"),
)


class GitError(Exception):
    """A git command failed: an unreadable repository, a missing commit..."""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV_DROP}
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_OPTIONAL_LOCKS"] = "0"
    return env


def git(
    repo: str | Path,
    *args: str,
    data: bytes | None = None,
    index: Path | None = None,
    config: Sequence[str] = (),
) -> bytes:
    """stdout of `git -C repo args`; GitError with git's own message when it fails.
    index: the index file to use (never the repository's own)."""
    env = _env()
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), *_SAFE_CONFIG, *config, *args],
            input=data,
            capture_output=True,
            env=env,
            check=False,
        )
    except OSError as err:
        raise GitError(f"git could not be started: {err.strerror or err}") from None
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(said[-1] if said else f"git {args[0]} failed ({done.returncode})")
    return done.stdout


def repository_problem(repo: str | Path) -> str | None:
    """Why repo is no readable git repository (None when it is one): the top folder of a
    work tree, its .git folder, or a bare repository. A folder inside one is refused:
    git would find the repository above it, and the snapshot would be the whole
    repository under the folder's name (as would a folder in no repository of its own
    that sits inside one)."""
    if not Path(repo).is_dir():
        return f"repository {repo}: {'not a folder' if Path(repo).exists() else 'no such folder'}"
    try:
        out = git(repo, "rev-parse", "--is-inside-git-dir", "--absolute-git-dir", "--show-prefix")
    except GitError as err:
        return f"repository {repo}: {err}"
    inside_git_dir, git_dir, *rest = os.fsdecode(out).split("\n")
    if inside_git_dir == "true":
        if os.path.realpath(git_dir) != os.path.realpath(repo):
            return f"repository {repo}: a folder inside the git folder {git_dir}, not a repository"
    elif rest and rest[0]:  # the path from the top of the work tree
        try:
            top = os.fsdecode(git(repo, "rev-parse", "--show-toplevel")).strip()
        except GitError:
            top = "another repository"
        return f"repository {repo}: a folder inside {top}, not the top of a repository"
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


def _safe(path: str) -> bool:
    """A path git may hold but no checkout writes (.., .git, absolute): left out."""
    parts = path.split("/")
    return all(p not in ("", ".", "..") and p.lower() != ".git" for p in parts)


def changes(repo: str | Path, old: str, new: str) -> tuple[list[str], list[str]]:
    """(paths gone, paths added or changed) from commit old to commit new."""
    out = git(repo, "diff-tree", "-r", "-z", "--no-renames", "--no-ext-diff", old, new)
    fields = out.split(b"\0")
    gone: list[str] = []
    put: list[str] = []
    i = 0
    while i + 1 < len(fields):
        head, path = fields[i].decode(), os.fsdecode(fields[i + 1])
        i += 2
        if not head.startswith(":"):
            continue
        status = head[1:].split(" ")[4]
        if status == "D":
            gone.append(path)
        else:
            if status == "T":
                gone.append(path)  # a file turned link (or back): written anew
            put.append(path)
    return gone, put


def _no_filters(repo: str | Path) -> tuple[str, ...]:
    """-c settings that turn off every filter driver the configuration defines (a smudge
    or process command: git-lfs, git-crypt...): no program runs on a checkout here."""
    try:
        out = git(repo, "config", "--name-only", "-z", "--get-regexp", r"^filter\.")
    except GitError:  # none defined: git config exits 1
        return ()
    drivers = sorted(
        {n.decode().rpartition(".")[0].partition(".")[2] for n in out.split(b"\0") if n}
    )
    settings: list[str] = []
    for driver in drivers:
        for key, value in (("smudge", ""), ("process", ""), ("required", "false")):
            settings += ["-c", f"filter.{driver}.{key}={value}"]
    return tuple(settings)


def _checkout(repo: str | Path, sha: str, root: Path, paths: Sequence[str] | None) -> None:
    """Write paths (None: all) of commit sha under root as a checkout does, through an
    index file of the scratch folder beside root, never the repository's."""
    index = root.parent / f".{root.name}.gitindex"
    config = _no_filters(repo)
    git(repo, "read-tree", sha, index=index)
    where = ("--work-tree", str(root))
    if paths is None:
        git(repo, *where, "checkout-index", "-a", "-f", index=index, config=config)
    elif paths:
        listed = b"".join(os.fsencode(p) + b"\0" for p in paths)
        args = (*where, "checkout-index", "-f", "-z", "--stdin")
        git(repo, *args, data=listed, index=index, config=config)


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
    _checkout(repo, sha, root, None)


def move(repo: str | Path, old: str, new: str, root: Path) -> set[str]:
    """Turn root, which holds commit old's tree, into commit new's; returns the paths
    changed."""
    gone, put = changes(repo, old, new)
    for path in gone:
        if _safe(path):
            _remove(root / path)
            _prune_empty(root, path)
    if any(path.rpartition("/")[2] == ".gitattributes" for path in (*gone, *put)):
        # the bytes of files the commit did not change change too (eol, text,
        # working-tree-encoding): every file is written again, by the new attributes
        _checkout(repo, new, root, None)
        return set(gone) | set(_tracked(repo, new))
    _checkout(repo, new, root, [path for path in put if _safe(path)])
    return set(gone) | set(put)


def _tracked(repo: str | Path, sha: str) -> list[str]:
    out = git(repo, "ls-tree", "-r", "-z", "--name-only", sha)
    return [os.fsdecode(p) for p in out.split(b"\0") if p]
