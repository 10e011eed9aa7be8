"""The recovery decision: one pure function from (phase, event, check results) to what to do.

Rows come from the design's decision table (§5) and graded recovery levels (§6); the first
matching row of RULES wins. Level 1 restarts the training process in place, Level 2 the
container, Level 3 isolates the node (agent exits 1, node into ErrorNodes). Slow nodes and
hangs are marked, not killed, and evicted at the next checkpoint once the master decides
hangWithQuit (an event `checkpoint_done` with `should_quit`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from aegis.checks.result import CheckResult, CheckType


class Phase(StrEnum):
    """The CR phases, verbatim from the spec."""

    PENDING = "Pending"
    BOOT_CHECKING = "BootChecking"
    RUN_COMMAND = "RunCommand"
    RESTARTING = "Restarting"
    TROUBLESHOOTING = "Troubleshooting"
    SUCCEED = "Succeed"
    FAILED = "Failed"


class EventKind(StrEnum):
    """What the agent observed."""

    PROCESS_EXITED = "process_exited"  # the training command exited; exit_code says how
    COMMAND_ERROR = "command_error"  # the command could not run (wrong command)
    GPU_LOST = "gpu_lost"
    POD_DELETED = "pod_deleted"  # the pod was force-deleted or restarted
    NETWORK_CUT = "network_cut"  # master/NATS unreachable
    HANG = "hang"  # no progress past the threshold
    SLOW = "slow"  # performance clearly below the peers'
    CHECKS_DONE = "checks_done"  # a bootcheck or troubleshoot round finished
    CHECKPOINT_DONE = "checkpoint_done"  # a checkpoint is safely stored (a safe point)


@dataclass(frozen=True)
class Event:
    """One observation; `exit_code` for process_exited, `should_quit` for checkpoint_done."""

    kind: EventKind
    exit_code: int | None = None
    should_quit: bool = False

    @classmethod
    def process_exited(cls, code: int) -> Event:
        """The training process exited with `code`."""
        return cls(EventKind.PROCESS_EXITED, exit_code=code)


class Action(StrEnum):
    """What the agent (and master) should do."""

    CONTINUE = "continue"  # carry on: run / keep running the command
    FINISH = "finish"  # the command succeeded: report Finish
    TROUBLESHOOT = "troubleshoot"  # report Error, stop training, run the seven checks
    RESTART_PROCESS = "restart_process"  # Level 1
    RESTART_CONTAINER = "restart_container"  # Level 2
    ISOLATE_NODE = "isolate_node"  # Level 3: exit 1, node into ErrorNodes when error_node
    MARK_SLOW = "mark_slow"  # mark (hang), do not kill; evict after the next checkpoint
    RUN_INDEPENDENT = "run_independent"  # cut off before bootcheck: a plain training job
    FAIL = "fail"  # the job failed (retries exhausted): stop


_LEVELS = {Action.RESTART_PROCESS: 1, Action.RESTART_CONTAINER: 2, Action.ISOLATE_NODE: 3}
_FAILURES = frozenset(
    {
        Action.TROUBLESHOOT,
        Action.RESTART_PROCESS,
        Action.RESTART_CONTAINER,
        Action.ISOLATE_NODE,
        Action.MARK_SLOW,
    }
)


@dataclass(frozen=True)
class Decision:
    """The chosen action, why, and its side effects."""

    action: Action
    reason: str
    error_node: bool = False  # report this node in ErrorNodes
    report: bool = True  # False: cut off, the result stays in the pod
    count_retry: bool = False  # a failure during RunCommand counts one retry

    @property
    def level(self) -> int | None:
        """Recovery level 1-3, or None for non-restart actions."""
        return _LEVELS.get(self.action)

    @property
    def exit_code(self) -> int | None:
        """The agent's exit code when it must exit (Level 3)."""
        return 1 if self.action is Action.ISOLATE_NODE else None


@dataclass(frozen=True)
class Facts:
    """What the rules look at: failed checks grouped by what they mean."""

    phase: Phase
    event: Event
    hardware: tuple[str, ...]
    runtime: tuple[str, ...]
    io: tuple[str, ...]
    connection: tuple[str, ...]
    slow: tuple[str, ...]
    previous: Action | None

    @property
    def healthy(self) -> bool:
        """No check failed that says the node itself is broken."""
        return not (self.hardware or self.runtime or self.io or self.connection)


@dataclass(frozen=True)
class Rule:
    """One row: phases x events x condition -> action, reason (formatted with the Facts)."""

    phases: frozenset[Phase] | None
    kinds: frozenset[EventKind] | None
    when: Callable[[Facts], bool]
    action: Action
    reason: str
    error_node: bool = False
    report: bool = True

    def matches(self, f: Facts) -> bool:
        """Whether this row applies."""
        return (
            (self.phases is None or f.phase in self.phases)
            and (self.kinds is None or f.event.kind in self.kinds)
            and self.when(f)
        )


