"""The controller's observability: Prometheus metrics fed by reports, served by a tiny asyncio
HTTP endpoint (`GET /metrics`); what they mean: docs/operations.md, "Metrics".

`JobObserver` is fed by ControllerService: every *applied* bootcheck/troubleshoot report whose
Data carries "checks" (CheckResult dicts), "roundSeconds", "gpuType" and "round" becomes one
`CheckMetrics.observe_round`; the job is counted created (when this controller created the
job's status) and succeeded/failed when it ends. A malformed report is counted
(`aegis_observer_dropped_reports_total{reason}`) and ignored: observing never raises.

The jobs counter carries gpu_type, which is known only from the first report: "created" is
counted at the first report that names it (or at the end, as "unknown", if none did).

Every fault-log record the controller writes also goes through `JobObserver.on_fault`:
`aegis_faults_total{node, kind}` and, where the fault starts a recovery,
`aegis_recoveries_total{level, gpu_type, worker_num}`, read from the record's fields (the
controller decides them: aegis.protocol.faults). `aegis_fault_to_order_seconds` is the
time from the first fault record not yet followed by an order to the next order the controller
publishes (ControllerService calls `order_published`): how soon a fault is acted on.

`ObserverMetrics` holds the registry and the observer's own counters; on Kubernetes the Aegis
Controller shares one among all its jobs' observers and serves it on one `/metrics`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from prometheus_client import Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from aegis.checks.metrics import CheckMetrics
from aegis.checks.result import CheckResult
from aegis.protocol.envelope import Message, MessagePhase
from aegis.protocol.faults import FaultRecord
from aegis.runtime.controller.gc_tuning import COLLECTOR_CLOCK, CollectorClock

log = logging.getLogger(__name__)

UNKNOWN_GPU = "unknown"
TERMINAL_EVENTS = {"Succeed": "succeeded", "Failed": "failed"}
_ROUND_KINDS = {MessagePhase.BOOTCHECK: "bootcheck", MessagePhase.TROUBLESHOOT: "troubleshoot"}
_MAX_LABEL = 128
# fine below 0.2 s: the scale target is a fault's order within 0.1 s at 1,000 pods
FAULT_TO_ORDER_BUCKETS = (
    *(i / 100 for i in range(1, 21)),
    0.25, 0.3, 0.4, 0.5, 0.75, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0,
)  # fmt: skip
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class ObserverMetrics:
    """The registry (CheckMetrics) plus the observer's counters; one per process."""

    def __init__(self, metrics: CheckMetrics | None = None) -> None:
        self.checks = metrics or CheckMetrics()
        self.registry = self.checks.registry
        self.dropped = Counter(
            "aegis_observer_dropped_reports",
            "Check reports the controller could not turn into metrics, by reason.",
            ("reason",),
            registry=self.registry,
        )
        self.faults = Counter(
            "aegis_faults",
            "Faults in the structured fault log, by node and kind.",
            ("node", "kind"),
            registry=self.registry,
        )
        self.recoveries = Counter(
            "aegis_recoveries",
            "Recoveries started, by level (1 in place, 2 container, 3 reschedule, evict).",
            ("level", "gpu_type", "worker_num"),
            registry=self.registry,
        )
        self.report_copies = Counter(
            "aegis_report_copies",
            "Copies of a report (sent again while no receipt came) not handled again: "
            "dropped while the first was handled, or answered with its reply.",
            ("outcome",),
            registry=self.registry,
        )
        self.fault_to_order = Histogram(
            "aegis_fault_to_order_seconds",
            "From a fault (the first not yet followed by an order) to the next order published.",
            buckets=FAULT_TO_ORDER_BUCKETS,
            registry=self.registry,
        )

        self.registry.register(CollectorMetrics(COLLECTOR_CLOCK))

    def exposition(self) -> bytes:
        """Every metric in the Prometheus text format."""
        return self.checks.exposition()


