"""Names and NATS subjects of a job: the one place that spells `aegis.<ns>.<job>.…`.

Pure code (no NATS import), so messages and tests can use it too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from aegis.protocol.errors import InvalidNameError

SUBJECT_ROOT = "aegis"
INBOX_ROOT = "_INBOX"
BROADCAST_POD = "master"  # PodName meaning "every worker"

_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")
_LABEL_MAX = 63
_SUBDOMAIN_MAX = 253


def validate_label(kind: str, value: object) -> str:
    """Check a DNS-1123 label (namespace, job): lower-case alnum and '-', no dots, ≤ 63."""
    if not isinstance(value, str) or not value:
        raise InvalidNameError(f"{kind} must be a non-empty string, got {value!r}")
    if len(value) > _LABEL_MAX or not _LABEL.fullmatch(value):
        raise InvalidNameError(
            f"{kind} {value!r} is not a DNS-1123 label: use at most {_LABEL_MAX} lower-case "
            "letters, digits and '-', starting and ending with a letter or digit "
            "(no dots or wildcards, it becomes one NATS subject token)"
        )
    return value


def validate_subdomain(kind: str, value: object) -> str:
    """Check a DNS-1123 subdomain (pod, node): like a label, dots allowed, ≤ 253."""
    if not isinstance(value, str) or not value:
        raise InvalidNameError(f"{kind} must be a non-empty string, got {value!r}")
    if len(value) > _SUBDOMAIN_MAX or not _SUBDOMAIN.fullmatch(value):
        raise InvalidNameError(
            f"{kind} {value!r} is not a DNS-1123 subdomain: use at most {_SUBDOMAIN_MAX} "
            "lower-case letters, digits, '-' and '.'"
        )
    return value


def validate_pod_name(value: object) -> str:
    """Check a pod name (DNS-1123 subdomain)."""
    return validate_subdomain("pod name", value)


def validate_incarnation(value: object) -> str:
    """Check an incarnation (a DNS-1123 label: a launcher's random hex, a pod's uid): one NATS
    subject token, so that a credential's subjects can name it."""
    return validate_label("incarnation", value)


def _sender(pod: str, incarnation: str) -> str:
    return f"{validate_pod_name(pod)}.{validate_incarnation(incarnation)}"


class PodSubject(NamedTuple):
    """Who a message came from, as its subject says: which of the pod's subjects (join,
    report, heartbeat), the pod, and the incarnation whose credential sent it."""

    kind: str
    pod: str
    incarnation: str


@dataclass(frozen=True)
class JobSubjects:
    """The subjects of one job: orders (master→workers), each pod's joins (ACKs), reports and
    heartbeats (pod→master), the operator's control requests (`aegis ctl` → controller or one
    agent), and the reply inboxes of each pod and of ctl."""

    namespace: str
    job: str

    def __post_init__(self) -> None:
        validate_label("namespace", self.namespace)
        validate_label("job", self.job)

    @property
    def prefix(self) -> str:
        """`aegis.<ns>.<job>`: every subject of the job starts with it."""
        return f"{SUBJECT_ROOT}.{self.namespace}.{self.job}"

    @property
    def master(self) -> str:
        """Orders from the master to the workers."""
        return f"{self.prefix}.master"

    @property
    def wildcard(self) -> str:
        """`aegis.<ns>.<job>.>`: every subject of the job."""
        return f"{self.prefix}.>"

    @property
    def join_prefix(self) -> str:
        """`aegis.<ns>.<job>.join.`: a worker's ACKs (its joins) go to this + its pod name +
        `.` + its incarnation."""
        return f"{self.prefix}.join."

    def join(self, pod: str, incarnation: str) -> str:
        """ACKs of `incarnation` of `pod` (only that incarnation's credential may publish
        here). Apart from its reports: the controller reads a join (a crashed pod's
        replacement) without reading first every report queued before it."""
        return f"{self.join_prefix}{_sender(pod, incarnation)}"

    @property
    def joins(self) -> str:
        """Every pod's join subject (the controller's subscription)."""
        return self.join_prefix + ">"

    @property
    def report_prefix(self) -> str:
        """`aegis.<ns>.<job>.report.`: a worker's reports go to this + pod + incarnation."""
        return f"{self.prefix}.report."

    def report(self, pod: str, incarnation: str) -> str:
        """Reports of `incarnation` of `pod` (only that credential may publish here)."""
        return f"{self.report_prefix}{_sender(pod, incarnation)}"

    @property
    def reports(self) -> str:
        """Every pod's report subject (the controller's subscription)."""
        return f"{self.prefix}.report.>"

    @property
    def heartbeat_prefix(self) -> str:
        """`aegis.<ns>.<job>.heartbeat.`: heartbeats go to this + pod + incarnation."""
        return f"{self.prefix}.heartbeat."

    def heartbeat(self, pod: str, incarnation: str) -> str:
        """Heartbeats of `incarnation` of `pod` (only that credential may publish here)."""
        return f"{self.heartbeat_prefix}{_sender(pod, incarnation)}"

    @property
    def heartbeats(self) -> str:
        """Every pod's heartbeat subject (the controller's subscription)."""
        return f"{self.prefix}.heartbeat.>"

    def pod_subject(self, subject: str) -> PodSubject | None:
        """(kind, pod, incarnation) of one pod incarnation's subject: kind "join", "report"
        or "heartbeat", each carrying its own message types; None for any other subject.

        The controller takes a message's sender, pod and incarnation, from here, never from
        its payload: the server lets only the credential issued for that incarnation of
        that pod publish on it. The incarnation is the subject's last token (it has no dot;
        a pod name may have some)."""
        for kind, prefix in (
            ("join", self.join_prefix),
            ("report", self.report_prefix),
            ("heartbeat", self.heartbeat_prefix),
        ):
            if subject.startswith(prefix):
                pod, _, incarnation = subject[len(prefix) :].rpartition(".")
                try:
                    return PodSubject(
                        kind, validate_pod_name(pod), validate_incarnation(incarnation)
                    )
                except InvalidNameError:
                    return None
        return None

    def inbox_prefix(self, pod: str) -> str:
        """The reply inbox of `pod`'s requests: `_INBOX_<ns>_<job>_<pod>` ('.' -> '_').

        One token, distinct per pod (namespace and job hold no '_', pod names no '_'
        before the mapping), so a worker may subscribe to its own inbox only."""
        token = validate_pod_name(pod).replace(".", "_")
        return f"{INBOX_ROOT}_{self.namespace}_{self.job}_{token}"

    def order_inbox(self, pod: str) -> str:
        """Where the controller sends `pod` its current order when its heartbeat shows it
        missed one: in its own inbox, which only it may subscribe to."""
        return f"{self.inbox_prefix(pod)}.order"

    @property
    def ctl_inbox_prefix(self) -> str:
        """The reply inbox of `aegis ctl` (`..__ctl`: no pod's inbox can be named so)."""
        return f"{INBOX_ROOT}_{self.namespace}_{self.job}__ctl"

    @property
    def ctl_wildcard(self) -> str:
        """`aegis.<ns>.<job>.ctl.>`: every control subject (the ctl user's permission)."""
        return f"{self.prefix}.ctl.>"

    @property
    def ctl_controller(self) -> str:
        """Control requests to the job's controller (status, stop, taint, untaint)."""
        return f"{self.prefix}.ctl.controller"

    def ctl_agent(self, pod: str) -> str:
        """Control requests to the agent of `pod` (hang, check, burn)."""
        return f"{self.prefix}.ctl.agent.{validate_pod_name(pod)}"
