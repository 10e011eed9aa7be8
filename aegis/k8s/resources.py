"""The Kubernetes resources Aegis uses, their URL paths, and the names it gives objects."""

from __future__ import annotations

from dataclasses import dataclass

GROUP = "aegis.dev"
VERSION = "v1alpha1"

LABEL_JOB = f"{GROUP}/job"  # value: the AegisJob name, on every object the controller makes
LABEL_RANK = f"{GROUP}/rank"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY = "aegis-job-controller"
FINALIZER = f"{GROUP}/cleanup"


@dataclass(frozen=True)
class Resource:
    """One API resource: where it lives and what kind its objects are."""

    group: str
    version: str
    plural: str
    kind: str

    @property
    def api_version(self) -> str:
        """`group/version`, or just `version` for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str = "", subresource: str = "") -> str:
        """The URL path of the collection, one object, or one object's subresource."""
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        parts = [root]
        if namespace is not None:
            parts.append(f"namespaces/{namespace}")
        parts.append(self.plural)
        if name:
            parts.append(name)
        if subresource:
            parts.append(subresource)
        return "/".join(parts)


AEGIS = Resource(GROUP, VERSION, "aegises", "Aegis")
AEGIS_JOB = Resource(GROUP, VERSION, "aegisjobs", "AegisJob")
POD = Resource("", "v1", "pods", "Pod")
# the worker pod's own service-account token, projected for the agent to prove its pod with
# (aegis/k8s/token_review.py): audience, where it is mounted, how long the kubelet makes it
AGENT_TOKEN_AUDIENCE = "aegis"
AGENT_TOKEN_DIR = "/var/run/secrets/aegis"
AGENT_TOKEN_FILE = f"{AGENT_TOKEN_DIR}/token"
AGENT_TOKEN_SECONDS = 3600
SECRET = Resource("", "v1", "secrets", "Secret")
SERVICE = Resource("", "v1", "services", "Service")
CONFIG_MAP = Resource("", "v1", "configmaps", "ConfigMap")


def pod_name(job: str, rank: int) -> str:
    """The stable name of a job's worker pod (kept across reschedules)."""
    return f"{job}-worker-{rank}"


def secret_name(job: str) -> str:
    """The Secret holding a job's bootstrap token."""
    return f"{job}-aegis-bootstrap"


def service_name(job: str) -> str:
    """The headless Service giving each worker a DNS name."""
    return f"{job}-workers"
