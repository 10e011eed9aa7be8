"""A kmock Kubernetes emulator served from its own thread, for the sync client under test.

kmock 0.8 knows no resourceVersion, uid or label selectors; `Emulator` adds the first two (a
409 on a stale resourceVersion, like the real API server; a list's version) so that conflicts
and ownership are tested for real. Label selectors stay client-side (the code filters by label
itself). A watch from a resourceVersion starts, as kmock's every watch, with every object as
ADDED: a cache fed by a list and then such a watch is told again what it holds.
"""

from __future__ import annotations

import asyncio
import datetime
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp.web
import attrs
import kmock

from aegis.k8s.api import KubeApi
from aegis.k8s.resources import AEGIS, AEGIS_JOB, POD, Resource

REPO = Path(__file__).resolve().parents[2]
BASE = REPO / "deploy" / "base"
EXAMPLES = REPO / "deploy" / "examples"
NAMESPACE = "team"
CRDS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition"
)
_DECLARED = {
    "v1/pods": ("Pod", True, {"status"}),
    "v1/secrets": ("Secret", True, set()),
    "v1/services": ("Service", True, set()),
    "v1/configmaps": ("ConfigMap", True, set()),
    "v1/namespaces": ("Namespace", False, set()),
    "apiextensions.k8s.io/v1/customresourcedefinitions": ("CustomResourceDefinition", False, set()),
    "aegis.dev/v1alpha1/aegises": ("Aegis", True, {"status"}),
    "aegis.dev/v1alpha1/aegisjobs": ("AegisJob", True, {"status"}),
    "authentication.k8s.io/v1/tokenreviews": ("TokenReview", False, set()),
    # Volcano's CRD, for gang scheduling with Volcano (runPolicy.schedulingPolicy.gang)
    "scheduling.volcano.sh/v1beta1/podgroups": ("PodGroup", True, {"status"}),
}


@attrs.define(kw_only=True)
class Emulator(kmock.KubernetesEmulator):
    """kmock plus uid, creationTimestamp and resourceVersion preconditions (409)."""

    _version: list[int] = attrs.field(factory=lambda: [0], init=False)
    # a status write whose request body is past this many bytes gets etcd's refusal of an
    # object past its --max-request-bytes (a stand-in: a job's first save sends its whole
    # status; None: no limit)
    max_status_body: int | None = attrs.field(default=None, init=False)
    # a list's later pages get 410 Expired, as when the first page's version has been
    # compacted away in etcd
    expire_continue: bool = attrs.field(default=False, init=False)
    # this many watches from a resourceVersion get 410 Gone, as when etcd has compacted it
    expire_watches: int = attrs.field(default=0, init=False)
    # a GET of one pod gets 503 (a test that only a cache can pass)
    refuse_pod_gets: bool = attrs.field(default=False, init=False)
    # the service-account tokens the "kubelet" projected: token -> the TokenReview status the
    # API server answers for it (a token it does not know is not authenticated)
    tokens: dict[str, dict[str, Any]] = attrs.field(factory=dict, init=False)
    reviews: int = attrs.field(default=0, init=False)  # TokenReviews answered

    def _review(self, data: Any) -> dict[str, Any]:
        """A TokenReview, as the API server answers it: the token's user and audiences."""
        self.reviews += 1
        spec = data.get("spec") or {} if isinstance(data, dict) else {}
        known = self.tokens.get(str(spec.get("token", "")))
        wanted = set(spec.get("audiences") or ())
        status: dict[str, Any] = {"authenticated": False}
        if known is not None and wanted & set(known["audiences"]):
            status = {"authenticated": True, "user": known["user"],
                      "audiences": sorted(wanted & set(known["audiences"]))}  # fmt: skip
        return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                "spec": spec, "status": status}  # fmt: skip

    # resources ("group/version/plural") this server does not serve (a CRD not installed):
    # every request for them gets the API server's 404 for an unknown path
    unserved: set[str] = attrs.field(factory=set, init=False)

    async def _handle(self, request: kmock.Request) -> Any:
        res = request.resource
        if res is not None and f"{res.group}/{res.version}/{res.plural}" in self.unserved:
            return await self._render_error(
                kmock.KubernetesError(
                    404, "NotFound", "the server could not find the requested resource"
                )
            )
        if (
            request.resource is not None
            and request.resource.plural == "tokenreviews"
            and request.action == kmock.action.CREATE
        ):
            return aiohttp.web.json_response(self._review(request.data), status=201)
        if (
            request.action == kmock.action.LIST
            and self.expire_continue
            and request.params.get("continue")
        ):
            return await self._render_error(
                kmock.KubernetesError(410, "Expired", "the continue token has expired")
            )
        if (
            self.refuse_pod_gets
            and request.action == kmock.action.FETCH
            and request.resource is not None
            and request.resource.plural == "pods"
        ):
            return await self._render_error(
                kmock.KubernetesError(503, "ServiceUnavailable", "pod reads refused by the test")
            )
        if (
            request.action == kmock.action.WATCH
            and self.expire_watches > 0
            and request.params.get("resourceVersion")
        ):
            self.expire_watches -= 1
            return await self._render_error(
                kmock.KubernetesError(410, "Expired", "too old resource version")
            )
        data = request.data
        if request.resource is None or not isinstance(data, dict):
            return await super()._handle(request)
        limit = self.max_status_body
        if limit is not None and request.subresource == "status" and len(request.body) > limit:
            return await self._render_error(
                kmock.KubernetesError(500, "InternalError", "etcdserver: request is too large")
            )
        if request.action == kmock.action.UPDATE and self._stale(request, data):
            return await self._render_error(
                kmock.KubernetesError(409, "Conflict", "the object has been modified")
            )
        if request.action in (kmock.action.CREATE, kmock.action.UPDATE):
            self._version[0] += 1
            meta = data.setdefault("metadata", {})
            meta["resourceVersion"] = str(self._version[0])
            if request.action == kmock.action.CREATE:
                meta.setdefault("uid", str(uuid.uuid4()))
                meta.setdefault("creationTimestamp", _now())
        return await super()._handle(request)

    async def _serve_list(self, request: kmock.Request) -> Any:
        """kmock's list, in pages of `limit` when asked, continued after the last name (in
        name order: a real API server's pages come in etcd's key order)."""
        answer: dict[str, Any] = await super()._serve_list(request)  # type: ignore[assignment]
        answer["metadata"] = {"resourceVersion": str(self._version[0])}  # the newest change's
        limit = int(request.params.get("limit") or 0)
        if not limit:
            return answer

        def key(obj: dict[str, Any]) -> tuple[str, str]:
            return (obj["metadata"].get("namespace") or "", obj["metadata"]["name"])

        token = request.params.get("continue")
        after = tuple(token.split("/", 1)) if token else ("",)
        items = sorted((o for o in answer["items"] if key(o) > after), key=key)
        page, rest = items[:limit], items[limit:]
        meta = dict(answer.get("metadata") or {})
        if rest:
            meta["continue"] = "/".join(key(page[-1]))
        return {**answer, "metadata": meta, "items": page}

    def _stale(self, request: kmock.Request, data: dict[str, Any]) -> bool:
        wanted = (data.get("metadata") or {}).get("resourceVersion")
        key: Any = (request.resource, request.namespace, request.name)
        if not wanted or key not in self.objects or self.objects[key].deleted:
            return False
        return bool(wanted != self.objects[key].get("metadata", {}).get("resourceVersion"))


