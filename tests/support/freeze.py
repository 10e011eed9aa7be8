"""Stop a process and know it is stopped: `kill(pid, SIGSTOP)` returns before every thread of
a busy process has stopped (a loaded machine ran nats-server long enough to answer a PING sent
after the kill), so a test that needs it frozen waits until /proc says every thread is."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from .wait import wait_for

STOPPED = {"T", "t"}  # stopped by a signal, stopped by a tracer


def thread_states(pid: int) -> list[str]:
    """The scheduler state of every thread of `pid` (R, S, T, ...); [] once it is gone."""
    states = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            stat = (task / "stat").read_text()
        except OSError:  # the thread ended between the listing and the read
            continue
        states.append(stat.rpartition(")")[2].split()[0])  # the name may hold ") "
    return states


def all_stopped(pid: int) -> bool:
    """True when `pid` has threads and every one of them is stopped."""
    states = thread_states(pid)
    return bool(states) and all(s in STOPPED for s in states)


def freeze(pid: int, timeout: float = 10.0) -> None:
    """SIGSTOP `pid` and return once every thread of it is stopped (AssertionError after
    `timeout` s)."""
    os.kill(pid, signal.SIGSTOP)
    wait_for(lambda: all_stopped(pid), timeout, f"every thread of pid {pid} to stop", 0.002)
