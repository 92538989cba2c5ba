"""The programs (the CLI and the server) give the same graph byte for byte from run to
run, whatever PYTHONHASHSEED says.

The binder cuts a value short where it meets it again inside its own evaluation (a
cycle of definitions), and which member of a cycle it enters first follows the order
in which a set of values is walked: the order of str hashes. Under a random seed two
runs over the standard library differed by three edges (turtle.py, RawTurtle.clone).
The programs therefore run again under seed 0 before they read anything. (Index used
as a library in a process of its own keeps that process's seed; so do Windows runs.)
"""

from __future__ import annotations

import os
import sys

from anchor_ls.syspath import runs_in_place

# Set (to anything) to keep the seed a program was started under: the tests that check
# the engine itself gives the same graph under different seeds.
ANY_SEED = "ANCHOR_LS_ANY_HASH_SEED"


def rerun_with_fixed_seed() -> None:
    """Replace this process (same pid, same stdio: an editor's pipes stay connected)
    with the same command line (interpreter flags and script path included) under
    PYTHONHASHSEED=0, unless it already runs so. Where exec is not POSIX's (Windows starts
    a new process), nothing happens.

    The run again starts with -P (unless the program runs in place, see syspath): its
    working directory, perhaps a repository, is not on its sys.path, and its workers are
    started with -P too (multiprocessing passes the flags on). -I would drop the seed."""
    if os.environ.get("PYTHONHASHSEED") == "0" or os.environ.get(ANY_SEED):
        return
    if os.name != "posix" or not sys.executable:
        return
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    argv = sys.orig_argv
    if not sys.flags.safe_path and not runs_in_place():
        argv = [argv[0], "-P", *argv[1:]]
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, argv, env)
    except OSError:  # no interpreter to run again: go on under this seed
        return
