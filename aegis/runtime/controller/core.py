"""The controller's core: the only executor of the global spec state (no network I/O).

Each event (an agent's ACK or report, a pod lost, a heartbeat missed, a quit, a taint)
becomes one observation of the generated tables, then `settle()`, inside one transaction of
the `journal` (aegis.runtime.controller.journal): the resulting state is durable before the
caller publishes the order it causes (`orders`, aegis.runtime.controller.orders). A forged,
stale or duplicate message is counted and dropped, never raised. `view` renders the status
(aegis.runtime.controller.view); `faults` records each fault where the core decides it.

Heartbeats: every message of an agent's current incarnation refreshes its last-seen time
(monotonic, in memory); `silent_pods` lists the joined agents silent for longer than the
timeout, and `on_heartbeat_lost` applies `envPodRestart` for one of them. The lost
incarnation is remembered as evicted: if that agent comes back (it was only frozen), its
next heartbeat or report is answered with an eviction, and it exits so that it is replaced.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from aegis.generated.aegis_phase import Constants, Label, State
from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.protocol.errors import MalformedMessage
from aegis.protocol.exitcodes import AgentExit
from aegis.protocol.faults import Fault, FaultKind, FaultRecord, exit_kind
from aegis.protocol.payloads import ReceiptResult, Report, Sender, heartbeat_versions
from aegis.protocol.subjects import PodSubject
from aegis.runtime.controller.bookkeeping import Extras
from aegis.runtime.controller.checkpoints import CheckpointBook
from aegis.runtime.controller.job import DEFAULT_HEARTBEAT_TIMEOUT_S, JobConfig
from aegis.runtime.controller.journal import Journal, PersistenceError, open_journal
from aegis.runtime.controller.liveness import Liveness
from aegis.runtime.controller.orders import OrderBook
from aegis.runtime.controller.recorder import FaultRecorder
from aegis.runtime.controller.senders import Senders
from aegis.runtime.controller.store import ErrorNode, Status, StatusStore
from aegis.runtime.controller.view import StatusView
from aegis.runtime.controller.wal import Log
from aegis.runtime.engine import Engine, StepResult, runtime_constants
from aegis.runtime.engine import report as spec_report
from aegis.runtime.phases import terminal
from aegis.runtime.steplog import StepLog
from aegis.values import ModelValue, apply

__all__ = [
    "DEFAULT_HEARTBEAT_TIMEOUT_S",
    "ControllerCore",
    "JobConfig",
    "Outcome",
    "PersistenceError",
]
log = logging.getLogger(__name__)

SLOW_EVICTED = "slow node evicted at a checkpoint"
# the fault-log message of a job told to quit (a `stop` fault, its pod the job's name)
STOP_PREFIX = "stop:"
QUIT_BY_OPERATOR = "asked by the operator (aegis ctl stop)"
# report type -> the agent's spec action it is the end of (Finish/Error: agentWork(outcome))
REPORT_ACTIONS: Mapping[MessageType, Label] = {
    MessageType.FINISH: Label.agentWork,
    MessageType.ERROR: Label.agentWork,
    MessageType.HANG: Label.agentHang,
    MessageType.CHECKPOINT: Label.agentCheckpoint,
    MessageType.EVICTED: Label.agentEvict,
}
P = ParamSpec("P")
R = TypeVar("R")


def transaction(method: Callable[P, R]) -> Callable[P, R]:
    """Handle one event as a transaction of the journal: if it fails, memory is rolled back
    to what it was before (O(what it changed)); at the end of the outermost one, with
    `autocommit`, its changes are committed (a failed commit rolls them back too), so memory
    never runs ahead of disk."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        core = args[0]
        assert isinstance(core, ControllerCore)
        mark = core.journal.begin()
        core._depth += 1
        try:
            result = method(*args, **kwargs)
        except BaseException:
            core.journal.rollback(mark)
            raise
        finally:
            core._depth -= 1
        if core._depth == 0 and core.autocommit:
            core.journal.commit()
        return result

    return wrapper