class CollectorMetrics:
    """The process's garbage collections (a CollectorClock), read when the metrics are: the
    event loop stands still while one runs (aegis/runtime/controller/gc_tuning.py)."""

    def __init__(self, clock: CollectorClock) -> None:
        self.clock = clock

    def collect(self) -> Iterator[Metric]:
        """The Prometheus collector protocol."""
        runs = CounterMetricFamily(
            "aegis_gc_collections",
            "Collections of the process's cyclic garbage collector, by generation.",
            labels=("generation",),
        )
        seconds = CounterMetricFamily(
            "aegis_gc_pause_seconds",
            "Time the process stood still in those collections, by generation.",
            labels=("generation",),
        )
        for generation in range(3):
            runs.add_metric((str(generation),), self.clock.runs[generation])
            seconds.add_metric((str(generation),), self.clock.seconds[generation])
        yield runs
        yield seconds
        yield GaugeMetricFamily(
            "aegis_gc_longest_pause_seconds",
            "The longest of those collections.",
            value=self.clock.longest,
        )


class JobObserver:
    """Turns one job's reports, faults and lifecycle into metrics (never raises)."""

    def __init__(
        self,
        worker_num: int,
        metrics: CheckMetrics | None = None,
        *,
        shared: ObserverMetrics | None = None,
    ) -> None:
        self.shared = shared or ObserverMetrics(metrics)
        self.metrics = self.shared.checks
        self.dropped = self.shared.dropped
        self.worker_num = worker_num
        self.gpu_type: str | None = None
        self._pending_created = False
        self._ended = False
        self._fault_at: float | None = None  # monotonic time of the first unanswered fault

    def on_fault(self, record: FaultRecord) -> None:
        """One fault-log record: count it by node and kind, and the recovery it starts."""
        if self._fault_at is None:
            self._fault_at = time.monotonic()
        try:
            node = (record.node or "unknown")[:_MAX_LABEL]
            self.shared.faults.labels(node=node, kind=record.kind.value).inc()
            if record.level is not None:
                self.shared.recoveries.labels(
                    level=record.level.value,
                    gpu_type=self.gpu_type or UNKNOWN_GPU,
                    worker_num=str(self.worker_num),
                ).inc()
        except Exception as exc:  # observing must never disturb the controller
            log.warning("fault of %s not observed: %r", record.pod, exc)

    def fault_sink(
        self, then: Callable[[FaultRecord], None] | None = None
    ) -> Callable[[FaultRecord], None]:
        """An `on_fault` for ControllerCore: `then(record)` (the fault log), then count it."""

        def sink(record: FaultRecord) -> None:
            try:
                if then is not None:
                    then(record)
            finally:
                self.on_fault(record)

        return sink

    def order_published(self) -> None:
        """The controller published an order: the faults before it have been acted on."""
        if self._fault_at is not None:
            self.shared.fault_to_order.observe(time.monotonic() - self._fault_at)
            self._fault_at = None

    def on_report_copy(self, outcome: str) -> None:
        """A report's copy was not handled again ("dropped" or "answered"): agents waited
        longer for their receipts than their first wait (the controller was behind)."""
        self.shared.report_copies.labels(outcome=outcome).inc()

    def job_started(self, fresh: bool) -> None:
        """The controller started: a job it created (fresh) is counted once it is known."""
        self._pending_created = fresh

    def on_report(self, msg: Message) -> None:
        """One applied report: a check round's durations (others are ignored)."""
        try:
            self._observe(msg)
        except Exception as exc:  # observing must never disturb the controller
            log.warning("report from %s not observed: %r", msg.pod_name, exc)
            self._drop("error")

    def job_ended(self, terminal: str | None) -> None:
        """The job terminated ("Succeed"/"Failed"; anything else is not an end)."""
        event = TERMINAL_EVENTS.get(terminal or "")
        if event is None or self._ended:
            return
        self._ended = True
        self._count_created()
        self._job(event)

    def exposition(self) -> bytes:
        """The metrics in the Prometheus text format."""
        return self.shared.exposition()

    # ---------------- internals ----------------

    def _observe(self, msg: Message) -> None:
        kind = _ROUND_KINDS.get(msg.phase)
        data = msg.data
        if kind is None or "checks" not in data:
            return
        raw, seconds = data.get("checks"), data.get("roundSeconds")
        gpu, rnd = data.get("gpuType"), data.get("round", msg.seq)
        if not isinstance(raw, list) or not all(isinstance(c, Mapping) for c in raw):
            return self._drop("checks")
        try:
            results = [CheckResult.from_dict(c) for c in raw]
        except (KeyError, TypeError, ValueError):
            return self._drop("checks")
        if not all(_duration(r.duration_s) for r in results) or len(results) > 100:
            return self._drop("checks")
        if not _duration(seconds):
            return self._drop("roundSeconds")
        if not isinstance(gpu, str) or not gpu or len(gpu) > _MAX_LABEL:
            return self._drop("gpuType")
        if isinstance(rnd, bool) or not isinstance(rnd, int) or rnd < 0:
            return self._drop("round")
        self.gpu_type = gpu
        self._count_created()
        assert isinstance(seconds, int | float)
        self.metrics.observe_round(
            kind,
            results,
            float(seconds),
            gpu_type=gpu,
            worker_num=self.worker_num,
            round=rnd,
        )

    def _count_created(self) -> None:
        if self._pending_created:
            self._pending_created = False
            self._job("created")

    def _job(self, event: str) -> None:
        gpu = self.gpu_type or UNKNOWN_GPU
        self.metrics.job(event, gpu_type=gpu, worker_num=self.worker_num)

    def _drop(self, reason: str) -> None:
        self.dropped.labels(reason=reason).inc()


