"""bench/persistence.py: its in-memory CR API keeps what the CR store saves, and each figure
comes from a save that really wrote the status."""

from __future__ import annotations

from aegis.k8s.cr_store import CrStatusStore
from aegis.k8s.resources import AEGIS
from aegis.runtime.controller.store import PodInfo, Status

from ..support.bench import load_bench

bench = load_bench("persistence")


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
