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

import copy
import dataclasses
import functools
import logging
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar

from aegis.checks.faultlog import FaultRecord
from aegis.errors import AegisError
from aegis.generated.aegis_phase import Constants, Label, State, violated_invariants
from aegis.protocol.envelope import Message, MessageType
from aegis.protocol.errors import MalformedMessage
from aegis.protocol.payloads import Eviction, Order, Receipt, ReceiptResult, Report, Sender
from aegis.protocol.state_codec import CodecError, decode_state, encode_state
from aegis.runtime.engine import Engine, StepResult, runtime_constants
from aegis.runtime.errors import CorruptStatusError
from aegis.runtime.phases import message_phase, terminal
from aegis.runtime.steplog import StepLog
from aegis.runtime.store import ErrorNode, PodInfo, Status, StatusStore
from aegis.values import Fn, ModelValue, apply

log = logging.getLogger(__name__)

DEFAULT_HEARTBEAT_TIMEOUT_S = 10.0
SLOW_EVICTED = "slow node evicted at a checkpoint"
# report type -> the agent's spec action it is the end of (Finish/Error: agentWork(outcome))
REPORT_ACTIONS: Mapping[MessageType, Label] = {
    MessageType.FINISH: Label.agentWork,
    MessageType.ERROR: Label.agentWork,
    MessageType.HANG: Label.agentHang,
    MessageType.CHECKPOINT: Label.agentCheckpoint,
    MessageType.EVICTED: Label.agentEvict,
}
SAVE_BACKOFF_S = (0.05, 0.1, 0.2, 0.4)  # pauses between the tries of one status save
P = ParamSpec("P")


@dataclass
class SaveHealth:
    """How the status saves fare: failures so far, the last one, and whether the last save
    went through (shown by `aegis ctl status`)."""

    failures: int = 0
    last_error: str = ""
    last_failed: float = 0.0
    ok: bool = True

    def failed(self, exc: BaseException) -> None:
        """One failed save."""
        self.failures += 1
        self.last_error, self.last_failed, self.ok = str(exc)[:300], time.time(), False
        log.error("status save failed (%d so far): %s", self.failures, exc)

    def saved(self) -> None:
        """A save went through."""
        if not self.ok:
            log.warning("status saved again after %d failed saves", self.failures)
        self.ok = True

    def to_json(self) -> dict[str, Any]:
        """The JSON object in `status_view`."""
        return {
            "ok": self.ok,
            "failures": self.failures,
            "lastError": self.last_error,
            "lastFailed": self.last_failed,
        }


R = TypeVar("R")


class PersistenceError(AegisError):
    """The status could not be saved: the event was rolled back (memory equals disk)."""


