"""The Job Controller reading pods from its cache: its own creates and deletes count at once,
whatever the watch has shown, on the in-memory API (aegis.testing.memory_api)."""

from __future__ import annotations

from typing import Any

from aegis.k8s.reconcile import CreatePod, DeletePod
from aegis.k8s.resources import AEGIS_JOB, POD

from .test_job_controller_batches import NAMESPACE, _Api, _controller


def _status(api: _Api) -> dict[str, Any]:
    return dict(api.get(AEGIS_JOB, NAMESPACE, "train")["status"])


def test_a_watch_behind_neither_creates_twice_nor_counts_a_restart_twice() -> None:
    """A reconcile runs passes until nothing is left to do: its second pass reads the cache
    right after its first pass's calls, before the watch can have shown them (here the watch
    shows nothing unless told)."""
    api = _Api()
    controller = _controller(api, 4)
    controller.pods.replace([], "0")  # listed; the watch brings nothing from here on
    controller.reconcile_job(NAMESPACE, "train")
    assert api.calls == {"create": 4, "delete": 0}  # not again at the second pass
    for rank in range(4):
        api.patch(POD, NAMESPACE, f"train-worker-{rank}", {"status": {"phase": "Running"}})
    controller.pods.replace(api.list(POD, NAMESPACE), "0")
    controller.reconcile_job(NAMESPACE, "train")
    assert _status(api)["phase"] == "Running"

    failed = api.patch(POD, NAMESPACE, "train-worker-2", {"status": {"phase": "Failed"}})
    controller.pods.apply("MODIFIED", failed)  # the watch shows the failure
    taken = controller.reconcile_job(NAMESPACE, "train")
    assert [type(a) for a in taken if isinstance(a, DeletePod | CreatePod)] == [DeletePod]
    assert api.calls == {"create": 4, "delete": 1}
    assert _status(api)["podRestarts"] == 1  # the pod deleted reads as deleting: once

    controller.pods.apply("DELETED", failed)  # the watch shows it gone: made again, once
    taken = controller.reconcile_job(NAMESPACE, "train")
    assert [a.rank for a in taken if isinstance(a, CreatePod)] == [2]
    assert api.calls == {"create": 5, "delete": 1} and _status(api)["podRestarts"] == 1
