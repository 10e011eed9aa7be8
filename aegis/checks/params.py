"""Parameters of a diagnosis round: rendezvous, budgets, thresholds and simulated faults."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aegis.checks.result import COLLECTIVE_CHECKS, DEFAULT_BUDGETS, CheckType
from aegis.errors import AegisError
from aegis.protocol.environment import DEFAULT_HANG_TIMEOUT_S

# Faults a check can be told to simulate, so that every failure path runs on a CPU machine.
SIMULATIONS = frozenset({"gpu_lost", "slow_allreduce", "io_error", "runtime_error", "rdma_down"})
SIMULATE_ENV = "AEGIS_SIMULATE"


class ParamsError(AegisError):
    """A diagnosis request carries an unknown check, fault or malformed parameter."""


@dataclass(frozen=True)
class Rendezvous:
    """Where the diagnosis workers meet: a TCPStore at host:port, this worker's rank."""

    host: str = "127.0.0.1"
    port: int = 0
    rank: int = 0
    world_size: int = 1
    host_store: bool | None = None  # None: rank 0 hosts the store
    backend: str = "auto"  # auto: nccl when CUDA is usable, else gloo

    @property
    def hosts_store(self) -> bool:
        """Whether this worker runs the TCPStore server."""
        return self.rank == 0 if self.host_store is None else self.host_store

    def key(self) -> tuple[str, int, int, int, str]:
        """What identifies a process group: a different key means a new group."""
        return (self.host, self.port, self.rank, self.world_size, self.backend)


@dataclass(frozen=True)
class CheckParams:
    """Everything a round needs besides the check names; JSON round-trips via to/from_dict."""

    rendezvous: Rendezvous | None = None  # None: a world of size 1 on loopback
    budgets: Mapping[str, float] = field(default_factory=dict)
    simulate: tuple[str, ...] = ()
    io_dir: str | None = None
    io_bytes: int = 1 << 20
    progress_file: str | None = None
    last_progress_ts: float | None = None
    hang_threshold_s: float = DEFAULT_HANG_TIMEOUT_S
    # allreduce_performance: a rank is slow when its figure is below slow_ratio x the median of
    # its peers' figures in each of perf_attempts measurements (a re-measurement, taken only
    # when the first one names a slow rank, keeps a one-off stall from evicting a node); each
    # measurement is perf_iters all_reduces of perf_bytes, after one warm-up.
    slow_ratio: float = 0.5
    perf_bytes: int = 1 << 20
    perf_iters: int = 5
    perf_attempts: int = 2
    slow_sleep_s: float = 0.02
    probe_timeout_s: float = 2.0
    gpu_temp_limit_c: float = 90.0
    expected_gpus: int | None = None
    rdma_root: str = "/sys/class/infiniband"
    device_index: int = 0
    # burn (operator-only): square matmuls of burn_size (None: 4096 on a GPU, 512 on the CPU)
    # for burn_seconds, cut short by the burn's budget
    burn_seconds: float = 5.0
    burn_size: int | None = None

    def __post_init__(self) -> None:
        unknown = set(self.simulate) - SIMULATIONS
        if unknown:
            raise ParamsError(
                f"unknown simulated fault(s) {sorted(unknown)}; use {sorted(SIMULATIONS)}"
            )
        bad = set(self.budgets) - {c.value for c in CheckType}
        if bad:
            raise ParamsError(f"budget for unknown check(s) {sorted(bad)}")
        if not 0 < self.slow_ratio <= 1:
            raise ParamsError(f"slow_ratio must be in (0, 1], not {self.slow_ratio!r}")
        for name in ("perf_bytes", "perf_iters", "perf_attempts"):
            if int(getattr(self, name)) < 1:
                raise ParamsError(f"{name} must be at least 1, not {getattr(self, name)!r}")
        if self.burn_seconds < 0 or (self.burn_size is not None and self.burn_size < 1):
            raise ParamsError(
                f"burn_seconds must be >= 0 and burn_size >= 1 "
                f"(got {self.burn_seconds!r}, {self.burn_size!r})"
            )

    def budget(self, check: str) -> float:
        """Seconds allowed for `check`: the override or the design's default."""
        if check in self.budgets:
            return float(self.budgets[check])
        if check == CheckType.BURN:
            return self.burn_seconds + DEFAULT_BUDGETS[CheckType.BURN]
        return DEFAULT_BUDGETS[CheckType(check)]

    def round_budget(self, checks: Sequence[str]) -> float:
        """Seconds a round of `checks` may take: collectives run in sequence, the rest at once."""
        coll = sum(self.budget(c) for c in checks if c in COLLECTIVE_CHECKS)
        local = max((self.budget(c) for c in checks if c not in COLLECTIVE_CHECKS), default=0.0)
        return max(coll, local)

    def simulates(self, fault: str) -> bool:
        """Whether `fault` is to be simulated in this round."""
        return fault in self.simulate

    def with_simulated(self, faults: Iterable[str]) -> CheckParams:
        """These params with more simulated faults (e.g. from AEGIS_SIMULATE)."""
        merged = tuple(sorted(set(self.simulate) | set(faults)))
        return dataclasses.replace(self, simulate=merged)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        d = dataclasses.asdict(self)
        d["budgets"] = dict(self.budgets)
        d["simulate"] = list(self.simulate)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> CheckParams:
        """Build from a (possibly partial) dict; unknown keys are an error."""
        d = dict(d or {})
        names = {f.name for f in dataclasses.fields(cls)}
        if set(d) - names:
            raise ParamsError(f"unknown parameter(s) {sorted(set(d) - names)}")
        rdzv = d.pop("rendezvous", None)
        if isinstance(rdzv, Mapping):
            rdzv = Rendezvous(**rdzv)
        try:
            return cls(
                rendezvous=rdzv,
                budgets={str(k): float(v) for k, v in dict(d.pop("budgets", {}) or {}).items()},
                simulate=tuple(d.pop("simulate", ()) or ()),
                **d,
            )
        except TypeError as exc:
            raise ParamsError(f"malformed check parameters: {exc}") from exc


def simulated_from_env(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Faults named in AEGIS_SIMULATE (comma-separated); unknown names are an error."""
    raw = (os.environ if environ is None else environ).get(SIMULATE_ENV, "")
    faults = tuple(sorted({s.strip() for s in raw.split(",") if s.strip()}))
    unknown = set(faults) - SIMULATIONS
    if unknown:
        raise ParamsError(f"{SIMULATE_ENV} names unknown fault(s) {sorted(unknown)}")
    return faults