def transaction(method: Callable[P, R]) -> Callable[P, R]:
    """Handle one event as a transaction: if it fails (e.g. the status cannot be saved), the
    controller's memory is rolled back to what it was before, so it never runs ahead of disk."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        core = args[0]
        assert isinstance(core, ControllerCore)
        saved = core.checkpoint_memory()
        try:
            return method(*args, **kwargs)
        except BaseException:
            core.restore_memory(saved)
            raise

    return wrapper


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
        self._unlogged: list[StepResult] = []  # steps of this event, logged once it is saved
        self._impersonators: set[str] = set()  # pods already logged for claiming another
        self.persistence = SaveHealth()  # failed status saves (kept across rollbacks)
        self.extras = Extras()
        state = self._restore()
        now = time.monotonic()  # a restarted controller gives every known agent a full timeout
        self.last_seen = {p: now for p, inc in self.extras.incarnations.items() if inc}
        self.engine = Engine(self.constants, state, seq_no=self.extras.step_no, on_step=self._log)
        if state is None:
            if steplog is not None:
                steplog.write_initial(self.constants, self.state)
            self._save()
        elif steplog is not None:  # resumed: the log goes on from the restored state
            steplog.write_resume(self.engine.seq_no, self.state)

    # ---------------- events ----------------

    @transaction
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
        self.engine.observe(Label.agentJoin, w=w)
        out = self._finish(None)  # the reply carries the order after the decisions
        return Outcome(self.order_for(pod), out.publish)

    @transaction
    def on_report(self, msg: Message) -> Outcome:
        """An agent's report: the end of its spec action (its seq must be the successor's
        message), then `receive` of that message.

        Finish/Error end agentWork, Hang is agentHang (mark, nothing killed), Checkpoint is
        agentCheckpoint (a safe point), Evicted is agentEvict (no message: the agent leaves).
        """
        pod, inc = self._authentic(msg, need_known=True)
        if pod is None:
            evicted = bool(inc) and self.extras.evicted.get(msg.pod_name) == inc
            return Outcome(
                self._receipt(msg, ReceiptResult.EVICTED if evicted else ReceiptResult.FORGED)
            )
        try:
            body = Report.from_data(msg.data)
        except MalformedMessage as exc:
            self.extras.counters["malformed"] += 1
            log.warning("report from %s dropped: %s", pod, exc)
            return Outcome(self._receipt(msg, ReceiptResult.FORGED))
        self.last_seen[pod] = time.monotonic()
        self._remember_address(pod, body.sender)
        w, kind = ModelValue(pod), msg.type.value
        label = REPORT_ACTIONS.get(msg.type)
        if label is None:
            self.extras.counters["unexpected_type"] += 1
            return Outcome(self._receipt(msg, ReceiptResult.UNEXPECTED_TYPE))
        choices: dict[str, Any] = {"w": w}
        if label is Label.agentWork:
            choices["outcome"] = kind
        found = self.engine.find(label, **choices)
        if found is None:
            self.extras.counters["not_enabled"] += 1
            self.engine.reject(label, **choices)  # logged as rejected
            return self._finish(self._receipt(msg, ReceiptResult.NOT_ENABLED))
        report = Fn({"from": w, "type": kind, "seq": msg.seq})
        if label is not Label.agentEvict and report not in found[1].state.msgs - self.state.msgs:
            self.extras.counters["stale"] += 1
            log.info(
                "stale %s from %s (seq %d, order %d): dropped",
                kind,
                pod,
                msg.seq,
                self.state.masterSeq,
            )
            return Outcome(self._receipt(msg, ReceiptResult.STALE))
        if label is Label.agentEvict and msg.seq != self.state.masterSeq:
            self.extras.counters["stale"] += 1
            return Outcome(self._receipt(msg, ReceiptResult.STALE))
        self.engine.take(label, found)
        reason = body.reason
        if label is not Label.agentEvict:
            self.engine.settle()
            was_slow = bool(apply(self.state.slow, w))
            self.engine.observe(Label.receive, m=report)
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
        return self._finish(self._receipt(msg, ReceiptResult.APPLIED))

    @transaction
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

    def sender_matches(self, pod: str | None, msg: Message) -> bool:
        """Whether `msg` names the pod it was sent by (`pod`, from its subject); a mismatch is
        counted and logged once per sending pod, and the message is dropped."""
        if pod is not None and msg.pod_name == pod:
            return True
        self.extras.counters["impersonation"] += 1
        key = pod or "?"
        if key not in self._impersonators:
            self._impersonators.add(key)
            log.warning(
                "message from %s claims to be from %s: dropped (further ones are only counted)",
                key,
                msg.pod_name,
            )
        return False

    def refusal(self, msg: Message) -> Message:
        """The receipt of a message dropped as forged (its sender is not who it claims)."""
        return self._receipt(msg, ReceiptResult.FORGED)

    def refresh_all(self, now: float | None = None) -> None:
        """Count every joined agent as seen now (after the controller's own outage)."""
        now = time.monotonic() if now is None else now
        self.last_seen = dict.fromkeys(self.last_seen, now)

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

    @transaction
    def on_heartbeat_lost(self, pod: str) -> Outcome:
        """Agent `pod` missed its heartbeats: the pod is lost (observation envPodRestart)."""
        inc = self.extras.incarnations.get(pod)
        self.last_seen.pop(pod, None)
        if pod not in self.job.pods or inc is None:
            self.extras.counters["lost_unknown"] += 1
            return Outcome()
        step = self.engine.observe(Label.envPodRestart, w=ModelValue(pod))
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
        return self._order(pod, Eviction(incarnation).to_data())

    @transaction
    def on_quit(self) -> Outcome:
        """The operator asked the job to stop (ShouldQuit)."""
        self.engine.observe(Label.envQuit)
        return self._finish(None)

    @transaction
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

    @transaction
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

        def _last_fault(r: FaultRecord | None) -> dict[str, Any] | None:
            return None if r is None else {"message": r.message, "time": r.time, "node": r.node}

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
                "lastFault": _last_fault(self.__dict__.get("last_faults", {}).get(pod)),
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
            "persistence": self.persistence.to_json(),
        }

    @property
    def state(self) -> State:
        """The current spec state."""
        return self.engine.state

    @property
    def terminal(self) -> str | None:
        """ "Succeed" or "Failed" once the job has terminated (the spec's Terminated)."""
        return terminal(self.constants, self.state)

    def order_for(self, pod: str = "master") -> Message:
        """The current order (broadcast, or the reply to one agent's ACK)."""
        s = self.state
        master_port, check_port = self.job.ports(s.masterSeq)
        order = Order(
            spec_phase=str(s.phase),
            final=self.terminal,
            state=encode_state(s),
            retry=int(s.recoverCount),
            max_retry=self.job.max_retry,
            master_addr=self.job.rdzv_host,
            master_port=master_port,
            check_port=check_port,
            world=self.job.pods,
        )
        return self._order(pod, order.to_data())

    def _order(self, pod: str, data: Mapping[str, Any]) -> Message:
        """An order message to `pod` ("master": every worker) in the current phase and seq."""
        s = self.state
        return Message(
            self.job.name,
            self.job.namespace,
            pod,
            MessageType.ORDER,
            message_phase(s.phase),
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

    # ---------------- transactions ----------------

    def checkpoint_memory(self) -> tuple[Any, ...]:
        """What an event may change in memory (spec state, bookkeeping, status)."""
        e = self.engine
        return (e.state, e.seq_no, e.rejected, copy.deepcopy(self.extras), self.status, [])

    def restore_memory(self, saved: tuple[Any, ...]) -> None:
        """Undo a failed event: memory goes back to `checkpoint_memory`'s (= the disk's)."""
        e = self.engine
        e.state, e.seq_no, e.rejected, self.extras, self.status, self._unlogged = saved

    # ---------------- internals ----------------

    def _authentic(self, msg: Message, *, need_known: bool) -> tuple[str | None, str]:
        inc = msg.data.get("incarnation", "")
        inc = inc if isinstance(inc, str) else ""
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
        label = Label.reschedule if self._agent_state(w) == "Exited" else Label.envPodRestart
        self.engine.observe(label, w=w)
        if replaced:
            self.extras.counters["inferred_restart"] += 1

    def _remember_address(self, pod: str, sender: Sender) -> None:
        self.addresses[pod] = (sender.pod_ip, sender.node, sender.node_ip)

    def _fault(self, pod: str, message: str, *, node: str | None = None) -> None:
        """One record of the structured fault log (never raises into the caller); the last
        one of each pod is kept in memory for `status_view` (`aegis ctl status`)."""
        pod_ip, known_node, node_ip = self.addresses.get(pod, ("", "", ""))
        record = FaultRecord(
            pod=pod,
            pod_ip=pod_ip,
            node=node or known_node,
            node_ip=node_ip,
            phase=str(self.state.phase),
            message=message,
        )
        self.__dict__.setdefault("last_faults", {})[pod] = record
        if self.on_fault is None:
            return
        try:
            self.on_fault(record)
        except Exception:  # the fault log must never stop the controller
            log.exception("fault log write failed")

    def _agent_state(self, w: ModelValue) -> str:
        return str(apply(self.state.agentState, w))

    def _receipt(self, msg: Message, result: ReceiptResult) -> Message:
        return Message(
            self.job.name,
            self.job.namespace,
            msg.pod_name,
            MessageType.ACK,
            msg.phase,
            Receipt(result).to_data(),
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
        if step.applied and step.action == Label.advance and step.state.phase == "RunCommand":
            self.extras.command_orders += 1
        if step.applied and step.action == Label.hangWithQuit:
            pod = str(dict(step.choices).get("w", ""))
            self.extras.counters["hang_with_quit"] += 1
            self._fault(pod, "hangWithQuit: evict at the next checkpoint")
        self._unlogged.append(step)

    def _restore(self) -> State | None:
        saved = self.status.spec_state
        if not saved:
            return None
        fix = "move the status file away to start the job afresh"
        try:
            # older status files kept the bookkeeping inside specState
            self.extras = Extras.from_json(self.status.runtime or saved.get("runtime", {}))
            state = decode_state(saved["variables"])
        except (CodecError, KeyError, TypeError, ValueError, AttributeError) as exc:
            why = f"saved specState is not a state of the spec ({exc}); {fix}"
            raise CorruptStatusError(why) from None
        saved_pods = (
            sorted(str(w) for w in state.innerPhase) if isinstance(state.innerPhase, Fn) else []
        )
        if saved_pods != sorted(self.job.pods):
            raise CorruptStatusError(
                f"the saved job has pods {saved_pods[:4]}{'...' if len(saved_pods) > 4 else ''} "
                f"({len(saved_pods)}); this job has {len(self.job.pods)} ({self.job.pods[0]}...): "
                f"another job's state; {fix}"
            )
        try:
            bad = violated_invariants(self.constants, state)
        except (KeyError, TypeError, AttributeError) as exc:
            raise CorruptStatusError(f"saved specState is malformed ({exc!r}); {fix}") from None
        if bad:
            raise CorruptStatusError(
                f"saved specState breaks the spec's invariant(s) {', '.join(bad)} "
                f"(phase {state.phase!r}, recoverCount {state.recoverCount!r}); {fix}"
            )
        return state

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
        self._store(status)
        self.status = status
        self._write_steplog()

    def _store(self, status: Status) -> None:
        """Save `status`, retrying a failed write SAVE_ATTEMPTS times (SAVE_BACKOFF_S apart,
        < 1 s in all: the controller can do nothing safely until its state is on disk); the
        failure is kept beside the state (not rolled back): `status_view` and the fault log
        show it."""
        for attempt, pause in enumerate((*SAVE_BACKOFF_S, None)):
            try:
                self.store.save(status)
            except (OSError, AegisError) as exc:
                self.persistence.failed(exc)
                if pause is None:
                    self._fault("controller", f"status save failed {attempt + 1} times: {exc}")
                    raise PersistenceError(
                        f"cannot save the job's status ({exc}); the event was rolled back and "
                        "nothing was published: it is handled again when it comes back"
                    ) from exc
                time.sleep(pause)
            else:
                self.persistence.saved()
                return

    def _write_steplog(self) -> None:
        """Log the steps of the event just saved (after the save: a rolled-back step is never
        logged); a failed write is reported loudly, the saved state stays as it is."""
        steps, self._unlogged = self._unlogged, []
        if self.steplog is None:
            return
        try:
            for step in steps:
                self.steplog.write(step)
        except OSError as exc:
            self.extras.counters["steplog_failed"] += 1
            log.error(
                "step log write failed (%s): the log misses steps from %d on",
                exc,
                steps[0].seq_no if steps else -1,
            )
