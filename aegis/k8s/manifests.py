"""The objects the Job Controller creates for an AegisJob, built as plain dicts (pure).

Worker pod contract (docs/kubernetes.md): the template's first container becomes the agent,
`command: ["aegis", "agent"]`, `args: ["--", *original command, *original args]`, with the
AEGIS_* variables below, and the pod's own service-account token projected for it (audience
`aegis`, at AGENT_TOKEN_FILE): with it the agent proves its pod to the credential service
(aegis/k8s/token_review.py). The job's bootstrap-token Secret is no longer given to the pod.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aegis.errors import AegisError
from aegis.k8s.model import JobView
from aegis.k8s.resources import (
    AEGIS,
    AGENT_TOKEN_AUDIENCE,
    AGENT_TOKEN_DIR,
    AGENT_TOKEN_FILE,
    AGENT_TOKEN_SECONDS,
    LABEL_JOB,
    LABEL_MANAGED_BY,
    LABEL_RANK,
    MANAGED_BY,
    POD,
    SECRET,
    SERVICE,
    pod_name,
    secret_name,
    service_name,
)
from aegis.k8s.run_policy import POD_GROUP
from aegis.protocol.environment import Var, parse_nproc
from aegis.protocol.errors import InvalidNameError
from aegis.protocol.job_settings import CR_FIELDS
from aegis.protocol.subjects import validate_label

AGENT_COMMAND = ("aegis", "agent")
TOKEN_KEY = "token"
DEFAULT_CONTROLLER_ADDRESS = "aegis-controller.aegis-system.svc:50051"
DEFAULT_MASTER_PORT = 29500
MAX_JOB_NAME = 40  # leaves room for "-worker-<rank>" within a 63-character hostname


@dataclass(frozen=True)
class PodSettings:
    """Cluster-wide settings the worker pods need."""

    controller_address: str = DEFAULT_CONTROLLER_ADDRESS
    master_port: int = DEFAULT_MASTER_PORT


def labels(job: JobView, rank: int | None = None) -> dict[str, str]:
    """Labels of every object made for the job (plus the rank on pods)."""
    out = {LABEL_JOB: job.name, LABEL_MANAGED_BY: MANAGED_BY}
    if rank is not None:
        out[LABEL_RANK] = str(rank)
    return out


def _metadata(job: JobView, name: str, rank: int | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": job.namespace,
        "labels": labels(job, rank),
        "ownerReferences": [job.owner_reference()],
    }


def template_problem(job: JobView) -> str | None:
    """Why the job cannot be run as given, or None."""
    try:
        validate_label("AegisJob name", job.name)
    except InvalidNameError as exc:
        return str(exc)
    if len(job.name) > MAX_JOB_NAME:
        return f"AegisJob name {job.name!r} is longer than {MAX_JOB_NAME} characters"
    problem = job.settings.problem(CR_FIELDS)  # workerNum, maxRetry: the one check of each
    if problem is not None:
        return problem
    try:
        parse_nproc(job.nproc_per_node, "spec.nprocPerNode")
    except AegisError as exc:
        return str(exc)
    pod_spec, tmeta = job.template.get("spec"), job.template.get("metadata") or {}
    if not isinstance(pod_spec, dict):
        return "spec.template.spec must be an object (a PodSpec)"
    if not isinstance(tmeta, dict) or not all(
        isinstance(tmeta.get(k) or {}, dict) for k in ("labels", "annotations")
    ):
        return "spec.template.metadata, and its labels and annotations, must be objects"
    containers = pod_spec.get("containers")
    if not isinstance(containers, list) or not containers or not isinstance(containers[0], dict):
        return "spec.template.spec.containers must list at least one container"
    command = containers[0].get("command")
    if not isinstance(command, list) or not command:
        return "spec.template.spec.containers[0].command is required: the agent runs it"
    return job.run_policy.problem(pod_spec)


def bootstrap_secret(job: JobView, token: str) -> dict[str, Any]:
    """The job's Secret; only this job's pods reference it."""
    return {
        "apiVersion": SECRET.api_version,
        "kind": SECRET.kind,
        "metadata": _metadata(job, secret_name(job.name)),
        "type": "Opaque",
        "data": {TOKEN_KEY: base64.b64encode(token.encode("utf-8")).decode("ascii")},
    }


def secret_token(secret: Mapping[str, Any]) -> str:
    """The token stored in a bootstrap Secret ('' if absent)."""
    raw = (secret.get("data") or {}).get(TOKEN_KEY, "")
    return base64.b64decode(raw).decode("utf-8") if raw else ""


def aegis_cr(job: JobView, token_hash: str) -> dict[str, Any]:
    """The Aegis CR; its status is left to the Aegis Controller."""
    return {
        "apiVersion": AEGIS.api_version,
        "kind": AEGIS.kind,
        "metadata": _metadata(job, job.name),
        "spec": {
            "jobName": job.name,
            "namespace": job.namespace,
            "workerNum": job.worker_num,
            "maxRetry": job.max_retry,
            "bootstrapTokenSHA256": token_hash,
        },
    }


def workers_service(job: JobView, settings: PodSettings) -> dict[str, Any]:
    """Headless Service: DNS names `<pod>.<job>-workers` for rendezvous (MASTER_ADDR)."""
    return {
        "apiVersion": SERVICE.api_version,
        "kind": SERVICE.kind,
        "metadata": _metadata(job, service_name(job.name)),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {LABEL_JOB: job.name},
            "ports": [{"name": "dist", "port": settings.master_port, "protocol": "TCP"}],
        },
    }


def exclude_nodes(affinity: Mapping[str, Any] | None, nodes: Sequence[str]) -> dict[str, Any]:
    """`affinity` with a required `metadata.name NotIn nodes` added to every node term."""
    out = copy.deepcopy(dict(affinity or {}))
    if not nodes:
        return out
    rule = {"key": "metadata.name", "operator": "NotIn", "values": sorted(set(nodes))}
    node_aff = out.setdefault("nodeAffinity", {})
    required = node_aff.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    terms = required.get("nodeSelectorTerms") or [{}]
    required["nodeSelectorTerms"] = [
        {**term, "matchFields": [*term.get("matchFields", []), rule]} for term in terms
    ]
    return out


def _agent_env(job: JobView, rank: int, settings: PodSettings) -> list[dict[str, Any]]:
    master = f"{pod_name(job.name, 0)}.{service_name(job.name)}.{job.namespace}.svc"
    plain = {
        Var.JOB: job.name,
        Var.NAMESPACE: job.namespace,
        Var.POD: pod_name(job.name, rank),
        Var.RANK: str(rank),
        Var.WORLD_SIZE: str(job.worker_num),
        Var.GRPC: settings.controller_address,
        Var.NPROC_PER_NODE: job.nproc_per_node,
        "MASTER_ADDR": master,
        "MASTER_PORT": str(settings.master_port),
        Var.MASTER_ADDR: master,
        Var.MASTER_PORT: str(settings.master_port),
        Var.TOKEN_FILE: AGENT_TOKEN_FILE,  # the pod's own token: its proof (token_review.py)
    }
    # the node (for ErrorNodes), the pod's uid (the agent's incarnation) and the addresses the
    # fault log records, from the downward API
    downward = {
        Var.NODE: "spec.nodeName",
        Var.INCARNATION: "metadata.uid",
        Var.POD_IP: "status.podIP",
        Var.NODE_IP: "status.hostIP",
    }
    return [
        *({"name": str(k), "value": v} for k, v in plain.items()),
        *(
            {"name": str(k), "valueFrom": {"fieldRef": {"fieldPath": f}}}
            for k, f in downward.items()
        ),
    ]


TOKEN_VOLUME = "aegis-token"
# the pod's own service-account token for the aegis audience, bound to the pod (its name and
# uid; invalid once it is deleted), rotated by the kubelet
TOKEN_PROJECTION = {
    "name": TOKEN_VOLUME,
    "projected": {
        "sources": [
            {
                "serviceAccountToken": {
                    "audience": AGENT_TOKEN_AUDIENCE,
                    "expirationSeconds": AGENT_TOKEN_SECONDS,
                    "path": AGENT_TOKEN_FILE.rsplit("/", 1)[1],
                }
            }
        ]
    },
}


def _agent_container(container: Mapping[str, Any], env: list[dict[str, Any]]) -> dict[str, Any]:
    out = copy.deepcopy(dict(container))
    ours = {e["name"] for e in env}
    user_env = [e for e in out.get("env", []) if e.get("name") not in ours]
    out["args"] = ["--", *out.get("command", []), *out.get("args", [])]
    out["command"] = list(AGENT_COMMAND)
    out["env"] = [*user_env, *env]
    mounts = [m for m in out.get("volumeMounts", []) if m.get("name") != TOKEN_VOLUME]
    mount = {"name": TOKEN_VOLUME, "mountPath": AGENT_TOKEN_DIR, "readOnly": True}
    out["volumeMounts"] = [*mounts, mount]
    return out


def worker_pod(
    job: JobView,
    rank: int,
    excluded_nodes: Sequence[str],
    settings: PodSettings,
    *,
    container_restarts: int = 0,
) -> dict[str, Any]:
    """Worker pod `rank` from the job's template, kept off every excluded node; its agent is
    told how many Level 2 recreations came before (it escalates to Level 3 after 2)."""
    template = copy.deepcopy(dict(job.template))
    spec = dict(template.get("spec") or {})
    tmeta = template.get("metadata") or {}
    name = pod_name(job.name, rank)
    meta = _metadata(job, name, rank)
    meta["labels"] = {**(tmeta.get("labels") or {}), **meta["labels"]}
    if tmeta.get("annotations"):
        meta["annotations"] = dict(tmeta["annotations"])
    containers = list(spec["containers"])
    env = _agent_env(job, rank, settings)
    env.append({"name": str(Var.CONTAINER_RESTARTS), "value": str(container_restarts)})
    containers[0] = _agent_container(containers[0], env)
    volumes = [v for v in spec.get("volumes") or [] if v.get("name") != TOKEN_VOLUME]
    spec.update(
        containers=containers,
        volumes=[*volumes, copy.deepcopy(TOKEN_PROJECTION)],
        restartPolicy="Never",
        hostname=name,
        subdomain=service_name(job.name),
    )
    affinity = exclude_nodes(spec.get("affinity"), excluded_nodes)
    if affinity:
        spec["affinity"] = affinity
    job.run_policy.schedule(job.name, job.worker_num, meta, spec)  # gang, priority class
    return {"apiVersion": POD.api_version, "kind": POD.kind, "metadata": meta, "spec": spec}


def pod_group(job: JobView) -> dict[str, Any]:
    """The job's Volcano PodGroup (gang Volcano): its worker pods are scheduled all or none."""
    return {
        "apiVersion": POD_GROUP.api_version,
        "kind": POD_GROUP.kind,
        "metadata": _metadata(job, job.name),
        "spec": job.run_policy.pod_group_spec(job.worker_num),
    }


