"""An in-memory Kubernetes API for benches and tests that need many calls: no HTTP.

The kmock emulator of tests/k8s/cluster.py answers over real HTTP but costs tens of ms a call
(and its create grows with the objects it holds); `MemoryApi` answers the same calls the
way the API server does, for hundreds of controller deaths (tests/k8s/test_configmap_store.py)
or a 12,500-pod job's creation (bench/pod_creation.py). Thread-safe: the Job Controller
creates pods from several threads.
"""

from __future__ import annotations

import itertools
import threading
import uuid
from collections.abc import Mapping
from typing import Any

import orjson

from aegis.k8s.errors import ApiError
from aegis.k8s.resources import Resource

Key = tuple[str, str | None, str]


def _copy(obj: Any) -> Any:
    """A copy through JSON, as the API server's objects go over the wire (and ~2x faster than
    copy.deepcopy: 0.51 s against 1.13 s for a 12,500-pod list)."""
    return orjson.loads(orjson.dumps(obj))


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: `patch` applied to `target` (changes `target` in place where it is a dict)."""
    if not isinstance(patch, dict):
        return patch
    out = target if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = apply_merge_patch(out.get(key), value)
    return out


class MemoryApi:
    """An in-memory API server: objects by (resource, namespace, name), get/list/create/
    delete/patch as the API server answers them (409 on a name taken or a stale
    resourceVersion, 404 on a missing object, label selectors of `k=v` terms, a list of every
    namespace for None, a merge patch of metadata or, with `sub="status"`, of the status
    only), JSON copies in and out. Every call first calls `before(verb, res)`, outside the
    lock: a subclass delays, counts or refuses calls there."""

    def __init__(self) -> None:
        self.objects: dict[Key, dict[str, Any]] = {}
        self._versions = itertools.count(1)
        self._lock = threading.Lock()

    def before(self, verb: str, res: Resource) -> None:
        """Called first by every call ("get", "list", "create", "delete", "patch")."""

    def get(self, res: Resource, namespace: str | None, name: str, sub: str = "") -> dict[str, Any]:
        self.before("get", res)
        with self._lock:
            return _copy(self._find(res, namespace, name))

    def list(
        self, res: Resource, namespace: str | None = None, label_selector: str = ""
    ) -> list[dict[str, Any]]:
        self.before("list", res)
        terms = [t.split("=", 1) for t in label_selector.split(",") if t]
        with self._lock:
            found = [
                obj
                for (plural, ns, _), obj in sorted(self.objects.items(), key=lambda kv: str(kv[0]))
                if plural == res.plural
                and namespace in (None, ns)
                and all((obj["metadata"].get("labels") or {}).get(k) == v for k, v in terms)
            ]
            return _copy(found)

    def create(
        self, res: Resource, namespace: str | None, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        self.before("create", res)
        obj = _copy(dict(body))
        meta = obj.setdefault("metadata", {})
        key = (res.plural, namespace, str(meta.get("name")))
        with self._lock:
            if key in self.objects:
                raise ApiError(409, "AlreadyExists", f"{key[2]} already exists")
            meta.update(uid=str(uuid.uuid4()), resourceVersion=str(next(self._versions)))
            meta["namespace"] = namespace
            self.objects[key] = obj
            return _copy(obj)

    def delete(self, res: Resource, namespace: str | None, name: str) -> None:
        self.before("delete", res)
        with self._lock:
            self._find(res, namespace, name)
            del self.objects[(res.plural, namespace, name)]

    def patch(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        patch: Mapping[str, Any],
        sub: str = "",
    ) -> dict[str, Any]:
        self.before("patch", res)
        with self._lock:
            obj = self._find(res, namespace, name)
            meta = obj["metadata"]
            wanted = (patch.get("metadata") or {}).get("resourceVersion")
            if wanted and wanted != meta["resourceVersion"]:
                raise ApiError(409, "Conflict", "the object has been modified")
            for part, value in patch.items():
                if part == "metadata" and sub != "status":
                    kept = {k: v for k, v in value.items() if k not in ("resourceVersion", "uid")}
                    apply_merge_patch(meta, _copy(kept))
                elif part != "metadata" and (sub != "status" or part == "status"):
                    obj[part] = apply_merge_patch(obj.get(part), _copy(value))
            meta["resourceVersion"] = str(next(self._versions))
            return _copy(obj)

    def _find(self, res: Resource, namespace: str | None, name: str) -> dict[str, Any]:
        obj = self.objects.get((res.plural, namespace, name))
        if obj is None:
            raise ApiError(404, "NotFound", f"{res.plural} {name} not found")
        return obj
