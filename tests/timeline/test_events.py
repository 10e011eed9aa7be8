"""The fault log's records of a pod replaced before its loss was reported (its new
incarnation joined first): a pod restart of unknown exit, or the exit of an evicted pod."""

from __future__ import annotations

from aegis.timeline.events import FaultClassifier, FaultKind

REPLACED = "agent replaced: a new incarnation joined before its loss came"


def test_a_replaced_pod_is_a_pod_restart() -> None:
    assert FaultClassifier().classify("w-0", REPLACED, "RunCommand") == FaultKind("pod_lost")


def test_an_evicted_pod_replaced_is_its_eviction_exit_once() -> None:
    faults = FaultClassifier()
    assert faults.classify("w-0", "slow node evicted at a checkpoint: slow", "RunCommand").level
    assert faults.classify("w-0", REPLACED, "RunCommand") == FaultKind("evicted_exit")
    # the eviction is spent: the pod's next node fault is a reschedule of its own
    assert faults.classify("w-0", "agent exited 1", "RunCommand") == FaultKind("reschedule", "3")