# ---------------- the job's ctl credential (written by the Aegis Controller) ----------------

CTL_SECRET_KEY = "ctl.json"  # the same fields as `aegis run`'s <state_dir>/ctl.json
LABEL_CTL = "aegis.dev/ctl"
CTL_MANAGED_BY = "aegis-controller"


def ctl_secret_name(job: str) -> str:
    """The Secret holding a job's ctl credential (`aegis ctl --kube --job JOB`)."""
    return f"{job}-aegis-ctl"


def ctl_secret(
    namespace: str,
    job: str,
    uid: str,
    pods: Sequence[str],
    nats_url: str,
    jwt: str,
    seed: str,
) -> dict[str, Any]:
    """The job's ctl Secret: a NATS user allowed only the job's ctl subjects (the
    `JobAccount.ctl_permissions`), owned by the Aegis CR (garbage-collected with it). Only the
    `aegis-operator` ClusterRole may read it; the Aegis Controller may only create it."""
    import json

    body = {
        "natsUrl": nats_url,
        "jwt": jwt,
        "seed": seed,
        "namespace": namespace,
        "job": job,
        "pods": list(pods),
    }
    return {
        "apiVersion": SECRET.api_version,
        "kind": SECRET.kind,
        "metadata": {
            "name": ctl_secret_name(job),
            "namespace": namespace,
            "labels": {LABEL_JOB: job, LABEL_CTL: "true", LABEL_MANAGED_BY: CTL_MANAGED_BY},
            "ownerReferences": [
                {
                    "apiVersion": AEGIS.api_version,
                    "kind": AEGIS.kind,
                    "name": job,
                    "uid": uid,
                    "controller": False,
                    "blockOwnerDeletion": False,
                }
            ],
        },
        "type": "Opaque",
        "data": {
            CTL_SECRET_KEY: base64.b64encode(json.dumps(body).encode("utf-8")).decode("ascii")
        },
    }