def _now() -> str:
    return datetime.datetime.now(tz=datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Cluster:
    """The emulator's URL, a client for it, and kubelet-like helpers."""

    url: str
    api: KubeApi
    emulator: Emulator

    def pod_token(
        self, name: str, ns: str = NAMESPACE, audience: str = "aegis", uid: str = ""
    ) -> str:
        """Play the kubelet: the projected service-account token of pod `name` (bound to it:
        its name and uid, read from the API unless given), for `audience`."""
        uid = uid or self.api.get(POD, ns, name)["metadata"]["uid"]
        token = f"sa-token-{uuid.uuid4().hex}"
        self.emulator.tokens[token] = {
            "audiences": [audience],
            "user": {
                "username": f"system:serviceaccount:{ns}:default",
                "extra": {
                    "authentication.kubernetes.io/pod-name": [name],
                    "authentication.kubernetes.io/pod-uid": [uid],
                },
            },
        }
        return token

    def pods(self, namespace: str = NAMESPACE) -> dict[str, dict[str, Any]]:
        """Live pods by name (read back through the API)."""
        return {p["metadata"]["name"]: p for p in self.api.list(POD, namespace)}

    def finish_pod(self, name: str, exit_code: int, node: str = "", ns: str = NAMESPACE) -> None:
        """Play the kubelet: the pod's first container exited with `exit_code` on `node`."""
        pod = self.api.get(POD, ns, name)
        container = pod["spec"]["containers"][0]["name"]
        terminated = {"exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error"}
        status = {
            "phase": "Succeeded" if exit_code == 0 else "Failed",
            "containerStatuses": [{"name": container, "state": {"terminated": terminated}}],
        }
        self.api.patch(POD, ns, name, {"spec": {"nodeName": node or "node-a"}})
        self.api.patch(POD, ns, name, {"status": status}, sub="status")

    def run_pod(self, name: str, node: str = "node-a", ns: str = NAMESPACE) -> None:
        """Play the scheduler and kubelet: the pod runs on `node`."""
        self.api.patch(POD, ns, name, {"spec": {"nodeName": node}})
        self.api.patch(POD, ns, name, {"status": {"phase": "Running"}}, sub="status")

    def job(self, name: str, ns: str = NAMESPACE) -> dict[str, Any]:
        """The AegisJob as stored."""
        return self.api.get(AEGIS_JOB, ns, name)

    def aegis(self, name: str, ns: str = NAMESPACE) -> dict[str, Any]:
        """The Aegis CR as stored."""
        return self.api.get(AEGIS, ns, name)


def serve(box: dict[str, Any], ready: threading.Event) -> None:
    async def main() -> None:
        async with Emulator() as emulator, kmock.Server(emulator) as server:
            for key, (kind, namespaced, subs) in _DECLARED.items():
                emulator.resources[key] = kmock.ResourceInfo(
                    kind=kind,
                    namespaced=namespaced,
                    subresources=subs,
                    verbs={"get", "list", "watch", "create", "patch", "delete"},
                )
            # kmock 0.8 parses /api/v1/namespaces[/x] as a namespace prefix, not the resource:
            # the namespace is put in directly and cannot be read back over HTTP.
            namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
            emulator.objects[kmock.resource("v1/namespaces"), None, NAMESPACE] = namespace
            box.update(emulator=emulator, url=str(server.url), stop=asyncio.Event())
            ready.set()
            await box["stop"].wait()

    loop = asyncio.new_event_loop()
    box["loop"] = loop
    loop.run_until_complete(main())
    loop.close()


def aegis_job(name: str = "train", workers: int = 3, max_retry: int = 2) -> dict[str, Any]:
    """An AegisJob manifest like a user would write."""
    container = {"name": "trainer", "image": "train:1", "command": ["python", "train.py"]}
    return {
        "apiVersion": AEGIS_JOB.api_version,
        "kind": AEGIS_JOB.kind,
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "workerNum": workers,
            "maxRetry": max_retry,
            "template": {"spec": {"containers": [container]}},
        },
    }