def _duration(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value) and value >= 0


def write_textfile(observer: JobObserver, path: Path) -> None:
    """The final metrics as a node_exporter textfile (atomic replace)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(observer.exposition())
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# ---------------- the HTTP endpoint ----------------

_MAX_HEADER_LINES = 100
_READ_TIMEOUT_S = 5.0


class MetricsServer:
    """`GET /metrics` on host:port (asyncio, no threads); other paths 404, other methods 405.

    `observer` is anything with `exposition() -> bytes` (a JobObserver, an ObserverMetrics)."""

    def __init__(
        self, observer: JobObserver | ObserverMetrics, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.observer = observer
        self.host = host
        self.port = port
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        """Listen (OSError if the port is taken); `port` is the bound port afterwards."""
        self._server = await asyncio.start_server(self._serve, self.host, self.port)
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        """Stop listening and drop open connections."""
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
            self._server = None

    @property
    def url(self) -> str:
        """Where the metrics are."""
        return f"http://{self.host}:{self.port}/metrics"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            status, body, head = await asyncio.wait_for(self._answer(reader), _READ_TIMEOUT_S)
            ctype = CONTENT_TYPE if status == 200 else "text/plain; charset=utf-8"
            header = (
                f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            )
            writer.write(header.encode("ascii") + (b"" if head else body))
            await writer.drain()
        except (TimeoutError, OSError, ValueError, asyncio.IncompleteReadError):
            pass  # a slow, broken or hostile client: just close
        except Exception:
            log.exception("metrics endpoint failed")
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _answer(self, reader: asyncio.StreamReader) -> tuple[str, bytes, bool]:
        request = (await reader.readline()).decode("latin-1").split()
        for _ in range(_MAX_HEADER_LINES):  # the headers are read and ignored
            if (await reader.readline()).strip() == b"":
                break
        if len(request) != 3 or not request[2].startswith("HTTP/"):
            return "400 Bad Request", b"bad request\n", False
        method, target = request[0], request[1]
        if method not in ("GET", "HEAD"):
            return "405 Method Not Allowed", b"use GET\n", False
        if target.split("?", 1)[0] != "/metrics":
            return "404 Not Found", b"metrics are at /metrics\n", method == "HEAD"
        return "200 OK", self.observer.exposition(), method == "HEAD"


def observer_counts(observer: JobObserver) -> dict[str, Any]:
    """Dropped reports by reason (for tests and the log)."""
    return {
        sample.labels["reason"]: sample.value
        for metric in observer.dropped.collect()
        for sample in metric.samples
        if sample.name.endswith("_total")
    }
