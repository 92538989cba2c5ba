"""The process that reads library outlines ahead (index/prefetch.py): it runs only on
cores nothing else wants, and the build never waits for one that does not move."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from pathlib import Path

import pytest

from anchor_ls.index import Environment, prefetch
from anchor_ls.index.prefetch import Prefetch
from anchor_ls.syntax.parse import summarize

FORK = multiprocessing.get_context("fork")


def importing(count: int) -> dict:
    """One repository file that imports count modules from outside."""
    text = "".join(f"import outside_{n}\n" for n in range(count)).encode()
    return {"app.py": summarize("app.py", text)}


def waited(running: Prefetch, seconds: float = 60.0) -> list[int]:
    """What wait() returned, or nothing if it had not returned after seconds."""
    said: list[int] = []
    thread = threading.Thread(target=lambda: said.append(running.wait()), daemon=True)
    thread.start()
    thread.join(seconds)
    return said


@pytest.fixture(autouse=True)
def user_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


def policy_of_prefetch(monkeypatch: pytest.MonkeyPatch, load: float) -> list[int]:
    """The scheduling policy a prefetch runs under, started at that load average."""
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(
        prefetch, "prefetch_outlines", lambda _ext, _names: os.sched_getscheduler(0)
    )
    return waited(Prefetch(FORK, Environment(), importing(1), set()))


def test_the_prefetch_runs_only_on_cores_nothing_else_wants(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Resolution keeps both cores of a 2-core machine busy; a prefetch at the same
    priority took a quarter of them (DRF's resolution: 1.2 s alone, 1.5 s beside it)."""
    assert policy_of_prefetch(monkeypatch, 0.5) == [os.SCHED_IDLE]


def test_on_a_machine_already_busy_the_prefetch_runs_at_normal_priority(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With every core busy before it starts, an idle-priority prefetch would never run:
    the build would wait for it, end it and read every library itself."""
    busy = float(os.cpu_count() or 1)
    assert policy_of_prefetch(monkeypatch, busy) == [os.SCHED_OTHER]


def test_a_prefetch_that_follows_no_name_for_a_while_is_ended_and_the_build_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Other programs that keep every core busy leave an idle-priority process no time
    at all: the build does not wait for it (it reads the libraries itself)."""

    def stuck(_externals: object, names: object) -> int:
        for _name in names:  # type: ignore[attr-defined]
            time.sleep(3600)
        return 1

    monkeypatch.setattr(prefetch, "prefetch_outlines", stuck)
    monkeypatch.setattr(prefetch, "STALL_SECONDS", 0.3)
    running = Prefetch(FORK, Environment(), importing(3), set())
    process = running._running[0]  # type: ignore[index]
    assert waited(running) == [0]  # nothing parsed, no answer to take
    assert running.learned is None
    assert not process.is_alive()


def test_a_slow_prefetch_that_keeps_moving_is_waited_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Longer than STALL_SECONDS in all, but a name at least every 0.05 s: its answer."""

    def slow(_externals: object, names: object) -> int:
        taken = 0
        for _name in names:  # type: ignore[attr-defined]
            time.sleep(0.05)
            taken += 1
        return taken

    monkeypatch.setattr(prefetch, "prefetch_outlines", slow)
    monkeypatch.setattr(prefetch, "STALL_SECONDS", 1.0)
    running = Prefetch(FORK, Environment(), importing(50), set())
    assert waited(running) == [50]
