"""The worker pods as a list and a watch last showed them (pure, no I/O; aegis/k8s/informer.py
keeps it current): the Job Controller's reconciles read a job's pods here, the credential
service its pod checks.

A reconcile reads a job's pods from here instead of listing them from the API server: a
12,500-pod job's pods change thousands of times while they start (scheduled, running, ready),
and a list of every pod per reconcile was tens of MB served and parsed each time. It is an
informer's store, as client-go's: filled by a list (`replace`), kept current by the watch
that starts at the list's version (`apply`), and read without a call (`pods`).

The controller's own writes are seen before the watch shows them, as client-go's mutation
cache and expectations do: a pod it created is present at once (`created`, the API's answer),
a pod it deleted reads as deleting at once and until the watch says it is gone (`deleted`),
whatever older events of it the watch or a list taken before the deletion still bring. So a
reconcile's next pass neither creates a pod again nor counts a failed pod's restart twice.
A created pod whose version the list or the watch has already passed is not added (the
cache holds whatever became of it: deleted already, it would otherwise be a ghost that
nobody re-creates). Those marks last at most `ttl_s` (client-go's expectations time out at
5 minutes). Versions are compared as numbers where they are (etcd's revisions, as client-go's
mutation cache compares them), else not at all.
Thread-safe: the watch thread writes beside the reconcile and its pod-call threads.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from aegis.k8s.model import PodView
from aegis.k8s.resources import LABEL_JOB

JobKey = tuple[str, str]  # (namespace, AegisJob name)
PodKey = tuple[str, str]  # (namespace, pod name)
WATCHED = ("ADDED", "MODIFIED", "DELETED")
TTL_S = 300.0


@dataclass(frozen=True)
class CachedPod:
    """What a reconcile reads of one pod: its view, identity, job label and owners."""

    view: PodView
    uid: str
    job: str
    owners: tuple[str, ...]

    @classmethod
    def from_obj(cls, obj: Mapping[str, Any]) -> CachedPod:
        """Parse a pod as the API returns it."""
        meta = obj.get("metadata")
        meta = meta if isinstance(meta, Mapping) else {}
        labels = meta.get("labels")
        refs = meta.get("ownerReferences")
        owners = (
            tuple(str(r.get("uid")) for r in refs if isinstance(r, Mapping))
            if isinstance(refs, list)
            else ()
        )
        return cls(
            view=PodView.from_obj(obj),
            uid=str(meta.get("uid") or ""),
            job=str(labels.get(LABEL_JOB) or "") if isinstance(labels, Mapping) else "",
            owners=owners,
        )


def _version(obj: Mapping[str, Any]) -> int | None:
    meta = obj.get("metadata")
    value = meta.get("resourceVersion") if isinstance(meta, Mapping) else None
    return _number(value)


def _number(value: Any) -> int | None:
    return int(value) if isinstance(value, str) and value.isdigit() else None


def _changed_jobs(
    pods: Mapping[PodKey, CachedPod], other: Mapping[PodKey, CachedPod]
) -> set[JobKey]:
    """The (namespace, job) of each pod of `pods` that `other` does not hold as it is."""
    return {(k[0], p.job) for k, p in pods.items() if other.get(k) != p}


def _key(obj: Mapping[str, Any]) -> PodKey:
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    return str(meta.get("namespace") or "default"), str(meta.get("name") or "")


class _Marks:
    """Keys that expire `ttl_s` after they were set (oldest first, so pruning is cheap)."""

    def __init__(self, ttl_s: float, clock: Callable[[], float]) -> None:
        self._until: OrderedDict[str, float] = OrderedDict()
        self._ttl_s, self._clock = ttl_s, clock

    def add(self, key: str) -> None:
        self._until.pop(key, None)
        self._until[key] = self._clock() + self._ttl_s

    def discard(self, key: str) -> None:
        self._until.pop(key, None)

    def __contains__(self, key: str) -> bool:
        self.prune()
        return key in self._until

    def prune(self) -> None:
        now = self._clock()
        while self._until and next(iter(self._until.values())) <= now:
            self._until.popitem(last=False)


class PodCache:
    """Worker pods by namespace and name, indexed by job, plus the controller's own writes."""

    def __init__(self, ttl_s: float = TTL_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._pods: dict[PodKey, CachedPod] = {}
        self._by_job: dict[JobKey, set[str]] = {}
        # pods this controller created that neither the list nor the watch has shown yet
        self._created: dict[PodKey, tuple[CachedPod, float, int | None]] = {}
        self._deleted = _Marks(ttl_s, clock)  # uids this controller deleted, until seen gone
        self._gone = _Marks(ttl_s, clock)  # uids the watch saw deleted (versions unknown)
        self._ttl_s, self._clock = ttl_s, clock
        self._synced = False
        self._version = 0  # the newest resourceVersion the list or the watch has shown

    @property
    def synced(self) -> bool:
        """Whether a list has filled the cache and its watch has not failed since (otherwise
        reconciles list for themselves and pod checks ask the API)."""
        return self._synced

    def stale(self) -> None:
        """The list or the watch failed: what the cache holds may be behind until the next
        list (`replace`)."""
        self._synced = False

    def replace(self, objs: Iterable[Mapping[str, Any]], version: str = "") -> set[JobKey]:
        """A fresh list (of that resourceVersion): the cache becomes it. The jobs whose pods
        it changed."""
        fresh = {_key(o): CachedPod.from_obj(o) for o in objs}
        with self._lock:
            self._version = max(self._version, _number(version) or 0)
            moved = _changed_jobs(self._pods, fresh) | _changed_jobs(fresh, self._pods)
            self._pods, self._by_job = {}, {}
            for key, pod in fresh.items():
                self._put(key, pod)
                self._drop_created(key, pod.uid)
            self._forget_listed_creations()
            self._synced = True
        return {k for k in moved if k[1]}

    def _forget_listed_creations(self) -> None:
        """Drop the pods created at or before the list's version: the list holds what became
        of them. Call with the lock held."""
        for key, (_, _, made) in list(self._created.items()):
            if made is not None and made <= self._version:
                del self._created[key]

    def apply(self, kind: str, obj: Mapping[str, Any]) -> JobKey | None:
        """A watch event; the job to reconcile when it changed what a reconcile reads of the
        pod (its view, identity, job or owners) or deleted it, else None. Events of other
        kinds (BOOKMARK) are not about a pod."""
        if kind not in WATCHED:
            return None
        key, pod = _key(obj), CachedPod.from_obj(obj)
        with self._lock:
            self._version = max(self._version, _version(obj) or 0)
            old = self._pods.get(key)
            if kind == "DELETED":
                self._gone.add(pod.uid)
                self._deleted.discard(pod.uid)
                self._drop_created(key, pod.uid)
                if old is None or old.uid != pod.uid:
                    return None  # not the pod held under that name (an older one): nothing
                self._remove(key, old)
            else:
                self._drop_created(key, pod.uid)
                if old == pod:
                    return None
                self._put(key, pod)
        job = pod.job or (old.job if old else "")
        return (key[0], job) if job else None

    def created(self, obj: Mapping[str, Any]) -> None:
        """This controller created `obj` (the API's answer): it is present from now on."""
        key, pod, version = _key(obj), CachedPod.from_obj(obj), _version(obj)
        with self._lock:
            held = self._pods.get(key)
            if pod.uid in self._gone or (held is not None and held.uid == pod.uid):
                return  # the watch was first
            if version is not None and version <= self._version:
                return  # the list or the watch was first, and it is gone since
            self._created[key] = (pod, self._clock() + self._ttl_s, version)

    def deleted(self, namespace: str, name: str) -> None:
        """This controller deleted the pod now held under that name: it reads as deleting
        until the watch shows it gone."""
        key = (namespace, name)
        with self._lock:
            pod = self._pods.get(key)
            made = self._created.get(key)
            for uid in (pod.uid if pod else "", made[0].uid if made else ""):
                if uid:
                    self._deleted.add(uid)

    def get(self, namespace: str, name: str) -> CachedPod | None:
        """The pod of that name as the list and the watch last showed it (not the
        controller's own writes), or None (also while the cache is not synced)."""
        with self._lock:
            return self._pods.get((namespace, name)) if self._synced else None

    def pods(self, namespace: str, job: str, owner_uid: str) -> list[PodView]:
        """The job's pods owned by the AegisJob of that uid, by name."""
        with self._lock:
            found = {n: self._pods[(namespace, n)] for n in self._by_job.get((namespace, job), ())}
            now = self._clock()
            for (ns, name), (pod, until, _) in list(self._created.items()):
                if until <= now:
                    del self._created[(ns, name)]
                elif ns == namespace and pod.job == job and name not in found:
                    found[name] = pod
            views = [
                replace(p.view, deleting=True) if p.uid in self._deleted else p.view
                for p in found.values()
                if owner_uid in p.owners
            ]
        return sorted(views, key=lambda v: v.name)

    def _put(self, key: PodKey, pod: CachedPod) -> None:
        old = self._pods.get(key)
        if old is not None:
            self._remove(key, old)
        self._pods[key] = pod
        self._by_job.setdefault((key[0], pod.job), set()).add(key[1])

    def _remove(self, key: PodKey, pod: CachedPod) -> None:
        del self._pods[key]
        names = self._by_job.get((key[0], pod.job))
        if names is not None:
            names.discard(key[1])
            if not names:
                del self._by_job[(key[0], pod.job)]

    def _drop_created(self, key: PodKey, uid: str) -> None:
        made = self._created.get(key)
        if made is not None and made[0].uid == uid:
            del self._created[key]
