"""What the Job Controller reads from the API, as small immutable views (pure, no I/O)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aegis.k8s.resources import AEGIS_JOB, LABEL_JOB, LABEL_RANK
from aegis.k8s.run_policy import KUEUE_FINAL, RunPolicy
from aegis.protocol.job_settings import MAX_WORKERS, JobSettings

__all__ = ["MAX_WORKERS"]  # a larger workerNum is refused before anything is built for it

# AegisJob phases (the Aegis CR has the controller's phases; these are the job's).
PENDING, RUNNING, SUCCEEDED, FAILED = "Pending", "Running", "Succeeded", "Failed"
MAX_POD_MESSAGE = 400  # characters of a worker pod's termination message kept


def _map(obj: Any, key: str) -> Mapping[str, Any]:
    value = obj.get(key) if isinstance(obj, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _rank_counts(value: Any) -> tuple[tuple[int, int], ...]:
    """{"<rank>": n} -> sorted (rank, n) pairs; anything malformed is left out."""
    if not isinstance(value, Mapping):
        return ()
    out = {}
    for k, v in value.items():
        if isinstance(k, str) and k.isdigit() and isinstance(v, int) and not isinstance(v, bool):
            out[int(k)] = max(v, 0)
    return tuple(sorted(out.items()))


def _field(obj: Mapping[str, Any], key: str) -> str:
    """obj[key] as text ("" when missing or empty)."""
    return str(obj.get(key) or "")


def _strs(value: Any) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def owned_by(obj: Mapping[str, Any], uid: str) -> bool:
    """True if `obj` has an ownerReference to the object with this uid."""
    refs = _map(obj, "metadata").get("ownerReferences") or []
    return any(isinstance(r, Mapping) and r.get("uid") == uid for r in refs)


@dataclass(frozen=True)
class JobView:
    """An AegisJob: its spec and the status the Job Controller keeps in it."""

    namespace: str
    name: str
    uid: str
    worker_num: int
    max_retry: int
    template: Mapping[str, Any] = field(default_factory=dict)
    finalizers: tuple[str, ...] = ()
    deleting: bool = False
    resource_version: str = ""
    phase: str = ""
    message: str = ""
    aegis_ref: str = ""
    excluded_nodes: tuple[str, ...] = ()
    pod_restarts: int = 0
    # rank -> Level 2 recreations (the agent exited AgentExit.RESTART_CONTAINER), as (rank, n) pairs
    container_restarts: tuple[tuple[int, int], ...] = ()
    nproc_per_node: str = "1"  # ranks per worker pod: a number >= 1 or "auto" (its GPUs)
    run_policy: RunPolicy = field(default_factory=RunPolicy)
    start_time: str = ""  # RFC 3339, written with its first status
    completion_time: str = ""  # RFC 3339, written when it ended
    reason: str = ""  # why it ended (a `Reason` of aegis/k8s/reconcile.py)

    @classmethod
    def from_obj(cls, obj: Mapping[str, Any]) -> JobView:
        """Parse an AegisJob object as the API returns it."""
        meta, spec, status = _map(obj, "metadata"), _map(obj, "spec"), _map(obj, "status")
        namespace, name = _field(meta, "namespace") or "default", _field(meta, "name")
        settings = JobSettings.from_cr(name, namespace, spec)
        return cls(
            namespace=namespace,
            name=name,
            uid=_field(meta, "uid"),
            worker_num=settings.workers,
            max_retry=settings.max_retry,
            template=_map(spec, "template"),
            nproc_per_node=str(spec.get("nprocPerNode", 1)),
            finalizers=_strs(meta.get("finalizers")),
            deleting=bool(meta.get("deletionTimestamp")),
            resource_version=_field(meta, "resourceVersion"),
            phase=_field(status, "phase"),
            message=_field(status, "message"),
            aegis_ref=_field(status, "aegisRef"),
            excluded_nodes=_strs(status.get("excludedNodes")),
            pod_restarts=_int(status.get("podRestarts"), 0),
            container_restarts=_rank_counts(status.get("containerRestarts")),
            run_policy=RunPolicy.from_spec(spec, _map(meta, "labels")),
            start_time=_field(status, "startTime"),
            completion_time=_field(status, "completionTime"),
            reason=_field(status, "reason"),
        )

    @property
    def settings(self) -> JobSettings:
        """The job's settings its spec gives (checked by `JobSettings.problem(CR_FIELDS)`)."""
        return JobSettings(self.name, self.namespace, self.worker_num, self.max_retry)

    def container_restarts_of(self, rank: int) -> int:
        """Level 2 recreations of worker `rank` so far."""
        return dict(self.container_restarts).get(rank, 0)

    def owner_reference(self) -> dict[str, Any]:
        """The ownerReference that every object made for this job carries."""
        return {
            "apiVersion": AEGIS_JOB.api_version,
            "kind": AEGIS_JOB.kind,
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }


