"""A rank's Python stacks on request, for the hang culprit finder when py-spy cannot be used.

A training process that calls `aegis.progress` or `aegis.checkpoint` registers faulthandler
on STACK_SIGNAL, writing every thread's stack to the file AEGIS_STACK_FILE names, and says so
in `<file>.ready` (its pid): the agent sends the signal only to a process that registered,
since the signal's default action would end any other. Never raises; a no-op outside Aegis.
"""

from __future__ import annotations

import faulthandler
import os
import signal

from aegis.protocol.environment import Var

STACK_SIGNAL = signal.SIGUSR2
READY_SUFFIX = ".ready"

_registered: list[object] = []  # the open stack file, kept alive while registered


def register() -> None:
    """Register the dump (once per process)."""
    path = os.environ.get(Var.STACK_FILE)
    if not path or _registered:
        return
    try:
        f = open(path, "w")  # noqa: SIM115 - faulthandler keeps writing to it
        faulthandler.register(STACK_SIGNAL, file=f, all_threads=True, chain=False)
        with open(path + READY_SUFFIX, "w") as ready:
            ready.write(str(os.getpid()))
        _registered.append(f)
    except (OSError, ValueError, RuntimeError):
        pass  # a stack dump must never break training


def registered_pid(path: str) -> int | None:
    """The pid that registered a dump into `path`, None if none did."""
    try:
        with open(path + READY_SUFFIX) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None
