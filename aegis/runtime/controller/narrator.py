"""The console's account of a job as it happens: every fault, what it counts, what comes next.

torchrun says `failed (exitcode: 1) local_rank: 1 (pid: ...)` the moment a rank dies; the
controller says as much, one line per fault, after the event that brought it is applied (so
that "what comes next" is what the spec decided), e.g.

    aegis: local-worker-1 (node rank 1, node-2) failed: local rank 0 (rank 1) failed with exit
      code 1: ValueError: boom -> counted (retry 1 of 3): health checks on every node, then
      every rank restarts in place
    aegis: checks passed: every rank restarts (restart 1, retry 1 of 3)

and, when the job ends, why it failed (`failure_cause`): stopped and by whom, or its retries
exhausted with the last failure and how often it repeated ("the same error 4 times in a
row: ..."). The lines go to stderr, beside the launcher's; the fault log keeps the records.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

from aegis.protocol.faults import FaultKind, FaultRecord
from aegis.protocol.launcher_events import PodLost
from aegis.protocol.outcome import failure_cause, repeated_tail, times

# the record kinds (aegis.protocol.faults) a counted failure can come with
_FAILURE_KINDS = frozenset(
    {
        FaultKind.ERROR,
        FaultKind.RESCHEDULE,
        FaultKind.EVICTED,
        FaultKind.POD_LOST,
        FaultKind.LOST,
        FaultKind.CONTAINER_RESTART,
    }
)
# the kinds a launcher event (an agent's exit) brings: it says where the pod goes next
_EXIT_KINDS = frozenset(
    {FaultKind.RESCHEDULE, FaultKind.POD_LOST, FaultKind.CONTAINER_RESTART, FaultKind.EVICTED_EXIT}
)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class _Seen:
    """What the narrator compares after each event."""

    phase: str
    counted: int
    command_orders: int


class Narrator:
    """Turns the faults an event recorded, and the state it left, into console lines."""

    def __init__(
        self,
        pods: tuple[str, ...],
        max_retry: int,
        write: Callable[[str], None] = _stderr,
    ) -> None:
        self.max_retry = max_retry
        self._rank = {pod: i for i, pod in enumerate(pods)}
        self._write = write
        self._records: list[FaultRecord] = []
        self._launcher: dict[str, PodLost] = {}  # pod -> its last launcher event
        self._seen: _Seen | None = None
        self.failures: list[str] = []  # what each counted failure was, in order
        self.stopped: str | None = None  # why the job was told to quit

    def on_fault(self, record: FaultRecord) -> None:
        """A fault record of the event being handled (ControllerCore's `on_fault`)."""
        self._records.append(record)

    def on_launcher_event(self, event: PodLost) -> None:
        """A launcher event about to be applied: it knows where a pod goes next."""
        self._launcher[event.pod] = event

    def start(self, phase: str, counted: int, command_orders: int) -> None:
        """The state the controller starts from (a resumed job's counts are not news)."""
        self._seen = _Seen(phase, counted, command_orders)

    def after_event(self, phase: str, counted: int, command_orders: int) -> None:
        """Say what the event did: its faults, then a restart of the command if it led to one."""
        before = self._seen or _Seen(phase, counted, command_orders)
        now = _Seen(phase, counted, command_orders)
        self._seen = now
        records, self._records = self._records, []
        newly = now.counted - before.counted
        for record in records:
            kind = record.kind  # as the controller decided it
            counted_here = newly > 0 and kind in _FAILURE_KINDS
            if counted_here:
                newly -= 1
                self.failures.append(_what(record.message))
            line = self._fault_line(record, kind, counted_here, now)
            if line:
                self._write(line)
        if now.command_orders > before.command_orders and before.command_orders > 0:
            self._write(
                f"aegis: checks passed: every rank restarts (restart {now.command_orders - 1}, "
                f"retry {min(now.counted, self.max_retry)} of {self.max_retry})"
            )

    def cause(self, counted: int) -> str:
        """Why the job failed (call once it ended Failed)."""
        return failure_cause(
            stopped=self.stopped, failures=self.failures, counted=counted, max_retry=self.max_retry
        )

    def _who(self, record: FaultRecord) -> str:
        rank = self._rank.get(record.pod)
        where = [f"node rank {rank}"] if rank is not None else []
        if record.node:
            where.append(record.node)
        return f"{record.pod} ({', '.join(where)})" if where else record.pod

    def _fault_line(self, record: FaultRecord, kind: FaultKind, counted: bool, now: _Seen) -> str:
        what = _what(record.message)
        if kind is FaultKind.STOP:
            self.stopped = what
            return f"aegis: job stopped: {what}: the job fails (no retry)"
        if kind in (FaultKind.HANG, FaultKind.HANG_QUIT, FaultKind.SAVE_FAILED, FaultKind.OTHER):
            return f"aegis: {self._who(record)}: {what}"
        if kind is FaultKind.CHECK_FAILED:
            return f"aegis: {self._who(record)}: {what}: the agent leaves its node"
        action = self._next(record, kind, counted, now)
        same = repeated_tail(self.failures) if counted else 0
        again = f" (the same error {times(same)} in a row)" if same > 1 else ""
        return f"aegis: {self._who(record)} {_verb(kind)}: {what}{again} -> {action}"

    def _next(self, record: FaultRecord, kind: FaultKind, counted: bool, now: _Seen) -> str:
        event = self._launcher.pop(record.pod, None) if kind in _EXIT_KINDS else None
        node = record.node or "its node"
        nxt = (event.next_node if event is not None else "") or "a new node"
        if kind in (FaultKind.RESCHEDULE, FaultKind.EVICTED_EXIT):
            move = f"{node} blacklisted, the pod restarts on {nxt} (Level 3)"
        elif kind is FaultKind.CONTAINER_RESTART:
            move = f"its container restarts on {node} (Level 2"
            if event is not None and event.container_restarts:
                move += f", {event.container_restarts} of {event.container_restart_limit}"
            move += ")"
        elif kind in (FaultKind.POD_LOST, FaultKind.LOST):
            move = "the pod is replaced"
        elif kind is FaultKind.EVICTED:
            move = "the pod leaves its node and restarts on another"
        else:
            move = "health checks on every node, then every rank restarts in place"
        if kind is FaultKind.EVICTED_EXIT:
            return f"{move} (counted at its eviction)"
        if not counted:
            return f"{move} (not counted: the job is already recovering)"
        if now.counted > self.max_retry:
            return (
                f"counted: {times(now.counted, 'failure')}, more than --max-retry "
                f"{self.max_retry}: the job fails"
            )
        return f"counted (retry {now.counted} of {self.max_retry}): {move}"


def _what(message: str) -> str:
    """A fault message as people read it, without the word its kind was once told by (the
    kind is the record's field)."""
    for prefix in ("error: ", "stop: "):
        if message.startswith(prefix):
            return message[len(prefix) :]
    return message


def _verb(kind: FaultKind) -> str:
    return {
        FaultKind.ERROR: "failed",
        FaultKind.RESCHEDULE: "left its node",
        FaultKind.EVICTED_EXIT: "left its node after its eviction",
        FaultKind.CONTAINER_RESTART: "restarts its container",
        FaultKind.EVICTED: "was evicted",
        FaultKind.POD_LOST: "restarted",
        FaultKind.LOST: "was lost",
    }.get(kind, "had a fault")
