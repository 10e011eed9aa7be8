"""classify(): every round the runtime can produce gets its recovery level (docs/design.md,
"Checks and graded recovery")."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import pytest

from aegis.checks.recovery import FAILURE_LEVEL, Level, classify
from aegis.checks.result import (
    BOOTCHECK_CHECKS,
    OPERATOR_CHECKS,
    TROUBLESHOOT_CHECKS,
    CheckResult,
    CheckType,
)
from aegis.runtime.agent.core import MAX_CONTAINER_RESTARTS, RESTART, round_outcome

# Every outcome a CheckResult can carry, plus "the check did not run" (a replacement whose
# peers finished the round runs only the local checks): (applicable, passed) or None.
OUTCOMES: tuple[tuple[bool, bool] | None, ...] = (
    None,
    (True, True),  # pass
    (True, False),  # fail
    (False, True),  # not applicable (checks.result.not_applicable)
    (False, False),  # not applicable, passed unset: still not a failure
)


def rounds(checks: Sequence[CheckType]) -> Iterator[tuple[list[CheckResult], set[str]]]:
    """Every combination of outcomes of `checks`, with the set of checks that failed."""
    for combo in itertools.product(OUTCOMES, repeat=len(checks)):
        results = [
            CheckResult(str(c), passed, "x", 0.0, 0.0, applicable)
            for c, o in zip(checks, combo, strict=True)
            if o is not None
            for applicable, passed in [o]
        ]
        yield results, {str(c) for c, o in zip(checks, combo, strict=True) if o == (True, False)}


def expected(round_: str, failing: set[str]) -> Level:
    """Design §6, stated per round: a slow or hung node is only marked (no recovery level);
    any other failed bootcheck excludes the node; in troubleshooting a GPU or RDMA fault
    isolates the node and any other failure restarts the container."""
    if not failing - {"allreduce_performance", "hang"}:
        return Level.PROCESS
    if round_ == "bootcheck" or failing & {"gpu", "rdma"}:
        return Level.NODE
    return Level.CONTAINER


@pytest.mark.parametrize(
    ("round_", "checks"), [("bootcheck", BOOTCHECK_CHECKS), ("troubleshoot", TROUBLESHOOT_CHECKS)]
)
def test_every_round_gets_the_designs_level(round_: str, checks: Sequence[CheckType]) -> None:
    seen = set()
    for results, failing in rounds(checks):
        verdict = classify(results)
        assert verdict.level is expected(round_, failing), (failing, verdict)
        deciding = {c for c in failing if FAILURE_LEVEL[CheckType(c)] is verdict.level}
        assert all(c in verdict.reason for c in deciding), verdict
        assert classify(results[::-1]) == verdict  # the order of results does not matter
        seen.add(verdict.level)
    assert seen == ({Level.PROCESS, Level.NODE} if round_ == "bootcheck" else set(Level))


@pytest.mark.parametrize(
    ("round_", "checks"), [("bootcheck", BOOTCHECK_CHECKS), ("troubleshoot", TROUBLESHOOT_CHECKS)]
)
def test_every_round_leads_to_the_agents_report_or_restart(
    round_: str, checks: Sequence[CheckType]
) -> None:
    # what the controller sees: Finish, Error (the agent exits 1), or a container restart
    # (no report) that escalates to Error after MAX_CONTAINER_RESTARTS
    phase = "BootChecking" if round_ == "bootcheck" else "Troubleshooting"
    for results, failing in rounds(checks):
        level = expected(round_, failing)
        for restarts in (0, MAX_CONTAINER_RESTARTS - 1, MAX_CONTAINER_RESTARTS):
            outcome = round_outcome(phase, results, restarts).outcome
            if level is Level.CONTAINER and restarts < MAX_CONTAINER_RESTARTS:
                assert outcome == RESTART, failing
            else:
                assert outcome == ("Finish" if level is Level.PROCESS else "Error"), failing


def result(check: str, *, passed: bool = False, applicable: bool = True) -> CheckResult:
    """One check's result (failed unless said otherwise)."""
    return CheckResult(check, passed, "x", 0.0, 0.0, applicable)


@pytest.mark.parametrize(
    ("failing", "level"),
    [
        ((), Level.PROCESS),
        (("gpu",), Level.NODE),
        (("rdma",), Level.NODE),
        (("gpu", "runtime"), Level.NODE),
        (("runtime",), Level.CONTAINER),
        (("io",), Level.CONTAINER),
        (("allreduce_connection",), Level.CONTAINER),
        (("io", "hang"), Level.CONTAINER),
        (("allreduce_performance",), Level.PROCESS),
        (("hang",), Level.PROCESS),
        (("env",), Level.NODE),
        (("collective",), Level.NODE),
        (("burn",), Level.NODE),
    ],
)
def test_named_rounds(failing: tuple[str, ...], level: Level) -> None:
    passing = [result(c, passed=True) for c in TROUBLESHOOT_CHECKS if c not in failing]
    verdict = classify([*passing, *(result(c) for c in failing)])
    assert verdict.level is level
    assert verdict.reason


def test_a_slow_node_finishes_the_round_and_is_reported_as_hang() -> None:
    slow = CheckResult("allreduce_performance", False, "3.1 GB/s, peers 12 GB/s", 0.0, 0.0)
    done = round_outcome("Troubleshooting", [result("gpu", passed=True), slow], 0)
    assert done.outcome == "Finish"
    assert done.slow_note == "allreduce performance: 3.1 GB/s, peers 12 GB/s"
    assert round_outcome("Troubleshooting", [result("gpu", passed=True)], 0).slow_note == ""


def test_checks_that_do_not_apply_or_are_unknown_never_decide() -> None:
    na = [result(c, applicable=False) for c in ("gpu", "rdma", "runtime")]
    assert classify(na).level is Level.PROCESS
    assert classify([result("no-such-check")]).level is Level.PROCESS
    assert classify([]).level is Level.PROCESS


def test_the_reason_names_the_checks_that_decided() -> None:
    verdict = classify([result("gpu"), result("io"), result("rdma"), result("hang")])
    assert verdict.reason.startswith("gpu, rdma failed: isolate the node")
    assert "io" not in verdict.reason


def test_every_check_type_has_a_level() -> None:
    assert set(FAILURE_LEVEL) == set(CheckType)
    assert set(BOOTCHECK_CHECKS) | set(TROUBLESHOOT_CHECKS) | set(OPERATOR_CHECKS) == set(CheckType)
