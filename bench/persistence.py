"""Per-event persistence cost of the controller at 125 / 1,250 / 12,500 pods, printed as JSON.

    python bench/persistence.py [--pods 125 1250 12500] [--events 40]

For each pod count, `--events` agents join a fresh job one by one (agentJoin: one dirty event
each, in Pending, so no phase change). The event itself is applied with `autocommit` off and
not timed; what is timed is `ControllerCore.commit()`, in two controllers side by side:

  full_status_save_ms  the old way: the whole status built and atomically replaced (temp file,
                       fsync, rename, fsync dir) per event (a core without a WAL; also what the
                       CR store does per batch on Kubernetes)
  wal_append_ms        the new way: one WAL record (the event's steps and bookkeeping deltas)
                       appended and fsynced
  cr_save_ms           what the CR store costs the controller per batch on Kubernetes (no
                       WAL there): the status built, diffed against the last one written
                       and sent as a merge patch, here to an in-memory API (no HTTP)
  configmap_commit_ms  a job too large for its CR on Kubernetes: one WAL record compressed
                       and created as a ConfigMap (the same in-memory API)
  configmap_snapshot_ms, configmap_snapshot_parts  its snapshot: the status compressed, its
                       ConfigMap parts created, the CR's summary patched
  snapshot_ms          one snapshot (the status file, as above, plus emptying the WAL), and
  snapshot_amortized_ms  that divided by the records between snapshots (max(256, pods))
  bytes_per_event      what each way writes per event
  checkpoint_us        the transaction checkpoint per event: old (a deep copy of the
                       bookkeeping of a running job: one incarnation per pod) beside new (O(1))

Medians over the events; the WAL is measured first (the old way leaves megabytes for the disk
to write back, which would slow the fsyncs after it). fsync dominates the WAL figure and
depends on the disk; on a shared machine compare the figures within one run.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aegis.k8s.chunked_store import ChunkedStatusStore  # noqa: E402
from aegis.k8s.cm_wal import ConfigMapWal, Deleter  # noqa: E402
from aegis.k8s.cr_store import CrStatusStore  # noqa: E402
from aegis.k8s.resources import AEGIS  # noqa: E402
from aegis.protocol.envelope import Message, MessagePhase, MessageType  # noqa: E402
from aegis.runtime.controller.core import ControllerCore, Extras, JobConfig  # noqa: E402
from aegis.runtime.controller.store import FileStatusStore  # noqa: E402
from aegis.runtime.controller.wal import WriteAheadLog  # noqa: E402
from aegis.testing.memory_api import MemoryApi, MemoryCrApi  # noqa: E402


def _ack(pod: str) -> Message:
    data = {"incarnation": "i1", "node": "node-1"}
    return Message("job", "default", pod, MessageType.ACK, MessagePhase.BOOTCHECK, data, 0.0, 0)


def _timed_commits(core: ControllerCore, pods: tuple[str, ...], events: int) -> list[float]:
    times = []
    for pod in pods[:events]:
        core.on_ack(_ack(pod))  # memory only (autocommit off)
        assert core.journal.dirty
        start = time.perf_counter()
        core.journal.commit()
        times.append(time.perf_counter() - start)
    return times


def _configmap_core(job: JobConfig) -> tuple[ControllerCore, MemoryApi, Deleter]:
    """A core as the Aegis Controller runs a job too large for its CR: its snapshots and WAL
    in ConfigMaps, here of an in-memory API."""
    api = MemoryApi()
    api.create(AEGIS, "default", {"metadata": {"name": job.name}, "spec": {}})
    deleter = Deleter(api, "default")
    store = ChunkedStatusStore(api, CrStatusStore(api, "default", job.name), deleter)
    wal = ConfigMapWal(api, "default", job.name, deleter)
    core = ControllerCore(job, store, wal=wal)
    core.autocommit = False
    return core, api, deleter


def measure(n: int, events: int) -> dict[str, Any]:
    """The figures for an `n`-pod job."""
    pods = tuple(f"job-worker-{i}" for i in range(n))
    job = JobConfig("job", "default", pods, 3, heartbeat_timeout=0)
    with tempfile.TemporaryDirectory(prefix="aegis-bench-") as tmp:
        old_dir, new_dir = Path(tmp, "old"), Path(tmp, "new")
        old_dir.mkdir()
        new_dir.mkdir()
        old = ControllerCore(job, FileStatusStore(old_dir / "status.json"))
        wal = WriteAheadLog(new_dir / "wal.jsonl")
        new = ControllerCore(job, FileStatusStore(new_dir / "status.json"), wal=wal)
        old.autocommit = new.autocommit = False
        os.sync()  # the set-up's writes are not waited for by the first fsyncs timed
        appended = _timed_commits(new, pods, events)  # first: the old way leaves MBs to flush
        os.sync()
        full = _timed_commits(old, pods, events)
        wal_bytes = wal.size
        cr = ControllerCore(job, CrStatusStore(MemoryCrApi(), "default", "job"))
        cr.autocommit = False
        cr_saves = _timed_commits(cr, pods, events)
        cm, api, deleter = _configmap_core(job)
        cm_commits = _timed_commits(cm, pods, events)
        start = time.perf_counter()
        cm.journal.snapshot()
        cm_snapshot = time.perf_counter() - start
        deleter.close()
        snapshot_parts = api.get(AEGIS, "default", "job")["status"]["snapshot"]["parts"]
        start = time.perf_counter()
        new.journal.snapshot()  # what a phase change or the K-th record costs
        snapshot = time.perf_counter() - start
        status_bytes = (old_dir / "status.json").stat().st_size
        wal.close()
    running = Extras(incarnations={p: "i1" for p in pods})
    start = time.perf_counter()
    for _ in range(5):
        copy.deepcopy(running.to_json())
    old_checkpoint = (time.perf_counter() - start) / 5
    start = time.perf_counter()
    for _ in range(1000):
        new.journal.begin()
    new_checkpoint = (time.perf_counter() - start) / 1000
    return {
        "pods": n,
        "events": events,
        "full_status_save_ms": round(statistics.median(full) * 1e3, 3),
        "wal_append_ms": round(statistics.median(appended) * 1e3, 3),
        "cr_save_ms": round(statistics.median(cr_saves) * 1e3, 3),
        "configmap_commit_ms": round(statistics.median(cm_commits) * 1e3, 3),
        "configmap_snapshot_ms": round(cm_snapshot * 1e3, 3),
        "configmap_snapshot_parts": snapshot_parts,
        "snapshot_ms": round(snapshot * 1e3, 3),
        "snapshot_amortized_ms": round(snapshot * 1e3 / new.journal.snapshot_every, 4),
        "bytes_per_event": {"full_status": status_bytes, "wal": wal_bytes // events},
        "checkpoint_us": {
            "old_deepcopy": round(old_checkpoint * 1e6, 1),
            "new": round(new_checkpoint * 1e6, 2),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, nargs="+", default=[125, 1250, 12500])
    parser.add_argument("--events", type=int, default=40)
    args = parser.parse_args()
    for n in args.pods:
        print(json.dumps(measure(n, min(args.events, n - 1))), flush=True)


if __name__ == "__main__":
    main()
