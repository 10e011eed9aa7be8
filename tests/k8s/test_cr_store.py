"""CrStatusStore: the StatusStore protocol over the Aegis CR's status subresource."""

from __future__ import annotations

import asyncio
import copy
import json
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aegis.k8s.cr_store import CrApi, CrStatusStore, _to_cr, merge_patch
from aegis.k8s.errors import AegisCrMissingError, ApiError, StatusConflictError
from aegis.k8s.resources import AEGIS, Resource
from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.protocol.state_codec import _encode_from
from aegis.runtime.controller.core import ControllerCore, JobConfig
from aegis.runtime.controller.group_commit import GroupCommit
from aegis.runtime.controller.store import ErrorNode, PodInfo, Status, StatusStore
from aegis.values import Fn, ModelValue

from .cluster import NAMESPACE, Cluster
from .schemas import cr_errors

CR = {
    "apiVersion": AEGIS.api_version,
    "kind": AEGIS.kind,
    "metadata": {"name": "train", "namespace": NAMESPACE},
    "spec": {"jobName": "train", "namespace": NAMESPACE, "workerNum": 2, "maxRetry": 2},
}
PODS = {
    f"train-worker-{r}": PodInfo(pod_ip=f"10.0.0.{r}", inner_phase="RunCommand") for r in range(2)
}
RUNNING = Status(phase="RunCommand", pod_infos=PODS, spec_state={"seq": {"w0": 1}}).with_snapshot()


def _store(cluster: Cluster) -> CrStatusStore:
    cluster.api.create(AEGIS, NAMESPACE, CR)
    return CrStatusStore(cluster.api, NAMESPACE, "train")


def test_round_trip_through_the_status_subresource(cluster: Cluster) -> None:
    store: StatusStore = _store(cluster)
    assert store.load() is None  # the Job Controller created it without a status
    store.save(RUNNING)
    assert CrStatusStore(cluster.api, NAMESPACE, "train").load() == RUNNING
    worker0 = PODS["train-worker-0"]
    smaller = Status(
        phase="Troubleshooting",
        recover_count=1,
        pod_infos={"train-worker-0": worker0},
        error_nodes=(ErrorNode("n1", "gpu", 2.5),),
    )
    store.save(smaller)
    stored = cluster.aegis("train")
    assert set(stored["status"]["podInfos"]) == {"train-worker-0"}  # removed keys are deleted
    assert stored["status"]["specState"] == {}
    assert stored["spec"] == CR["spec"]  # the status write leaves the spec alone
    assert CrStatusStore(cluster.api, NAMESPACE, "train").load() == smaller
    assert cr_errors(stored) == []


def test_conflict_from_a_metadata_change_is_retried(cluster: Cluster) -> None:
    store = _store(cluster)
    store.save(RUNNING)
    cluster.api.patch(AEGIS, NAMESPACE, "train", {"metadata": {"labels": {"x": "y"}}})
    retried = Status(phase="Restarting", pod_infos=PODS)
    store.save(retried)  # 409 on the stale resourceVersion, re-read, retried
    assert CrStatusStore(cluster.api, NAMESPACE, "train").load() == retried
    patches = [r for r in cluster.emulator if r.method == "PATCH" and r.subresource == "status"]
    assert len(patches) == 3  # first save, the 409, the retry


def test_a_status_written_by_someone_else_is_not_overwritten(cluster: Cluster) -> None:
    store = _store(cluster)
    store.save(RUNNING)
    other = CrStatusStore(cluster.api, NAMESPACE, "train")
    other.save(Status(phase="Failed", should_quit=True))
    with pytest.raises(StatusConflictError, match="changed by another writer; reload"):
        store.save(Status(phase="Succeed"))
    assert store.load() == Status(phase="Failed", should_quit=True)
    store.save(Status(phase="Failed", should_quit=True, recover_count=3))  # after a reload: fine


def test_missing_cr_says_what_happened(cluster: Cluster) -> None:
    store = CrStatusStore(cluster.api, NAMESPACE, "gone")
    with pytest.raises(AegisCrMissingError, match="the Job Controller creates it"):
        store.load()


class _AlwaysConflicting:
    """A fake API whose status patch always answers 409 while the status stays the same."""

    def __init__(self) -> None:
        self.patches = 0
        self.obj: dict[str, Any] = {"metadata": {"resourceVersion": "1"}, "status": {}}

    def get(self, res: Resource, namespace: str | None, name: str, sub: str = "") -> dict[str, Any]:
        self.obj["metadata"]["resourceVersion"] = str(
            int(self.obj["metadata"]["resourceVersion"]) + 1
        )
        return copy.deepcopy(self.obj)

    def patch(
        self, res: Resource, namespace: str | None, name: str, patch: Any, sub: str = ""
    ) -> dict[str, Any]:
        self.patches += 1
        assert patch["metadata"]["resourceVersion"] == self.obj["metadata"]["resourceVersion"]
        raise ApiError(409, "Conflict", "the object has been modified")


def test_conflict_retries_are_bounded() -> None:
    api = _AlwaysConflicting()
    store = CrStatusStore(api, NAMESPACE, "train", attempts=3)
    with pytest.raises(StatusConflictError, match="after 3 attempts"):
        store.save(RUNNING)
    assert api.patches == 3


