"""The controller core alone, for `bench/scale.py --in-process`: no network, no processes.

A real ControllerCore (with its file status store) and one real AgentCore per pod, wired by
direct calls as the services would: every ACK and report goes through the core's handler,
every order it publishes (per-pod orders first, then the broadcast) to the agents it is for.
Times are of the controller's handlers only (`on_ack`, `on_report`, building the orders).
"""

from __future__ import annotations

import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from aegis.protocol.envelope import Message
from aegis.protocol.payloads import Report, Sender
from aegis.runtime.agent_core import AgentCore, Leave, Work
from aegis.runtime.controller import ControllerCore, JobConfig
from aegis.runtime.store import FileStatusStore

JOB, NAMESPACE = "scale", "default"


def measure(agents: int, max_retry: int = 3) -> dict[str, Any]:
    """Run a healthy job through the core; the figures scale.py prints."""
    pods = tuple(f"{JOB}-worker-{i}" for i in range(agents))
    with tempfile.TemporaryDirectory(prefix="aegis-scale-core-") as tmp:
        status = Path(tmp) / "status.json"
        started = time.perf_counter()
        core = ControllerCore(JobConfig(JOB, NAMESPACE, pods, max_retry), FileStatusStore(status))
        cores = {p: AgentCore(JOB, NAMESPACE, p, Sender(f"inc-{p}")) for p in pods}
        events: list[float] = []
        report_s = 0.0
        order_bytes = 0
        work: dict[str, Work] = {}

        def timed(call: Any, msg: Message) -> Message | None:
            t = time.perf_counter()
            reply = call(msg).reply
            events.append(time.perf_counter() - t)
            return reply

        for pod, agent in cores.items():
            reply = timed(core.on_ack, agent.ack())
            assert reply is not None
            decision = agent.on_order(reply, working=False)
            if isinstance(decision, Work):
                work[pod] = decision
        publishes = 0
        while core.terminal is None:
            if core.needs_publish:
                publishes += 1
                orders = [*core.pod_orders(), core.order_for()]
                core.mark_published()
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
                report = agent.finish_work(
                    w.seq, w.order.spec_phase, "Finish", Report(agent.sender)
                )
                del work[pod]
                if report is not None:
                    t = time.perf_counter()
                    timed(core.on_report, report)
                    report_s += time.perf_counter() - t
        final = core.order_for()
        left = sum(isinstance(a.on_order(final, working=False), Leave) for a in cores.values())
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
            "event_p99_ms": round(
                ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1000, 3
            ),
            "publishes": publishes,
            "order_bytes": order_bytes,
            "status_bytes": status.stat().st_size,
            "process_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        }
