"""A rank cannot outlive, or escape, its agent: every process it starts ends with it.

Each rank runs under a reaper of its own (`under_reaper`): a small interpreter, started with
`-I -S` so that nothing of the rank's environment or of aegis is imported into it, that
makes itself a child subreaper (PR_SET_CHILD_SUBREAPER, as tini does as PID 1), starts the
rank's command as its child, and waits for it. Every process the command starts, `setsid`
daemons included, stays its descendant: one whose parent exits is re-parented to the reaper,
not to init. When the command (the rank's main process) exits, the reaper ends every
descendant left, SIGTERM then SIGKILL after `grace` seconds, and exits with the command's
own status: the rank's outcome is decided by its main process, and nothing it left behind
(a `cmd &`, a stray dataloader worker, a daemon holding the rank's output pipes) keeps the
agent waiting for longer than the grace. Signals sent to the reaper alone are forwarded to
the command.

The agent itself is a child subreaper too (`set_child_subreaper`), so a process orphaned by
a reaper killed outright comes to the agent, and `kill_tree` ends a rank's whole tree, found
through /proc, at once.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from aegis.runtime.errors import RunnerError

DESCENDANT_GRACE_S = 3.0  # after a rank's main process exits, what it left gets this long
_PR_SET_CHILD_SUBREAPER = 36

# The reaper's program (argv: grace, then the command). Self-contained: the stdlib only.
REAPER = r"""
import ctypes, os, signal, sys, time

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT,
             signal.SIGUSR1, signal.SIGUSR2)

def tree(root):
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] not in (b"Z", b"X"):
            children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for pid in children.get(todo.pop(), ()):
            found.append(pid)
            todo.append(pid)
    return found

def reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return

def end_descendants(grace):
    me = os.getpid()
    left = tree(me)
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        for pid in left:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + wait
        while True:
            reap()
            left = tree(me)
            if not left or time.monotonic() >= deadline:
                break
            time.sleep(0.02)
        if not left:
            return

def main():
    grace, argv = float(sys.argv[1]), sys.argv[2:]
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    me = os.getpid()
    child = os.fork()
    if child == 0:
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: dies with its reaper
        if os.getppid() != me:
            os._exit(128 + signal.SIGKILL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            os.write(2, f"aegis: cannot start {argv[0]!r}: {exc}\n".encode())
            os._exit(127)

    def forward(signum, frame):
        try:
            if os.getpgid(child) != os.getpgrp():  # in our group it got it already
                os.kill(child, signum)
        except OSError:
            pass

    for sig in FORWARDED:
        signal.signal(sig, forward)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except InterruptedError:
            continue
        except ChildProcessError:
            os._exit(1)
        if pid == child:
            break
    for sig in FORWARDED:
        signal.signal(sig, signal.SIG_IGN)
    end_descendants(grace)
    code = os.waitstatus_to_exitcode(status)
    if code < 0:  # killed by a signal: die the same way, as a shell would report it
        try:
            signal.signal(-code, signal.SIG_DFL)
        except (OSError, ValueError):  # SIGKILL, SIGSTOP: no handler to reset
            pass
        os.kill(me, -code)
        time.sleep(1)
        os._exit(128 - code)
    os._exit(code)

main()
"""


def under_reaper(argv: Sequence[str], grace: float = DESCENDANT_GRACE_S) -> list[str]:
    """`argv` run under a reaper of its own (see the module's docstring)."""
    return [sys.executable, "-I", "-S", "-c", REAPER, repr(float(grace)), *argv]


def set_child_subreaper() -> None:
    """Make orphaned descendants re-parent to this process (Linux), as they do to PID 1."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise RunnerError(f"prctl(PR_SET_CHILD_SUBREAPER) failed: errno {ctypes.get_errno()}")


def _parents(zombies: bool = False) -> dict[int, list[int]]:
    """Processes by parent pid (from /proc; zombies only with `zombies`)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return children
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            fields = Path("/proc", entry, "stat").read_bytes().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if zombies or fields[0] not in (b"Z", b"X"):
            children.setdefault(int(fields[1]), []).append(int(entry))
    return children


def children(parent: int, *, zombies: bool = False) -> list[int]:
    """The live children of `parent` now (and its zombies, with `zombies`)."""
    return _parents(zombies).get(parent, [])


def descendants(root: int) -> list[int]:
    """Every live descendant of `root` now (not `root` itself), parents before children."""
    children = _parents()
    found: list[int] = []
    todo = [root]
    while todo:
        for pid in children.get(todo.pop(), ()):
            found.append(pid)
            todo.append(pid)
    return found


def kill_all(pids: Iterable[int], sig: int) -> None:
    """Send `sig` to each of `pids` (those gone already are skipped)."""
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, sig)


def alive(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie is not)."""
    try:
        state = Path("/proc", str(pid), "stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X")


def kill_tree(root: int, sig: int = signal.SIGKILL) -> list[int]:
    """Send `sig` to `root` and every descendant of it at once; the pids signalled."""
    pids = [root, *descendants(root)]
    kill_all(pids, sig)
    return pids
