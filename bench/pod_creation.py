"""How long the Job Controller takes to create a large AegisJob's pods: one call at a time
(`--calls 1`) beside its default, in the same run, printed as JSON.

    python bench/pod_creation.py [--pods 1250 12500] [--latency-ms 10] [--calls 1 32]
                                 [--beside 10] [--workers 1 4]

Each run is one `JobController.reconcile_job` of a fresh AegisJob of `--pods` workers: the
finalizer, Secret, Service and Aegis CR, every worker pod, the job's status, until a pass
finds nothing to do. The API is the in-memory one (aegis.testing.memory_api) with every call held
`--latency-ms` first, outside its lock, for the API server's round trip (admission and etcd's
commit; 10 ms is a create on a healthy cluster, whose SLO allows 1 s at p99). No API server
runs here, so the latency is modelled: the figures say how the controller's calls overlap,
not what a given cluster answers. `cpu_s` is this process's CPU over the run (the controller,
the fake API's copies and the threads' sleeps), `api_calls` what the fake answered.

With `--beside N`, each size also runs the Job Controller's `run` (its watches and its pod
cache) with `--workers` jobs reconciled at once, one after the other: the large job is created,
then a job of N workers, and the line says when the small job's last pod and the large job's
last pod existed, from the large job's creation (one at a time, the small job waits for the
large job's reconcile).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aegis.k8s.job_controller import (  # noqa: E402
    POD_CALLS,
    RECONCILE_WORKERS,
    JobController,
    JobControllerConfig,
)
from aegis.k8s.manifests import PodSettings  # noqa: E402
from aegis.k8s.resources import AEGIS_JOB, LABEL_JOB, POD, Resource  # noqa: E402
from aegis.testing.memory_api import MemoryApi  # noqa: E402

NAMESPACE, JOB = "team", "train"


class SlowApi(MemoryApi):
    """MemoryApi whose every call waits `latency_s` first, counted by verb."""

    def __init__(self, latency_s: float) -> None:
        super().__init__()
        self.latency_s = latency_s
        self.calls: Counter[str] = Counter()
        self._count = threading.Lock()

    def before(self, verb: str, res: Resource) -> None:
        with self._count:
            self.calls[verb] += 1
        time.sleep(self.latency_s)


def aegis_job(workers: int) -> dict[str, Any]:
    """An AegisJob manifest as a user writes it."""
    container = {"name": "trainer", "image": "train:1", "command": ["python", "train.py"]}
    return {
        "apiVersion": AEGIS_JOB.api_version,
        "kind": AEGIS_JOB.kind,
        "metadata": {"name": JOB, "namespace": NAMESPACE},
        "spec": {"workerNum": workers, "template": {"spec": {"containers": [container]}}},
    }


def measure(pods: int, latency_s: float, calls: int) -> dict[str, Any]:
    """One reconcile of a fresh `pods`-worker AegisJob with `calls` pod calls at once."""
    api = SlowApi(latency_s)
    api.create(AEGIS_JOB, NAMESPACE, aegis_job(pods))
    api.calls.clear()  # the user's create is not the controller's
    config = JobControllerConfig(pod=PodSettings(controller_address="ctl:50051"), pod_calls=calls)
    controller = JobController(api, config, new_token=lambda: "token")  # type: ignore[arg-type]
    cpu, start = time.process_time(), time.perf_counter()
    controller.reconcile_job(NAMESPACE, JOB)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    created = len(api.names(POD, NAMESPACE))
    if created != pods:
        raise SystemExit(f"{created} of {pods} pods created")
    return {"pod_calls": calls, "s": round(wall, 2), "cpu_s": round(cpu, 2), **api.calls}


def start_run(
    controller: JobController, wait_s: float = 60.0
) -> tuple[threading.Event, threading.Thread]:
    """`controller.run` in a thread, returned once its pod cache has listed (so that its watch
    shows every pod made after); SystemExit if that takes longer than `wait_s` or `run` ended.
    Stop it with the event, then the API's `close_watches`."""
    stop = threading.Event()
    thread = threading.Thread(target=controller.run, args=(stop,), daemon=True)
    thread.start()
    deadline = time.monotonic() + wait_s
    while not controller.pods.synced:
        if time.monotonic() > deadline or not thread.is_alive():
            stop.set()
            raise SystemExit(f"the Job Controller's pods not listed within {wait_s:g} s")
        time.sleep(0.01)
    return stop, thread


def beside(pods: int, small: int, latency_s: float, workers: int) -> dict[str, Any]:
    """Seconds from a `pods`-worker job's creation until its pods and those of a `small`-worker
    job created right after it exist, with `workers` jobs reconciled at once."""
    api = SlowApi(latency_s)
    config = JobControllerConfig(
        pod=PodSettings(controller_address="ctl:50051"), reconcile_workers=workers
    )
    controller = JobController(api, config, new_token=lambda: "token")  # type: ignore[arg-type]
    stop, thread = start_run(controller)
    little = aegis_job(small)
    little["metadata"]["name"] = "small"
    start = time.perf_counter()
    api.create(AEGIS_JOB, NAMESPACE, aegis_job(pods))
    api.create(AEGIS_JOB, NAMESPACE, little)
    done: dict[str, float] = {}
    deadline = start + 60 + pods * latency_s
    while len(done) < 2:
        if time.perf_counter() > deadline:
            raise SystemExit(f"not every pod after {deadline - start:.0f} s")
        for job, want in ((JOB, pods), ("small", small)):
            have = len(api.names(POD, NAMESPACE, f"{LABEL_JOB}={job}"))
            if job not in done and have == want:
                done[job] = round(time.perf_counter() - start, 2)
        time.sleep(0.01)
    stop.set()
    api.close_watches()
    thread.join(60)
    return {"reconcile_workers": workers, "small_s": done["small"], "large_s": done[JOB]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, nargs="+", default=[1250, 12500])
    parser.add_argument("--latency-ms", type=float, default=10.0)
    parser.add_argument("--calls", type=int, nargs="+", default=[1, POD_CALLS])
    parser.add_argument("--beside", type=int, default=0, metavar="N")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, RECONCILE_WORKERS])
    args = parser.parse_args()
    for pods in args.pods:
        runs = [measure(pods, args.latency_ms / 1e3, calls) for calls in args.calls]
        out: dict[str, Any] = {"pods": pods, "latency_ms": args.latency_ms, "runs": runs}
        if len(runs) > 1:
            out["time_ratio_last_to_first"] = round(runs[-1]["s"] / runs[0]["s"], 3)
        if args.beside:
            out["beside"] = [
                beside(pods, args.beside, args.latency_ms / 1e3, n) for n in args.workers
            ]
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
