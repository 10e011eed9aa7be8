"""The controller's messages out: what goes out for the current spec state, and what went out.

`OrderBook` builds every message the controller sends: the broadcast order of the state
(cached per state: every ACK's reply reuses it), a pod's own order (the broadcast plus its
PER_POD entries), the eviction of a lost incarnation, the receipt that answers a report, and
the orders of the pods whose entries changed since the last publish. It keeps the publish
marks (`mark_published`: the masterSeq that went out, persisted in the bookkeeping; the
slow-node marks; each pod's entries) from which `needs_publish` tells whether the state has
an order not yet out, and the versions each pod must hold by now (`OrderVersions`). It reads
the engine's state and never changes it (no I/O).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import Any

from aegis.generated.aegis_phase import Constants, State, _tla, agent_view
from aegis.protocol.envelope import Message, MessageType
from aegis.protocol.payloads import Eviction, Order, Receipt, ReceiptResult
from aegis.runtime.controller.bookkeeping import Extras
from aegis.runtime.controller.job import JobConfig
from aegis.runtime.controller.order_versions import OrderVersions, order_grace
from aegis.runtime.engine import Engine, initial_state, runtime_constants
from aegis.runtime.phases import message_phase, order_phases, terminal
from aegis.values import ModelValue, Value, apply

# {w \in Workers : finished[w]} as a site of the generated tables (see _finished_count)
FINISHED = _tla.Site("controller: finished workers", keyed=("finished",), reads=())
# (PER_POD functions last published, {pod: its entries where not the default})
Parts = tuple[tuple[object, ...], dict[str, tuple[object, ...]]]


def _finished(_c: Constants, s: State, w: Value) -> bool:
    return bool(apply(s.finished, w))


class OrderBook:
    """Builds one job's orders from the engine's state and remembers what was published."""

    def __init__(self, job: JobConfig, constants: Constants, engine: Engine, extras: Extras):
        self.job = job
        self.constants = constants
        self.engine = engine
        self.extras = extras  # its published_seq: the masterSeq last published (persisted)
        self.order_phases = order_phases(constants)  # the phases an order goes out in
        # which order each pod must hold by now
        self.versions = OrderVersions(order_grace(job.heartbeat_timeout))
        self._published_marks: tuple[object, ...] | None = None
        self._cache: tuple[State, Order] | None = None
        self._published_parts: Parts | None = None
        self._unpublished_parts: Parts | None = None
        self._unpublished_pods: tuple[str, ...] = ()  # whose own orders go out with the next
        one = initial_state(runtime_constants(job.pods[:1], job.max_retry)).as_dict()
        first = ModelValue(job.pods[0])
        self._default_part = tuple(apply(one[n], first) for n in agent_view.PER_POD)

    @property
    def terminal(self) -> str | None:
        """ "Succeed" or "Failed" once the job has terminated (the spec's Terminated)."""
        return terminal(self.constants, self.engine.state)

    def order_for(self, pod: str = "master") -> Message:
        """The current order: the broadcast ("master": globals and derived definitions), or
        one pod's (the reply to its ACK, or its per-pod entries changed) with its PER_POD part.
        Its size does not depend on the number of pods (agent_view: the agent's projection)."""
        s = self.engine.state
        base = self._order_base()
        part = None
        if pod != "master":
            w = ModelValue(pod)
            part = {name: apply(getattr(s, name), w) for name in agent_view.PER_POD}
        order = dataclasses.replace(base, pod=part)
        return self.message(pod, order.to_data())

    def eviction(self, pod: str, incarnation: str) -> Message:
        """The order telling a lost incarnation of `pod` to exit (it is replaced)."""
        return self.message(pod, Eviction(incarnation).to_data())

    def _order_base(self) -> Order:
        """The broadcast order of the current state (cached per state: ACK replies reuse it)."""
        s = self.engine.state
        cached = self._cache
        if cached is not None and cached[0] is s:
            return cached[1]
        master_port, check_port = self.job.ports(s.masterSeq)
        derived = agent_view.derive(self.constants, s)
        order = Order(
            spec_phase=str(s.phase),
            final=self.terminal,
            retry=int(s.recoverCount),
            max_retry=self.job.max_retry,
            master_addr=self.job.rdzv_host,
            master_port=master_port,
            check_port=check_port,
            globals={name: getattr(s, name) for name in agent_view.GLOBALS},
            derived={name: getattr(derived, name) for name in agent_view.DERIVED},
            finished=self._finished_count(s),
            version=self.engine.seq_no,
            beat_s=self.job.beat_s,
        )
        self._cache = (s, order)
        return order

    def _finished_count(self, s: State) -> int:
        """How many workers finished the current order: kept current from one state to the
        next by the generated tables' finite differencing (_tla.count on a Site: O(the keys
        that changed), O(pods) after a reset of every worker, i.e. a phase change)."""
        return _tla.count(FINISHED, self.constants, s, self.constants.Workers, _finished)

    def pod_orders(self) -> list[Message]:
        """One order per pod whose PER_POD entries changed since the last publish (sent before
        the broadcast, so that the pod has them when it acts on it); usually none."""
        s = self.engine.state
        self._unpublished_pods = ()  # set below when some pod's entries changed
        current = tuple(getattr(s, name) for name in agent_view.PER_POD)
        last = self._published_parts
        if last is not None and all(a is b for a, b in zip(current, last[0], strict=True)):
            return []
        sent = {} if last is None else last[1]
        if last is not None and current == last[0]:
            # rebuilt with the same values (a restart resets them): the map comparison runs
            # in C, ~8x faster than the per-pod loop below
            self._unpublished_parts = (current, sent)
            return []
        changed, now = self._changed_parts(current, sent)
        self._unpublished_parts = (current, now)  # kept by mark_published once they went out
        self._unpublished_pods = tuple(changed)
        return [self.order_for(pod) for pod in changed]

    def _changed_parts(
        self, current: tuple[object, ...], sent: Mapping[str, tuple[object, ...]]
    ) -> tuple[list[str], dict[str, tuple[object, ...]]]:
        """(the pods whose PER_POD entries differ from `sent`, every pod's entries that are
        not the default)."""
        changed = []
        now: dict[str, tuple[object, ...]] = {}
        for pod in self.job.pods:
            w = ModelValue(pod)
            part = tuple(apply(f, w) for f in current)
            if part != self._default_part:
                now[pod] = part
            if part != sent.get(pod, self._default_part):
                changed.append(pod)
        return changed, now

    def message(self, pod: str, data: Mapping[str, Any]) -> Message:
        """An order message to `pod` ("master": every worker) in the current phase and seq."""
        s = self.engine.state
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

    def receipt(self, msg: Message, result: ReceiptResult) -> Message:
        """The controller's answer to an agent's report `msg` (sent as its reply)."""
        return Message(
            self.job.name,
            self.job.namespace,
            msg.pod_name,
            MessageType.ACK,
            msg.phase,
            Receipt(result).to_data(),
            time.time(),
            self.engine.state.masterSeq,
        )

    def mark_published(self) -> None:
        """The current order went out; persisted so a restart knows (it re-publishes anyway)."""
        self.extras.published_seq = self.engine.state.masterSeq
        self._published_marks = self._slow_marks()
        if self._unpublished_parts is not None:
            self._published_parts, self._unpublished_parts = self._unpublished_parts, None
        pods, self._unpublished_pods = self._unpublished_pods, ()
        self.versions.published(time.monotonic(), self._order_base().version, pods)

    @property
    def needs_publish(self) -> bool:
        """Whether masterSeq changed (or the job ended) since the last publish."""
        return (
            self.extras.published_seq != self.engine.state.masterSeq
            or self._published_marks != self._slow_marks()
            or self.terminal is not None
        )

    @property
    def in_order_phase(self) -> bool:
        """Whether the current phase has orders (not Pending or Restarting), or the job ended."""
        return str(self.engine.state.phase) in self.order_phases or self.terminal is not None

    @property
    def order_due(self) -> bool:
        """Whether an order not yet published would go out now: `needs_publish` in a phase
        with orders, or the job ended."""
        return self.in_order_phase and self.needs_publish

    def _slow_marks(self) -> tuple[object, ...]:
        """The slow-node path's state: a change is re-published within the same order."""
        s = self.engine.state
        return (s.slow, s.evict, s.checkpointed)
