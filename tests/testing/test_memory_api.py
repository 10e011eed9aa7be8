"""aegis.testing.memory_api: the in-memory API answers as the API server does where the tests
and benches that run on it rely on it (merge patches, preconditions, selectors, namespaces)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aegis.k8s.cr_store import merge_patch
from aegis.k8s.errors import ApiError
from aegis.k8s.resources import AEGIS, CONFIG_MAP, POD
from aegis.testing.memory_api import HISTORY_BYTES, MemoryApi, apply_merge_patch


def json_objects(leaf: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.recursive(
        st.dictionaries(st.text(max_size=3), leaf, max_size=4),
        lambda inner: st.dictionaries(
            st.text(max_size=3), leaf | inner | st.lists(leaf), max_size=4
        ),
        max_leaves=12,
    )


values = st.booleans() | st.integers() | st.text(max_size=4)


# the new object has no nulls: in a merge patch a null deletes its key (the statuses the CR
# store diffs have none)
@given(json_objects(st.none() | values), json_objects(values))
def test_a_merge_patch_is_applied_as_rfc_7386_says(
    old: dict[str, Any], new: dict[str, Any]
) -> None:
    assert apply_merge_patch(_copy(old), merge_patch(old, new)) == new


def _pod(name: str, job: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"aegis.dev/job": job}}, "spec": {}}


def test_a_list_selects_by_label_and_namespace() -> None:
    api = MemoryApi()
    api.create(POD, "a", _pod("p1", "train"))
    api.create(POD, "a", _pod("p2", "other"))
    api.create(POD, "b", _pod("p3", "train"))
    names = lambda pods: sorted(p["metadata"]["name"] for p in pods)  # noqa: E731
    assert names(api.list(POD, "a", "aegis.dev/job=train")) == ["p1"]
    assert names(api.list(POD, None, "aegis.dev/job=train")) == ["p1", "p3"]  # every namespace
    assert names(api.list(POD, "b")) == ["p3"]


def test_a_selector_term_without_a_value_asks_for_the_label() -> None:
    api = MemoryApi()
    api.create(POD, "a", _pod("p1", "train"))
    api.create(POD, "a", {"metadata": {"name": "p2"}})
    assert [p["metadata"]["name"] for p in api.list(POD, "a", "aegis.dev/job")] == ["p1"]
    assert api.names(POD, "a", "aegis.dev/job") == ["p1"]  # the same, without a copy
    assert api.names(POD, None) == ["p1", "p2"]


def test_a_watch_from_a_lists_version_brings_each_change_after_it_in_order() -> None:
    api = MemoryApi()
    api.create(POD, "a", _pod("p1", "train"))
    listed, version = api.list_versioned(POD, "a")
    assert [p["metadata"]["name"] for p in listed] == ["p1"]
    api.patch(POD, "a", "p1", {"status": {"phase": "Running"}})
    api.create(POD, "a", _pod("p2", "train"))
    api.create(POD, "b", _pod("p3", "train"))  # another namespace: not this watch's
    api.delete(POD, "a", "p1")
    api.create(AEGIS, "a", {"metadata": {"name": "j"}})  # another resource: neither
    events = api.watch(POD, "a", "aegis.dev/job", timeout_s=5, resource_version=version)
    first = next(events)  # the watch has begun
    api.close_watches()  # it ends after what it holds
    got = [(kind, obj["metadata"]["name"], obj.get("status")) for kind, obj in [first, *events]]
    assert got == [
        ("MODIFIED", "p1", {"phase": "Running"}),
        ("ADDED", "p2", None),
        ("DELETED", "p1", {"phase": "Running"}),
    ]
    everything = api.watch(POD, "a", timeout_s=5)  # no version: what is there, as ADDED
    first = next(everything)
    api.close_watches()
    assert [(k, o["metadata"]["name"]) for k, o in [first, *everything]] == [("ADDED", "p2")]


def test_a_watch_from_a_version_past_its_history_is_410() -> None:
    api = MemoryApi()
    _, version = api.list_versioned(POD, "a")
    big = {"metadata": {"name": "big"}, "data": {"x": "y" * (HISTORY_BYTES // 2 + 1)}}
    api.create(CONFIG_MAP, "a", big)
    api.patch(CONFIG_MAP, "a", "big", {"data": {"z": "1"}})  # the first event is dropped
    assert len(api._history) == 1
    with pytest.raises(ApiError) as gone:
        next(api.watch(POD, "a", resource_version=version))
    assert gone.value.status == 410
    _, version = api.list_versioned(POD, "a")
    api.create(POD, "a", _pod("p9", "train"))
    watch = api.watch(POD, "a", resource_version=version)
    assert next(watch)[1]["metadata"]["name"] == "p9"
    api.close_watches()
    assert list(watch) == []  # ended by close_watches


def test_a_patch_of_metadata_or_status_changes_only_that() -> None:
    api = MemoryApi()
    made = api.create(AEGIS, "a", {"metadata": {"name": "j"}, "spec": {"x": 1}})
    version = made["metadata"]["resourceVersion"]
    api.patch(AEGIS, "a", "j", {"metadata": {"finalizers": ["f"]}})
    api.patch(AEGIS, "a", "j", {"status": {"phase": "Running"}, "spec": {"x": 2}}, sub="status")
    got = api.get(AEGIS, "a", "j")
    assert got["metadata"]["finalizers"] == ["f"]
    assert got["metadata"]["uid"] == made["metadata"]["uid"]  # kept: not the patch's to change
    assert got["status"] == {"phase": "Running"} and got["spec"] == {"x": 1}
    with pytest.raises(ApiError) as stale:
        api.patch(AEGIS, "a", "j", {"metadata": {"resourceVersion": version}, "status": {}})
    assert stale.value.conflict
    with pytest.raises(ApiError) as taken:
        api.create(AEGIS, "a", {"metadata": {"name": "j"}})
    assert taken.value.conflict


def test_what_it_returns_is_a_copy() -> None:
    api = MemoryApi()
    made = api.create(POD, "a", _pod("p1", "train"))
    made["spec"]["changed"] = True
    api.get(POD, "a", "p1")["spec"]["changed"] = True
    assert api.get(POD, "a", "p1")["spec"] == {}


def _copy(o: Any) -> Any:
    return {k: _copy(v) for k, v in o.items()} if isinstance(o, dict) else o


def test_a_cr_store_save_lands_in_the_single_object_api() -> None:
    from aegis.k8s.cr_store import CrStatusStore
    from aegis.runtime.controller.store import PodInfo, Status
    from aegis.testing.memory_api import MemoryCrApi

    api = MemoryCrApi()
    store = CrStatusStore(api, "default", "job")
    status = Status(phase="Running", pod_infos={"job-worker-0": PodInfo(inner_phase="Work")})
    store.save(status)
    assert CrStatusStore(api, "default", "job").load() == status
    assert api.get(AEGIS, "default", "job")["metadata"]["resourceVersion"] == "2"
