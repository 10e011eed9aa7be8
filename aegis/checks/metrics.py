"""Prometheus metrics of the diagnosis plane, in a dedicated registry (not the global one)."""

from __future__ import annotations

from collections.abc import Sequence

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from aegis.checks.faultlog import FaultLogWriter, FaultRecord
from aegis.checks.result import CheckResult

__all__ = ["CheckMetrics", "FaultLogWriter", "FaultRecord"]

_DIMS = ("gpu_type", "worker_num", "round")
_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 180, 300)
JOB_EVENTS = frozenset({"created", "succeeded", "failed"})


class CheckMetrics:
    """Check durations, bootcheck/troubleshoot totals (gpu_type x worker_num x round), jobs."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.check_seconds = Histogram(
            "aegis_check_duration_seconds",
            "Duration of one diagnosis check.",
            ("check_type", *_DIMS),
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.bootcheck_seconds = Histogram(
            "aegis_bootcheck_duration_seconds",
            "Duration of a whole bootcheck round.",
            _DIMS,
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.troubleshoot_seconds = Histogram(
            "aegis_troubleshoot_duration_seconds",
            "Duration of a whole troubleshoot round.",
            _DIMS,
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.jobs = Counter(
            "aegis_jobs",
            "Jobs created, succeeded and failed.",
            ("event", "gpu_type", "worker_num"),
            registry=self.registry,
        )

    def observe_round(
        self,
        kind: str,
        results: Sequence[CheckResult],
        total_s: float,
        *,
        gpu_type: str,
        worker_num: int,
        round: int | str,
    ) -> None:
        """Record each check's duration and the round's total; kind is bootcheck|troubleshoot."""
        dims = {"gpu_type": gpu_type, "worker_num": str(worker_num), "round": str(round)}
        for r in results:
            self.check_seconds.labels(check_type=r.check_type, **dims).observe(r.duration_s)
        total = {"bootcheck": self.bootcheck_seconds, "troubleshoot": self.troubleshoot_seconds}
        if kind not in total:
            raise ValueError(f"round kind {kind!r}: use bootcheck or troubleshoot")
        total[kind].labels(**dims).observe(total_s)

    def job(self, event: str, *, gpu_type: str, worker_num: int) -> None:
        """Count a job created, succeeded or failed."""
        if event not in JOB_EVENTS:
            raise ValueError(f"job event {event!r}: use one of {sorted(JOB_EVENTS)}")
        self.jobs.labels(event=event, gpu_type=gpu_type, worker_num=str(worker_num)).inc()

    def exposition(self) -> bytes:
        """The registry in the Prometheus text format."""
        return generate_latest(self.registry)
