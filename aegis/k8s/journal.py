"""The Aegis Controller's journals: a job's status in its Aegis CR, or, for a job whose status
could outgrow its CR, a snapshot and a write-ahead log in ConfigMaps (docs/persistence.md).

The journal is the runtime's (aegis.runtime.controller.journal: a `StatusJournal` over the
CR store, a `WalJournal` over the ConfigMap snapshot store and log); here its stores are
wrapped so that a failed write ends the runner's attempt (crash-only: the next attempt
resumes from what the API holds).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from aegis.k8s.api import KubeApi
from aegis.k8s.chunked_store import ChunkedStatusStore
from aegis.k8s.cm_wal import ConfigMapWal, Deleter
from aegis.k8s.cr_store import CrStatusStore
from aegis.k8s.errors import StatusTooLargeError
from aegis.runtime.controller.journal import StatusJournal, open_journal
from aegis.runtime.controller.store import Status, StatusStore

JobKey = tuple[str, str]  # (namespace, Aegis CR name == job name)


def kube_journal(
    api: KubeApi, key: JobKey, deleter: Deleter, in_configmaps: bool
) -> tuple[CrashOnFailedSave, StatusJournal]:
    """The journal of the job `key` (its store too, for the runner to watch): the whole
    status saved in the CR at each commit, or (`in_configmaps`) a WAL record per commit and
    a snapshot now and then, in ConfigMaps."""
    cr = CrStatusStore(api, *key)
    if not in_configmaps:
        store = CrashOnFailedSave(cr)
        return store, open_journal(store)
    store = CrashOnFailedSave(ChunkedStatusStore(api, cr, deleter))
    return store, open_journal(store, CrashOnFailedAppend(store, api, key, deleter))


class CrashOnFailedSave:
    """StatusStore wrapper: a failed save ends the runner's attempt (crash-only).

    The core has already advanced in memory when its save fails; carrying on would publish
    orders from an unpersisted state, so the service is stopped and the next attempt resumes
    from what the CR (and, for a job in ConfigMaps, its snapshot and WAL) holds; unless the
    status no longer fits in the CR (`too_large`, kept for the runner, which then fails the
    job: no attempt could save it). `save` runs in the group commit's worker thread:
    `on_failure` must be safe to call from there."""

    def __init__(self, store: StatusStore) -> None:
        self.store = store
        self.on_failure: Callable[[BaseException], None] | None = None
        self.too_large: StatusTooLargeError | None = None

    def load(self) -> Status | None:
        """The CR's status (None before the first save)."""
        return self.store.load()

    def save(self, status: Status) -> None:
        """Persist into the CR; on failure tell the runner, then re-raise."""
        try:
            self.store.save(status)
        except Exception as exc:
            if isinstance(exc, StatusTooLargeError):
                self.too_large = exc  # also when the core's first save, in its constructor, failed
            self.failed(exc)
            raise

    def failed(self, exc: BaseException) -> None:
        """Tell the runner that a write failed."""
        if self.on_failure is not None:
            self.on_failure(exc)


class CrashOnFailedAppend(ConfigMapWal):
    """The WAL of a job in ConfigMaps, whose failed append ends the attempt, as a failed save
    does (the next attempt reads the log again: a record cut short is dropped)."""

    def __init__(
        self, store: CrashOnFailedSave, api: KubeApi, key: JobKey, deleter: Deleter
    ) -> None:
        super().__init__(api, *key, deleter)
        self.store = store

    def append(self, number: int, body: Mapping[str, Any]) -> None:
        """Append; on failure tell the runner, then re-raise."""
        try:
            super().append(number, body)
        except Exception as exc:
            self.store.failed(exc)
            raise
