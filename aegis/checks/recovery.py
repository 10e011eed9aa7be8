"""The recovery level of a check round: `classify(results) -> Verdict`, small, pure and total.

Each check type says what its failure means (`FAILURE_LEVEL`); a round's level is the highest
among its failed checks, `Level.PROCESS` when none failed. A check that does not apply
(`applicable=False`) never fails, and a failed check of a type this table does not know is
ignored, as a passing one is.

- `Level.PROCESS`: the node is healthy. After a troubleshoot round the agent reports Finish
  and the training process restarts in place (Level 1); after a bootcheck the command runs.
  A failed allreduce_performance or hang check is no recovery level but the slow-node path:
  the agent reports Finish, then Hang for the running command (agent_core's `slow_note`).
- `Level.CONTAINER`: runtime, storage or connection broken while the hardware passes: the
  agent exits 76 without a report and its container restarts (Level 2); the agent escalates
  to `NODE` after `MAX_CONTAINER_RESTARTS` (agent_core).
- `Level.NODE`: a GPU or RDMA fault, or a failed bootcheck (env, collective: this node cannot
  start the job): the agent reports Error and exits 1; the node goes to ErrorNodes (Level 3).
  env and collective run only in a bootcheck, runtime, io and allreduce_connection only in a
  troubleshoot round, so one table without the phase gives each round its rules
  (docs/design.md, "Checks and graded recovery").

Why the agent decides the level and not the spec: the controller's state depends only on
which spec action follows a round, the agent's `agentWork` with outcome Finish (PROCESS) or
Error (NODE), or for CONTAINER a container restart that the controller sees as a pod restart
(`envPodRestart`); never on why. The spec leaves that outcome to the agent as an input, so
which level a set of failed checks calls for is agent policy, decided here in one place and
tested exhaustively (tests/checks/test_recovery.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum

from aegis.checks.result import CheckResult, CheckType


class Level(IntEnum):
    """Graded recovery; a higher level subsumes the lower ones."""

    PROCESS = 1  # node healthy: continue / restart the training process in place
    CONTAINER = 2  # runtime/environment/storage/connection broken on healthy hardware
    NODE = 3  # GPU or RDMA hardware fault (or a failed bootcheck): isolate the node


@dataclass(frozen=True)
class Verdict:
    """A round's recovery level and why (names the failed checks that decided it)."""

    level: Level
    reason: str


FAILURE_LEVEL: Mapping[CheckType, Level] = {
    CheckType.GPU: Level.NODE,
    CheckType.RDMA: Level.NODE,
    CheckType.BURN: Level.NODE,  # operator-only, never in a round; a failed burn is a GPU fault
    CheckType.ENV: Level.NODE,  # bootcheck: exit and reschedule
    CheckType.COLLECTIVE: Level.NODE,  # bootcheck: exit and reschedule
    CheckType.RUNTIME: Level.CONTAINER,
    CheckType.IO: Level.CONTAINER,  # a new container remounts its volumes
    CheckType.ALLREDUCE_CONNECTION: Level.CONTAINER,  # this node's hardware passes
    CheckType.ALLREDUCE_PERFORMANCE: Level.PROCESS,  # slow-node path
    CheckType.HANG: Level.PROCESS,  # slow-node path
}
_CONSEQUENCE = {
    Level.NODE: "isolate the node (exit 1, reschedule elsewhere)",
    Level.CONTAINER: "restart the container (its hardware passes)",
    Level.PROCESS: "slow node: mark, keep training; evict after the next checkpoint",
}


def classify(results: Sequence[CheckResult]) -> Verdict:
    """The recovery level this round's results call for (pure, total)."""
    failed = [r.check_type for r in results if r.failed and r.check_type in FAILURE_LEVEL]
    if not failed:
        return Verdict(Level.PROCESS, "all checks pass: continue with the command")
    level = max(FAILURE_LEVEL[CheckType(c)] for c in failed)
    deciding = sorted({c for c in failed if FAILURE_LEVEL[CheckType(c)] is level})
    return Verdict(level, f"{', '.join(deciding)} failed: {_CONSEQUENCE[level]}")
