"""bench/persistence.py: its in-memory CR API applies a merge patch as the API server does, and
each figure comes from a save that really wrote the status."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from aegis.k8s.cr_store import CrStatusStore, merge_patch
from aegis.k8s.resources import AEGIS
from aegis.runtime.store import PodInfo, Status

from ..support.bench import load_bench

bench = load_bench("persistence")


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
def test_the_fake_api_applies_a_merge_patch_as_rfc_7386_says(
    old: dict[str, Any], new: dict[str, Any]
) -> None:
    assert bench._apply_merge_patch(_copy(old), merge_patch(old, new)) == new


def test_a_cr_save_lands_in_the_fake_api() -> None:
    api = bench.MemoryCrApi()
    store = CrStatusStore(api, "default", "job")
    status = Status(phase="Running", pod_infos={"job-worker-0": PodInfo(inner_phase="Work")})
    store.save(status)
    assert CrStatusStore(api, "default", "job").load() == status
    assert api.get(AEGIS, "default", "job")["metadata"]["resourceVersion"] == "2"


def test_one_size_prints_every_figure() -> None:
    row = bench.measure(8, 3)
    assert row["pods"] == 8 and row["events"] == 3
    for key in ("full_status_save_ms", "wal_append_ms", "cr_save_ms", "snapshot_ms"):
        assert row[key] > 0, key


def _copy(o: Any) -> Any:
    return {k: _copy(v) for k, v in o.items()} if isinstance(o, dict) else o