def always(_: Facts) -> bool:
    """Unconditionally."""
    return True


def hardware(f: Facts) -> bool:
    """A GPU or RDMA check failed (or the GPU was reported lost)."""
    return bool(f.hardware)


def unhealthy(f: Facts) -> bool:
    """Some check failed that says this node is broken (not merely slow)."""
    return not f.healthy


def exited_ok(f: Facts) -> bool:
    """The command exited 0."""
    return f.event.exit_code == 0


def should_quit(f: Facts) -> bool:
    """The master decided hangWithQuit for this node."""
    return f.event.should_quit


def level1_failed(f: Facts) -> bool:
    """The previous decision was a Level 1 restart, and here we are again."""
    return f.previous is Action.RESTART_PROCESS


def _failed_in(field: str) -> Callable[[Facts], bool]:
    return lambda f: bool(getattr(f, field))


def _ph(*p: Phase) -> frozenset[Phase]:
    return frozenset(p)


def _ev(*k: EventKind) -> frozenset[EventKind]:
    return frozenset(k)


P, E, A = Phase, EventKind, Action
ANY = None
DIAGNOSING = _ph(P.TROUBLESHOOTING, P.RESTARTING)
NOT_RUNNING = _ph(P.PENDING, P.BOOT_CHECKING, P.TROUBLESHOOTING, P.RESTARTING)  # no command
BOOT, RUN = _ph(P.BOOT_CHECKING), _ph(P.RUN_COMMAND)
SLOWNESS = _ev(E.HANG, E.SLOW)

# fmt: off
RULES: tuple[Rule, ...] = (
    Rule(_ph(P.SUCCEED), ANY, always, A.CONTINUE, "the job succeeded: late event ignored"),
    Rule(_ph(P.FAILED), ANY, always, A.FAIL, "the job failed (retries exhausted): stop"),
    Rule(ANY, _ev(E.CHECKPOINT_DONE), should_quit, A.ISOLATE_NODE,
         "marked slow and the checkpoint is safe: evict, blacklist the node", error_node=True),
    Rule(ANY, _ev(E.CHECKPOINT_DONE), always, A.CONTINUE, "checkpoint noted: nothing to do"),
    # Hardware first: a lost GPU or a dead RDMA port while no command runs isolates the node.
    Rule(NOT_RUNNING, _ev(E.GPU_LOST), always, A.ISOLATE_NODE,
         "GPU lost during {phase}: exit 1, report ErrorNode", error_node=True),
    Rule(NOT_RUNNING, ANY, hardware, A.ISOLATE_NODE,
         "hardware check(s) {hardware} failed during {phase}: exit 1, report ErrorNode",
         error_node=True),
    # Before and during bootcheck.
    Rule(_ph(P.PENDING, P.BOOT_CHECKING), _ev(E.NETWORK_CUT), always, A.RUN_INDEPENDENT,
         "cut off during {phase}: fall back to a plain training job"),
    Rule(NOT_RUNNING, _ev(E.POD_DELETED), always, A.RESTART_CONTAINER,
         "pod restarted during {phase}: rejoin after the restart, not counted"),
    Rule(_ph(P.PENDING), ANY, always, A.CONTINUE, "nothing runs yet: {event} ignored"),
    Rule(BOOT, SLOWNESS, always, A.MARK_SLOW,
         "{event}: mark, do not kill; evict after the next checkpoint"),
    Rule(BOOT, _ev(E.COMMAND_ERROR), always, A.CONTINUE,
         "checks pass; the command's error is shown as its result"),
    Rule(BOOT, ANY, unhealthy, A.ISOLATE_NODE, "bootcheck failed ({failed}): exit and reschedule"),
    Rule(BOOT, ANY, always, A.CONTINUE, "bootcheck passed: run the command"),
    # RunCommand: every failure counts one retry.
    Rule(RUN, _ev(E.PROCESS_EXITED), exited_ok, A.FINISH, "the command finished (exit 0)"),
    Rule(RUN, _ev(E.POD_DELETED), always, A.RESTART_CONTAINER,
         "pod force-deleted: count one retry, rerun after the restart"),
    Rule(RUN, _ev(E.NETWORK_CUT), always, A.CONTINUE,
         "cut off: keep running; the result stays in the pod", report=False),
    Rule(RUN, SLOWNESS, always, A.MARK_SLOW,
         "{event}: mark, do not kill; evict after the next checkpoint"),
    Rule(RUN, _ev(E.PROCESS_EXITED, E.COMMAND_ERROR, E.GPU_LOST), always, A.TROUBLESHOOT,
         "{event} during RunCommand: report failure, troubleshoot"),
    Rule(RUN, ANY, unhealthy, A.TROUBLESHOOT,
         "check(s) {failed} failed during RunCommand: report failure, troubleshoot"),
    Rule(RUN, ANY, _failed_in("slow"), A.MARK_SLOW,
         "check(s) {slow} failed: mark slow, evict after the next checkpoint"),
    Rule(RUN, ANY, always, A.CONTINUE, "nothing to do: keep running"),
    # Troubleshooting / Restarting: graded recovery (hardware was handled above).
    Rule(DIAGNOSING, _ev(E.NETWORK_CUT), always, A.RESTART_PROCESS,
         "cut off, node healthy: continue with the command; cannot report", report=False),
    Rule(DIAGNOSING, _ev(E.PROCESS_EXITED), exited_ok, A.FINISH, "the command finished (exit 0)"),
    Rule(DIAGNOSING, ANY, _failed_in("runtime"), A.RESTART_CONTAINER,
         "runtime/environment broken ({runtime}): restart the container"),
    Rule(DIAGNOSING, ANY, _failed_in("io"), A.RESTART_CONTAINER,
         "storage unusable ({io}): restart the container (remounts its volumes)"),
    Rule(DIAGNOSING, ANY, _failed_in("connection"), A.RESTART_CONTAINER,
         "collective cannot connect ({connection}) though this node's hardware passes: "
         "restart the container"),
    Rule(DIAGNOSING, SLOWNESS, always, A.MARK_SLOW,
         "{event}: mark, keep training; evict after the next checkpoint"),
    Rule(DIAGNOSING, ANY, _failed_in("slow"), A.MARK_SLOW,
         "slow node ({slow}): mark, keep training; evict after the next checkpoint"),
    Rule(DIAGNOSING, _ev(E.COMMAND_ERROR), always, A.RESTART_PROCESS,
         "command error on a healthy node: continue with the command"),
    Rule(DIAGNOSING, ANY, level1_failed, A.RESTART_CONTAINER,
         "restarting the process in place did not help: restart the container"),
    Rule(DIAGNOSING, ANY, always, A.RESTART_PROCESS,
         "all hardware checks pass: restart the training process in place"),
)
# fmt: on

