"""The agent's side of the spec without I/O: which order to work on, what to report, when to go.

The core keeps the agent's projection of the last order (its *view*: a one-worker spec state,
Workers = {this pod}, with the order's globals, this pod's PER_POD entries, its own agentSeq
and agentState, and the definitions the controller evaluated over every worker; see the
generated agent_view), and decides only through the generated agent actions on that view:
it works on an order when `agentWork` is enabled for itself, reports Hang / Checkpoint only
when `agentHang` / `agentCheckpoint` are, and leaves at a safe point only when `agentEvict` is.
Every report is the message of the successor it applied. `AgentService` (agent.py) does the
I/O: the bus, heartbeats, the command, the checks and the hang watch.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aegis.checks.recovery import Level, classify
from aegis.checks.result import CheckResult, CheckType
from aegis.generated.aegis_phase import ACTIONS, Constants, Label, State, Successor, agent_view
from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.protocol.errors import MalformedMessage
from aegis.protocol.exitcodes import AgentExit
from aegis.protocol.payloads import (
    Eviction,
    Heartbeat,
    Order,
    Receipt,
    ReceiptResult,
    Report,
    Sender,
    parse_order,
)
from aegis.runtime.engine import initial_state, runtime_constants
from aegis.runtime.phases import message_phase
from aegis.values import Fn, ModelValue, Value, apply

log = logging.getLogger(__name__)

MAX_CONTAINER_RESTARTS = 2  # Level 2 tries per pod and node before it escalates to Level 3


@dataclass(frozen=True)
class Ignore:
    """Nothing to do for this order (older, for another incarnation, or work not enabled)."""

    why: str


@dataclass(frozen=True)
class Leave:
    """Stop the command and exit with `code` (final order, or this incarnation was evicted)."""

    code: int
    why: str


@dataclass(frozen=True)
class Work:
    """Start working on order `seq` (stop any older work first)."""

    seq: int
    order: Order


@dataclass(frozen=True)
class Evict:
    """The re-published order allows `agentEvict`: report Evicted, stop, exit NODE_FAULT."""


Decision = Ignore | Leave | Work | Evict


@dataclass(frozen=True)
class RoundOutcome:
    """What a check round leads to: a report (`Finish`/`Error`) or a container restart."""

    outcome: str  # "Finish", "Error", or RESTART
    reason: str
    slow_note: str = ""  # why this node is slow (its last performance check), if it is
    user_error: bool = False  # an Error because the command cannot start (not the node's)


RESTART = "Restart"  # Level 2: no report, the container restarts in place


def round_outcome(
    phase: str, results: Sequence[CheckResult], container_restarts: int
) -> RoundOutcome:
    """The outcome of a check round; Level 2 escalates to Level 3 after MAX_CONTAINER_RESTARTS."""
    verdict = classify(results)
    slow = [r for r in results if r.failed and r.check_type == CheckType.ALLREDUCE_PERFORMANCE]
    note = f"allreduce performance: {slow[0].result}" if slow else ""
    failures = describe_failures(results)
    if verdict.level is Level.NODE:
        return RoundOutcome("Error", f"{phase}: {verdict.reason} ({failures})", note)
    if verdict.level is Level.CONTAINER:
        if container_restarts < MAX_CONTAINER_RESTARTS:
            return RoundOutcome(RESTART, f"{phase}: {verdict.reason}", note)
        return RoundOutcome(
            "Error",
            f"{phase}: {verdict.reason}; still failing after {container_restarts} "
            f"container restarts ({failures})",
            note,
        )
    return RoundOutcome("Finish", verdict.reason, note)


def describe_failures(results: Sequence[CheckResult]) -> str:
    """The failed checks of a round, one clause each."""
    bad = [f"{r.check_type}: {r.result}" for r in results if r.failed]
    return "; ".join(bad) or "no failed check"


@dataclass(frozen=True)
class ViewBase:
    """What every view of one pod's orders with one MaxRetry shares: the one-worker
    constants, Init, and the derived values of Init (their types check an order's)."""

    pod: str
    max_retry: int
    constants: Constants
    init: State
    init_derived: agent_view.Derived

    @classmethod
    def of(cls, pod: str, max_retry: int) -> ViewBase:
        """Made once per pod and MaxRetry, not per order (most of an order's cost)."""
        c = runtime_constants((pod,), max_retry)
        init = initial_state(c)
        return cls(pod, max_retry, c, init, agent_view.derive(c, init))


class AgentView:
    """The agent's one-worker view (Workers = {its pod}) and the derived definitions of the
    order it was made of; steps only by the generated agent actions (agent_view)."""

    def __init__(self, constants: Constants, state: State, derived: agent_view.Derived) -> None:
        self.constants = constants
        self.state = state
        self.derived = derived

    @classmethod
    def of(
        cls, base: ViewBase, order: Order, pod_part: Mapping[str, Value], agent_seq: int
    ) -> AgentView:
        """The view of `order` for `base.pod` (its PER_POD entries `pod_part`, Init's where
        absent; its own agentSeq, agentState Ready); `base` must have the order's MaxRetry."""
        if base.max_retry != order.max_retry:
            raise ValueError(f"view base of MaxRetry {base.max_retry} for {order.max_retry}")
        me = ModelValue(base.pod)
        state = base.init.as_dict()
        _same_types(order.globals, state, "global")
        state.update(order.globals)
        own = {name: apply(state[name], me) for name in agent_view.PER_POD}
        _same_types(pod_part, own, "per-pod entry")
        for name in agent_view.PER_POD:
            if name in pod_part:
                state[name] = Fn({me: pod_part[name]})
        state["agentSeq"] = Fn({me: agent_seq})
        state["agentState"] = Fn({me: "Ready"})
        expected = base.init_derived
        _same_types(order.derived, {n: getattr(expected, n) for n in order.derived}, "derived")
        derived = agent_view.Derived(**order.derived)
        return cls(base.constants, State.from_dict(state), derived)

    def successors(self, label: Label) -> list[Successor]:
        """The successors of the view by the agent's action `label`."""
        pid = next(iter(ACTIONS[label].process_ids(self.constants)))
        return agent_view.AGENT_STEPS[label](self.constants, self.state, self.derived, pid)

    def observe(self, label: Label, **choices: Value) -> State | None:
        """Apply `label` with these choices (besides the acting worker); None if not enabled."""
        for succ in self.successors(label):
            made = dict(succ.choices)
            if all(made.get(k) == v for k, v in choices.items()):
                self.state = succ.state
                return succ.state
        return None


def _same_types(got: Mapping[str, Value], like: Mapping[str, Value], what: str) -> None:
    """TypeError unless each value has the type of the spec's own value of that name."""
    for name, value in got.items():
        if type(value) is not type(like[name]):
            raise TypeError(f"{what} {name} must be a {type(like[name]).__name__}: {value!r:.60}")


class AgentCore:
    """One agent's protocol state: its view of the spec, its seq and the order it works on."""

    def __init__(self, job: str, namespace: str, pod: str, sender: Sender) -> None:
        self.job = job
        self.namespace = namespace
        self.pod = pod
        self.me = ModelValue(pod)
        self.sender = sender
        self.view: AgentView | None = None
        self.view_base: ViewBase | None = None  # of the last order's MaxRetry
        self.order: Order | None = None  # the order the view was made of
        self.pod_part: dict[str, Value] = {}  # this pod's PER_POD entries, as last sent
        self.malformed = 0  # orders dropped: not an order, or not a view of a spec state
        self.agent_seq = 0  # the seq of this agent's last report of agentWork
        self.work_seq = -1  # the order the agent works on
        self.mark_reason = ""  # why this agent reported Hang last
        # the versions of the newest orders received (Heartbeat.holds / holds_pod): the
        # heartbeat says them, and the controller sends the current order to a pod that
        # missed one
        self.holds = -1
        self.holds_pod = -1
        self.beat_s = 0.0  # the heartbeat period the controller asks for at least (its budget)

    # ---------------- orders ----------------

    def on_order(self, msg: Message, *, working: bool) -> Decision:
        """What to do with an order message; `working`: is work on `work_seq` running?"""
        if msg.type is not MessageType.ORDER or msg.pod_name not in ("master", self.pod):
            return Ignore(f"not an order for {self.pod}")
        try:
            payload = parse_order(msg.data)
        except MalformedMessage as exc:
            self.malformed += 1
            log.warning("agent %s: order %d dropped: %s", self.pod, msg.seq, exc)
            return Ignore(str(exc))
        if isinstance(payload, Eviction):
            if payload.incarnation == self.sender.incarnation:
                return Leave(AgentExit.EVICTED, "the controller declared this incarnation lost")
            return Ignore("eviction of another incarnation")
        if payload.final:
            return Leave(AgentExit.LEFT, f"the job ended: {payload.final}")
        self.holds = max(self.holds, payload.version)
        self.beat_s = payload.beat_s
        if payload.pod is not None:
            self.holds_pod = max(self.holds_pod, payload.version)
        if self.view is not None and msg.seq <= self.agent_seq:
            return Ignore(f"order {msg.seq} is not newer than my last report {self.agent_seq}")
        if msg.seq < self.work_seq:
            return Ignore(f"order {msg.seq} is older than the one I work on ({self.work_seq})")
        if not self._update_view(payload):
            return Ignore("order state is not a spec state")
        if msg.seq == self.work_seq and working:
            # the same order with a newer state (slow marks, an eviction, a checkpoint)
            return Evict() if self.enabled(Label.agentEvict) else Ignore("same order")
        if not self.enabled(Label.agentWork):
            return Ignore(f"agentWork not enabled for {self.pod} in order {msg.seq}")
        self.work_seq = msg.seq
        return Work(msg.seq, payload)

    def _update_view(self, order: Order) -> bool:
        part = self.pod_part if order.pod is None else dict(order.pod)
        try:
            if self.view_base is None or self.view_base.max_retry != order.max_retry:
                self.view_base = ViewBase.of(self.pod, order.max_retry)
            self.view = AgentView.of(self.view_base, order, part, self.agent_seq)
            self.order, self.pod_part = order, part
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            self.malformed += 1
            log.warning("agent %s: order view rejected: %s", self.pod, exc)
            return False
        return True

    def enabled(self, label: Label) -> bool:
        """Whether the agent's action `label` is enabled for itself on its view."""
        return self.view is not None and bool(self.view.successors(label))

    def peers_finished(self) -> bool:
        """Whether another worker already finished the current order (the order's `finished`
        count: this agent has not finished the order it is about to work on)."""
        return self.order is not None and self.order.finished > 0

    # ---------------- reports ----------------

    def finish_work(self, seq: int, phase: str, outcome: str, report: Report) -> Message | None:
        """agentWork(outcome) for order `seq`: the report to send, None if not enabled."""
        if self.view is None:
            return None
        state = self.view.observe(Label.agentWork, outcome=outcome)
        if state is None:
            log.warning("agent %s: agentWork(%s) not enabled in order %d", self.pod, outcome, seq)
            return None
        self.agent_seq = int(apply(state.agentSeq, self.me))
        return self.message(MessageType(outcome), message_phase(phase), self.agent_seq, report)

    @property
    def exited(self) -> bool:
        """Whether the agent's view says it must exit (an Error outside RunCommand: Level 3)."""
        return self.view is not None and apply(self.view.state.agentState, self.me) == "Exited"

    def hang(self, reason: str) -> Message | None:
        """agentHang: the Hang report for the running command, None when the spec says no."""
        if not self.enabled(Label.agentHang):
            return None
        assert self.view is not None
        self.view.observe(Label.agentHang)
        self.mark_reason = reason
        return self._command_report(MessageType.HANG, Report(self.sender, reason=reason))

    def checkpoint(self, step: int) -> Message | None:
        """agentCheckpoint: the Checkpoint report, None when no eviction waits for it."""
        if not self.enabled(Label.agentCheckpoint):
            return None
        assert self.view is not None
        self.view.observe(Label.agentCheckpoint)
        return self._command_report(MessageType.CHECKPOINT, Report(self.sender, step=step))

    def evict(self) -> Message | None:
        """agentEvict: the Evicted report (sent before the command stops), None if not enabled."""
        if self.view is None or self.view.observe(Label.agentEvict) is None:
            return None
        self.agent_seq = int(self.view.state.masterSeq)
        reason = self.mark_reason or "marked slow"
        return self._command_report(MessageType.EVICTED, Report(self.sender, reason=reason))

    def on_receipt(self, reply: Message) -> Leave | None:
        """Leave when the controller answers that this incarnation was declared lost."""
        try:
            receipt = Receipt.from_data(reply.data)
        except MalformedMessage as exc:
            log.warning("agent %s: receipt dropped: %s", self.pod, exc)
            return None
        if receipt.result is ReceiptResult.EVICTED:
            return Leave(AgentExit.EVICTED, "the controller declared this incarnation lost")
        return None

    def ack(self) -> Message:
        """The ACK request that (re)joins the job."""
        return self.message(MessageType.ACK, MessagePhase.BOOTCHECK, self.agent_seq, None)

    def heartbeat_period(self, own_s: float) -> float:
        """Seconds between this agent's heartbeats: its own period, or the longer one the
        last order asked for (the controller's heartbeat budget; MAX_BEAT_S at most, as
        `Order.from_data` checks)."""
        return max(own_s, self.beat_s)

    def heartbeat(self) -> Message:
        """A heartbeat (refreshes the controller's last-seen time of this incarnation; says
        which order it holds, so that a missed one is sent again)."""
        data = Heartbeat(self.sender, self.holds, self.holds_pod).to_data()
        return self._envelope(MessageType.HEARTBEAT, MessagePhase.BOOTCHECK, self.agent_seq, data)

    def _command_report(self, kind: MessageType, report: Report) -> Message:
        assert self.view is not None
        return self.message(kind, MessagePhase.COMMAND, int(self.view.state.masterSeq), report)

    def message(
        self, kind: MessageType, phase: MessagePhase, seq: int, report: Report | None
    ) -> Message:
        """A message from this agent (every one carries its sender)."""
        data = (report or Report(self.sender)).to_data() if report else self.sender.to_data()
        return self._envelope(kind, phase, seq, data)

    def _envelope(
        self, kind: MessageType, phase: MessagePhase, seq: int, data: dict[str, Any]
    ) -> Message:
        return Message(self.job, self.namespace, self.pod, kind, phase, data, time.time(), seq)
