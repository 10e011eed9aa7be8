"""An AegisJob's `spec.runPolicy` (pure): when its pods are cleaned up, how long it may run and
be kept, and how its worker pods are gang-scheduled (docs/kubernetes.md, "Run policy";
docs/from-pytorchjob.md maps Kubeflow's runPolicy onto it).

    runPolicy:
      cleanPodPolicy: Running        # None | Running (default) | All: pods deleted when it ends
      ttlSecondsAfterFinished: 600   # the AegisJob is deleted this long after it ended
      activeDeadlineSeconds: 86400   # the job fails once it has run this long
      schedulingPolicy:
        gang: Kueue                  # None (default) | Kueue | Volcano: all workers or none
        queue: team-a                # Kueue's LocalQueue / Volcano's Queue
        priorityClass: high          # the worker pods' priorityClassName (and the PodGroup's)

A `kueue.x-k8s.io/queue-name` label on the AegisJob (as on a Kubeflow job) means `gang: Kueue`
with that queue. Gang scheduling with Kueue uses its plain-pod groups (every worker pod labelled
with the queue and the group, annotated with the group's size); with Volcano, a PodGroup of
`minMember: workerNum` that the pods name, and `schedulerName: volcano`.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aegis.k8s.resources import Resource

NONE, RUNNING, ALL = "None", "Running", "All"  # cleanPodPolicy (Kubeflow's values)
CLEAN_POD_POLICIES = (NONE, RUNNING, ALL)
KUEUE, VOLCANO = "Kueue", "Volcano"
GANGS = (NONE, KUEUE, VOLCANO)

KUEUE_QUEUE = "kueue.x-k8s.io/queue-name"
KUEUE_GROUP = "kueue.x-k8s.io/pod-group-name"
KUEUE_GROUP_SIZE = "kueue.x-k8s.io/pod-group-total-count"
# on a pod of a group that ended: Kueue then finishes the group and releases its quota (a
# group whose pods failed is otherwise kept admitted, waiting for their replacements)
KUEUE_FINAL = "kueue.x-k8s.io/retriable-in-group"
VOLCANO_GROUP = "scheduling.k8s.io/group-name"
VOLCANO_SCHEDULER = "volcano"
POD_GROUP = Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup")
ENDED_POD_PHASES = ("Succeeded", "Failed")
_LABEL_VALUE = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")


@dataclass(frozen=True)
class RunPolicy:
    """What `spec.runPolicy` asks for (defaults where it says nothing); `invalid` says why it
    cannot be followed ("" when it can)."""

    clean_pod_policy: str = RUNNING
    ttl_after_finished_s: int | None = None
    active_deadline_s: int | None = None
    gang: str = NONE
    queue: str = ""
    priority_class: str = ""
    invalid: str = ""

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any], labels: Mapping[str, Any]) -> RunPolicy:
        """Parse `spec.runPolicy` (and the AegisJob's Kueue label); never raises."""
        raw = _map(spec.get("runPolicy"))
        sched = _map(raw.get("schedulingPolicy"))
        label_queue = labels.get(KUEUE_QUEUE)
        gang = sched.get("gang", KUEUE if label_queue else NONE)
        queue = sched.get("queue", label_queue or "")
        at = "spec.runPolicy."
        problems = [
            _one_of(f"{at}cleanPodPolicy", raw.get("cleanPodPolicy", RUNNING), CLEAN_POD_POLICIES),
            _one_of(f"{at}schedulingPolicy.gang", gang, GANGS),
            _count(f"{at}ttlSecondsAfterFinished", raw.get("ttlSecondsAfterFinished"), 0),
            _count(f"{at}activeDeadlineSeconds", raw.get("activeDeadlineSeconds"), 1),
            *(
                _text(f"{at}schedulingPolicy.{k}", sched.get(k, ""))
                for k in ("queue", "priorityClass")
            ),
        ]
        problems += _queue_problems(gang, queue, label_queue)
        invalid = next((p for p in problems if p), "")
        if invalid:
            return cls(invalid=invalid)
        return cls(
            clean_pod_policy=str(raw.get("cleanPodPolicy", RUNNING)),
            ttl_after_finished_s=raw.get("ttlSecondsAfterFinished"),
            active_deadline_s=raw.get("activeDeadlineSeconds"),
            gang=str(gang),
            queue=str(queue),
            priority_class=str(sched.get("priorityClass", "")),
        )

    def problem(self, pod_spec: Mapping[str, Any]) -> str | None:
        """Why the job cannot run with this policy and this PodSpec (None if it can)."""
        if self.invalid:
            return self.invalid
        scheduler = pod_spec.get("schedulerName")
        if self.gang == VOLCANO and scheduler not in (None, VOLCANO_SCHEDULER):
            return (
                f"spec.runPolicy.schedulingPolicy.gang Volcano needs schedulerName "
                f"{VOLCANO_SCHEDULER!r}, the template has {scheduler!r}"
            )
        priority = pod_spec.get("priorityClassName")
        if self.priority_class and priority not in (None, self.priority_class):
            return (
                f"spec.runPolicy.schedulingPolicy.priorityClass {self.priority_class!r} and "
                f"the template's priorityClassName {priority!r} differ: set one"
            )
        return None

    def schedule(self, job: str, workers: int, meta: dict[str, Any], spec: dict[str, Any]) -> None:
        """Add what gang scheduling and the priority class need to a worker pod's metadata
        and PodSpec (in place)."""
        if self.priority_class:
            spec["priorityClassName"] = self.priority_class
        if self.gang == KUEUE:
            meta["labels"].update({KUEUE_QUEUE: self.queue, KUEUE_GROUP: job})
            meta.setdefault("annotations", {})[KUEUE_GROUP_SIZE] = str(workers)
        elif self.gang == VOLCANO:
            spec["schedulerName"] = VOLCANO_SCHEDULER
            meta.setdefault("annotations", {})[VOLCANO_GROUP] = job

    def pod_group_spec(self, workers: int) -> dict[str, Any]:
        """The Volcano PodGroup's spec: every worker or none."""
        spec: dict[str, Any] = {"minMember": workers}
        if self.queue:
            spec["queue"] = self.queue
        if self.priority_class:
            spec["priorityClassName"] = self.priority_class
        return spec

    def pods_to_end(self, pods: Sequence[Any], own_verdict: bool) -> list[Any]:
        """The pods (PodViews) deleted when the job ends: cleanPodPolicy All, every one;
        Running, those that have not ended (pending ones too: they would start); None, none,
        unless the Job Controller's own verdict ended the job (a deadline, its restart
        budget, a pod refused), which nothing else would stop them for."""
        live = [p for p in pods if not p.deleting]
        if self.clean_pod_policy == ALL:
            return live
        if self.clean_pod_policy == NONE and not own_verdict:
            return []
        return [p for p in live if p.phase not in ENDED_POD_PHASES]


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _queue_problems(gang: Any, queue: Any, label_queue: Any) -> list[str]:
    """The Kueue queue: the label and the policy agree, and a Kueue gang names one."""
    at = "spec.runPolicy.schedulingPolicy"
    problems = []
    if label_queue and queue != label_queue:
        problems.append(
            f"the AegisJob's label {KUEUE_QUEUE}={label_queue} names another queue than "
            f"{at}.queue ({queue!r})"
        )
    if gang == KUEUE and not (isinstance(queue, str) and _LABEL_VALUE.fullmatch(queue)):
        problems.append(
            f"{at}.gang Kueue needs a LocalQueue in {at}"
            f".queue (or the AegisJob's label {KUEUE_QUEUE}), got {queue!r}"
        )
    return problems


def _one_of(name: str, value: Any, allowed: Sequence[str]) -> str:
    return "" if value in allowed else f"{name} must be one of {', '.join(allowed)}, got {value!r}"


def _count(name: str, value: Any, least: int) -> str:
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= least):
        return ""
    return f"{name} must be an integer >= {least}, got {value!r}"


def _text(name: str, value: Any) -> str:
    return "" if isinstance(value, str) else f"{name} must be a string, got {value!r}"


def rfc3339(epoch_s: float) -> str:
    """A time as the API server writes one (metav1.Time: seconds, UTC)."""
    moment = datetime.datetime.fromtimestamp(int(epoch_s), tz=datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def epoch(text: str) -> float | None:
    """Seconds since the epoch of an RFC 3339 time, or None if it is not one."""
    try:
        moment = datetime.datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()
