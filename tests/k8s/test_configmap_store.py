"""A job too large for its Aegis CR keeps its WAL and snapshots in ConfigMaps.

aegis.k8s.cm_wal and aegis.k8s.chunked_store: records and snapshots split over objects, a
torn last record dropped, a part written twice told apart from another writer's, a snapshot
made current by the CR's patch only (against kmock), and a controller that dies at any API
call resuming with its counts intact (the script of tests/runtime/test_wal_crash.py, on an
in-memory API: hundreds of runs).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from aegis.k8s.api import KubeApi
from aegis.k8s.blobs import ANNOTATION_PART, LABEL_CR, name_of
from aegis.k8s.chunked_store import SHOWN_PODS, ChunkedStatusStore, summary
from aegis.k8s.cm_wal import BlobApi, ConfigMapWal, Deleter
from aegis.k8s.cr_store import CrStatusStore
from aegis.k8s.errors import StatusConflictError
from aegis.k8s.model import AegisView
from aegis.k8s.resources import AEGIS, CONFIG_MAP, Resource
from aegis.runtime.controller.core import ControllerCore
from aegis.runtime.controller.store import PodInfo, Status
from aegis.runtime.errors import CorruptStatusError
from aegis.testing.memory_api import MemoryApi

from ..runtime.test_wal_crash import JOB, SEEDS, Crash, apply_event, cached_script, view
from .cluster import NAMESPACE, Cluster
from .harness import aegis_cr

SMALL = 64  # bytes a part holds here: records and snapshots of several parts


def make_cr(cluster: Cluster, name: str) -> dict[str, Any]:
    """A fresh Aegis CR named `name` (its uid made by the emulator)."""
    return cluster.api.create(AEGIS, NAMESPACE, aegis_cr(name))


@pytest.fixture
def deleter(cluster: Cluster) -> Iterator[Deleter]:
    d = Deleter(cluster.api, NAMESPACE)
    yield d
    d.close()


def configmaps(api: KubeApi, cr: str, kind: str) -> list[str]:
    """The names of `cr`'s ConfigMaps of one kind ("wal", "snap")."""
    objs = api.list(CONFIG_MAP, NAMESPACE)
    mine = [name_of(o) for o in objs if o["metadata"].get("labels", {}).get(LABEL_CR) == cr]
    return sorted(n for n in mine if f"-{kind}-" in n)


BODY = st.dictionaries(
    st.text(min_size=1, max_size=5).filter(lambda k: k != "n"),  # "n": the record's number
    st.lists(st.integers(), max_size=30),
    max_size=4,
)


@given(bodies=st.lists(BODY, min_size=1, max_size=6), cut=st.integers(min_value=0))
@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_records_come_back_whole_and_a_torn_last_one_is_dropped(
    cluster: Cluster, deleter: Deleter, bodies: list[dict[str, Any]], cut: int
) -> None:
    name = f"wal-{uuid.uuid4().hex[:10]}"  # hypothesis seeds `random`
    make_cr(cluster, name)
    wal = ConfigMapWal(cluster.api, NAMESPACE, name, deleter, part_bytes=SMALL)
    for n, body in enumerate(bodies, start=1):
        wal.append(n, body)
    fresh = ConfigMapWal(cluster.api, NAMESPACE, name, deleter, part_bytes=SMALL)
    assert [(r.number, r.body) for r in fresh.read()] == list(enumerate(bodies, start=1))
    assert not fresh.torn
    last = [p for p in configmaps(cluster.api, name, "wal") if f"-{len(bodies)}-" in p]
    if len(last) > 1:  # the controller died between the parts of its last record
        cluster.api.delete(CONFIG_MAP, NAMESPACE, sorted(last)[cut % len(last)])
        torn = ConfigMapWal(cluster.api, NAMESPACE, name, deleter, part_bytes=SMALL)
        assert [r.number for r in torn.read()] == list(range(1, len(bodies)))
        assert torn.torn
        torn.append(len(bodies), {"again": [1]})  # the number is written afresh
        again = ConfigMapWal(cluster.api, NAMESPACE, name, deleter, part_bytes=SMALL).read()
        assert again[-1].body == {"again": [1]} and len(again) == len(bodies)


def test_a_record_missing_parts_with_records_after_it_is_corrupt(
    cluster: Cluster, deleter: Deleter
) -> None:
    make_cr(cluster, "train")
    wal = ConfigMapWal(cluster.api, NAMESPACE, "train", deleter, part_bytes=SMALL)
    for n in (1, 2, 3):
        wal.append(n, {"steps": list(range(40))})
    first = [p for p in configmaps(cluster.api, "train", "wal") if "-1-" in p]
    assert len(first) > 1
    cluster.api.delete(CONFIG_MAP, NAMESPACE, first[-1])
    with pytest.raises(CorruptStatusError, match="record 1 lacks parts and records follow"):
        wal.read()


