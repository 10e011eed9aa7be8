"""What the benches read of their processes: CPU time and peak memory from /proc, sampled.

`ProcSample` follows one process (the controller, nats-server), `GroupSample` a group whose
members come and go (the fleet: the bench's process and its child processes; one that exited
still counts what it used). `sample_until` reads them all every 0.2 s.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path


def raise_nofile() -> tuple[int, int]:
    """Soft RLIMIT_NOFILE up to the hard limit (inherited by nats-server and the controller);
    (soft, hard) after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        want = hard if hard != resource.RLIM_INFINITY else 1 << 20
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds the process has used (None once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class ProcSample:
    """A process's peak resident set (MB) and the CPU seconds it used since sampling began."""

    pid: int
    rss_mb: list[float] = field(default_factory=list)
    series: list[tuple[float, float]] = field(default_factory=list)  # (monotonic, CPU s)

    def cpu_share(self, start: float, end: float) -> float | None:
        """The share of one core (%) used between two monotonic times: from the last sample
        at or before `start` to the first one at or after `end` (samples are 0.2 s apart, a
        busy machine stretches that), or to the last sample if the process exited before
        one came after `end` (the controller leaves right after the job's last report)."""
        first, last = _around(self.series, start), _around(self.series, end)
        if first is None or last is None or last[1][0] <= first[0][0]:
            return None
        (t0, c0), (t1, c1) = first[0], last[1]
        return round(100 * (c1 - c0) / (t1 - t0), 1)

    @property
    def cpu_used(self) -> float:
        """CPU seconds from the first sample to the last."""
        return round(self.series[-1][1] - self.series[0][1], 2) if self.series else 0.0

    def cpu_at(self, t: float) -> float | None:
        """CPU seconds used by monotonic time `t` (`cpu_at` of the samples)."""
        return cpu_at(self.series, t)


@dataclass
class GroupSample:
    """The CPU seconds a group of processes used (the fleet: this process, the credential
    service in it, and its child processes as they come): each sample adds every member's
    last reading, so one that has exited still counts what it used."""

    pids: Callable[[], Iterable[int]]
    series: list[tuple[float, float]] = field(default_factory=list)  # (monotonic, CPU s)
    last: dict[int, float] = field(default_factory=dict)

    def sample(self) -> None:
        """Read every member's CPU time now."""
        for pid in self.pids():
            cpu = cpu_seconds(pid)
            if cpu is not None:
                self.last[pid] = cpu
        self.series.append((time.monotonic(), sum(self.last.values())))

    def cpu_at(self, t: float) -> float | None:
        """As ProcSample.cpu_at."""
        return cpu_at(self.series, t)


def cpu_at(series: Sequence[tuple[float, float]], t: float) -> float | None:
    """The CPU seconds of a (monotonic, CPU s) series at `t`, linear between the samples
    around it; None before the first sample; past the last, the last (the controller exits
    right after the job's last report: what it used after its last sample, at most 0.2 s
    of CPU, is not counted)."""
    around = _around(series, t)
    if around is None:
        return None
    (t0, c0), (t1, c1) = around
    return c0 if t1 == t0 else c0 + (c1 - c0) * (t - t0) / (t1 - t0)


def _around(
    series: Sequence[tuple[float, float]], t: float
) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """The last sample at or before `t` and the first at or after it (the last sample when
    none is after it); None when no sample is at or before `t`."""
    before = [(a, c) for a, c in series if a <= t]
    after = [(a, c) for a, c in series if a >= t] or list(series[-1:])
    if not before:
        return None
    return before[-1], after[0]


async def sample_until(
    procs: list[ProcSample], stop: asyncio.Event, groups: Sequence[GroupSample] = ()
) -> None:
    """Read each process's VmHWM and CPU time (and each group's CPU time) every 0.2 s until
    `stop` (or it exits), and once more then."""
    while True:
        last = stop.is_set()
        for group in groups:
            group.sample()
        for proc in procs:
            cpu = cpu_seconds(proc.pid)
            if cpu is not None:
                proc.series.append((time.monotonic(), cpu))
            with contextlib.suppress(OSError, ValueError):
                for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        proc.rss_mb.append(int(line.split()[1]) / 1024)
        if last:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.2)
