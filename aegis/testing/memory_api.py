"""An in-memory Kubernetes API for code that makes many calls: no HTTP, no API server.

An HTTP emulator of the API (kmock, in Aegis's own tests) costs tens of milliseconds a call,
and its create grows with the objects it holds; `MemoryApi` answers the same calls the way the
API server does, for hundreds of controller deaths or a 12,500-pod job's creation and start.
It has the calls of `aegis.k8s.api.KubeApi` that Aegis's controllers and stores make.
Thread-safe: the Job Controller creates pods from several threads and watches from others.
What it does not do: admission, defaulting, validation against the CRDs' schemas, garbage
collection, field selectors, server-side apply.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import orjson

from aegis.k8s.errors import ApiError
from aegis.k8s.resources import Resource

Key = tuple[str, str | None, str]
Items = list[dict[str, Any]]  # module-level: `MemoryApi.list` shadows the builtin inside
Names = list[str]
Event = tuple[int, str, str, bytes]  # version, type, plural, the object's JSON then
# events a watch can start behind the newest (older: 410, list again), and their bytes at
# most (a ConfigMap WAL's parts are up to 700 KB: 20,000 of them would be 14 GB)
HISTORY, HISTORY_BYTES = 20_000, 64 << 20
_END: Event = (0, "", "", b"")


def _copy(obj: Any) -> Any:
    """A copy through JSON, as the API server's objects go over the wire (and faster than
    copy.deepcopy)."""
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


class MemoryCrApi:
    """The two calls a CR status store makes (`get`, `patch`), on one object held in memory:
    a merge patch of its status is applied as the API server would, without copies and
    without a resourceVersion check, so that what is timed is the store's own work."""

    def __init__(self) -> None:
        self.obj: dict[str, Any] = {"metadata": {"resourceVersion": "1"}, "spec": {}}

    def get(self, res: Resource, namespace: str | None, name: str, sub: str = "") -> dict[str, Any]:
        return self.obj

    def patch(
        self, res: Resource, namespace: str | None, name: str, patch: Any, sub: str = ""
    ) -> dict[str, Any]:
        self.obj["status"] = apply_merge_patch(self.obj.get("status"), patch["status"])
        version = int(self.obj["metadata"]["resourceVersion"]) + 1
        self.obj["metadata"] = {"resourceVersion": str(version)}
        return self.obj


