"""Cost per event of the controller as the pod count grows (issue 12): no network, no disk.

Drives the spec `Engine` alone, then `ControllerCore` (the engine plus the controller's
bookkeeping, write-ahead log records, snapshots and orders; the WAL and the status store are
kept in memory but encoded as the file versions write them), through two jobs per size:

- healthy: N ACKs (agentJoin), N bootcheck Finish, N command Finish (agentWork + receive),
  with the controller's decisions settled after each event;
- crash-once: the same, but one pod is lost before the command reports (envPodRestart),
  rejoins, and every pod troubleshoots before the command runs again.

Prints one JSON object per (part, job, size): event p50/p99 in ms by kind, p50 and mean over
all events, the whole job in seconds and, for the controller, the largest order and status
encoded in bytes; then one object per part and job with the ratios cost(largest) /
cost(smallest) of the median and of the mean event (the mean includes the phase changes,
which are O(pods) each but few per job, and the machine's hiccups).
Both parts run under the controller process's garbage-collector thresholds
(aegis/runtime/controller/gc_tuning.py)
and report the time spent in collections (`gc_s`, the longest
pause); the part `controller-default-gc` is its peer: the controller with CPython's defaults.
Timings are wall-clock on a shared machine: noisy, compare figures of one run only.

    python bench/scale_core.py --pods 125,1250,12500
    python bench/scale_core.py --quick          # 20,40 pods: a smoke run
    python bench/scale_core.py --pods 12500 --parts controller,controller-default-gc
    PYTHONPATH=/tmp/base-scale python bench/scale_core.py --pods 125,250   # the old code
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parents[1]))  # after PYTHONPATH (the old code)

from aegis.generated.aegis_phase import Label
from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.runtime.controller.core import ControllerCore, JobConfig
from aegis.runtime.controller.gc_tuning import CONTROLLER_THRESHOLDS, thresholds
from aegis.runtime.controller.store import Status
from aegis.runtime.controller.wal import WalRecord, WriteAheadLog, encode_line
from aegis.runtime.engine import Engine, runtime_constants
from aegis.runtime.engine import report as spec_report
from aegis.values import ModelValue

JOB, NAMESPACE, MAX_RETRY = "scale", "bench", 3
QUICK_PODS = (20, 40)
ACK = MessageType.ACK


@dataclass
class Timings:
    """Event durations by kind, and what one job's run measured beside them."""

    events: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    job_s: float = 0.0
    order_bytes: int = 0
    status_bytes: int = 0
    wal_record_bytes: int = 0
    gc_s: float = 0.0  # time in the cyclic garbage collector during the job
    gc_max_pause_ms: float = 0.0

    @contextmanager
    def event(self, kind: str) -> Iterator[None]:
        start = time.perf_counter()
        yield
        self.events[kind].append(time.perf_counter() - start)

    def mean_ms(self) -> float:
        every = [d for ds in self.events.values() for d in ds]
        return 1000 * statistics.fmean(every)

    def p50_ms(self) -> float:
        return 1000 * statistics.median(d for ds in self.events.values() for d in ds)

    def summary(self) -> dict[str, Any]:
        kinds = {}
        for kind, ds in sorted(self.events.items()):
            ms = sorted(1000 * d for d in ds)
            kinds[kind] = {
                "n": len(ms),
                "p50_ms": round(ms[len(ms) // 2], 4),
                "p99_ms": round(ms[min(len(ms) - 1, int(len(ms) * 0.99))], 4),
            }
        return {
            "events": kinds,
            "event_p50_ms": round(self.p50_ms(), 4),
            "event_mean_ms": round(self.mean_ms(), 4),
            "job_s": self.job_s,
            "gc_s": round(self.gc_s, 3),
            "gc_max_pause_ms": round(self.gc_max_pause_ms, 1),
        }


@contextmanager
def gc_clock(t: Timings) -> Iterator[None]:
    """Adds the time spent in garbage collections inside the block to `t`."""
    started: list[float] = []

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started.append(time.perf_counter())
        elif started:
            pause = time.perf_counter() - started.pop()
            t.gc_s += pause
            t.gc_max_pause_ms = max(t.gc_max_pause_ms, 1000 * pause)

    gc.callbacks.append(on_gc)
    try:
        yield
    finally:
        gc.callbacks.remove(on_gc)


def pod_names(n: int) -> list[str]:
    return [f"scale-worker-{i}" for i in range(n)]


# ---- the engine alone ----------------------------------------------------------------------


def engine_job(n: int, crash: bool) -> Timings:
    """The engine alone, under the controller process's collector thresholds."""
    return timed(_engine_job, n, crash, CONTROLLER_THRESHOLDS)


def _engine_job(n: int, crash: bool, t: Timings) -> None:
    """One job on the spec engine: observations with the observed choices, then settle."""
    pods = pod_names(n)
    engine = Engine(runtime_constants(pods, MAX_RETRY))
    started = time.perf_counter()

    def observe(kind: str, label: Label, **choices: Any) -> None:
        with t.event(kind):
            step = engine.observe(label, **choices)
            if not step.applied:
                raise SystemExit(f"{kind}: {label} {choices} not enabled ({engine.state.phase})")
            engine.settle()

    def report(kind: str, pod: str, outcome: str = "Finish") -> None:
        w = ModelValue(pod)
        with t.event(kind):
            seq = engine.state.masterSeq
            if not engine.observe(Label.agentWork, w=w, outcome=outcome).applied:
                raise SystemExit(f"{kind}: agentWork {pod} not enabled ({engine.state.phase})")
            engine.settle()
            engine.observe(Label.receive, m=spec_report(w, outcome, seq))
            engine.settle()

    for p in pods:
        observe("join", Label.agentJoin, w=ModelValue(p))
    expect(engine.state.phase, "BootChecking")
    for p in pods:
        report("bootcheck_finish", p)
    expect(engine.state.phase, "RunCommand")
    if crash:
        lost = ModelValue(pods[n // 2])
        observe("pod_lost", Label.envPodRestart, w=lost)
        observe("rejoin", Label.agentJoin, w=lost)
        expect(engine.state.phase, "Troubleshooting")
        for p in pods:
            report("troubleshoot_finish", p)
        expect(engine.state.phase, "RunCommand")
    for p in pods:
        report("command_finish", p)
    expect(engine.state.phase, "Succeed")
    t.job_s = round(time.perf_counter() - started, 3)


def expect(phase: object, wanted: str) -> None:
    if phase != wanted:
        raise SystemExit(f"the job is in {phase}, expected {wanted}")


# ---- the controller ------------------------------------------------------------------------


class EncodingStore:
    """A status store in memory that encodes each status as the file store writes it."""

    def __init__(self) -> None:
        self.saved: bytes | None = None

    def load(self) -> Status | None:
        return None if self.saved is None else Status.from_json(self.saved.decode("utf-8"))

    def save(self, status: Status) -> None:
        self.saved = status.encode()


class MemoryWal(WriteAheadLog):
    """A write-ahead log in memory: each record encoded as the file log writes it."""

    def __init__(self) -> None:
        super().__init__(Path("/nonexistent/scale-core.wal"))
        self.records: list[bytes] = []
        self.largest = 0

    def read(self) -> list[WalRecord]:
        return []

    def append(self, number: int, body: Mapping[str, Any]) -> None:
        line = encode_line(number, body)
        self.records.append(line)
        self.largest = max(self.largest, len(line))

    def reset(self) -> None:
        self.records.clear()


def message(pod: str, kind: MessageType, seq: int, inc: str) -> Message:
    data = {"incarnation": inc, "node": "node-1"}
    return Message(JOB, NAMESPACE, pod, kind, MessagePhase.COMMAND, data, time.time(), seq)


def controller_job(n: int, crash: bool) -> Timings:
    """ControllerCore, under the controller process's collector thresholds."""
    return timed(_controller_job, n, crash, CONTROLLER_THRESHOLDS)


def _controller_job(n: int, crash: bool, t: Timings) -> None:
    """One job on ControllerCore: ACKs and reports as the bus would deliver them."""
    pods = pod_names(n)
    store, wal = EncodingStore(), MemoryWal()
    core = ControllerCore(JobConfig(JOB, NAMESPACE, tuple(pods), MAX_RETRY), store, wal=wal)
    started = time.perf_counter()

    def sizes(reply: Message | None) -> None:
        if reply is not None:
            t.order_bytes = max(t.order_bytes, len(reply.encode()))
        t.status_bytes = max(t.status_bytes, len(store.saved or b""))
        t.wal_record_bytes = wal.largest

    def event(kind: str, call: Callable[[], Any]) -> None:
        with t.event(kind):
            out = call()
        sizes(getattr(out, "reply", None))

    def finish(kind: str, pod: str, inc: str = "i1") -> None:
        seq = int(core.state.masterSeq)
        event(kind, lambda: core.on_report(message(pod, MessageType.FINISH, seq, inc)))

    def join(pod: str, inc: str) -> None:
        event("join" if inc == "i1" else "rejoin", lambda: core.on_ack(message(pod, ACK, 0, inc)))

    for p in pods:
        join(p, "i1")
    expect(core.state.phase, "BootChecking")
    for p in pods:
        finish("bootcheck_finish", p)
    expect(core.state.phase, "RunCommand")
    incs = dict.fromkeys(pods, "i1")
    if crash:
        lost = pods[n // 2]
        event("pod_lost", lambda: core.on_heartbeat_lost(lost))
        incs[lost] = "i2"
        join(lost, "i2")
        expect(core.state.phase, "Troubleshooting")
        for p in pods:
            finish("troubleshoot_finish", p, incs[p])
        expect(core.state.phase, "RunCommand")
    for p in pods:
        finish("command_finish", p, incs[p])
    expect(core.state.phase, "Succeed")
    t.job_s = round(time.perf_counter() - started, 3)


# ---- main ----------------------------------------------------------------------------------


def controller_job_default_gc(n: int, crash: bool) -> Timings:
    """The peer of the controller part: the interpreter's default collector thresholds."""
    return timed(_controller_job, n, crash, DEFAULT_GC_THRESHOLDS)


def timed(
    job: Callable[[int, bool, Timings], None],
    n: int,
    crash: bool,
    gc_thresholds: tuple[int, int, int],
) -> Timings:
    """One job's timings, with the collector's thresholds set and its time counted."""
    t = Timings()
    gc.collect()  # what an earlier job left is not this job's to collect
    with thresholds(gc_thresholds), gc_clock(t):
        job(n, crash, t)
    return t


PARTS: dict[str, Callable[[int, bool], Timings]] = {
    "engine": engine_job,
    "controller": controller_job,
    "controller-default-gc": controller_job_default_gc,
}
DEFAULT_GC_THRESHOLDS = (700, 10, 10)  # CPython's


def run(sizes: list[int], parts: list[str], controller_max: int) -> list[dict[str, Any]]:
    """Every measurement, as the JSON objects printed."""
    out: list[dict[str, Any]] = []
    for part in parts:
        for job in ("healthy", "crash_once"):
            means: dict[int, tuple[float, float]] = {}
            for n in sizes:
                if part.startswith("controller") and n > controller_max:
                    continue
                t = PARTS[part](n, job == "crash_once")
                row = {"part": part, "job": job, "pods": n, **t.summary()}
                if part.startswith("controller"):
                    row |= {
                        "order_bytes": t.order_bytes,
                        "status_bytes": t.status_bytes,
                        "wal_record_bytes": t.wal_record_bytes,
                    }
                means[n] = (t.p50_ms(), t.mean_ms())
                print(json.dumps(row), flush=True)
                out.append(row)
            if len(means) > 1:
                lo, hi = min(means), max(means)
                ratio = {
                    "part": part,
                    "job": job,
                    "ratio": f"cost({hi})/cost({lo})",
                    "event_p50_ratio": round(means[hi][0] / means[lo][0], 2),
                    "event_mean_ratio": round(means[hi][1] / means[lo][1], 2),
                }
                print(json.dumps(ratio), flush=True)
                out.append(ratio)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", default="125,1250,12500", help="comma-separated job sizes")
    ap.add_argument(
        "--parts",
        default="engine,controller",
        help="comma-separated: engine, controller, controller-default-gc (its peer)",
    )
    ap.add_argument(
        "--controller-max",
        type=int,
        default=12500,
        help="largest size to run the controller at (default 12500)",
    )
    ap.add_argument("--quick", action="store_true", help=f"sizes {QUICK_PODS}: a smoke run")
    args = ap.parse_args(argv)
    sizes = list(QUICK_PODS) if args.quick else [int(x) for x in args.pods.split(",")]
    parts = [p.strip() for p in args.parts.split(",")]
    unknown = [p for p in parts if p not in PARTS]
    if unknown or any(n < 3 for n in sizes):
        print(f"parts are {', '.join(PARTS)}; sizes are >= 3 pods", file=sys.stderr)
        return 2
    run(sizes, parts, args.controller_max)
    return 0


if __name__ == "__main__":
    sys.exit(main())
