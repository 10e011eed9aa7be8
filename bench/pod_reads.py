"""What the Job Controller reads from the API server while a large AegisJob's pods start: a
list of every pod per reconcile (`cache_pods=False`) beside the cache fed by one list and a
watch, in the same run, printed as JSON.

    python bench/pod_reads.py [--pods 1250 12500] [--kubelet-pods-per-s 300] [--latency-ms 10]

Each run: `JobController.run` in a thread against the in-memory API (aegis.testing.memory_api,
every call held `--latency-ms` first, a list once per page of 500 as KubeApi reads it); the
user creates an AegisJob of `--pods` workers; a simulated scheduler and kubelet take the
pods as they appear, `--kubelet-pods-per-s` a second (kube-scheduler binds 100-300 pods a
second), and update each three times as a real one does: bound to a node, Running, Ready.
The run ends when the AegisJob's status says every worker runs. Printed per run: seconds to
that, reconciles, the Job Controller's pod lists, their pages and the pods in them (the API
server serializes each: tens of MB per list of a 12,500-pod job), and this process's CPU
seconds (the controller, the fake API and the simulated kubelet together). No API server
runs here: the figures count what the controller asks for, not what a given cluster answers.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aegis.k8s.api import LIST_PAGE  # noqa: E402
from aegis.k8s.job_controller import JobController, JobControllerConfig  # noqa: E402
from aegis.k8s.manifests import PodSettings  # noqa: E402
from aegis.k8s.reconcile import Action  # noqa: E402
from aegis.k8s.resources import AEGIS_JOB, POD, Resource  # noqa: E402
from aegis.testing.memory_api import Items, MemoryApi  # noqa: E402
from bench.pod_creation import JOB, NAMESPACE, SlowApi, aegis_job, start_run  # noqa: E402


class CountingApi(SlowApi):
    """SlowApi whose calls from the controller's threads only wait `latency_s` (a list once per
    page) and are counted: calls by verb, pod lists, their pages and the pods in them. The
    threads in `uncounted` (the user's, the simulated kubelet's) are not the controller."""

    def __init__(self, latency_s: float) -> None:
        super().__init__(latency_s)
        self.uncounted = {threading.get_ident()}

    def _counted(self) -> bool:
        return threading.get_ident() not in self.uncounted

    def before(self, verb: str, res: Resource) -> None:
        if not self._counted():
            return
        with self._count:
            self.calls[verb] += 1
        if verb not in ("list", "watch"):
            time.sleep(self.latency_s)

    def list_versioned(
        self, res: Resource, namespace: str | None = None, label_selector: str = ""
    ) -> tuple[Items, str]:
        items, version = super().list_versioned(res, namespace, label_selector)
        pages = max(1, math.ceil(len(items) / LIST_PAGE))
        if self._counted():
            time.sleep(self.latency_s * pages)
            if res is POD:
                with self._count:
                    self.calls["pod_lists"] += 1
                    self.calls["pod_pages"] += pages
                    self.calls["pods_listed"] += len(items)
        return items, version


class CountingController(JobController):
    """A Job Controller that counts its reconciles."""

    reconciles = 0

    def reconcile_job(self, namespace: str, name: str) -> list[Action]:
        self.reconciles += 1
        return super().reconcile_job(namespace, name)


def kubelet(api: CountingApi, per_s: float, done: threading.Event) -> None:
    """Bind, run and ready the job's pods as they appear, `per_s` a second."""
    api.uncounted.add(threading.get_ident())
    handled: set[str] = set()
    start = time.monotonic()
    while not done.is_set():
        fresh = [name for name in api.names(POD, NAMESPACE) if name not in handled]
        for name in fresh:
            due = start + len(handled) / per_s
            if (wait := due - time.monotonic()) > 0 and done.wait(wait):
                return
            node = f"node-{len(handled)}"
            ready = [{"type": "Ready", "status": "True"}]
            for patch in (
                {"spec": {"nodeName": node}},
                {"status": {"phase": "Running"}},
                {"status": {"phase": "Running", "conditions": ready}},
            ):
                api.patch(POD, NAMESPACE, name, patch)
            handled.add(name)
        done.wait(0.05)


def measure(pods: int, per_s: float, latency_s: float, cache: bool) -> dict[str, Any]:
    """One AegisJob of `pods` workers from creation until every worker runs."""
    api = CountingApi(latency_s)
    config = JobControllerConfig(pod=PodSettings(controller_address="ctl:50051"), cache_pods=cache)
    controller = CountingController(api, config, new_token=lambda: "token")  # type: ignore[arg-type]
    stop, thread = start_run(controller)  # its informer's list (of no pod yet) done
    done = threading.Event()
    sim = threading.Thread(target=kubelet, args=(api, per_s, done), daemon=True)
    cpu, start = time.process_time(), time.perf_counter()
    api.create(AEGIS_JOB, NAMESPACE, aegis_job(pods))  # the user's: not counted
    sim.start()
    deadline = start + 30 + 10 * pods / per_s
    while _phase(api) != "Running":
        if time.perf_counter() > deadline:
            raise SystemExit(f"{pods} pods: not running after {deadline - start:.0f} s")
        time.sleep(0.05)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    done.set()
    stop.set()
    api.close_watches()
    sim.join()
    thread.join(60)
    return {
        "cache": cache,
        "s_to_running": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "reconciles": controller.reconciles,
        **{k: api.calls[k] for k in ("pod_lists", "pod_pages", "pods_listed")},
        "creates": api.calls["create"],
    }


def _phase(api: MemoryApi) -> str:
    return str((api.get(AEGIS_JOB, NAMESPACE, JOB).get("status") or {}).get("phase") or "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, nargs="+", default=[1250, 12500])
    parser.add_argument("--kubelet-pods-per-s", type=float, default=300.0)
    parser.add_argument("--latency-ms", type=float, default=10.0)
    args = parser.parse_args()
    for pods in args.pods:
        runs = [
            measure(pods, args.kubelet_pods_per_s, args.latency_ms / 1e3, cache)
            for cache in (False, True)
        ]
        listed = [r["pods_listed"] for r in runs]
        out: dict[str, Any] = {
            "pods": pods,
            "kubelet_pods_per_s": args.kubelet_pods_per_s,
            "latency_ms": args.latency_ms,
            "runs": runs,
            "pods_listed_ratio": round(listed[1] / listed[0], 4) if listed[0] else None,
        }
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
