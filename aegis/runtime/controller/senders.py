"""Who sent a message to the controller: the pod its subject names (only that pod's
credential may publish there) and the incarnation it carries (docs/security.md). A message
that claims another pod, another job, an unknown pod or an old incarnation is counted, logged
once per sender or per message, and dropped: never raised."""

from __future__ import annotations

import logging

from aegis.protocol.envelope import Message, MessageType
from aegis.protocol.payloads import ReceiptResult
from aegis.runtime.controller.bookkeeping import Extras
from aegis.runtime.controller.job import JobConfig
from aegis.runtime.controller.orders import OrderBook

log = logging.getLogger(__name__)


class Senders:
    """Checks who sent each message of one job (the counters go to its bookkeeping)."""

    def __init__(self, job: JobConfig, extras: Extras, orders: OrderBook) -> None:
        self.job = job
        self.extras = extras
        self.orders = orders  # for the receipts of the messages it refuses
        self._impersonators: set[str] = set()  # pods already logged for claiming another

    def matches(self, pod: str | None, msg: Message) -> bool:
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

    def misrouted(self, msg: Message) -> Message | None:
        """A message on a subject that does not carry its type (an ACK on the report subject):
        counted (`unexpected_type`) and dropped; a request is told so in a receipt (a
        heartbeat has no reply)."""
        self.extras.counters["unexpected_type"] += 1
        if msg.type is MessageType.HEARTBEAT:
            return None
        return self.orders.receipt(msg, ReceiptResult.UNEXPECTED_TYPE)

    def authentic(self, msg: Message, *, need_known: bool) -> tuple[str | None, str]:
        """(the pod `msg` comes from, its incarnation); the pod is None for a message of
        another job, an unknown pod or no incarnation (forged), or (`need_known`) of an
        incarnation that is not the pod's current one."""
        inc = msg.data.get("incarnation", "")
        inc = inc if isinstance(inc, str) else ""
        if msg.aegis_name != self.job.name or msg.aegis_namespace != self.job.namespace:
            return self._forged("other job", msg), inc
        if msg.pod_name not in self.job.pod_set or not inc:
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
