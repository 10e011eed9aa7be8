"""The controller core alone, for `bench/scale.py --in-process`: no network, no processes.

A real ControllerCore (with the controller process's file status store, write-ahead log and
step log) and one real AgentCore per pod, wired by direct calls as the services would: every
ACK and report goes through the core's handler, every order it publishes (per-pod orders
first, then the broadcast) to the agents it is for. Commits are grouped as the service groups
them (aegis/runtime/controller/group_commit.py): one WAL record for up to `batch` events, and always
before a broadcast order goes out (persist before publish; an ACK's reply is handed to its
agent at once: nothing crashes here); the snapshot is taken after the order, when one is due.
An event's time is its handler's, plus the commit it closes (so the mean is the amortized
cost); snapshots are timed apart (`snapshot_s`). The job runs under the controller
process's collector thresholds (aegis/runtime/controller/gc_tuning.py),
its collections timed (`gc`).
"""

from __future__ import annotations

import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from aegis.protocol.envelope import Message
from aegis.protocol.payloads import Report, Sender
from aegis.runtime.agent.core import AgentCore, Leave, Work
from aegis.runtime.controller.core import ControllerCore, JobConfig
from aegis.runtime.controller.gc_tuning import CONTROLLER_THRESHOLDS, CollectorClock, thresholds
from aegis.runtime.controller.store import FileStatusStore, Status
from aegis.runtime.controller.wal import WriteAheadLog
from aegis.runtime.steplog import StepLog

JOB, NAMESPACE = "scale", "default"


# events per commit: about the batches the controller process forms under a burst of
# reports from thousands of agents
COMMIT_BATCH = 50


def measure(
    agents: int, max_retry: int = 3, batch: int = COMMIT_BATCH, keep: Path | None = None
) -> dict[str, Any]:
    """Run a healthy job through the core; the figures scale.py prints. With `keep` (an
    empty directory) its state dir (status, WAL, step log) is left there."""
    clock = CollectorClock()
    clock.start()
    try:
        with thresholds(CONTROLLER_THRESHOLDS):
            if keep is not None:
                figures = _measure(agents, max_retry, batch, keep)
            else:
                with tempfile.TemporaryDirectory(prefix="aegis-scale-core-") as tmp:
                    figures = _measure(agents, max_retry, batch, Path(tmp))
    finally:
        clock.stop()
    figures["gc"] = {
        "collections": clock.runs,
        "s": round(sum(clock.seconds), 3),
        "longest_ms": round(1000 * clock.longest, 1),
    }
    return figures


class _CountedStore(FileStatusStore):
    """The controller's status file, counting the saves (the whole status each: snapshots)."""

    saves = 0

    def save(self, status: Status) -> None:
        self.saves += 1
        super().save(status)


class _InProcessJob:
    """A controller core and one agent core per pod in this process, events applied in
    batches of `batch` per commit (as in the service), each event's time kept."""

    def __init__(self, agents: int, max_retry: int, batch: int, state_dir: Path) -> None:
        pods = tuple(f"{JOB}-worker-{i}" for i in range(agents))
        self.batch = batch
        self.steplog = StepLog(state_dir / "steps.jsonl")
        self.wal = WriteAheadLog(state_dir / "wal.jsonl")
        self.store = _CountedStore(state_dir / "status.json")
        self.core = ControllerCore(
            JobConfig(JOB, NAMESPACE, pods, max_retry), self.store, self.steplog, wal=self.wal
        )
        self.core.autocommit = False  # as in the service: a commit per batch
        self.cores = {p: AgentCore(JOB, NAMESPACE, p, Sender(f"inc-{p}")) for p in pods}
        self.events: list[float] = []
        self.report_s = self.snapshot_s = 0.0
        self.order_bytes = self.commits = self.uncommitted = self.publishes = 0
        self.work: dict[str, Work] = {}

    def commit(self) -> None:
        """Commit the events since the last one; its time is added to the last event's."""
        if self.uncommitted:
            t = time.perf_counter()
            self.core.journal.commit(compact=False)
            self.events[-1] += time.perf_counter() - t
            self.commits += 1
            self.uncommitted = 0

    def timed(self, call: Any, msg: Message) -> Message | None:
        """Apply one event (timed); commit when a batch is full."""
        t = time.perf_counter()
        reply = call(msg).reply
        self.events.append(time.perf_counter() - t)
        self.uncommitted += 1
        if self.uncommitted >= self.batch:
            self.commit()
        return reply

    def join(self) -> None:
        """Every agent acks; the work its first order gives is noted."""
        for pod, agent in self.cores.items():
            reply = self.timed(self.core.on_ack, agent.ack())
            assert reply is not None
            self._note(pod, agent.on_order(reply, working=False))

    def _note(self, pod: str, decision: Any) -> None:
        if isinstance(decision, Work):
            self.work[pod] = decision

    def publish(self) -> None:
        """Persist, then publish the orders to the agents they address (a snapshot timed)."""
        core = self.core
        self.publishes += 1
        self.commit()  # persist before publish
        orders = [*core.orders.pod_orders(), core.orders.order_for()]
        core.orders.mark_published()
        t = time.perf_counter()
        core.journal.compact()
        self.snapshot_s += time.perf_counter() - t
        for msg in orders:
            self.order_bytes = max(self.order_bytes, len(msg.encode()))
            for pod, agent in self.cores.items():
                if msg.pod_name in ("master", pod):
                    self._note(pod, agent.on_order(msg, working=pod in self.work))

    def finish_work(self) -> None:
        """Each pod finishes its work and reports it (timed), then the batch is committed."""
        if not self.work:
            raise RuntimeError(f"the job is stuck in {self.core.state.phase}: nothing to work on")
        for pod, w in list(self.work.items()):
            agent = self.cores[pod]
            report = agent.finish_work(w.seq, w.order.spec_phase, "Finish", Report(agent.sender))
            del self.work[pod]
            if report is not None:
                t = time.perf_counter()
                self.timed(self.core.on_report, report)
                self.report_s += time.perf_counter() - t
        t = time.perf_counter()
        self.commit()  # the last batch of the phase (its order is published next)
        self.report_s += time.perf_counter() - t

    def run(self) -> int:
        """Run the job to its end; the agents that leave on the final order."""
        self.join()
        while self.core.terminal is None:
            if self.core.orders.needs_publish:
                self.publish()
            self.finish_work()
        final = self.core.orders.order_for()
        left = sum(isinstance(a.on_order(final, working=False), Leave) for a in self.cores.values())
        self.steplog.close()
        self.wal.close()
        return left


def _measure(agents: int, max_retry: int, batch: int, state_dir: Path) -> dict[str, Any]:
    started = time.perf_counter()
    job = _InProcessJob(agents, max_retry, batch, state_dir)
    left = job.run()
    reports = len(job.events) - agents
    ordered = sorted(job.events)
    return {
        "mode": "in-process",
        "agents": agents,
        "succeeded": job.core.terminal == "Succeed" and left == agents,
        "job_s": round(time.perf_counter() - started, 3),
        "reports": reports,
        "reports_per_s": round(reports / job.report_s, 1) if job.report_s else None,
        "event_p50_ms": round(ordered[len(ordered) // 2] * 1000, 3),
        "event_p99_ms": round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1000, 3),
        "publishes": job.publishes,
        "commits": job.commits,
        "status_saves": job.store.saves,
        "snapshot_s": round(job.snapshot_s, 3),
        "order_bytes": job.order_bytes,
        "status_bytes": (state_dir / "status.json").stat().st_size,
        "process_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