def test_a_part_created_twice_is_ours_and_another_writers_is_a_conflict(
    cluster: Cluster, deleter: Deleter
) -> None:
    make_cr(cluster, "train")
    wal = ConfigMapWal(cluster.api, NAMESPACE, "train", deleter)
    wal.append(1, {"steps": [1]})
    wal.append(1, {"steps": [1]})  # a create retried after its answer was lost
    assert [r.body for r in wal.read()] == [{"steps": [1]}]
    with pytest.raises(StatusConflictError, match="another controller"):
        wal.append(1, {"steps": [2]})


def test_reset_deletes_the_records_so_far_in_the_background(
    cluster: Cluster, deleter: Deleter
) -> None:
    make_cr(cluster, "train")
    wal = ConfigMapWal(cluster.api, NAMESPACE, "train", deleter)
    for n in (1, 2, 3):
        wal.append(n, {"k": [n]})
    wal.reset()
    wal.append(4, {"k": [4]})
    deleter.drain()
    assert [r.number for r in wal.read()] == [4]


class _LateDeletions(MemoryApi):
    """The deleter's thread lists the objects only once `late` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.late = threading.Event()
        self.main = threading.current_thread()

    def before(self, verb: str, res: Resource) -> None:
        if verb == "list" and threading.current_thread() is not self.main:
            assert self.late.wait(10)


def test_a_record_written_again_after_a_torn_one_outlives_the_deletions_before_it() -> None:
    """A resumed controller's first snapshot deletes the records it covers (in the
    background); the torn record's number is not among them: the record written again
    under it stays."""
    api = _LateDeletions()
    api.create(AEGIS, NAMESPACE, aegis_cr("train"))
    deleter = Deleter(api, NAMESPACE)
    try:
        wal = ConfigMapWal(api, NAMESPACE, "train", deleter, part_bytes=SMALL)
        wal.append(1, {"steps": list(range(40))})
        wal.append(2, {"steps": list(range(40))})
        parts = [k for k in api.objects if "-wal-" in k[2] and k[2].split("-")[-2] == "2"]
        del api.objects[sorted(parts)[-1]]  # it died before record 2's last part
        resumed = ConfigMapWal(api, NAMESPACE, "train", deleter, part_bytes=SMALL)
        assert [r.number for r in resumed.read()] == [1] and resumed.torn
        resumed.reset()  # the snapshot after the replay covers record 1
        resumed.append(2, {"steps": [2]})
        api.late.set()  # the deletions run after the append
        deleter.drain()
        assert [r.body for r in resumed.read()] == [{"steps": [2]}]
    finally:
        deleter.close()


def test_a_closed_deleter_stops_at_its_next_object() -> None:
    """The controller's exit does not wait for a long deletion (the rest is left)."""
    api = MemoryApi()
    api.create(AEGIS, NAMESPACE, aegis_cr("train"))
    deleter = Deleter(api, NAMESPACE)
    wal = ConfigMapWal(api, NAMESPACE, "train", deleter, part_bytes=SMALL)
    wal.append(1, {"steps": list(range(40))})
    uid = api.get(AEGIS, NAMESPACE, "train")["metadata"]["uid"]
    deleter.close()
    deleter.delete_now("train", "wal", uid, lambda n: True)
    assert [r.number for r in wal.read()] == [1]
    Deleter(api, NAMESPACE).delete_now("train", "wal", uid, lambda n: True)
    assert wal.read() == []


def test_a_cr_made_again_under_the_same_name_does_not_read_the_last_ones_objects(
    cluster: Cluster, deleter: Deleter
) -> None:
    """The garbage collector deletes a CR's ConfigMaps some time after the CR."""
    make_cr(cluster, "train")
    ConfigMapWal(cluster.api, NAMESPACE, "train", deleter).append(1, {"old": [1]})
    ChunkedStatusStore(cluster.api, CrStatusStore(cluster.api, NAMESPACE, "train"), deleter).save(
        Status(phase="RunCommand")
    )
    cluster.api.delete(AEGIS, NAMESPACE, "train")
    make_cr(cluster, "train")
    wal = ConfigMapWal(cluster.api, NAMESPACE, "train", deleter)
    assert wal.read() == []
    wal.append(1, {"new": [1]})  # other names: no conflict with the old record 1
    store = ChunkedStatusStore(cluster.api, CrStatusStore(cluster.api, NAMESPACE, "train"), deleter)
    assert store.load() is None
    store.save(Status(phase="BootChecking"))
    assert [r.body for r in wal.read()] == [{"new": [1]}]


