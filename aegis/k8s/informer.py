"""A list and then a watch of the worker pods, round after round, keeping a PodCache current
(client-go's reflector): the Job Controller's reconciles and the credential service's pod
checks read the cache instead of asking the API server for each."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from aegis import retry
from aegis.k8s.api import KubeApi
from aegis.k8s.errors import ApiError
from aegis.k8s.pod_cache import JobKey, PodCache
from aegis.k8s.resources import LABEL_JOB, POD

log = logging.getLogger(__name__)

WATCH_TIMEOUT_S = 300
RETRY_S = retry.KUBE_WATCH.pause(1)  # after a failed list or watch (a 410 lists again at once)
MIN_ROUND_S = 1.0  # never more than a list a second, whatever the server does


def inform_pods(
    api: KubeApi,
    cache: PodCache,
    namespace: str | None,
    stop: threading.Event,
    moved: Callable[[JobKey], None] = lambda key: None,
    watch_timeout_s: int = WATCH_TIMEOUT_S,
) -> None:
    """Until `stop` is set: list the pods labelled with a job (in `namespace`, None: every
    one) into `cache`, then watch them from the list's version until the watch ends, and
    again. Each job whose pods changed is passed to `moved`. Each round starts from a fresh
    list, so nothing the cache holds is older than a watch's length; a version too old to
    watch from (410) is listed again at once, any other failure after RETRY_S, and the cache
    reads as not synced from a failure until the next list."""
    while not stop.is_set():
        began = time.monotonic()
        try:
            items, version = api.list_versioned(POD, namespace, LABEL_JOB)
            for key in sorted(cache.replace(items, version)):
                moved(key)
            for kind, obj in api.watch(
                POD, namespace, LABEL_JOB, watch_timeout_s, resource_version=version
            ):
                if (changed := cache.apply(kind, obj)) is not None:
                    moved(changed)
                if stop.is_set():
                    return
        except ApiError as exc:
            cache.stale()
            log.warning("listing or watching pods failed, listing again: %s", exc)
            if exc.status != 410:
                stop.wait(RETRY_S)
        except Exception:  # a bug here must not leave a cache that nobody keeps any more
            cache.stale()
            log.exception("keeping the pod cache failed, listing again")
            stop.wait(RETRY_S)
        stop.wait(max(0.0, began + MIN_ROUND_S - time.monotonic()))


def start_pod_informer(
    api: KubeApi, cache: PodCache, namespace: str | None, stop: threading.Event
) -> threading.Thread:
    """`inform_pods` in a daemon thread (it ends when `stop` is set and the API's watches are
    closed)."""
    thread = threading.Thread(
        target=inform_pods, args=(api, cache, namespace, stop), name="pod-informer", daemon=True
    )
    thread.start()
    return thread