class MemoryApi:
    """An in-memory API server: objects by (resource, namespace, name), get/list/create/
    delete/patch as the API server answers them (409 on a name taken or a stale
    resourceVersion, 404 on a missing object, label selectors of `k=v` and `k` terms, a list
    of every namespace for None, a merge patch of metadata or, with `sub="status"`, of the
    status only), JSON copies in and out, and watches from a list's resourceVersion (410 when
    it is more than HISTORY events old). Every call first calls `before(verb, res)`, outside
    the lock: a subclass delays, counts or refuses calls there."""

    def __init__(self) -> None:
        self.objects: dict[Key, dict[str, Any]] = {}
        self._versions = itertools.count(1)
        self._version = 0
        self._lock = threading.Lock()
        self._history: deque[Event] = deque()
        self._history_bytes = 0
        self._watchers: set[queue.Queue[Event]] = set()

    def before(self, verb: str, res: Resource) -> None:
        """Called first by every call ("get", "list", "create", "delete", "patch")."""

    def get(self, res: Resource, namespace: str | None, name: str, sub: str = "") -> dict[str, Any]:
        self.before("get", res)
        with self._lock:
            return _copy(self._find(res, namespace, name))

    def list(
        self, res: Resource, namespace: str | None = None, label_selector: str = ""
    ) -> list[dict[str, Any]]:
        return self.list_versioned(res, namespace, label_selector)[0]

    def list_versioned(
        self, res: Resource, namespace: str | None = None, label_selector: str = ""
    ) -> tuple[Items, str]:
        self.before("list", res)
        with self._lock:
            found = [
                obj
                for (plural, ns, _), obj in sorted(self.objects.items(), key=lambda kv: str(kv[0]))
                if plural == res.plural and _selects(obj, namespace, label_selector)
            ]
            return _copy(found), str(self._version)

    def names(self, res: Resource, namespace: str | None, label_selector: str = "") -> Names:
        """The names a list would return, without copies and without `before`: a bench's or a
        test's own look at the objects, not an API call."""
        with self._lock:
            return sorted(
                name
                for (plural, _, name), obj in self.objects.items()
                if plural == res.plural and _selects(obj, namespace, label_selector)
            )

    def watch(
        self,
        res: Resource,
        namespace: str | None = None,
        label_selector: str = "",
        timeout_s: int = 300,
        resource_version: str = "",
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """The changes after `resource_version` (every object as ADDED without one) until
        `timeout_s` passes or `close_watches`."""
        self.before("watch", res)
        inbox: queue.Queue[Event] = queue.Queue()
        with self._lock:
            for event in self._backlog(res, resource_version):
                inbox.put(event)
            self._watchers.add(inbox)
        deadline = time.monotonic() + timeout_s
        try:
            for kind, plural, data in _events(inbox, deadline):
                obj = orjson.loads(data) if plural == res.plural else None
                if obj is not None and _selects(obj, namespace, label_selector):
                    yield kind, obj
        finally:
            with self._lock:
                self._watchers.discard(inbox)

    def _backlog(self, res: Resource, resource_version: str) -> Sequence[Event]:
        """What a watch from `resource_version` has missed (410 if the history no longer
        holds it); without one, every object as ADDED. Called under the lock."""
        if not resource_version:
            return [
                (0, "ADDED", plural, orjson.dumps(obj))
                for (plural, _, _), obj in self.objects.items()
                if plural == res.plural
            ]
        since = int(resource_version)
        if since < self._version and (not self._history or self._history[0][0] > since + 1):
            raise ApiError(410, "Expired", f"too old resource version: {since}")
        return [e for e in self._history if e[0] > since]

    def close_watches(self) -> None:
        """End every open watch now."""
        with self._lock:
            for inbox in self._watchers:
                inbox.put(_END)

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
            meta.update(uid=str(uuid.uuid4()), namespace=namespace)
            self.objects[key] = obj
            self._changed(res, "ADDED", obj)
            return _copy(obj)

    def delete(self, res: Resource, namespace: str | None, name: str) -> None:
        self.before("delete", res)
        with self._lock:
            obj = self._find(res, namespace, name)
            del self.objects[(res.plural, namespace, name)]
            self._changed(res, "DELETED", obj)

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
            wanted = (patch.get("metadata") or {}).get("resourceVersion")
            if wanted and wanted != obj["metadata"]["resourceVersion"]:
                raise ApiError(409, "Conflict", "the object has been modified")
            _merge(obj, patch, sub)
            self._changed(res, "MODIFIED", obj)
            return _copy(obj)

    def _changed(self, res: Resource, kind: str, obj: dict[str, Any]) -> None:
        """Give `obj` the next resourceVersion and send the change to the watches (called
        under the lock)."""
        self._version = next(self._versions)
        obj["metadata"]["resourceVersion"] = str(self._version)
        event = (self._version, kind, res.plural, orjson.dumps(obj))
        self._history.append(event)
        self._history_bytes += len(event[3])
        while len(self._history) > HISTORY or self._history_bytes > HISTORY_BYTES:
            self._history_bytes -= len(self._history.popleft()[3])
        for inbox in self._watchers:
            inbox.put(event)

    def _find(self, res: Resource, namespace: str | None, name: str) -> dict[str, Any]:
        obj = self.objects.get((res.plural, namespace, name))
        if obj is None:
            raise ApiError(404, "NotFound", f"{res.plural} {name} not found")
        return obj


def _events(inbox: queue.Queue[Event], deadline: float) -> Iterator[tuple[str, str, bytes]]:
    """(kind, plural, JSON) of each event a watch's inbox gets, until `deadline` or the end."""
    while (left := deadline - time.monotonic()) > 0:
        try:
            event = inbox.get(timeout=left)
        except queue.Empty:
            return
        if event is _END:
            return
        _, kind, plural, data = event
        yield kind, plural, data


def _merge(obj: dict[str, Any], patch: Mapping[str, Any], sub: str) -> None:
    """Merge-patch `obj`: through the status subresource only its `status`; else every part,
    its metadata less resourceVersion and uid."""
    for part, value in patch.items():
        if part == "metadata" and sub != "status":
            kept = {k: v for k, v in value.items() if k not in ("resourceVersion", "uid")}
            apply_merge_patch(obj["metadata"], _copy(kept))
        elif part != "metadata" and (sub != "status" or part == "status"):
            obj[part] = apply_merge_patch(obj.get(part), _copy(value))


def _selects(obj: Mapping[str, Any], namespace: str | None, label_selector: str) -> bool:
    """Whether a list or watch of that namespace (None: every one) and selector (terms `k=v`
    and `k`, the label present) takes `obj`."""
    meta = obj["metadata"]
    if namespace not in (None, meta.get("namespace")):
        return False
    labels = meta.get("labels") or {}
    for term in filter(None, label_selector.split(",")):
        key, equals, value = term.partition("=")
        if key not in labels or (equals and labels[key] != value):
            return False
    return True
