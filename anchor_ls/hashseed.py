"""Runs of anchor-ls give the same graph byte for byte, whatever PYTHONHASHSEED says.

The binder cuts a value short where it meets it again inside its own evaluation (a
cycle of definitions), and which member of a cycle it enters first follows the order
in which a set of values is walked: the order of str hashes. Under a random seed two
runs over the standard library differed by three edges (turtle.py, RawTurtle.clone).
The programs therefore run again under seed 0 before they read anything.
"""

from __future__ import annotations

import os
import sys


def rerun_with_fixed_seed(module: str) -> None:
    """Replace this process (same pid, same stdio: an editor's pipes stay connected)
    with `python -m module ARGS` under PYTHONHASHSEED=0, unless it already runs so.
    Where exec is not POSIX's (Windows starts a new process), nothing happens."""
    if os.environ.get("PYTHONHASHSEED") == "0" or os.name != "posix":
        return
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    argv = [sys.executable, "-m", module, *sys.argv[1:]]
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, argv, env)
    except OSError:  # no interpreter to run again: go on under this seed
        return
