"""decide(): the design's decision table (§5) and graded recovery levels (§6), row by row."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aegis.checks.recovery import Action, Event, EventKind, Phase, decide
from aegis.checks.result import TROUBLESHOOT_CHECKS, CheckResult, CheckType

A, P, E = Action, Phase, EventKind
ALL = [c.value for c in CheckType]


def results(*failing: str, not_applicable: Sequence[str] = ()) -> list[CheckResult]:
    """One result per check; `failing` ones failed, `not_applicable` ones did not apply."""
    return [CheckResult(c, c not in failing, "x", 0.0, 0.0, c not in not_applicable) for c in ALL]


EXIT_1 = Event.process_exited(1)
TABLE = [
    # (phase, event, failing checks, action, error_node) -- §5 decision table
    (P.BOOT_CHECKING, E.GPU_LOST, (), A.ISOLATE_NODE, True),
    (P.BOOT_CHECKING, E.CHECKS_DONE, ("gpu",), A.ISOLATE_NODE, True),
    (P.BOOT_CHECKING, E.COMMAND_ERROR, (), A.CONTINUE, False),
    (P.RUN_COMMAND, E.GPU_LOST, (), A.TROUBLESHOOT, False),
    (P.RUN_COMMAND, E.POD_DELETED, (), A.RESTART_CONTAINER, False),
    (P.TROUBLESHOOTING, E.GPU_LOST, (), A.ISOLATE_NODE, True),
    (P.TROUBLESHOOTING, E.COMMAND_ERROR, (), A.RESTART_PROCESS, False),
    (P.TROUBLESHOOTING, E.NETWORK_CUT, ("gpu",), A.ISOLATE_NODE, True),
    (P.TROUBLESHOOTING, E.NETWORK_CUT, (), A.RESTART_PROCESS, False),
    (P.PENDING, E.NETWORK_CUT, (), A.RUN_INDEPENDENT, False),
    # §6 graded recovery after a crash
    (P.TROUBLESHOOTING, EXIT_1, (), A.RESTART_PROCESS, False),
    (P.TROUBLESHOOTING, EXIT_1, ("runtime",), A.RESTART_CONTAINER, False),
    (P.TROUBLESHOOTING, EXIT_1, ("env",), A.RESTART_CONTAINER, False),
    (P.TROUBLESHOOTING, E.CHECKS_DONE, ("rdma",), A.ISOLATE_NODE, True),
    (P.TROUBLESHOOTING, E.CHECKS_DONE, ("gpu", "runtime"), A.ISOLATE_NODE, True),
    (P.TROUBLESHOOTING, E.CHECKS_DONE, ("io",), A.RESTART_CONTAINER, False),
    (P.TROUBLESHOOTING, E.CHECKS_DONE, ("allreduce_connection",), A.RESTART_CONTAINER, False),
    (P.TROUBLESHOOTING, E.CHECKS_DONE, ("allreduce_performance",), A.MARK_SLOW, False),
    (P.TROUBLESHOOTING, EXIT_1, ("hang",), A.MARK_SLOW, False),
    (P.TROUBLESHOOTING, E.POD_DELETED, (), A.RESTART_CONTAINER, False),
    (P.RESTARTING, EXIT_1, (), A.RESTART_PROCESS, False),
    # slow-node path: mark, evict only at a checkpoint once the master says hangWithQuit
    (P.RUN_COMMAND, E.HANG, (), A.MARK_SLOW, False),
    (P.RUN_COMMAND, E.SLOW, (), A.MARK_SLOW, False),
    (P.RUN_COMMAND, Event(E.CHECKPOINT_DONE), (), A.CONTINUE, False),
    (P.RUN_COMMAND, Event(E.CHECKPOINT_DONE, should_quit=True), (), A.ISOLATE_NODE, True),
    # the command itself
    (P.RUN_COMMAND, Event.process_exited(0), (), A.FINISH, False),
    (P.RUN_COMMAND, Event.process_exited(137), (), A.TROUBLESHOOT, False),
    (P.RUN_COMMAND, E.NETWORK_CUT, (), A.CONTINUE, False),
    (P.BOOT_CHECKING, E.CHECKS_DONE, (), A.CONTINUE, False),
    (P.BOOT_CHECKING, E.CHECKS_DONE, ("collective",), A.ISOLATE_NODE, False),
    (P.FAILED, EXIT_1, (), A.FAIL, False),
    (P.SUCCEED, EXIT_1, (), A.CONTINUE, False),
]


@pytest.mark.parametrize(("phase", "event", "failing", "action", "error_node"), TABLE)
def test_decision_table(
    phase: Phase,
    event: Event | EventKind,
    failing: tuple[str, ...],
    action: Action,
    error_node: bool,
) -> None:
    d = decide(phase, event, results(*failing))
    assert (d.action, d.error_node) == (action, error_node), d.reason
    assert d.reason
    assert d.exit_code == (1 if action is A.ISOLATE_NODE else None)


def test_levels_and_counting() -> None:
    assert decide(P.TROUBLESHOOTING, EXIT_1, results()).level == 1
    assert decide(P.TROUBLESHOOTING, EXIT_1, results("runtime")).level == 2
    assert decide(P.TROUBLESHOOTING, EXIT_1, results("gpu")).level == 3
    # only failures while RunCommand count a retry (no double penalty during recovery)
    assert decide(P.RUN_COMMAND, E.POD_DELETED).count_retry
    assert decide(P.RUN_COMMAND, E.HANG).count_retry
    assert not decide(P.TROUBLESHOOTING, E.POD_DELETED).count_retry
    assert not decide(P.RUN_COMMAND, Event.process_exited(0)).count_retry


def test_cut_off_decisions_are_not_reported() -> None:
    assert not decide(P.TROUBLESHOOTING, E.NETWORK_CUT, results()).report
    assert not decide(P.RUN_COMMAND, E.NETWORK_CUT).report
    assert decide(P.RUN_COMMAND, E.GPU_LOST).report


def test_checks_that_do_not_apply_are_healthy() -> None:
    r = results(not_applicable=("gpu", "rdma", "hang"))
    assert decide(P.TROUBLESHOOTING, EXIT_1, r).action is A.RESTART_PROCESS


def test_level_one_that_did_not_help_escalates() -> None:
    d = decide(P.TROUBLESHOOTING, EXIT_1, results(), previous=A.RESTART_PROCESS)
    assert d.action is A.RESTART_CONTAINER and d.level == 2
    assert decide("Troubleshooting", "command_error", results()).action is A.RESTART_PROCESS


@given(
    st.sampled_from(list(Phase)),
    st.sampled_from(list(EventKind)),
    st.sets(st.sampled_from([c.value for c in TROUBLESHOOT_CHECKS])),
    st.one_of(st.none(), st.sampled_from(list(Action))),
)
def test_decide_is_total_and_consistent(
    phase: Phase, kind: EventKind, failing: set[str], previous: Action | None
) -> None:
    d = decide(phase, Event(kind, exit_code=1), results(*failing), previous=previous)
    assert d.reason and "{" not in d.reason
    assert not d.count_retry or phase is P.RUN_COMMAND
    hardware = bool({"gpu", "rdma"} & failing) or kind is E.GPU_LOST
    if (
        hardware
        and phase in (P.BOOT_CHECKING, P.TROUBLESHOOTING, P.RESTARTING)
        and kind is not E.CHECKPOINT_DONE
    ):
        assert d.action is A.ISOLATE_NODE and d.error_node
