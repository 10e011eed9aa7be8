"""Real event sequences driven through the controller's core in-process (no bus, no processes).

Each job is what a real `aegis run` feeds the controller: agents join (ACK), report the
end of the bootcheck and the command (Finish), a pod dies and its new incarnation joins, the
controller is killed and resumes. The core persists as the controller does, so a job leaves a
real `status.json` and step log in its directory: what trace validation
(`aegis spec validate-log`), `aegis timeline` and other readers of a state dir read.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.runtime.controller.core import ControllerCore, JobConfig, Outcome
from aegis.runtime.controller.store import FileStatusStore
from aegis.runtime.steplog import StepLog

JOB, NS = "tv", "default"


def pods(n: int) -> tuple[str, ...]:
    return tuple(f"tv-worker-{i}" for i in range(n))


def message(pod: str, kind: MessageType, inc: str, seq: int) -> Message:
    data = {"incarnation": inc, "node": f"node-{pod}"}
    return Message(JOB, NS, pod, kind, MessagePhase.COMMAND, data, time.time(), seq)


@dataclass
class Job:
    """One controller on a status file and a step log in `dir`."""

    dir: Path
    pods: tuple[str, ...]
    max_retry: int = 3

    def __post_init__(self) -> None:
        self.incarnation = {p: "i1" for p in self.pods}
        self.orders: list[Message] = []
        self.core = self.start()

    @property
    def steplog(self) -> Path:
        return self.dir / "steps.jsonl"

    def start(self) -> ControllerCore:
        """A controller on the job's store and log (a resumed one if the store has a job)."""
        config = JobConfig(JOB, NS, self.pods, self.max_retry, heartbeat_timeout=0)
        store = FileStatusStore(self.dir / "status.json")
        self.log = StepLog(self.steplog)
        return ControllerCore(config, store, self.log)

    def restart_controller(self) -> None:
        """The controller is killed (its log is as far as it got) and started again."""
        self.log.close()
        self.core = self.start()

    def join(self, pod: str) -> None:
        self.publish(self.core.on_ack(message(pod, MessageType.ACK, self.incarnation[pod], 0)))

    def finish(self, pod: str) -> None:
        seq = int(self.core.state.masterSeq)
        msg = message(pod, MessageType.FINISH, self.incarnation[pod], seq)
        self.publish(self.core.on_report(msg))

    def crash(self, pod: str) -> None:
        """The pod's training process is killed: the launcher sees its agent exit."""
        self.publish(self.core.on_pod_lost(pod, self.incarnation[pod], 137, f"node-{pod}"))
        self.incarnation[pod] = f"i{int(self.incarnation[pod][1:]) + 1}"

    def publish(self, outcome: Outcome) -> None:
        """What the controller service does after an event: publish the order if it changed."""
        if outcome.publish:
            self.orders.append(self.core.orders.order_for())
            self.core.orders.mark_published()

    def all_join(self) -> None:
        for p in self.pods:
            self.join(p)

    def all_finish(self) -> None:
        for p in self.pods:
            self.finish(p)

    def close(self) -> None:
        self.log.close()


def healthy(dir: Path, n: int) -> Job:
    """Join, bootcheck, command: Succeed."""
    job = Job(dir, pods(n))
    job.all_join()
    job.all_finish()
    job.all_finish()
    assert job.core.state.phase == "Succeed"
    job.close()
    return job


def crash_once(dir: Path, n: int = 2, *, resume_after_crash: bool = False) -> Job:
    """One pod crashes in RunCommand, rejoins, everyone troubleshoots, the command succeeds."""
    job = Job(dir, pods(n))
    job.all_join()
    job.all_finish()  # bootcheck
    assert job.core.state.phase == "RunCommand"
    victim = job.pods[-1]
    job.crash(victim)
    if resume_after_crash:
        job.restart_controller()
    job.join(victim)
    assert job.core.state.phase == "Troubleshooting"
    job.all_finish()  # troubleshoot
    assert job.core.state.phase == "RunCommand"
    job.all_finish()  # command
    assert job.core.state.phase == "Succeed"
    job.close()
    return job
