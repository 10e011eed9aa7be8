"""Who sent a message to the controller: the pod *and the incarnation* its subject names (only
the credential issued for that incarnation may publish there; docs/security.md). A message
that claims another pod or incarnation, another job, an unknown pod, an old incarnation, or
comes from an incarnation that was replaced is counted, logged at most once a minute per
sender and kind (aegis.runtime.controller.identity), and dropped: never raised."""

from __future__ import annotations

import logging
from collections.abc import Callable

from aegis.protocol.envelope import Message, MessageType
from aegis.protocol.errors import MalformedMessage
from aegis.protocol.payloads import ReceiptResult
from aegis.protocol.subjects import PodSubject
from aegis.runtime.controller.bookkeeping import Extras
from aegis.runtime.controller.identity import (
    RefusalNotes,
    is_retired,
    names_its_sender,
    payload_incarnation,
    retire,
    warnings,
)
from aegis.runtime.controller.job import JobConfig
from aegis.runtime.controller.orders import OrderBook

log = logging.getLogger(__name__)


class Senders:
    """Checks who sent each message of one job (the counters go to its bookkeeping), and
    which incarnations were replaced (`Extras.retired`, `Extras.evicted`)."""

    def __init__(self, job: JobConfig, extras: Extras, orders: OrderBook) -> None:
        self.job = job
        self.extras = extras
        self.orders = orders  # for the receipts of the messages it refuses
        self.refusals = RefusalNotes()  # refused observations in the step log, since when

    def matches(self, sender: PodSubject | None, msg: Message) -> bool:
        """Whether `msg` names the pod and incarnation it was sent by (`sender`, from its
        subject); a mismatch is counted, logged at most once a minute per sending pod
        incarnation, and the message is dropped."""
        if names_its_sender(sender, msg):
            return True
        self.extras.counters["impersonation"] += 1
        key = f"{sender.pod} {sender.incarnation}" if sender is not None else "?"
        warnings.warning(
            (key, "impersonation"),
            "message from %s claims to be from %s %s: dropped",
            key,
            msg.pod_name,
            payload_incarnation(msg)[:63],
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
        inc = payload_incarnation(msg)
        if msg.aegis_name != self.job.name or msg.aegis_namespace != self.job.namespace:
            return self._forged("other job", msg), inc
        if msg.pod_name not in self.job.pod_set or not inc:
            return self._forged("unknown pod or no incarnation", msg), inc
        if need_known and self.extras.incarnations.get(msg.pod_name) != inc:
            self.extras.counters["old_incarnation"] += 1
            log.debug("report from an old incarnation of %s dropped", msg.pod_name)
            return None, inc
        return msg.pod_name, inc

    def replaced(self, pod: str, incarnation: str | None) -> bool:
        """Whether `incarnation` of `pod` was declared lost or replaced (it must leave)."""
        if not incarnation:
            return False
        retired = is_retired(self.extras.retired, pod, incarnation)
        return retired or self.extras.evicted.get(pod) == incarnation

    def retire(self, pod: str, incarnation: str | None) -> None:
        """`incarnation` of `pod` (a pod of this job) was replaced: whatever it sends from now
        on is refused."""
        if pod in self.job.pod_set:
            retire(self.extras.retired, pod, incarnation)

    def not_enabled(
        self, pod: str, kind: str, step_no: int, log_rejection: Callable[[], object]
    ) -> None:
        """A report of `kind` from `pod` whose action is not enabled at step `step_no`:
        counted; `log_rejection()` (the step log's `rejected` line) only for the first such
        refusal since the state last changed."""
        self.extras.counters["not_enabled"] += 1
        if self.refusals.first(pod, kind, step_no):
            log_rejection()

    def malformed(self, pod: str, what: str, exc: MalformedMessage) -> None:
        """A `what` ("report", "heartbeat") of `pod` that does not parse: counted, dropped."""
        self.extras.counters["malformed"] += 1
        warnings.warning((pod, f"malformed {what}"), "%s from %s dropped: %s", what, pod, exc)

    def _forged(self, why: str, msg: Message) -> str | None:
        self.extras.counters["forged"] += 1
        warnings.warning(
            ("forged", why),
            "forged message (%s) from %s/%s/%s dropped",
            why,
            msg.aegis_namespace,
            msg.aegis_name,
            msg.pod_name,
        )
        return None
