"""The controller's core: the only executor of the global spec state (no network I/O).

Each event (an agent's ACK or report, a pod lost, a quit) becomes one observation of the
generated tables, then `settle()`; the resulting state is persisted (store.save) before the
caller publishes the order it causes. A forged, stale or duplicate message is counted and
dropped, never raised.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aegis.generated.aegis_phase import State
from aegis.runtime.codec import decode_state, encode_state
from aegis.runtime.engine import Engine, StepResult, runtime_constants
from aegis.runtime.messages import Message, MessagePhase, MessageType
from aegis.runtime.steplog import StepLog
from aegis.runtime.store import ErrorNode, PodInfo, Status, StatusStore
from aegis.values import Fn, ModelValue, apply

log = logging.getLogger(__name__)

ORDER_PHASES: Mapping[str, MessagePhase] = {
    "BootChecking": MessagePhase.BOOTCHECK,
    "RunCommand": MessagePhase.COMMAND,
    "Troubleshooting": MessagePhase.TROUBLESHOOT,
}
TERMINAL_EXIT = {"Succeed": 0, "Failed": 3}  # controller exit codes; anything else = crash
_PORT_SLOTS = 500


@dataclass(frozen=True)
class JobConfig:
    """What the controller knows of its job."""

    name: str
    namespace: str
    pods: tuple[str, ...]
    max_retry: int
    rdzv_host: str = "127.0.0.1"
    port_base: int = 29500

    def ports(self, seq: int) -> tuple[int, int]:
        """(training MASTER_PORT, check rendezvous port) of order `seq`: fixed per seq."""
        slot = self.port_base + 2 * (seq % _PORT_SLOTS)
        return slot, slot + 1


@dataclass
class Extras:
    """Runtime bookkeeping persisted beside the spec state (not part of the model)."""

    incarnations: dict[str, str | None] = field(default_factory=dict)
    step_no: int = 0
    command_orders: int = 0
    published_seq: int = -1
    counters: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True)
class Outcome:
    """What handling one event produced: a reply (for requests) and whether to publish."""

    reply: Message | None = None
    publish: bool = False


class ControllerCore:
    """Executes the spec for one job; persists after every event."""

    def __init__(self, job: JobConfig, store: StatusStore, steplog: StepLog | None = None) -> None:
        self.job = job
        self.store = store
        self.steplog = steplog
        self.constants = runtime_constants(job.pods, job.max_retry)
        self.status = store.load() or Status()
        self.extras = Extras()
        state = self._restore()
        self.engine = Engine(self.constants, state, seq_no=self.extras.step_no, on_step=self._log)
        if state is None:
            if steplog is not None:
                steplog.write_initial({"init": encode_state(self.state)})
            self._save()

    # ---------------- events ----------------

    def on_ack(self, msg: Message) -> Outcome:
        """An agent's ACK request: (re)join it, reply with the current order."""
        pod, inc = self._authentic(msg, need_known=False)
        if pod is None:
            return Outcome()
        w = ModelValue(pod)
        known = self.extras.incarnations.get(pod)
        if known == inc and self._agent_state(w) == "Ready":
            self.extras.counters["duplicate_ack"] += 1
            return Outcome(self.order_for(pod))
        if known is not None and known != inc:
            self._lost(pod, replaced=True)
            self.engine.settle()
        self.extras.incarnations[pod] = inc
        self.engine.observe("agentJoin", w=w)
        return self._finish(self.order_for(pod))

    def on_report(self, msg: Message) -> Outcome:
        """A Finish/Error report: agentWork (its seq must be the successor's), then receive."""
        pod, _inc = self._authentic(msg, need_known=True)
        if pod is None:
            return Outcome(self._receipt(msg, "forged"))
        w, outcome = ModelValue(pod), msg.type.value
        succ = self.engine.peek("agentWork", w=w, outcome=outcome)
        if succ is None:
            self.extras.counters["not_enabled"] += 1
            self.engine.observe("agentWork", w=w, outcome=outcome)  # logged as rejected
            return self._finish(self._receipt(msg, "not enabled"))
        report = Fn({"from": w, "type": outcome, "seq": msg.seq})
        if report not in succ.state.msgs - self.state.msgs:
            self.extras.counters["stale"] += 1
            log.info(
                "stale %s from %s (seq %d, order %d): dropped",
                outcome,
                pod,
                msg.seq,
                self.state.masterSeq,
            )
            return Outcome(self._receipt(msg, "stale"))
        self.engine.observe("agentWork", w=w, outcome=outcome)
        self.engine.settle()
        self.engine.observe("receive", m=report)
        if outcome == "Error":
            reason = str(msg.data.get("reason", "error reported"))
            self._set_reason(pod, reason)
        return self._finish(self._receipt(msg, "applied"))

    def on_pod_lost(self, pod: str, incarnation: str, exit_code: int, node: str) -> Outcome:
        """The launcher saw agent `pod` exit: reschedule (exit 1, node blacklisted) or restart."""
        if pod not in self.job.pods or self.extras.incarnations.get(pod) != incarnation:
            self.extras.counters["lost_unknown"] += 1
            return Outcome()
        if exit_code == 1 and self._agent_state(ModelValue(pod)) == "Exited":
            node_entry = ErrorNode(node, f"agent {pod} exited 1 (node fault)", time.time())
            self.status = dataclasses.replace(
                self.status, error_nodes=(*self.status.error_nodes, node_entry)
            )
        self._lost(pod, replaced=False)
        self.extras.incarnations[pod] = None
        return self._finish(None)

    def on_quit(self) -> Outcome:
        """The operator asked the job to stop (ShouldQuit)."""
        self.engine.observe("envQuit")
        return self._finish(None)

    # ---------------- views ----------------

    @property
    def state(self) -> State:
        """The current spec state."""
        return self.engine.state

    @property
    def terminal(self) -> str | None:
        """ "Succeed" or "Failed" once the job has terminated (spec's Terminated)."""
        s = self.state
        if s.phase == "Succeed":
            return "Succeed"
        if s.phase == "Failed" and s.shouldQuit and s.recoverCount == self.job.max_retry + 1:
            return "Failed"
        return None

    def order_for(self, pod: str = "master") -> Message:
        """The current order (broadcast, or the reply to one agent's ACK)."""
        s = self.state
        master_port, check_port = self.job.ports(s.masterSeq)
        data = {
            "specPhase": s.phase,
            "final": self.terminal,
            "state": encode_state(s),
            "retry": s.recoverCount,
            "maxRetry": self.job.max_retry,
            "masterAddr": self.job.rdzv_host,
            "masterPort": master_port,
            "checkPort": check_port,
            "world": list(self.job.pods),
        }
        return Message(
            self.job.name,
            self.job.namespace,
            pod,
            MessageType.ORDER,
            ORDER_PHASES.get(s.phase, MessagePhase.BOOTCHECK),
            data,
            time.time(),
            s.masterSeq,
        )

    def summary(self) -> str:
        """The user-facing line (design §6)."""
        return (
            f"aegis: job {self.job.name} {self.terminal or self.state.phase}: "
            f"max retries {self.job.max_retry}, "
            f"restarted {max(self.extras.command_orders - 1, 0)} times, "
            f"hardware faults rescheduled {len(self.status.error_nodes)}"
        )

    def mark_published(self) -> None:
        """The current order went out; persisted so a restart knows (it re-publishes anyway)."""
        self.extras.published_seq = self.state.masterSeq

    @property
    def needs_publish(self) -> bool:
        """Whether masterSeq changed (or the job ended) since the last publish."""
        return self.extras.published_seq != self.state.masterSeq or self.terminal is not None

    # ---------------- internals ----------------

    def _authentic(self, msg: Message, *, need_known: bool) -> tuple[str | None, str]:
        inc = str(msg.data.get("incarnation", ""))
        if msg.aegis_name != self.job.name or msg.aegis_namespace != self.job.namespace:
            return self._forged("other job", msg), inc
        if msg.pod_name not in self.job.pods or not inc:
            return self._forged("unknown pod or no incarnation", msg), inc
        if need_known and self.extras.incarnations.get(msg.pod_name) != inc:
            self.extras.counters["old_incarnation"] += 1
            log.info("report from an old incarnation of %s dropped", msg.pod_name)
            return None, inc
        return msg.pod_name, inc

    def _forged(self, why: str, msg: Message) -> str | None:
        self.extras.counters["forged"] += 1
        log.warning(
            "forged message (%s) from %s/%s/%s dropped",
            why,
            msg.aegis_namespace,
            msg.aegis_name,
            msg.pod_name,
        )
        return None

    def _lost(self, pod: str, *, replaced: bool) -> None:
        w = ModelValue(pod)
        label = "reschedule" if self._agent_state(w) == "Exited" else "envPodRestart"
        self.engine.observe(label, w=w)
        if replaced:
            self.extras.counters["inferred_restart"] += 1

    def _agent_state(self, w: ModelValue) -> str:
        return str(apply(self.state.agentState, w))

    def _receipt(self, msg: Message, result: str) -> Message:
        return Message(
            self.job.name,
            self.job.namespace,
            msg.pod_name,
            MessageType.ACK,
            msg.phase,
            {"result": result},
            time.time(),
            self.state.masterSeq,
        )

    def _set_reason(self, pod: str, reason: str) -> None:
        infos = dict(self.status.pod_infos)
        old = infos.get(pod, PodInfo())
        infos[pod] = dataclasses.replace(old, last_failed_reason=reason[:500])
        self.status = dataclasses.replace(self.status, pod_infos=infos)

    def _finish(self, reply: Message | None) -> Outcome:
        self.engine.settle()
        self._save()
        return Outcome(reply, self.needs_publish)

    def _log(self, step: StepResult) -> None:
        if step.applied and step.action == "advance" and step.state.phase == "RunCommand":
            self.extras.command_orders += 1
        if self.steplog is not None:
            self.steplog.write(step)

    def _restore(self) -> State | None:
        saved = self.status.spec_state
        if not saved:
            return None
        ex = saved.get("runtime", {})
        self.extras = Extras(
            incarnations=dict(ex.get("incarnations", {})),
            step_no=int(ex.get("stepNo", 0)),
            command_orders=int(ex.get("commandOrders", 0)),
            published_seq=int(ex.get("publishedSeq", -1)),
            counters=Counter(ex.get("counters", {})),
        )
        return decode_state(saved["variables"])

    def _save(self) -> None:
        s = self.state
        self.extras.step_no = self.engine.seq_no
        infos = {}
        for pod in self.job.pods:
            w = ModelValue(pod)
            old = self.status.pod_infos.get(pod, PodInfo())
            infos[pod] = dataclasses.replace(
                old,
                inner_phase=str(apply(s.innerPhase, w)),
                finished=bool(apply(s.finished, w)),
                retries=int(apply(s.retries, w)),
                updated_timestamp=time.time(),
            )
        runtime: dict[str, Any] = {
            "incarnations": self.extras.incarnations,
            "stepNo": self.extras.step_no,
            "commandOrders": self.extras.command_orders,
            "publishedSeq": self.extras.published_seq,
            "counters": dict(self.extras.counters),
        }
        status = dataclasses.replace(
            self.status,
            phase=str(s.phase),
            recover_count=int(s.recoverCount),
            should_quit=bool(s.shouldQuit),
            pod_infos=infos,
            master_seq=int(s.masterSeq),
            worker_seqs={p: int(apply(s.agentSeq, ModelValue(p))) for p in self.job.pods},
            spec_state={"variables": encode_state(s), "runtime": runtime},
        )
        last = status.history[-1] if status.history else None
        snap = (status.phase, tuple(infos[p].retries for p in sorted(infos)), status.recover_count)
        if last is None or (last.phase, last.retries, last.recover_count) != snap:
            status = status.with_snapshot()
        self.store.save(status)
        self.status = status
