"""What a fault-log record means for recovery: its kind and, where it starts one, the level.

Shared by the metrics (`aegis_faults_total`, `aegis_recoveries_total`) and the timeline, so
that a dashboard and a picture of the same run count the same things. The controller writes
these messages (aegis.runtime.controller.core: `_fault` callers); this module only reads them.

| message | kind | level |
|---|---|---|
| `error: ...` from the command (`command exited N`) | error | 1 (troubleshoot, restart in place) |
| `error: BootChecking: ...`, `error: Troubleshooting: ...` | check_failed | - (the exit tells) |
| `agent exited 76` | container_restart | 2 |
| `agent exited 1` | reschedule | 3 (node blacklisted), unless the pod was just evicted |
| `agent exited 1` after `slow node evicted ...` | evicted_exit | - (counted as the eviction) |
| `agent exited N` (other N) | pod_lost | - (a pod restart, not a diagnosed recovery) |
| `agent replaced: ...` (rejoined before its exit came) | pod_lost (evicted_exit if evicted) | - |
| `slow node evicted at a checkpoint: ...` | evicted | evict |
| `hang: ...` | hang | - (marked, nothing killed) |
| `hangWithQuit: ...` | hang_quit | - |
| `missed heartbeats ...` | lost | - |
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# the controller's prefix of an eviction's reason (aegis.runtime.controller.core.SLOW_EVICTED)
SLOW_EVICTED_PREFIX = "slow node evicted"
# the controller's record of a pod whose new incarnation joined before its loss was reported
# (ControllerCore.on_ack): the exit code is not known; the launcher's event then adds none
REPLACED_PREFIX = "agent replaced"
KINDS = (
    "error",
    "check_failed",
    "container_restart",
    "reschedule",
    "evicted_exit",
    "pod_lost",
    "evicted",
    "hang",
    "hang_quit",
    "lost",
    "other",
)
# an agent's error reason for a failed check round starts with the round's phase
_CHECK_PHASES = ("BootChecking:", "Troubleshooting:")
_EXIT = re.compile(r"^agent exited (-?\d+)")
NODE_FAULT_EXIT = 1  # aegis.protocol.exitcodes.AgentExit.NODE_FAULT
RESTART_CONTAINER_EXIT = 76  # AgentExit.RESTART_CONTAINER


@dataclass(frozen=True)
class FaultKind:
    """One fault's meaning: its kind and the recovery level it starts (None: none)."""

    kind: str
    level: str | None = None


class FaultClassifier:
    """Classifies a run's fault records in order (it remembers which pods were evicted)."""

    def __init__(self) -> None:
        self._evicted: set[str] = set()

    def _unless_evicted(self, pod: str, kind: FaultKind) -> FaultKind:
        """`kind`, or for the exit of a pod just evicted `evicted_exit` (the eviction counted
        it already)."""
        if pod in self._evicted:
            self._evicted.discard(pod)
            return FaultKind("evicted_exit")
        return kind

    def classify(self, pod: str, message: str, phase: str) -> FaultKind:
        """The kind (and level) of one record: `pod`, its `message`, the job's `phase` (the
        phase after the fault's step; kept for callers, not needed by the rules)."""
        m = _EXIT.match(message)
        if m is not None:
            code = int(m.group(1))
            if code == NODE_FAULT_EXIT:
                return self._unless_evicted(pod, FaultKind("reschedule", "3"))
            self._evicted.discard(pod)
            if code == RESTART_CONTAINER_EXIT:
                return FaultKind("container_restart", "2")
            return FaultKind("pod_lost")
        if message.startswith(REPLACED_PREFIX):
            return self._unless_evicted(pod, FaultKind("pod_lost"))
        if message.startswith(SLOW_EVICTED_PREFIX):
            self._evicted.add(pod)
            return FaultKind("evicted", "evict")
        if message.startswith("error:"):
            reason = message[len("error:") :].lstrip()
            if reason.startswith(_CHECK_PHASES):
                return FaultKind("check_failed")
            return FaultKind("error", "1")
        if message.startswith("hangWithQuit"):
            return FaultKind("hang_quit")
        if message.startswith("hang:"):
            return FaultKind("hang")
        if message.startswith("missed heartbeats"):
            return FaultKind("lost")
        return FaultKind("other")
