"""Every exit code an Aegis process leaves with, and what the launcher does with it."""

from __future__ import annotations

import signal
from collections.abc import Mapping
from enum import IntEnum


class AgentExit(IntEnum):
    """Exit codes of `aegis agent` (what the launcher or the Job Controller does next)."""

    LEFT = 0  # the final order came: nothing to do
    NODE_FAULT = 1  # Level 3: the node is broken; reschedule elsewhere, blacklist the node
    INTERNAL = 70  # the agent itself failed (a bug, sysexits' EX_SOFTWARE): replace it in place
    EVICTED = 75  # the controller declared this incarnation lost: replace it in place
    RESTART_CONTAINER = 76  # Level 2: restart the container in place (hardware is fine)
    NO_CONTROLLER = 77  # no controller within the connect timeout, and --fallback fail
    # the user's command cannot start (sysexits' EX_CONFIG): the job fails at once, no retry,
    # no node blamed (aegis.runtime.agent.command)
    BAD_COMMAND = 78


class ControllerExit(IntEnum):
    """Exit codes of a job's controller process (anything else is a crash: restart it)."""

    SUCCEED = 0
    FAILED = 3
    STOPPED = 4  # the engine stopped the job (an invariant violation or an open choice)
    STORAGE = 5  # the job's state could not be saved for long (a full disk): not restarted


def terminated_by(sig: int) -> int:
    """The shell's exit code of a process stopped by signal `sig` (128 + N)."""
    return 128 + int(sig)


TERMINATED = terminated_by(signal.SIGTERM)  # 143: stopped by SIGTERM (or asked to stop)
# the controller's exit code for each terminal phase of the spec
CONTROLLER_EXIT_BY_PHASE: Mapping[str, ControllerExit] = {
    "Succeed": ControllerExit.SUCCEED,
    "Failed": ControllerExit.FAILED,
}