_HARDWARE = (CheckType.GPU, CheckType.RDMA)
_RUNTIME = (CheckType.RUNTIME, CheckType.ENV)
_IO = (CheckType.IO,)
_CONNECTION = (CheckType.ALLREDUCE_CONNECTION, CheckType.COLLECTIVE)
_SLOW = (CheckType.ALLREDUCE_PERFORMANCE, CheckType.HANG)


def decide(
    phase: Phase | str,
    event: Event | EventKind | str,
    results: Sequence[CheckResult] = (),
    *,
    previous: Action | None = None,
) -> Decision:
    """What to do after `event` in `phase`, given this node's check results (pure)."""
    if not isinstance(event, Event):
        event = Event(EventKind(event))
    facts = _facts(Phase(phase), event, results, previous)
    rule = next(r for r in RULES if r.matches(facts))
    return Decision(
        action=rule.action,
        reason=rule.reason.format(**_words(facts)),
        error_node=rule.error_node,
        report=rule.report and event.kind is not EventKind.NETWORK_CUT,
        count_retry=facts.phase is Phase.RUN_COMMAND and rule.action in _FAILURES,
    )


def _facts(
    phase: Phase, event: Event, results: Sequence[CheckResult], previous: Action | None
) -> Facts:
    bad = [r.check_type for r in results if r.failed]
    if event.kind is EventKind.GPU_LOST and CheckType.GPU not in bad:
        bad.append(CheckType.GPU)

    def pick(types: tuple[CheckType, ...]) -> tuple[str, ...]:
        return tuple(str(c) for c in bad if c in types)

    return Facts(
        phase,
        event,
        pick(_HARDWARE),
        pick(_RUNTIME),
        pick(_IO),
        pick(_CONNECTION),
        pick(_SLOW),
        previous,
    )


def _words(f: Facts) -> dict[str, str]:
    failed = f.hardware + f.runtime + f.io + f.connection + f.slow
    event = str(f.event.kind)
    if f.event.exit_code is not None:
        event = f"{event}({f.event.exit_code})"
    return {
        "phase": str(f.phase),
        "event": event,
        "hardware": ", ".join(f.hardware),
        "runtime": ", ".join(f.runtime),
        "io": ", ".join(f.io),
        "connection": ", ".join(f.connection),
        "slow": ", ".join(f.slow),
        "failed": ", ".join(failed) or "none",
    }
