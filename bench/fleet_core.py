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


def _measure(agents: int, max_retry: int, batch: int, state_dir: Path) -> dict[str, Any]:
    pods = tuple(f"{JOB}-worker-{i}" for i in range(agents))
    status = state_dir / "status.json"
    started = time.perf_counter()
    steplog = StepLog(state_dir / "steps.jsonl")
    wal = WriteAheadLog(state_dir / "wal.jsonl")
    store = _CountedStore(status)
    core = ControllerCore(
        JobConfig(JOB, NAMESPACE, pods, max_retry),
        store,
        steplog,
        wal=wal,
    )
    core.autocommit = False  # as in the service: a commit per batch
    cores = {p: AgentCore(JOB, NAMESPACE, p, Sender(f"inc-{p}")) for p in pods}
    events: list[float] = []
    report_s = snapshot_s = 0.0
    order_bytes = commits = uncommitted = 0
    work: dict[str, Work] = {}

    def commit() -> None:
        """Commit the events since the last one; its time is added to the last event's."""
        nonlocal commits, uncommitted
        if uncommitted:
            t = time.perf_counter()
            core.journal.commit(compact=False)
            events[-1] += time.perf_counter() - t
            commits += 1
            uncommitted = 0

    def timed(call: Any, msg: Message) -> Message | None:
        nonlocal uncommitted
        t = time.perf_counter()
        reply = call(msg).reply
        events.append(time.perf_counter() - t)
        uncommitted += 1
        if uncommitted >= batch:
            commit()
        return reply

    for pod, agent in cores.items():
        reply = timed(core.on_ack, agent.ack())
        assert reply is not None
        decision = agent.on_order(reply, working=False)
        if isinstance(decision, Work):
            work[pod] = decision
    publishes = 0
    while core.terminal is None:
        if core.orders.needs_publish:
            publishes += 1
            commit()  # persist before publish
            orders = [*core.orders.pod_orders(), core.orders.order_for()]
            core.orders.mark_published()
            t = time.perf_counter()
            core.journal.compact()
            snapshot_s += time.perf_counter() - t
            for msg in orders:
                order_bytes = max(order_bytes, len(msg.encode()))
                for pod, agent in cores.items():
                    if msg.pod_name in ("master", pod):
                        decision = agent.on_order(msg, working=pod in work)
                        if isinstance(decision, Work):
                            work[pod] = decision
        if not work:
            raise RuntimeError(f"the job is stuck in {core.state.phase}: nothing to work on")
        for pod, w in list(work.items()):
            agent = cores[pod]
            report = agent.finish_work(w.seq, w.order.spec_phase, "Finish", Report(agent.sender))
            del work[pod]
            if report is not None:
                t = time.perf_counter()
                timed(core.on_report, report)
                report_s += time.perf_counter() - t
        t = time.perf_counter()
        commit()  # the last batch of the phase (its order is published next)
        report_s += time.perf_counter() - t
    final = core.orders.order_for()
    left = sum(isinstance(a.on_order(final, working=False), Leave) for a in cores.values())
    steplog.close()
    wal.close()
    reports = len(events) - agents
    ordered = sorted(events)
    return {
        "mode": "in-process",
        "agents": agents,
        "succeeded": core.terminal == "Succeed" and left == agents,
        "job_s": round(time.perf_counter() - started, 3),
        "reports": reports,
        "reports_per_s": round(reports / report_s, 1) if report_s else None,
        "event_p50_ms": round(ordered[len(ordered) // 2] * 1000, 3),
        "event_p99_ms": round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1000, 3),
        "publishes": publishes,
        "commits": commits,
        "status_saves": store.saves,
        "snapshot_s": round(snapshot_s, 3),
        "order_bytes": order_bytes,
        "status_bytes": status.stat().st_size,
        "process_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