def _status(pods: int, retried: int = 0) -> Status:
    infos = {
        f"train-worker-{r}": PodInfo(
            pod_ip=f"10.0.{r // 250}.{r % 250}",
            inner_phase="Troubleshooting" if r < retried else "RunCommand",
            retries=1 if r < retried else 0,
            last_failed_reason="exit 1" if r < retried else "",
        )
        for r in range(pods)
    }
    return Status(phase="RunCommand", recover_count=1, pod_infos=infos).with_snapshot()


def test_a_snapshot_round_trips_and_the_cr_holds_a_summary_its_schema_accepts(
    cluster: Cluster, deleter: Deleter
) -> None:
    from .schemas import cr_errors

    make_cr(cluster, "train")
    store = ChunkedStatusStore(
        cluster.api, CrStatusStore(cluster.api, NAMESPACE, "train"), deleter, part_bytes=4096
    )
    assert store.load() is None
    big = _status(3000, retried=SHOWN_PODS + 7)
    store.save(big)
    fresh = ChunkedStatusStore(cluster.api, CrStatusStore(cluster.api, NAMESPACE, "train"), deleter)
    assert fresh.load() == big
    cr = cluster.aegis("train")
    assert cr_errors(cr) == []
    s = cr["status"]
    assert s["snapshot"]["generation"] == 1 and s["snapshot"]["parts"] > 1
    assert s["pods"] == {"total": 3000, "byPhase": {"Troubleshooting": 57, "RunCommand": 2943}}
    assert len(s["podInfos"]) == SHOWN_PODS and "specState" not in s and "history" not in s
    view_ = AegisView.from_obj(cr)
    assert (view_.phase, view_.max_retries) == ("RunCommand", 1)
    first = configmaps(cluster.api, "train", "snap")
    store.save(_status(3000))
    deleter.drain()
    second = configmaps(cluster.api, "train", "snap")
    assert second and not set(first) & set(second)  # the old generation is gone
    assert fresh.load() == _status(3000)


class _DiesAtPatch(KubeApi):
    """Every call goes through, but a status patch dies (before it reaches the server)."""

    def __init__(self, api: KubeApi) -> None:
        self.__dict__.update(api.__dict__)

    def patch(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        patch: Mapping[str, Any],
        sub: str = "",
    ) -> dict[str, Any]:
        raise Crash


def test_a_snapshot_is_current_only_once_the_cr_names_it(
    cluster: Cluster, deleter: Deleter
) -> None:
    make_cr(cluster, "train")
    store = ChunkedStatusStore(cluster.api, CrStatusStore(cluster.api, NAMESPACE, "train"), deleter)
    store.load()
    store.save(_status(20))
    api = _DiesAtPatch(cluster.api)
    dying = ChunkedStatusStore(api, CrStatusStore(api, NAMESPACE, "train"), deleter)
    dying.load()
    with pytest.raises(Crash):
        dying.save(_status(20, retried=3))  # its parts are written, the CR not patched
    orphans = configmaps(cluster.api, "train", "snap")
    resumed = ChunkedStatusStore(
        cluster.api, CrStatusStore(cluster.api, NAMESPACE, "train"), deleter
    )
    assert resumed.load() == _status(20)  # the last snapshot the CR named
    left = configmaps(cluster.api, "train", "snap")
    assert len(left) < len(orphans)  # the unnamed generation's parts are gone
    resumed.save(_status(20, retried=1))  # and its number is free again
    assert resumed.load() == _status(20, retried=1)


def test_a_snapshot_missing_a_part_is_corrupt_and_says_how_to_start_afresh(
    cluster: Cluster, deleter: Deleter
) -> None:
    make_cr(cluster, "train")
    store = ChunkedStatusStore(
        cluster.api, CrStatusStore(cluster.api, NAMESPACE, "train"), deleter, part_bytes=SMALL
    )
    store.load()
    store.save(_status(20))
    cluster.api.delete(CONFIG_MAP, NAMESPACE, configmaps(cluster.api, "train", "snap")[0])
    with pytest.raises(CorruptStatusError, match="missing; delete the AegisJob"):
        store.load()


def test_the_summary_shows_the_pods_with_the_most_retries() -> None:
    status = _status(10, retried=4)
    infos = dict(status.pod_infos)
    infos["train-worker-9"] = PodInfo(retries=3, last_failed_reason="oom")
    s = summary(Status(pod_infos=infos), {"generation": 1, "parts": 1, "crc": 0})
    assert s["maxRetries"] == 3 and next(iter(s["podInfos"])) == "train-worker-9"
    assert set(s["podInfos"]) == {"train-worker-9", *(f"train-worker-{r}" for r in range(4))}


