"""Where the controller's faults go: one record each to the fault log's sink (never raising
into the controller), the last one of each pod kept for `aegis ctl status`, and the pods'
addresses as their agents last reported them (a record names the pod's node and IPs)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from aegis.protocol.faults import Fault, FaultRecord
from aegis.protocol.payloads import Sender
from aegis.runtime.log_limit import LimitedLog

log = logging.getLogger(__name__)
warnings = LimitedLog(log)  # a fault log that cannot be written: once a minute


class FaultRecorder:
    """Turns the controller's faults into fault-log records (in memory; nothing persisted)."""

    def __init__(self, sink: Callable[[FaultRecord], None] | None = None) -> None:
        self.sink = sink  # the structured fault log (and the metrics), if any
        self.addresses: dict[str, tuple[str, str, str]] = {}  # pod -> (pod IP, node, node IP)
        self.last: dict[str, FaultRecord] = {}  # pod -> its last fault

    def remember(self, pod: str, sender: Sender) -> None:
        """Where `pod`'s agent runs, as its last message said."""
        self.addresses[pod] = (sender.pod_ip, sender.node, sender.node_ip)

    def known_nodes(self) -> set[str]:
        """The nodes the pods' agents reported and the faults named."""
        nodes = {node for _, node, _ in self.addresses.values()}
        return (nodes | {r.node for r in self.last.values()}) - {""}

    def node_of(self, pod: str) -> str:
        """The node `pod`'s agent last reported ("" if none did)."""
        return self.addresses.get(pod, ("", "", ""))[1]

    def record(self, fault: Fault, phase: str) -> FaultRecord:
        """The record of `fault` while the job is in `phase` (the phase after its step)."""
        record = FaultRecord.of(fault, phase, self.addresses.get(fault.pod, ("", "", "")))
        self.last[fault.pod] = record
        if self.sink is not None:
            try:
                self.sink(record)
            except Exception as exc:  # the fault log must never stop the controller
                # (nor fill a full disk's neighbour with a traceback per fault)
                warnings.log(logging.ERROR, ("fault log",), "fault log write failed: %r", exc)
        return record
