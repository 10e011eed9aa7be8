"""The one Kubernetes control loop of Aegis: reflectors, a keyed work queue, workers, resync.

Both controllers run on it (the Job Controller with its AegisJobs, Aegis CRs and pods; the
Aegis Controller with its Aegis CRs), as client-go's controllers run on an informer and a
work queue:

- one reflector per source (aegis/k8s/informer.py: a list, then a watch from its version;
  410: list again at once; another failure: backoff) keeps the source's store and adds each
  key whose objects changed to the queue;
- `workers` threads take keys from the queue (aegis/k8s/workqueue.py: one key never held by
  two workers; a key changed meanwhile is reconciled again after) and call `sync(key)`; a
  `sync` that raises one of `retry_on` is retried after that key's backoff, one that returns
  a number of seconds is called again then (a deadline), one that returns None is done;
  anything else raised stops the loop and is raised again by `run` (a bug: the Deployment
  restarts the process, which resumes from the cluster);
- every `resync_s` seconds each key `resync_keys` names is queued again, from the stores and
  without an API call (the reflectors list again at every watch round anyway), and `tick`
  runs every `tick_s`.

`run` returns once `stop` is set, after the reconciles under way have ended.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from aegis.k8s.api import KubeApi
from aegis.k8s.informer import WATCH_TIMEOUT_S, Source, start_reflector
from aegis.k8s.workqueue import RETRY_INITIAL_S, RETRY_MAX_S, Backoff, WorkQueue

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)
TURN_S = 0.2  # how often the loop's own thread looks at `stop`, the resync and the tick


@dataclass
class LoopSettings:
    """How a control loop runs (the sources and `sync` aside)."""

    namespace: str | None = None  # None: every namespace
    resync_s: float = 30.0
    workers: int = 1
    watch_timeout_s: int = WATCH_TIMEOUT_S
    retry_on: tuple[type[BaseException], ...] = ()
    # a failed list or watch, and a key whose sync failed: (initial, most) seconds
    backoff: tuple[float, float] = (RETRY_INITIAL_S, RETRY_MAX_S)
    tick_s: float = TURN_S
    name: str = "control-loop"


@dataclass
class ControlLoop(Generic[K]):
    """Sources followed into stores, keys into `queue`, `sync` per key (module docstring)."""

    api: KubeApi
    sources: Sequence[Source[K]]
    sync: Callable[[K], float | None]
    resync_keys: Callable[[], Iterable[K]]
    settings: LoopSettings = field(default_factory=LoopSettings)
    queue: WorkQueue[K] = field(default_factory=WorkQueue)
    tick: Callable[[], None] | None = None
    _crash: list[BaseException] = field(default_factory=list, init=False)

    def run(self, stop: threading.Event) -> None:
        """Follow, reconcile and resync until `stop` is set (or a `sync` raises what is not
        in `retry_on`: raised here once the other workers are done)."""
        s = self.settings
        for source in self.sources:
            start_reflector(
                self.api, source, s.namespace, stop, self.queue.add, s.watch_timeout_s,
                Backoff(*s.backoff),
            )  # fmt: skip
        workers = [
            threading.Thread(target=self._work, args=(stop,), name=f"{s.name}-{n}", daemon=True)
            for n in range(max(1, s.workers))
        ]
        for worker in workers:
            worker.start()
        try:
            self._keep_time(stop)
        finally:
            stop.set()
            self.queue.shut_down()
            with contextlib.suppress(OSError):  # can race a watch the server just ended
                self.api.close_watches()
            for worker in workers:  # the reconciles under way end first
                worker.join()
        if self._crash:
            raise self._crash[0]

    def _keep_time(self, stop: threading.Event) -> None:
        """Call `tick` every tick_s and queue every key every resync_s, until `stop`."""
        s = self.settings
        next_resync, next_tick = time.monotonic() + s.resync_s, 0.0
        while not stop.is_set():
            now = time.monotonic()
            if self.tick is not None and now >= next_tick:
                self.tick()
                next_tick = now + s.tick_s
            if now >= next_resync:
                for key in self.resync_keys():
                    self.queue.add(key)
                next_resync = now + s.resync_s
            stop.wait(min(TURN_S, s.tick_s))

    def _work(self, stop: threading.Event) -> None:
        while (key := self.queue.get()) is not None:
            try:
                again = self.sync(key)
            except self.settings.retry_on as exc:
                delay = self.queue.add_rate_limited(key)
                name = self.settings.name
                log.warning("%s: %s failed, retried in %.1f s: %s", name, describe(key), delay, exc)
            except BaseException as exc:
                log.exception("%s: %s failed; stopping", self.settings.name, describe(key))
                self._crash.append(exc)
                stop.set()
                self.queue.shut_down()
            else:
                self.queue.forget(key)
                if again is not None:
                    self.queue.add_after(key, again)
            finally:
                self.queue.done(key)


def describe(key: Any) -> str:
    """A key as the logs show it: `namespace/name`."""
    return "/".join(map(str, key)) if isinstance(key, tuple) else str(key)
