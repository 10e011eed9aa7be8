"""A list and then a watch from the list's version, round after round, keeping a store current
(client-go's reflector): the one way both controllers and the credential service follow the
cluster (aegis/k8s/control_loop.py runs them beside a work queue).

Each round lists the objects (in pages), hands the list to the store (`replace`), and watches
from the list's resourceVersion until the watch ends (`watch_timeout_s`, or the server ends
it); every change the store reports (the keys whose objects changed in what their controller
reads) goes to `changed`. A version too old to watch from (410 Gone: etcd compacted it) is
listed again at once; any other failure after a capped exponential backoff (the work queue's
`Backoff`, reset by a list that succeeds); never more than one list a second, whatever the
server does. From a failure until the next list the store is told it is `stale`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Mapping, Set
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from aegis.k8s.api import KubeApi
from aegis.k8s.errors import ApiError
from aegis.k8s.pod_cache import JobKey, PodCache
from aegis.k8s.resources import LABEL_JOB, POD, Resource
from aegis.k8s.workqueue import RETRY_INITIAL_S, RETRY_MAX_S, Backoff

log = logging.getLogger(__name__)

WATCH_TIMEOUT_S = 300
RETRY_S = RETRY_INITIAL_S  # the first pause after a failed list or watch (a 410: none)
MIN_ROUND_S = 1.0  # never more than a list a second, whatever the server does
WATCHED = ("ADDED", "MODIFIED", "DELETED")

K = TypeVar("K", bound=Hashable)
K_co = TypeVar("K_co", bound=Hashable, covariant=True)
V = TypeVar("V")
ObjKey = tuple[str, str]  # (namespace, name)


class Store(Protocol[K_co]):
    """What a reflector keeps current: the keys each list or event changed."""

    def replace(self, objs: Iterable[Mapping[str, Any]], version: str = "") -> Set[K_co]:
        """A fresh list (of that resourceVersion) is the whole truth now."""
        ...

    def apply(self, kind: str, obj: Mapping[str, Any]) -> K_co | None:
        """A watch event."""
        ...

    def stale(self) -> None:
        """The list or the watch failed: the store may be behind until the next list."""
        ...


@dataclass(frozen=True)
class Source(Generic[K]):
    """One resource a control loop follows: what to list and watch, and the store it keeps."""

    resource: Resource
    store: Store[K]
    selector: str = ""


def reflect(
    api: KubeApi,
    source: Source[K],
    namespace: str | None,
    stop: threading.Event,
    changed: Callable[[K], None] = lambda key: None,
    watch_timeout_s: int = WATCH_TIMEOUT_S,
    backoff: Backoff | None = None,
) -> None:
    """Until `stop` is set: list `source` into its store, watch from the list's version until
    the watch ends, and again (module docstring). Each key the store reports changed goes to
    `changed`."""
    backoff = backoff or Backoff(RETRY_S, RETRY_MAX_S)
    res, store = source.resource, source.store
    while not stop.is_set():
        began = time.monotonic()
        try:
            items, version = api.list_versioned(res, namespace, source.selector)
            backoff.reset()
            for key in sorted(store.replace(items, version), key=repr):
                changed(key)
            for kind, obj in api.watch(
                res, namespace, source.selector, watch_timeout_s, resource_version=version
            ):
                if (moved := store.apply(kind, obj)) is not None:
                    changed(moved)
                if stop.is_set():
                    return
        except ApiError as exc:
            store.stale()
            log.warning("listing or watching %s failed, listing again: %s", res.plural, exc)
            if exc.status != 410:
                stop.wait(backoff.next())
        except Exception:  # a bug here must not leave a store that nobody keeps any more
            store.stale()
            log.exception("keeping the %s store failed, listing again", res.plural)
            stop.wait(backoff.next())
        stop.wait(max(0.0, began + MIN_ROUND_S - time.monotonic()))


def start_reflector(
    api: KubeApi,
    source: Source[K],
    namespace: str | None,
    stop: threading.Event,
    changed: Callable[[K], None] = lambda key: None,
    watch_timeout_s: int = WATCH_TIMEOUT_S,
    backoff: Backoff | None = None,
) -> threading.Thread:
    """`reflect` in a daemon thread (it ends when `stop` is set and the API's watches are
    closed)."""
    thread = threading.Thread(
        target=reflect,
        args=(api, source, namespace, stop, changed, watch_timeout_s, backoff),
        name=f"reflect-{source.resource.plural}",
        daemon=True,
    )
    thread.start()
    return thread


def inform_pods(
    api: KubeApi,
    cache: PodCache,
    namespace: str | None,
    stop: threading.Event,
    moved: Callable[[JobKey], None] = lambda key: None,
    watch_timeout_s: int = WATCH_TIMEOUT_S,
    backoff: Backoff | None = None,
) -> None:
    """`reflect` the pods labelled with a job (in `namespace`, None: every one) into `cache`;
    each job whose pods changed goes to `moved`."""
    source: Source[JobKey] = Source(POD, cache, LABEL_JOB)
    reflect(api, source, namespace, stop, moved, watch_timeout_s, backoff)


def start_pod_informer(
    api: KubeApi, cache: PodCache, namespace: str | None, stop: threading.Event
) -> threading.Thread:
    """`inform_pods` in a daemon thread (it ends when `stop` is set and the API's watches are
    closed)."""
    source: Source[JobKey] = Source(POD, cache, LABEL_JOB)
    return start_reflector(api, source, namespace, stop)


class KeyedStore(Generic[K, V]):
    """Objects by namespace and name as the list and the watch last showed them, each kept as
    `read` parses it (only what its controller reads) under the key `key_of` gives (the key a
    change queues: the object's own, or its job's); an event or a list that leaves an
    object's reading as it was changes nothing (the Aegis Controller patches a CR's status
    tens of times a second while a large job's pods report). Thread-safe."""

    def __init__(
        self,
        read: Callable[[Mapping[str, Any]], V],
        key_of: Callable[[Mapping[str, Any]], K | None],
    ) -> None:
        self._read, self._key_of = read, key_of
        self._lock = threading.Lock()
        self._objects: dict[ObjKey, tuple[K, V]] = {}
        self._synced = False

    @property
    def synced(self) -> bool:
        """Whether a list has filled the store and its watch has not failed since."""
        return self._synced

    def stale(self) -> None:
        """The list or the watch failed."""
        self._synced = False

    def replace(self, objs: Iterable[Mapping[str, Any]], version: str = "") -> set[K]:
        """A fresh list: the store becomes it. The keys of what it added, changed or
        removed."""
        fresh: dict[ObjKey, tuple[K, V]] = {}
        for obj in objs:
            key = self._key_of(obj)
            if key is not None:
                fresh[object_key(obj)] = (key, self._read(obj))
        with self._lock:
            old, self._objects = self._objects, fresh
            self._synced = True
        moved = {k for name, (k, v) in fresh.items() if old.get(name) != (k, v)}
        return moved | {k for name, (k, _) in old.items() if name not in fresh}

    def apply(self, kind: str, obj: Mapping[str, Any]) -> K | None:
        """A watch event; the key to queue, or None when it changed nothing read here."""
        if kind not in WATCHED:
            return None  # BOOKMARK: not about an object
        name = object_key(obj)
        key = self._key_of(obj)
        with self._lock:
            old = self._objects.get(name)
            if kind == "DELETED":
                self._objects.pop(name, None)
                return old[0] if old is not None else key
            if key is None:
                self._objects.pop(name, None)
                return old[0] if old is not None else None
            entry = (key, self._read(obj))
            if old == entry:
                return None
            self._objects[name] = entry
        return key

    def get(self, namespace: str, name: str) -> V | None:
        """What was read of that object, or None if the store does not hold it."""
        with self._lock:
            entry = self._objects.get((namespace, name))
        return entry[1] if entry is not None else None

    def keys(self) -> set[K]:
        """The keys of every object held."""
        with self._lock:
            return {k for k, _ in self._objects.values()}


def object_key(obj: Mapping[str, Any]) -> ObjKey:
    """(namespace, name) of an object as the API returns it."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    return str(meta.get("namespace") or "default"), str(meta.get("name") or "")