@pytest.mark.parametrize(
    ("old", "new", "patch"),
    [
        ({"a": 1, "b": 2}, {"a": 1, "b": 3}, {"b": 3}),
        ({"a": {"x": 1, "y": 2}}, {"a": {"x": 1}}, {"a": {"y": None}}),
        ({"a": 1}, {}, {"a": None}),
        ({}, {"a": {"x": [1]}}, {"a": {"x": [1]}}),
        ({"l": [1, 2]}, {"l": [1]}, {"l": [1]}),  # lists are replaced whole
        ({"a": {"x": 1}}, {"a": 5}, {"a": 5}),
    ],
)
def test_merge_patch(old: dict[str, Any], new: dict[str, Any], patch: dict[str, Any]) -> None:
    assert merge_patch(old, new) == patch


class _Recording:
    """The cluster's API, keeping every status patch sent."""

    def __init__(self, api: CrApi) -> None:
        self.api = api
        self.patches: list[dict[str, Any]] = []

    def get(self, res: Resource, namespace: str | None, name: str, sub: str = "") -> dict[str, Any]:
        return self.api.get(res, namespace, name, sub)

    def patch(
        self, res: Resource, namespace: str | None, name: str, patch: Any, sub: str = ""
    ) -> dict[str, Any]:
        self.patches.append(copy.deepcopy(patch))
        return self.api.patch(res, namespace, name, patch, sub)


async def test_a_batch_of_events_is_one_merge_patch_of_what_changed(cluster: Cluster) -> None:
    """The controller's group commit writes the CR once per batch, and the patch carries the
    pods the batch changed, not all of them (issue 12)."""
    api = _Recording(cluster.api)
    cluster.api.create(AEGIS, NAMESPACE, CR)
    pods = tuple(f"train-worker-{r}" for r in range(40))
    job = JobConfig("train", NAMESPACE, pods, 2)
    core = ControllerCore(job, CrStatusStore(api, NAMESPACE, "train"))
    core.autocommit = False
    lock = asyncio.Lock()

    async def publish() -> None:  # as the service's: only an order that is due
        if not core.orders.needs_publish:
            return
        core.orders.mark_published()

    commits = GroupCommit(core.journal, lock, publish)

    async def join(pod: str) -> None:
        ack = Message("train", NAMESPACE, pod, MessageType.ACK, MessagePhase.BOOTCHECK,
                      {"incarnation": "i1"}, time.time(), 0)  # fmt: skip
        async with lock:
            core.on_ack(ack)
        await commits.durable()

    api.patches.clear()
    await asyncio.gather(*(join(p) for p in pods[:3]))
    assert len(api.patches) == 1
    patch = api.patches[0]["status"]
    assert set(patch["podInfos"]) == set(pods[:3])
    assert set(patch["specState"]["variables"]["agentState"]["fnOfMv"]) == set(pods[:3])
    assert len(json.dumps(patch)) < 2500  # the whole status: 19 KB of compact JSON
    stored = cluster.aegis("train")
    assert cr_errors(stored) == []
    resumed = ControllerCore(job, CrStatusStore(cluster.api, NAMESPACE, "train"))
    assert resumed.state == core.state and resumed.extras.incarnations == core.extras.incarnations
    # the store's view of what it wrote is what the API server holds: after a metadata change
    # (409 on the next save) it sees that only the metadata moved, and retries
    cluster.api.patch(AEGIS, NAMESPACE, "train", {"metadata": {"labels": {"x": "y"}}})
    api.patches.clear()
    await asyncio.gather(*(join(p) for p in pods[3:5]))
    assert len(api.patches) == 2  # the 409, then the retry
    assert ControllerCore(job, CrStatusStore(cluster.api, NAMESPACE, "train")).state == core.state


FN_VALUES = st.one_of(st.booleans(), st.integers(0, 3), st.sampled_from(["Idle", "Work"]))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.dictionaries(st.sampled_from("abcdef"), FN_VALUES, min_size=1), min_size=1),
    st.lists(st.lists(st.tuples(st.integers(0, 5), FN_VALUES), max_size=3), max_size=6),
)
def test_the_cr_form_kept_from_the_last_save_is_the_cr_form(
    domains: list[dict[str, Any]], edits: list[list[tuple[int, Any]]]
) -> None:
    """Successive snapshots of a function (StateEncoder: unchanged entries shared, a new
    domain encoded afresh) get the CR form a first save would write."""
    seen: dict[str, tuple[Any, Any]] = {}
    encoded = None
    steps: list[tuple[dict[str, Any] | None, list[tuple[int, Any]]]]
    steps = [(d, []) for d in domains] + [(None, e) for e in edits]
    items: dict[ModelValue, Any] = {}
    for domain, changes in steps:
        if domain is not None:
            items = {ModelValue(k): v for k, v in domain.items()}
        keys = sorted(items, key=lambda k: k.name)
        for i, v in changes:
            items[keys[i % len(keys)]] = v
        encoded = _encode_from(encoded, Fn(items))
        status = {"specState": {"variables": {"f": encoded[1]}}}
        assert json.dumps(_to_cr(status, seen)) == json.dumps(_to_cr(copy.deepcopy(status)))