def _ready(extras: Extras, state: State) -> dict[str, str]:
    """pod -> the incarnation of each joined agent the spec has Ready."""
    joined = [(pod, inc) for pod, inc in extras.incarnations.items() if inc]
    return {p: i for p, i in joined if str(apply(state.agentState, ModelValue(p))) == "Ready"}


@dataclass(frozen=True)
class Outcome:
    """What handling one event produced: a reply (for requests) and whether to publish;
    `applied`: a report that was applied; `resend`: a heartbeat's pod missed an order, this
    one goes to its order inbox."""

    reply: Message | None = None
    publish: bool = False
    resend: Message | None = None
    applied: bool = False


class ControllerCore:
    """Executes the spec for one job; makes every event durable before its effects are seen.

    With `autocommit` each event commits as it ends; the service turns it off and commits a
    batch of events at once (aegis.runtime.controller.group_commit)."""

    def __init__(
        self,
        job: JobConfig,
        store: StatusStore | None = None,
        steplog: StepLog | None = None,
        *,
        constants: Constants | None = None,
        on_fault: Callable[[FaultRecord], None] | None = None,
        wal: Log | None = None,
        journal: Journal | None = None,
        resumed_run: bool = False,
    ) -> None:
        """`journal`: where the job is persisted, else one over `store` (and `wal`, the
        write-ahead log beside it: docs/persistence.md); `constants` defaults to the job's
        (Workers = its pods, no fault budget); `on_fault` receives one record per fault (the
        structured fault log); `resumed_run`: every agent of the saved job is gone with the
        run that was interrupted (a new `aegis run` on its state dir), see `on_ack`."""
        if journal is None:
            assert store is not None, "a journal or a store"
            journal = open_journal(store, wal)
        self.job = job
        self.journal = journal
        self.steplog = steplog
        self.constants = constants or runtime_constants(job.pods, job.max_retry)
        self.faults = FaultRecorder(on_fault)
        journal.on_gave_up = lambda why: self._fault(FaultKind.SAVE_FAILED, "controller", why)
        state = journal.open(job, self.constants)
        self.extras: Extras = journal.extras  # the bookkeeping beside the spec state
        joined = [p for p, inc in self.extras.incarnations.items() if inc]
        self.liveness = Liveness(joined, job.silence_timeout)  # each joined agent: a full timeout
        self.last_seen = self.liveness.last_seen  # pod -> when its agent was last heard
        self.engine = Engine(
            self.constants,
            state,
            seq_no=self.extras.step_no,
            on_step=self._on_step,
            start_checked=state is not None,  # restored: checked, then replayed step by step
        )
        book = self.checkpoints = CheckpointBook(job.pods)  # what the agents' stores hold
        self.orders = OrderBook(job, self.constants, self.engine, self.extras, book)
        self.senders = Senders(job, self.extras, self.orders)
        self.view = StatusView(job, self.engine, journal, self.faults, lambda: self.terminal, book)
        self.autocommit = True  # commit at the end of each event (off: the caller commits)
        self._depth = 0  # transactions in progress (nested: taint inside on_pod_lost)
        journal.start(self.engine, self.view, steplog)
        # pod -> the saved incarnation its first new agent continues (resumed_run): memory only,
        # so a controller restarted later in the same run adopts nobody
        self._resumable = _ready(self.extras, self.state) if resumed_run and journal.resumed else {}

    # ---------------- events ----------------

    @transaction
    def on_ack(self, msg: Message) -> Outcome:
        """An agent's ACK request: (re)join it, reply with the current order."""
        pod, inc = self.senders.authentic(msg, need_known=False)
        if pod is None:
            return Outcome()
        w = ModelValue(pod)
        known = self.extras.incarnations.get(pod)
        if known == inc and self._agent_state(w) == "Ready":
            self.extras.counters["duplicate_ack"] += 1
            return Outcome(self.orders.order_for(pod))
        if known is not None and known != inc and self._resumable.get(pod) == known:
            return self._resume_pod(pod, inc)
        if known != inc and self.senders.replaced(pod, inc):
            # an incarnation declared lost or replaced, asking again (its ACK sent again on
            # waking, or a credential someone kept): it must leave, not take the pod back
            self.extras.counters["retired_incarnation"] += 1
            return Outcome(self.orders.eviction(pod, inc))
        if known is not None and known != inc:
            # its replacement joined before the launcher said the old incarnation was lost
            # (a launcher event read late, a Kubernetes watch behind): a fault all the same,
            # in the fault log as the launcher's would be (which then counts as lost_unknown)
            kind = FaultKind.EVICTED_EXIT if self.extras.evicts(pod, known) else FaultKind.POD_LOST
            self._fault(kind, pod, "agent replaced: a new incarnation joined before its loss came")
            self._lost(pod, replaced=True)
            self.senders.retire(pod, known)
            self.engine.settle()
        self.extras.incarnations[pod] = inc
        self.last_seen[pod] = time.monotonic()
        with contextlib.suppress(MalformedMessage):  # where it runs, for `taint` and status
            self.faults.remember(pod, Sender.from_data(msg.data))
        self.engine.observe(Label.agentJoin, w=w)
        out = self._finish(None)  # the reply carries the order after the decisions
        return Outcome(self.orders.order_for(pod), out.publish)

    def _resume_pod(self, pod: str, inc: str) -> Outcome:
        """The first agent of a resumed run for a pod whose agent was Ready when the run was
        interrupted: it continues that incarnation (the spec's agent is still Ready, working on
        the current order or done with it), so the interruption is a pause of the whole job,
        not a pod restart, and counts no retry. It is answered with the current order."""
        del self._resumable[pod]
        self.extras.incarnations[pod] = inc
        self.extras.counters["resumed"] += 1
        self.last_seen[pod] = time.monotonic()
        log.info("agent %s resumes the interrupted run's incarnation of its pod", pod)
        self.journal.touch()
        return Outcome(self.orders.order_for(pod))

    @transaction
    def on_report(self, msg: Message) -> Outcome:
        """An agent's report: the end of its spec action (its seq must be the successor's
        message), then `receive` of that message.

        Finish/Error end agentWork, Hang is agentHang (mark, nothing killed), Checkpoint is
        agentCheckpoint (a safe point), Evicted is agentEvict (no message: the agent leaves).
        """
        pod, inc = self.senders.authentic(msg, need_known=True)
        if pod is None:
            evicted = self.senders.replaced(msg.pod_name, inc)
            return Outcome(
                self.orders.receipt(msg, ReceiptResult.EVICTED if evicted else ReceiptResult.FORGED)
            )
        try:
            body = Report.from_data(msg.data)
        except MalformedMessage as exc:
            self.senders.malformed(pod, "report", exc)
            return Outcome(self.orders.receipt(msg, ReceiptResult.FORGED))
        self.last_seen[pod] = time.monotonic()
        self.faults.remember(pod, body.sender)
        self.checkpoints.note(pod, body.checkpoint)
        label = REPORT_ACTIONS.get(msg.type)
        if label is None:
            self.extras.counters["unexpected_type"] += 1
            return Outcome(self.orders.receipt(msg, ReceiptResult.UNEXPECTED_TYPE))
        if label is Label.agentCheckpoint and self.checkpoints.incomplete(pod, msg.seq, body.step):
            return Outcome(self.orders.receipt(msg, ReceiptResult.NOT_ENABLED))  # no safe point
        result, marked = self._take_report(pod, msg, label, body)
        if result is not ReceiptResult.APPLIED:  # nothing changed: nothing to save
            return Outcome(self.orders.receipt(msg, result))
        self._report_faults(pod, msg, body, marked)
        return self._finish(self.orders.receipt(msg, result), applied=True)

    def _take_report(
        self, pod: str, msg: Message, label: Label, body: Report
    ) -> tuple[ReceiptResult, bool]:
        """Apply the agent's action a report ends, then `receive` of its message: (what
        became of it, whether a Hang marked the pod slow now). A command that cannot start
        (the user's error) quits the job before its Error is received: no retry counted."""
        w, kind = ModelValue(pod), msg.type.value
        choices: dict[str, Any] = {"w": w}
        if label is Label.agentWork:
            choices["outcome"] = kind
        found = self.engine.find(label, **choices)
        if found is None:  # counted; logged once per pod and kind until the state changes
            reject = functools.partial(self.engine.reject, label, **choices)
            self.senders.not_enabled(pod, kind, self.engine.seq_no, reject)
            return ReceiptResult.NOT_ENABLED, False
        sent = spec_report(w, kind, msg.seq)
        if label is Label.agentEvict:
            stale = msg.seq != self.state.masterSeq
        else:
            stale = sent not in found[1].state.msgs - self.state.msgs
            if stale:
                log.info("stale %s from %s (seq %d, order %d): dropped",
                         kind, pod, msg.seq, self.state.masterSeq)  # fmt: skip
        if stale:
            self.extras.counters["stale"] += 1
            return ReceiptResult.STALE, False
        self.engine.take(label, found)
        if label is Label.agentEvict:
            return ReceiptResult.APPLIED, False
        self.engine.settle()
        if msg.type is MessageType.ERROR and body.user_error:
            self._quit(f"{pod}: {body.reason}; the user's error, no retry, no node blamed")
        was_slow = bool(apply(self.state.slow, w))
        self.engine.observe(Label.receive, m=sent)
        return ReceiptResult.APPLIED, not was_slow and bool(apply(self.state.slow, w))

    def _report_faults(self, pod: str, msg: Message, body: Report, marked: bool) -> None:
        """The faults an applied report tells of, and the pod's last failure reason: an
        Error in the command's phase is the command's (Level 1), in a check round's phase
        that round's (the agent's exit tells its level)."""
        reason = body.reason
        if msg.type is MessageType.HANG and marked:
            self.extras.counters["hang_marked"] += 1
            why = f"hang: {reason or 'no progress'} (marked, not killed)"
            self._fault(FaultKind.HANG, pod, why)
        if msg.type is MessageType.ERROR and body.user_error:
            self._set_reason(pod, reason)  # its fault is the job's stop (`_quit`)
        elif msg.type is MessageType.ERROR:
            self._set_reason(pod, reason or "error reported")
            command = msg.phase is MessagePhase.COMMAND
            kind = FaultKind.ERROR if command else FaultKind.CHECK_FAILED
            failed = body.failure  # the rank whose process failed, if one did
            known = {} if failed is None else {"exit_code": failed.exit_code, "rank": failed.rank}
            self._fault(kind, pod, f"error: {reason or 'error reported'}", **known)
        elif msg.type is MessageType.EVICTED:
            self.extras.counters["evicted_slow"] += 1
            self.extras.evicted[pod] = body.sender.incarnation  # it leaves: its exit is not a fault
            why = f"{SLOW_EVICTED}: {reason or 'marked slow'}"
            self._set_reason(pod, why)
            self._fault(FaultKind.EVICTED, pod, why)

    @transaction
    def on_pod_lost(
        self, pod: str, incarnation: str, exit_code: int, node: str, reason: str = ""
    ) -> Outcome:
        """The launcher saw agent `pod` exit: reschedule (exit 1, node blacklisted) or restart;
        `reason`, when the launcher knows more than an exit code (its host was lost: then
        `exit_code` is no process's).

        An incarnation that never joined (the controller knows none for the pod, and this one
        was not declared lost already) is a pod restart too."""
        known = self.extras.incarnations.get(pod)
        unjoined = known is None and bool(incarnation)
        unjoined = unjoined and not self.senders.replaced(pod, incarnation)
        if pod not in self.job.pod_set or (known != incarnation and not unjoined):
            self.extras.counters["lost_unknown"] += 1
            self.senders.retire(pod, incarnation)  # it exited: it never speaks again
            self.journal.touch()
            return Outcome()
        self.senders.retire(pod, incarnation)
        w = ModelValue(pod)
        evicted = self.extras.evicts(pod, incarnation)  # its exit 1 is no node fault then
        if exit_code == AgentExit.NODE_FAULT and self._agent_state(w) == "Exited":
            why = self.extras.reasons.get(pod) or "node fault"
            self.taint(node, f"agent {pod} exited 1: {why}", save=False)
            if not evicted:
                self.extras.counters["node_faults"] += 1
        kind = exit_kind(exit_code, evicted=evicted)
        code = None if reason else exit_code  # with a reason (its host lost) no process exited
        self._fault(kind, pod, reason or f"agent exited {exit_code}", node=node, exit_code=code)
        self._lost(pod, replaced=False)
        self.extras.incarnations[pod] = None
        self.last_seen.pop(pod, None)
        return self._finish(None)

    def on_heartbeat(self, msg: Message) -> Outcome:
        """A heartbeat: refresh the agent's last-seen time; evict a lost incarnation; send
        the current order to an agent that missed one (`OrderVersions.missed`)."""
        pod, inc = self.senders.authentic(msg, need_known=False)
        if pod is None:
            return Outcome()
        if self.extras.incarnations.get(pod) == inc:
            now = self.last_seen[pod] = time.monotonic()
            self.checkpoints.note(pod, msg.data.get("checkpoint"))
            try:
                holds, holds_pod = heartbeat_versions(msg.data)
            except MalformedMessage as exc:
                self.senders.malformed(pod, "heartbeat", exc)
                return Outcome()
            if self.orders.versions.missed(pod, holds, holds_pod, now):
                self.extras.counters["order_resent"] += 1
                return Outcome(resend=self.orders.order_for(pod))
        elif self.senders.replaced(pod, inc):
            return Outcome(self.orders.eviction(pod, inc))
        else:
            self.extras.counters["old_heartbeat"] += 1
        return Outcome()

    @transaction
    def on_heartbeat_lost(self, pod: str) -> Outcome:
        """Agent `pod` missed its heartbeats: the pod is lost (observation envPodRestart)."""
        inc = self.extras.incarnations.get(pod)
        self.last_seen.pop(pod, None)
        if pod not in self.job.pod_set or inc is None:
            self.extras.counters["lost_unknown"] += 1
            return Outcome()
        step = self.engine.observe(Label.envPodRestart, w=ModelValue(pod))
        if step.applied:
            self.checkpoints.forget(pod)
            self.extras.counters["heartbeat_lost"] += 1
            why = f"missed heartbeats for {self.job.silence_timeout:g} s: pod lost"
            self._fault(FaultKind.LOST, pod, why)
            self.extras.incarnations[pod] = None
            self.extras.evicted[pod] = inc
            self.senders.retire(pod, inc)
            log.warning("agent %s (incarnation %s) missed its heartbeats: pod lost", pod, inc)
        else:
            self.extras.counters["heartbeat_lost_not_enabled"] += 1
            log.warning("agent %s missed its heartbeats; envPodRestart not enabled", pod)
        return self._finish(None)

    @transaction
    def on_quit(self, why: str = QUIT_BY_OPERATOR) -> Outcome:
        """The job must stop (ShouldQuit): the operator asked, or its command cannot start."""
        self._quit(why)
        return self._finish(None)

    def _quit(self, why: str) -> None:
        """envQuit, recorded in the fault log (a `stop` of the job) when it applies."""
        if self.engine.observe(Label.envQuit).applied:
            self._fault(FaultKind.STOP, self.job.name, f"{STOP_PREFIX} {why}")
            self.engine.settle()

    @transaction
    def taint(self, node: str, reason: str, *, save: bool = True) -> bool:
        """Blacklist `node` (ErrorNodes); False when it is already there."""
        nodes = self.status.error_nodes
        if not node or any(e.node == node for e in nodes):
            return False
        entry = ErrorNode(node, self.job.status_budget.reason(reason), time.time())
        self.journal.set_error_nodes((*nodes, entry))
        if save:
            self.journal.touch()
        return True

    def known_nodes(self) -> set[str]:
        """The nodes this controller saw the job's pods on and the error nodes: what `taint`
        accepts."""
        return self.faults.known_nodes() | {e.node for e in self.status.error_nodes} - {""}

    @transaction
    def untaint(self, node: str) -> bool:
        """Take `node` off the blacklist; False when it was not on it."""
        kept = tuple(e for e in self.status.error_nodes if e.node != node)
        if len(kept) == len(self.status.error_nodes):
            return False
        self.journal.set_error_nodes(kept)
        self.journal.touch()
        return True

    # ---------------- who sent it ----------------

    def sender_matches(self, sender: PodSubject | None, msg: Message) -> bool:
        """Whether `msg` names the pod and incarnation it was sent by (`Senders.matches`)."""
        return self.senders.matches(sender, msg)

    # ---------------- liveness ----------------

    def refresh_all(self, now: float | None = None) -> None:
        """Count every joined agent as seen at `now` (default: now; later for a grace), after
        the controller's own outage or the bus's."""
        self.liveness.refresh_all(now)

    def silent_pods(self, now: float | None = None) -> list[str]:
        """Joined agents (not leaving by themselves) silent for longer than the timeout: an
        agent that reported Error outside RunCommand exits 1 by itself, and its exit, seen by
        the launcher / Job Controller, reschedules it (node into ErrorNodes)."""
        if self.terminal is not None:
            return []
        silent = self.liveness.silent(now)
        return [pod for pod in silent if self._agent_state(ModelValue(pod)) != "Exited"]

    # ---------------- what it holds ----------------

    @property
    def state(self) -> State:
        """The current spec state."""
        return self.engine.state

    @property
    def terminal(self) -> str | None:
        """ "Succeed" or "Failed" once the job has terminated (the spec's Terminated)."""
        return terminal(self.constants, self.state)

    @property
    def status(self) -> Status:
        """The status as last saved, with the error nodes as the events left them."""
        return self.journal.status

    def status_view(self) -> dict[str, Any]:
        """The job as `aegis ctl status` shows it (JSON-able)."""
        return self.view.status_view()

    # ---------------- internals ----------------

    def _agent_state(self, w: ModelValue) -> str:
        return str(apply(self.state.agentState, w))

    def _set_reason(self, pod: str, reason: str) -> None:
        self.extras.reasons[pod] = self.job.status_budget.reason(reason)

    def _finish(self, reply: Message | None, *, applied: bool = False) -> Outcome:
        self.engine.settle()
        self.journal.touch()
        return Outcome(reply, self.orders.needs_publish, applied=applied)

    def _lost(self, pod: str, *, replaced: bool) -> None:
        self.checkpoints.forget(pod)
        w = ModelValue(pod)
        label = Label.reschedule if self._agent_state(w) == "Exited" else Label.envPodRestart
        self.engine.observe(label, w=w)
        if replaced:
            self.extras.counters["inferred_restart"] += 1

    def _fault(self, kind: FaultKind, pod: str, message: str, **known: Any) -> None:
        """One record of the structured fault log (never raises into the caller); `known`:
        the node, exit code and rank where they are known."""
        self.faults.record(Fault(kind, pod, message, **known), str(self.state.phase))

    def _on_step(self, step: StepResult) -> None:
        """Each step the engine takes: the bookkeeping it implies, then the journal's."""
        if step.applied and step.action == Label.advance and step.state.phase == "RunCommand":
            self.extras.command_orders += 1
        if step.applied:
            self.extras.note_counted_failure(step)
        if step.applied and step.action == Label.hangWithQuit:
            pod = str(dict(step.choices).get("w", ""))
            self.extras.counters["hang_with_quit"] += 1
            self._fault(FaultKind.HANG_QUIT, pod, "hangWithQuit: evict at the next checkpoint")
        self.journal.on_step(step)
