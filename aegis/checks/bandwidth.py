"""Bus bandwidth arithmetic and the slow-rank verdict (pure; no torch)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass


def allreduce_bus_factor(world_size: int) -> float:
    """nccl-tests' all_reduce bus factor 2(n-1)/n; 1 for a world of one (algorithm bandwidth)."""
    return 2.0 * (world_size - 1) / world_size if world_size > 1 else 1.0


def bus_bandwidth_gbps(nbytes: int, seconds: float, world_size: int, iters: int = 1) -> float:
    """GB/s (1e9) of bus bandwidth for `iters` all_reduces of `nbytes` taking `seconds` in all."""
    return iters * nbytes * allreduce_bus_factor(world_size) / max(seconds, 1e-12) / 1e9


def rank_figures(
    samples: Sequence[Sequence[tuple[float, float]]], nbytes: int
) -> tuple[list[float], float]:
    """Per-rank and group GB/s from samples[rank][iter] = (staging s, all_reduce s).

    The all_reduce of one iteration ends together on every rank; a rank that was released
    from the barrier early measures its wait for the others, so the iteration's collective time
    is the shortest any rank measured. A rank's figure uses its own staging plus that shared
    time, median over the iterations (robust to one-off scheduler stalls).
    """
    n, iters = len(samples), len(samples[0])
    coll = [min(samples[r][k][1] for r in range(n)) for k in range(iters)]
    own = [statistics.median(samples[r][k][0] + coll[k] for k in range(iters)) for r in range(n)]
    group = bus_bandwidth_gbps(nbytes, statistics.median(coll), n)
    return [bus_bandwidth_gbps(nbytes, t, n) for t in own], group


@dataclass(frozen=True)
class SlowVerdict:
    """Whether one rank is slow compared with the median of its peers' figures."""

    slow: bool
    own_gbps: float
    peers_median_gbps: float | None
    slow_ranks: tuple[int, ...]


def judge(figures: Sequence[float], rank: int, ratio: float) -> SlowVerdict:
    """Rank r is slow when its figure is below `ratio` x the median of the other ranks' figures."""
    slow_ranks = tuple(r for r in range(len(figures)) if _below(figures, r, ratio))
    own = figures[rank]
    return SlowVerdict(rank in slow_ranks, own, _peers_median(figures, rank), slow_ranks)


def slow_in_every(measurements: Sequence[Sequence[float]], ratio: float) -> tuple[int, ...]:
    """Ranks that `judge` calls slow in every one of `measurements` (each: figures by rank).

    A one-off stall (a descheduled process, another thread holding the GIL) slows one
    measurement; a slow node is slow in each. No measurement: no slow rank.
    """
    if not measurements:
        return ()
    ranks = set(range(len(measurements[0])))
    for figures in measurements:
        ranks &= set(judge(figures, 0, ratio).slow_ranks)
    return tuple(sorted(ranks))


def _peers_median(figures: Sequence[float], rank: int) -> float | None:
    peers = [f for r, f in enumerate(figures) if r != rank]
    return statistics.median(peers) if peers else None


def _below(figures: Sequence[float], rank: int, ratio: float) -> bool:
    median = _peers_median(figures, rank)
    return median is not None and figures[rank] < ratio * median