@dataclass(frozen=True)
class PodView:
    """A worker pod: its rank, phase, and how its main container ended."""

    name: str
    rank: int | None
    phase: str = "Pending"
    exit_code: int | None = None
    node: str = ""
    reason: str = ""
    deleting: bool = False
    group_final: bool = False  # Kueue is told its gang ended (KUEUE_FINAL)
    message: str = ""  # the agent's termination message (its last words), if it left one

    @classmethod
    def from_obj(cls, obj: Mapping[str, Any]) -> PodView:
        """Parse a Pod; the exit code is the first container's (the agent's)."""
        meta, spec, status = _map(obj, "metadata"), _map(obj, "spec"), _map(obj, "status")
        rank = str(_map(meta, "labels").get(LABEL_RANK, ""))
        ended = _terminated(status, _first_container(spec))
        code = ended.get("exitCode")
        message = ended.get("message")
        return cls(
            name=str(meta.get("name") or ""),
            rank=int(rank) if rank.isdigit() else None,
            phase=str(status.get("phase") or "Pending"),
            exit_code=code if isinstance(code, int) and not isinstance(code, bool) else None,
            node=str(spec.get("nodeName") or ""),
            reason=str(status.get("reason") or ""),
            deleting=bool(meta.get("deletionTimestamp")),
            group_final=_map(meta, "annotations").get(KUEUE_FINAL) == "false",
            message=" ".join(message.split())[:MAX_POD_MESSAGE] if isinstance(message, str) else "",
        )


def _first_container(spec: Mapping[str, Any]) -> str:
    containers = spec.get("containers")
    if isinstance(containers, list) and containers and isinstance(containers[0], Mapping):
        return str(containers[0].get("name") or "")
    return ""


def _terminated(status: Mapping[str, Any], container: str) -> Mapping[str, Any]:
    """The `state.terminated` of `container` ({} while it has not ended)."""
    for cs in status.get("containerStatuses") or []:
        if isinstance(cs, Mapping) and cs.get("name") == container:
            return _map(_map(cs, "state"), "terminated")
    return {}


@dataclass(frozen=True)
class AegisView:
    """The parts of the Aegis CR status that the Job Controller acts on (it never writes them)."""

    phase: str = ""
    should_quit: bool = False
    max_retries: int = 0
    error_nodes: tuple[str, ...] = ()
    message: str = ""  # why the Aegis Controller ended the job, when it says

    @classmethod
    def from_obj(cls, obj: Mapping[str, Any]) -> AegisView:
        """Parse an Aegis CR; a missing status reads as a fresh one."""
        status = _map(obj, "status")
        infos = _map(status, "podInfos").values()
        retries = [_int(i.get("retries"), 0) for i in infos if isinstance(i, Mapping)]
        retries.append(_int(status.get("maxRetries"), 0))  # a job in ConfigMaps: the summary's
        nodes = [str(e.get("node")) for e in status.get("errorNodes") or [] if _has_node(e)]
        return cls(
            phase=str(status.get("phase") or ""),
            should_quit=status.get("shouldQuit") is True,
            max_retries=max(retries, default=0),
            error_nodes=tuple(sorted(set(nodes))),
            message=str(status.get("message") or ""),
        )


def _has_node(entry: Any) -> bool:
    return isinstance(entry, Mapping) and isinstance(entry.get("node"), str) and entry["node"] != ""


@dataclass(frozen=True)
class Observed:
    """Everything the Job Controller saw for one job: its pods and the objects it owns."""

    pods: Sequence[PodView] = ()
    aegis: AegisView | None = None
    secret: bool = False
    service: bool = False
    pod_group: bool = False  # the Volcano PodGroup exists (gang Volcano only)
    now: float | None = None  # the time observed (epoch seconds); None: no rule of time applies


def job_selector(job: str) -> str:
    """The label selector of a job's objects."""
    return f"{LABEL_JOB}={job}"
