"""The controller's core: the only executor of the global spec state (no network I/O).

Each event (an agent's ACK or report, a pod lost, a heartbeat missed, a quit) becomes one
observation of the generated tables, then `settle()`; the resulting state is persisted
(store.save) before the caller publishes the order it causes. A forged, stale or duplicate
message is counted and dropped, never raised.

Heartbeats: every message of an agent's current incarnation refreshes its last-seen time
(monotonic, in memory); `silent_pods` lists the joined agents silent for longer than the
timeout, and `on_heartbeat_lost` applies `envPodRestart` for one of them. The lost
incarnation is remembered as evicted: if that agent comes back (it was only frozen), its
next heartbeat or report is answered with an eviction, and it exits so that it is replaced.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aegis.checks.faultlog import FaultRecord
from aegis.generated.aegis_phase import Constants, State
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
EVICTED = "evicted"  # receipt result / order flag: this incarnation was declared lost
DEFAULT_HEARTBEAT_TIMEOUT_S = 10.0
SLOW_EVICTED = "slow node evicted at a checkpoint"
# report type -> the agent's spec action it is the end of (Finish/Error: agentWork(outcome))
REPORT_ACTIONS: Mapping[str, str] = {
    "Finish": "agentWork",
    "Error": "agentWork",
    "Hang": "agentHang",
    "Checkpoint": "agentCheckpoint",
    "Evicted": "agentEvict",
}
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
    heartbeat_timeout: float = DEFAULT_HEARTBEAT_TIMEOUT_S  # <= 0: never declare a pod lost

    def ports(self, seq: int) -> tuple[int, int]:
        """(training MASTER_PORT of order `seq`, the job's check rendezvous port).

        The training port moves with every order (a fresh rendezvous per attempt); the check
        port stays the same for the whole job, so the diagnosis workers keep the process group
        they built at the bootcheck and only probe it in later rounds (warm diagnosis).
        """
        return self.port_base + 2 * (seq % _PORT_SLOTS), self.port_base + 2 * _PORT_SLOTS


@dataclass
class Extras:
    """Runtime bookkeeping persisted beside the spec state (not part of the model)."""

    incarnations: dict[str, str | None] = field(default_factory=dict)
    step_no: int = 0
    command_orders: int = 0
    published_seq: int = -1
    counters: Counter[str] = field(default_factory=Counter)
    evicted: dict[str, str] = field(default_factory=dict)  # pod -> incarnation declared lost

    def to_json(self) -> dict[str, Any]:
        """The JSON object kept in Status.runtime."""
        return {
            "incarnations": dict(self.incarnations),
            "stepNo": self.step_no,
            "commandOrders": self.command_orders,
            "publishedSeq": self.published_seq,
            "counters": dict(self.counters),
            "evicted": dict(self.evicted),
        }

    @classmethod
    def from_json(cls, ex: Mapping[str, Any]) -> Extras:
        """The inverse of `to_json` (missing keys take their defaults)."""
        return cls(
            incarnations=dict(ex.get("incarnations", {})),
            step_no=int(ex.get("stepNo", 0)),
            command_orders=int(ex.get("commandOrders", 0)),
            published_seq=int(ex.get("publishedSeq", -1)),
            counters=Counter(ex.get("counters", {})),
            evicted=dict(ex.get("evicted", {})),
        )


@dataclass(frozen=True)
class Outcome:
    """What handling one event produced: a reply (for requests) and whether to publish."""

    reply: Message | None = None
    publish: bool = False


class ControllerCore:
    """Executes the spec for one job; persists after every event."""

    def __init__(
        self,
        job: JobConfig,
        store: StatusStore,
        steplog: StepLog | None = None,
        *,
        constants: Constants | None = None,
        on_fault: Callable[[FaultRecord], None] | None = None,
    ) -> None:
        """`constants` defaults to the job's (Workers = its pods, no fault budget); `on_fault`
        receives one record per fault (the structured fault log)."""
        self.job = job
        self.store = store
        self.steplog = steplog
        self.constants = constants or runtime_constants(job.pods, job.max_retry)
        self.on_fault = on_fault
        loaded = store.load()
        self.fresh = loaded is None  # False: this controller resumed a saved job
        self.status = loaded or Status()
        self.addresses: dict[str, tuple[str, str, str]] = {}  # pod -> (pod IP, node, node IP)
        self._published_marks: tuple[object, ...] | None = None
        self.extras = Extras()
        state = self._restore()
        now = time.monotonic()  # a restarted controller gives every known agent a full timeout
        self.last_seen = {p: now for p, inc in self.extras.incarnations.items() if inc}
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
        self.last_seen[pod] = time.monotonic()
        self.engine.observe("agentJoin", w=w)
        out = self._finish(None)  # the reply carries the order after the decisions
        return Outcome(self.order_for(pod), out.publish)

    def on_report(self, msg: Message) -> Outcome:
        """An agent's report: the end of its spec action (its seq must be the successor's
        message), then `receive` of that message.

        Finish/Error end agentWork, Hang is agentHang (mark, nothing killed), Checkpoint is
        agentCheckpoint (a safe point), Evicted is agentEvict (no message: the agent leaves).
        """
        pod, inc = self._authentic(msg, need_known=True)
        if pod is None:
            evicted = bool(inc) and self.extras.evicted.get(msg.pod_name) == inc
            return Outcome(self._receipt(msg, EVICTED if evicted else "forged"))
        self.last_seen[pod] = time.monotonic()
        self._remember_address(pod, msg)
        w, kind = ModelValue(pod), msg.type.value
        label = REPORT_ACTIONS.get(kind)
        if label is None:
            self.extras.counters["unexpected_type"] += 1
            return Outcome(self._receipt(msg, "unexpected type"))
        choices: dict[str, Any] = {"w": w}
        if label == "agentWork":
            choices["outcome"] = kind
        found = self.engine.find(label, **choices)
        if found is None:
            self.extras.counters["not_enabled"] += 1
            self.engine.reject(label, **choices)  # logged as rejected
            return self._finish(self._receipt(msg, "not enabled"))
        report = Fn({"from": w, "type": kind, "seq": msg.seq})
        if label != "agentEvict" and report not in found[1].state.msgs - self.state.msgs:
            self.extras.counters["stale"] += 1
            log.info(
                "stale %s from %s (seq %d, order %d): dropped",
                kind,
                pod,
                msg.seq,
                self.state.masterSeq,
            )
            return Outcome(self._receipt(msg, "stale"))
        if label == "agentEvict" and msg.seq != self.state.masterSeq:
            self.extras.counters["stale"] += 1
            return Outcome(self._receipt(msg, "stale"))
        self.engine.take(label, found)
        reason = str(msg.data.get("reason", ""))[:500]
        if label != "agentEvict":
            self.engine.settle()
            was_slow = bool(apply(self.state.slow, w))
            self.engine.observe("receive", m=report)
            if kind == "Hang" and not was_slow and apply(self.state.slow, w):
                self.extras.counters["hang_marked"] += 1
                self._fault(pod, f"hang: {reason or 'no progress'} (marked, not killed)")
        if kind == "Error":
            self._set_reason(pod, reason or "error reported")
            self._fault(pod, f"error: {reason or 'error reported'}")
        elif kind == "Evicted":
            self.extras.counters["evicted_slow"] += 1
            why = f"{SLOW_EVICTED}: {reason or 'marked slow'}"
            self._set_reason(pod, why)
            self._fault(pod, why)
        return self._finish(self._receipt(msg, "applied"))

    def on_pod_lost(self, pod: str, incarnation: str, exit_code: int, node: str) -> Outcome:
        """The launcher saw agent `pod` exit: reschedule (exit 1, node blacklisted) or restart.

        An incarnation that never joined (the controller knows none for the pod, and this one
        was not declared lost already) is a pod restart too."""
        known = self.extras.incarnations.get(pod)
        unjoined = known is None and bool(incarnation)
        unjoined = unjoined and self.extras.evicted.get(pod) != incarnation
        if pod not in self.job.pods or (known != incarnation and not unjoined):
            self.extras.counters["lost_unknown"] += 1
            return Outcome()
        if exit_code == 1 and self._agent_state(ModelValue(pod)) == "Exited":
            why = self.status.pod_infos.get(pod, PodInfo()).last_failed_reason or "node fault"
            self.taint(node, f"agent {pod} exited 1: {why}", save=False)
            if not why.startswith(SLOW_EVICTED):
                self.extras.counters["node_faults"] += 1
        self._fault(pod, f"agent exited {exit_code}", node=node or None)
        self._lost(pod, replaced=False)
        self.extras.incarnations[pod] = None
        self.last_seen.pop(pod, None)
        return self._finish(None)

    def on_heartbeat(self, msg: Message) -> Outcome:
        """A heartbeat: refresh the agent's last-seen time; evict a lost incarnation."""
        pod, inc = self._authentic(msg, need_known=False)
        if pod is None:
            return Outcome()
        if self.extras.incarnations.get(pod) == inc:
            self.last_seen[pod] = time.monotonic()
        elif self.extras.evicted.get(pod) == inc:
            return Outcome(self.eviction(pod, inc))
        else:
            self.extras.counters["old_heartbeat"] += 1
        return Outcome()

    def silent_pods(self, now: float | None = None) -> list[str]:
        """Joined agents (not leaving by themselves) silent for longer than the timeout."""
        timeout = self.job.heartbeat_timeout
        if timeout <= 0 or self.terminal is not None:
            return []
        now = time.monotonic() if now is None else now
        return [
            pod
            for pod, seen in self.last_seen.items()
            if now - seen > timeout
            # an agent that reported Error outside RunCommand exits 1 by itself: its exit,
            # seen by the launcher / Job Controller, reschedules it (node into ErrorNodes)
            and self._agent_state(ModelValue(pod)) != "Exited"
        ]

    def on_heartbeat_lost(self, pod: str) -> Outcome:
        """Agent `pod` missed its heartbeats: the pod is lost (observation envPodRestart)."""
        inc = self.extras.incarnations.get(pod)
        self.last_seen.pop(pod, None)
        if pod not in self.job.pods or inc is None:
            self.extras.counters["lost_unknown"] += 1
            return Outcome()
        step = self.engine.observe("envPodRestart", w=ModelValue(pod))
        if step.applied:
            self.extras.counters["heartbeat_lost"] += 1
            self._fault(pod, f"missed heartbeats for {self.job.heartbeat_timeout:g} s: pod lost")
            self.extras.incarnations[pod] = None
            self.extras.evicted[pod] = inc
            log.warning("agent %s (incarnation %s) missed its heartbeats: pod lost", pod, inc)
        else:
            self.extras.counters["heartbeat_lost_not_enabled"] += 1
            log.warning("agent %s missed its heartbeats; envPodRestart not enabled", pod)
        return self._finish(None)

    def eviction(self, pod: str, incarnation: str) -> Message:
        """The order telling a lost incarnation of `pod` to exit (it is replaced)."""
        return self._order(pod, {EVICTED: incarnation})

    def on_quit(self) -> Outcome:
        """The operator asked the job to stop (ShouldQuit)."""
        self.engine.observe("envQuit")
        return self._finish(None)

    def taint(self, node: str, reason: str, *, save: bool = True) -> bool:
        """Blacklist `node` (ErrorNodes); False when it is already there."""
        if not node or any(e.node == node for e in self.status.error_nodes):
            return False
        entry = ErrorNode(node, reason[:500], time.time())
        self.status = dataclasses.replace(
            self.status, error_nodes=(*self.status.error_nodes, entry)
        )
        if save:
            self._save()
        return True

    def untaint(self, node: str) -> bool:
        """Take `node` off the blacklist; False when it was not on it."""
        kept = tuple(e for e in self.status.error_nodes if e.node != node)
        if len(kept) == len(self.status.error_nodes):
            return False
        self.status = dataclasses.replace(self.status, error_nodes=kept)
        self._save()
        return True

    # ---------------- views ----------------

    def status_view(self) -> dict[str, Any]:
        """The job as `aegis ctl status` shows it (JSON-able)."""
        s = self.state
        pods = {}
        for pod in self.job.pods:
            w = ModelValue(pod)
            _, node, _ = self.addresses.get(pod, ("", "", ""))
            pods[pod] = {
                "innerPhase": str(apply(s.innerPhase, w)),
                "retries": int(apply(s.retries, w)),
                "finished": bool(apply(s.finished, w)),
                "slow": bool(apply(s.slow, w)),
                "evict": bool(apply(s.evict, w)),
                "agentState": self._agent_state(w),
                "node": node,
                "incarnation": self.extras.incarnations.get(pod),
                "lastFailedReason": self.status.pod_infos.get(pod, PodInfo()).last_failed_reason,
            }
        return {
            "job": self.job.name,
            "namespace": self.job.namespace,
            "phase": str(s.phase),
            "terminal": self.terminal,
            "recoverCount": int(s.recoverCount),
            "maxRetry": self.job.max_retry,
            "shouldQuit": bool(s.shouldQuit),
            "masterSeq": int(s.masterSeq),
            "checkpointed": bool(s.checkpointed),
            "pods": pods,
            "errorNodes": [
                {"node": e.node, "reason": e.reason, "time": e.time}
                for e in self.status.error_nodes
            ],
            "counters": dict(self.extras.counters),
        }

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
        return self._order(pod, data)

    def _order(self, pod: str, data: Mapping[str, Any]) -> Message:
        """An order message to `pod` ("master": every worker) in the current phase and seq."""
        s = self.state
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
            f"hardware faults rescheduled {self.extras.counters['node_faults']}, "
            f"slow nodes evicted {self.extras.counters['evicted_slow']}"
        )

    def mark_published(self) -> None:
        """The current order went out; persisted so a restart knows (it re-publishes anyway)."""
        self.extras.published_seq = self.state.masterSeq
        self._published_marks = self._slow_marks()

    @property
    def needs_publish(self) -> bool:
        """Whether masterSeq changed (or the job ended) since the last publish."""
        return (
            self.extras.published_seq != self.state.masterSeq
            or self._published_marks != self._slow_marks()
            or self.terminal is not None
        )

    def _slow_marks(self) -> tuple[object, ...]:
        """The slow-node path's state: a change is re-published within the same order."""
        s = self.state
        return (s.slow, s.evict, s.checkpointed)

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

    def _remember_address(self, pod: str, msg: Message) -> None:
        d = msg.data
        self.addresses[pod] = (
            str(d.get("podIP", ""))[:64],
            str(d.get("node", ""))[:253],
            str(d.get("nodeIP", ""))[:64],
        )

    def _fault(self, pod: str, message: str, *, node: str | None = None) -> None:
        """One record of the structured fault log (never raises into the caller)."""
        if self.on_fault is None:
            return
        pod_ip, known_node, node_ip = self.addresses.get(pod, ("", "", ""))
        record = FaultRecord(
            pod=pod,
            pod_ip=pod_ip,
            node=node or known_node,
            node_ip=node_ip,
            phase=str(self.state.phase),
            message=message,
        )
        try:
            self.on_fault(record)
        except Exception:  # the fault log must never stop the controller
            log.exception("fault log write failed")

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
        if step.applied and step.action == "hangWithQuit":
            pod = str(dict(step.choices).get("w", ""))
            self.extras.counters["hang_with_quit"] += 1
            self._fault(pod, "hangWithQuit: evict at the next checkpoint")
        if self.steplog is not None:
            self.steplog.write(step)

    def _restore(self) -> State | None:
        saved = self.status.spec_state
        if not saved:
            return None
        # older status files kept the bookkeeping inside specState
        self.extras = Extras.from_json(self.status.runtime or saved.get("runtime", {}))
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
        status = dataclasses.replace(
            self.status,
            phase=str(s.phase),
            recover_count=int(s.recoverCount),
            should_quit=bool(s.shouldQuit),
            pod_infos=infos,
            master_seq=int(s.masterSeq),
            worker_seqs={p: int(apply(s.agentSeq, ModelValue(p))) for p in self.job.pods},
            spec_state={"variables": encode_state(s)},
            runtime=self.extras.to_json(),
        )
        last = status.history[-1] if status.history else None
        snap = (status.phase, tuple(infos[p].retries for p in sorted(infos)), status.recover_count)
        if last is None or (last.phase, last.retries, last.recover_count) != snap:
            status = status.with_snapshot()
        self.store.save(status)
        self.status = status
