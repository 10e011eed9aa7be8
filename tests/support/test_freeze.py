"""`freeze` returns only once every thread of the process is stopped (the bus flush test
failed under load because SIGSTOP's kill() returned while nats-server still ran)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from .freeze import all_stopped, freeze, thread_states
from .wait import wait_for

SPINNERS = """
import threading, sys
def spin():
    while True:
        pass
for _ in range(4):
    threading.Thread(target=spin, daemon=True).start()
print("up", flush=True)
spin()
"""


def test_every_thread_of_a_busy_process_is_stopped_and_runs_again_after_sigcont() -> None:
    proc = subprocess.Popen([sys.executable, "-c", SPINNERS], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "up\n"
        assert len(thread_states(proc.pid)) == 5
        freeze(proc.pid)
        states = thread_states(proc.pid)
        assert len(states) == 5 and set(states) <= {"T", "t"}
        os.kill(proc.pid, signal.SIGCONT)
        wait_for(lambda: not all_stopped(proc.pid), 10, "the threads to run again")
    finally:
        proc.kill()
        proc.wait()


def test_a_process_that_is_gone_is_not_reported_stopped() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert thread_states(proc.pid) == []
    with pytest.raises(ProcessLookupError):
        freeze(proc.pid)
