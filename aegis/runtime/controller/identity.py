"""Who sent a message, and whether that sender may still speak (docs/security.md).

A pod's message arrives on a subject that names its pod *and its incarnation*
(`JobSubjects.pod_subject`): only the credential issued for that incarnation may publish
there. The controller takes the sender from the subject; a payload that names another pod or
another incarnation is an impersonation, dropped. An incarnation that was replaced (its
launcher saw it exit, its heartbeats stopped, or a newer incarnation joined) is *retired*:
whatever it sends later is refused (an ACK or a heartbeat is answered with its eviction: it
must leave; a report gets an `evicted` receipt), never taken as a join. The retired
incarnations are kept in the controller's persisted bookkeeping (`Extras.retired`), the last
RETIRED_PER_POD of each pod: locally an older one's credential was revoked on the server when
its agent exited; on Kubernetes it cannot be renewed (its pod is gone) and expires within
`--credential-ttl`, so only a pod replaced more than RETIRED_PER_POD times within one TTL has
an older credential alive, refused at its expiry. The list is in the job's status, which must
fit its CR (aegis.k8s.status_size counts it).

Refusals are counted per kind; their warnings are rate-limited per pod and kind
(aegis.runtime.log_limit), and a refused observation is logged in the step log once per pod
and kind until the state changes (`RefusalNotes`): a pod's own traffic, however fast, cannot
fill the controller's disk.
"""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from typing import Any

from aegis.protocol.envelope import Message
from aegis.protocol.subjects import PodSubject
from aegis.runtime.log_limit import LimitedLog

log = logging.getLogger(__name__)
warnings = LimitedLog(log)  # one line per (pod, what) a minute
RETIRED_PER_POD = 4


def payload_incarnation(msg: Message) -> str:
    """The incarnation a message's payload names ('' if none, or not a string)."""
    inc = msg.data.get("incarnation", "")
    return inc if isinstance(inc, str) else ""


def names_its_sender(found: PodSubject | None, msg: Message) -> bool:
    """Whether `msg` names the pod and incarnation its subject says sent it."""
    return (
        found is not None
        and msg.pod_name == found.pod
        and payload_incarnation(msg) == found.incarnation
    )


def retire(retired: MutableMapping[str, Any], pod: str, incarnation: str | None) -> None:
    """Remember `incarnation` of `pod` as replaced (the last RETIRED_PER_POD of each pod)."""
    if not incarnation:
        return
    kept = [i for i in retired.get(pod) or () if i != incarnation]
    retired[pod] = [*kept, incarnation][-RETIRED_PER_POD:]  # a new list: the change is logged


def is_retired(retired: MutableMapping[str, Any], pod: str, incarnation: str) -> bool:
    """Whether `incarnation` of `pod` was replaced."""
    return incarnation in (retired.get(pod) or ())


class RefusalNotes:
    """Which refused observations the step log holds since the state last changed: one per
    pod and kind (an identical refusal again says nothing new about the run)."""

    def __init__(self) -> None:
        self._noted: dict[tuple[str, str], int] = {}  # (pod, kind) -> step number noted at

    def first(self, pod: str, kind: str, step_no: int) -> bool:
        """Whether a refusal of `kind` from `pod` at step `step_no` is the first one since
        the state last changed (then it is noted)."""
        key = (pod, kind)
        if self._noted.get(key) == step_no:
            return False
        self._noted[key] = step_no
        return True
