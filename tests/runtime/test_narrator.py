"""The console's account of a job: each fault as it is applied, whether it counts, what comes
next, a repeated error said as such, and why the job failed."""

from __future__ import annotations

from pathlib import Path

from aegis.protocol.envelope import MessageType
from aegis.protocol.launcher_events import PodLost
from aegis.protocol.outcome import JobOutcome, failure_cause, repeated_tail, times
from aegis.runtime.controller.core import ControllerCore, JobConfig
from aegis.runtime.controller.narrator import Narrator
from aegis.runtime.controller.store import FileStatusStore

from .test_controller_slow_path import PODS, report


class Told:
    """A narrated core: every event through `do`, the lines said in `lines`."""

    def __init__(self, tmp: Path, max_retry: int = 2) -> None:
        self.lines: list[str] = []
        self.narrator = Narrator(PODS, max_retry, self.lines.append)
        self.core = ControllerCore(
            JobConfig("job", "default", PODS, max_retry),
            FileStatusStore(tmp / "status.json"),
            on_fault=self.narrator.on_fault,
        )
        self.narrator.start(*self.seen())
        for p in PODS:
            self.do(lambda p=p: self.core.on_ack(report(p, MessageType.ACK, 0)))
        self.finish_all()

    def seen(self) -> tuple[str, int, int]:
        s = self.core.state
        return str(s.phase), int(s.countedFailures), self.core.extras.command_orders

    def do(self, event: object) -> list[str]:
        before = len(self.lines)
        event()  # type: ignore[operator]
        self.narrator.after_event(*self.seen())
        return self.lines[before:]

    def finish_all(self) -> list[str]:
        said = []
        for p in PODS:
            seq = int(self.core.state.masterSeq)
            said += self.do(
                lambda p=p, seq=seq: self.core.on_report(report(p, MessageType.FINISH, seq))
            )
        return said

    def error(self, pod: str, reason: str) -> list[str]:
        seq = int(self.core.state.masterSeq)
        return self.do(
            lambda: self.core.on_report(report(pod, MessageType.ERROR, seq, reason=reason))
        )


def test_each_failure_is_said_with_what_it_counts_and_what_follows(tmp_path: Path) -> None:
    told = Told(tmp_path)
    assert told.lines == []  # joining and bootchecking are not faults
    (line,) = told.error(PODS[1], "local rank 0 (rank 1) failed with exit code 1: OSError: x")
    assert line == (
        "aegis: job-worker-1 (node rank 1, node-1) failed: local rank 0 (rank 1) failed with "
        "exit code 1: OSError: x -> counted (retry 1 of 2): health checks on every node, then "
        "every rank restarts in place"
    )
    assert told.finish_all() == [
        "aegis: checks passed: every rank restarts (restart 1, retry 1 of 2)"
    ]
    (again,) = told.error(PODS[1], "local rank 0 (rank 1) failed with exit code 1: OSError: x")
    assert "(the same error 2 times in a row) -> counted (retry 2 of 2)" in again
    told.finish_all()
    (last,) = told.error(PODS[1], "local rank 0 (rank 1) failed with exit code 1: OSError: x")
    assert last.endswith("-> counted: 3 failures, more than --max-retry 2: the job fails")
    told.finish_all()
    assert told.core.terminal == "Failed"
    assert told.narrator.cause(int(told.core.state.countedFailures)) == (
        "retries exhausted (3 failures counted, max retries 2); the same error 3 times in a "
        "row: local rank 0 (rank 1) failed with exit code 1: OSError: x"
    )


def test_a_stop_is_said_and_is_the_cause(tmp_path: Path) -> None:
    told = Told(tmp_path)
    assert told.do(told.core.on_quit) == [
        "aegis: job stopped: asked by the operator (aegis ctl stop): the job fails (no retry)"
    ]
    assert told.narrator.cause(0) == "stopped: asked by the operator (aegis ctl stop)"


def test_a_slow_nodes_eviction_is_not_a_node_fault(tmp_path: Path) -> None:
    told = Told(tmp_path)
    seq = int(told.core.state.masterSeq)
    core = told.core
    told.do(lambda: core.on_report(report(PODS[1], MessageType.HANG, seq, reason="slow")))
    # step 3 saved by every pod: a complete step, the safe point the eviction waits for
    for pod in PODS:
        told.do(lambda pod=pod: core.on_report(report(pod, MessageType.CHECKPOINT, seq, step=3)))
    (evicted,) = told.do(
        lambda: core.on_report(report(PODS[1], MessageType.EVICTED, seq, reason="slow"))
    )
    assert "was evicted" in evicted and "counted (retry 1 of 2)" in evicted
    told.narrator.on_launcher_event(PodLost(PODS[1], "i1", 1, "node-2", next_node="node-3"))
    inc = core.extras.incarnations[PODS[1]]
    (left,) = told.do(lambda: core.on_pod_lost(PODS[1], str(inc), 1, "node-2"))
    assert left == (
        "aegis: job-worker-1 (node rank 1, node-2) left its node after its eviction: agent "
        "exited 1 -> node-2 blacklisted, the pod restarts on node-3 (Level 3) (counted at its "
        "eviction)"
    )
    assert "node fault" not in " ".join(told.lines)


def test_the_words() -> None:
    assert (times(1), times(3), times(1, "failure")) == ("1 time", "3 times", "1 failure")
    line = JobOutcome("local", "Succeed", 3, 1, 0, 0).line()
    assert line == (
        "job local Succeed: max retries 3, restarted 1 time, hardware faults rescheduled 0, "
        "slow nodes evicted 0"
    )
    assert repeated_tail(["a on x-worker-1", "b", "a on x-worker-2", "a on x-worker-0"]) == 2
    assert failure_cause(stopped=None, failures=["e"], counted=1, max_retry=3) == (
        "the last failure: e"
    )
