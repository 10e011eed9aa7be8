"""PID 1 duties of the agent: reap orphaned zombies and forward signals, like tini.

Choice: when the agent starts as PID 1 it forks. The parent stays PID 1 and does nothing but
`waitpid(-1)` and forward signals to the child; the child returns and runs the agent (asyncio,
Runner). We do *not* reap inside the agent process: a `waitpid(-1, WNOHANG)` loop there races
asyncio's child watcher (ThreadedChildWatcher in 3.11, PidfdChildWatcher later, both wait for a
specific pid) and steals the training command's exit status — asyncio then reports 255. With
the split, orphans are re-parented to PID 1, which is not the process that waits for the
command, so no status can be stolen; this is the tini model with the agent as tini's child.

Signals: SIGTERM/SIGINT/SIGHUP/SIGQUIT/SIGUSR1/SIGUSR2 sent to PID 1 go to the agent, whose
own handler stops the training process group (Runner.stop: SIGTERM, then SIGKILL). PID 1 exits
with the agent's exit code (128 + N if the agent died of signal N), and the kernel then kills
whatever is left in the container.
"""

from __future__ import annotations

import contextlib
import os
import signal
from types import FrameType

from aegis.runtime.agent.containment import set_child_subreaper

__all__ = ["become_init", "exit_code", "reap_zombies", "set_child_subreaper", "supervise"]

FORWARDED = (
    signal.SIGTERM,
    signal.SIGINT,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
)


def exit_code(status: int) -> int:
    """A wait status as a shell reports it: the exit code, or 128 + N for signal N."""
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


def become_init(force: bool = False) -> None:
    """If this is PID 1 (or `force`), fork and keep the parent as reaper; the child returns.

    Call it first thing in the agent's entry point, before any thread or event loop exists.
    The parent never returns: it exits with the child's exit code. `force` (used by tests and
    by non-PID-1 setups) makes the parent a child subreaper instead of relying on PID 1.
    """
    if os.getpid() != 1 and not force:
        return
    if os.getpid() != 1:
        set_child_subreaper()
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    child = os.fork()
    if child == 0:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        return
    code = 1
    try:
        code = supervise(child, old_mask)
    finally:
        os._exit(code)


def supervise(child: int, unblock: set[int | signal.Signals] | None = None) -> int:
    """Forward signals to `child` and reap every zombie until `child` exits; its exit code."""

    def forward(signum: int, _frame: FrameType | None) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signum)

    for sig in FORWARDED:
        signal.signal(sig, forward)
    if unblock is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, unblock)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:  # no child at all: nothing left to supervise
            return 0
        if pid == child:
            reap_zombies()
            return exit_code(status)


def reap_zombies() -> int:
    """Reap every child that has already exited, without blocking; how many."""
    count = 0
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return count
        if pid == 0:
            return count
        count += 1