# ---------------- a controller that dies at any API call ----------------


class DyingApi:
    """An API whose `at`-th create, patch or delete made by the controller's thread raises
    Crash before (`after` False) or after it reaches the server. Calls from the deleter's
    thread are not counted (their timing is not the script's)."""

    def __init__(self, api: MemoryApi, at: int, after: bool) -> None:
        self.api, self.at, self.after, self.seen = api, at, after, 0
        self.main = threading.current_thread()
        self.torn_record = False  # it died writing a WAL record, before its last part

    def get(self, res: Resource, namespace: str | None, name: str, sub: str = "") -> dict[str, Any]:
        return self.api.get(res, namespace, name, sub)

    def list(
        self, res: Resource, namespace: str | None = None, label_selector: str = ""
    ) -> list[dict[str, Any]]:
        return self.api.list(res, namespace, label_selector)

    def create(self, res: Resource, namespace: str | None, body: Mapping[str, Any]) -> Any:
        return self._call(lambda: self.api.create(res, namespace, body), body)

    def patch(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        patch: Mapping[str, Any],
        sub: str = "",
    ) -> dict[str, Any]:
        return self._call(lambda: self.api.patch(res, namespace, name, patch, sub))

    def delete(self, res: Resource, namespace: str | None, name: str) -> None:
        self._call(lambda: self.api.delete(res, namespace, name))

    def _call(self, call: Callable[[], Any], created: Mapping[str, Any] | None = None) -> Any:
        dies = False
        if threading.current_thread() is self.main:
            self.seen += 1
            dies = self.seen == self.at
        if dies:
            self.torn_record = created is not None and _record_left_torn(created, self.after)
        if dies and not self.after:
            raise Crash
        out = call()
        if dies:
            raise Crash
        return out


def _record_left_torn(created: Mapping[str, Any], after: bool) -> bool:
    """Whether dying at the create of `created` leaves a WAL record without its last part."""
    meta = created.get("metadata") or {}
    if "-wal-" not in str(meta.get("name")):
        return False
    k, total = (int(x) for x in meta["annotations"][ANNOTATION_PART].split("/"))
    return not after or k < total - 1


def open_core(api: BlobApi, deleter: Deleter) -> ControllerCore:
    """The core as the Aegis Controller's runner makes it for a job in ConfigMaps."""
    cr = CrStatusStore(api, NAMESPACE, JOB.name)  # type: ignore[arg-type]
    store = ChunkedStatusStore(api, cr, deleter, part_bytes=512)
    wal = ConfigMapWal(api, NAMESPACE, JOB.name, deleter, part_bytes=96)  # records of 2-4 parts
    return ControllerCore(JOB, store, wal=wal)


@given(
    seed=st.sampled_from(SEEDS),
    at=st.integers(min_value=1, max_value=310),  # a whole script makes 258-303 calls
    after=st.booleans(),
)
@example(seed=14, at=295, after=False)  # a torn record's number deleted behind its rewrite
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_a_controller_dying_at_any_api_call_resumes_with_counts_intact(
    seed: int, at: int, after: bool
) -> None:
    """The script's events go to a core whose status and WAL are ConfigMaps; it dies at one
    API call (a create of a record's part, the snapshot's parts, the CR's patch that makes a
    snapshot current, a deletion); a new core resumes from the API at the state after the
    events it acknowledged (or one more: the event whose record was whole when it died), and
    runs the rest of the script to the reference's end."""
    events, views = cached_script(seed)
    api = MemoryApi()
    api.create(AEGIS, NAMESPACE, aegis_cr(JOB.name))
    dying = DyingApi(api, at, after)
    first = Deleter(dying, NAMESPACE)
    acked = 0
    try:
        core = open_core(dying, first)
        for ev in events:
            apply_event(core, ev)
            acked += 1
    except Crash:
        pass
    first.drain()  # what it had asked to delete, deleted (or not) before the new core reads
    first.close()
    second = Deleter(api, NAMESPACE)
    try:
        core = open_core(api, second)
        got = view(core)
        assert got in (views[acked], views[min(acked + 1, len(views) - 1)]), (at, after, acked)
        n = acked if got == views[acked] else acked + 1
        if dying.torn_record:
            assert n == acked, "it died writing the event's record: the event is not durable"
        for ev in events[n:]:
            apply_event(core, ev)
        assert view(core) == views[-1]
        second.drain()
        again = open_core(api, second)  # what it left resumes too, with no record left over
        assert view(again) == views[-1]
    finally:
        second.close()
