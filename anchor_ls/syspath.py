"""The programs (the CLI and the server) import nothing from the folder they run in.

Editors start the server with the working directory at the repository, and people run the
CLI there. `python -m` and `python -c` put that folder first on sys.path, so a repository's
`json/` or `multiprocessing/` would run in the program; a spawned worker (and
multiprocessing's resource tracker) starts as `python -c ...` there, and a worker then takes
the parent's sys.path. So the programs drop the working directory from their sys.path first
thing, and every interpreter they start gets PYTHONSAFEPATH=1, which keeps it off there too
(as -P does; -I would also drop the rest of the environment, PYTHONSAFEPATH included).

The one exception is a checkout of anchor-ls run in place (`python -m anchor_ls` in the
folder that holds the package): there the working directory is where the program itself
came from, so it stays.
"""

import os
import sys

SAFE_PATH = "PYTHONSAFEPATH"


def runs_in_place() -> bool:
    """Whether anchor_ls was imported from the working directory."""
    import anchor_ls

    home = os.path.dirname(os.path.dirname(os.path.realpath(anchor_ls.__file__ or "")))
    try:
        return home == os.path.realpath(os.getcwd())
    except OSError:  # no working directory (removed): nothing can be imported from it
        return False


def keep_repository_off_path() -> None:
    """Drop '' and the working directory from sys.path and start every interpreter of this
    process (a worker, multiprocessing's helpers) without it, unless the program runs in place."""
    if runs_in_place():
        return
    try:
        here = os.path.realpath(os.getcwd())
    except OSError:
        here = None
    sys.path[:] = [p for p in sys.path if p and os.path.realpath(p) != here]
    start_children_safe()


def start_children_safe() -> None:
    """Interpreters this process starts from now on put no working directory on sys.path."""
    if os.environ.get(SAFE_PATH) != "1":
        os.environ[SAFE_PATH] = "1"
