"""Collective checks over the warm process group: health (bootcheck), connection, performance.

Per-rank performance figure: each iteration is barrier | stage (copy the buffer in; a
simulated slow rank sleeps here) | barrier | all_reduce. Every rank's samples are gathered,
and a rank's time is its own staging plus the iteration's shared all_reduce time (see
`bandwidth.rank_figures`), so waiting for a late peer is charged to nobody, every rank
computes the same verdicts, and a rank whose own data path is slow gets a low figure. A rank
named slow is measured again (all ranks agree on that from the same gathered samples) and
is reported slow only if it is slow every time, so one scheduler stall evicts nobody.
Defaults are cheap (1 MiB, 5 iterations: tens of ms on gloo); see `CheckParams`.
A slow *link* shared by the ring slows every rank alike; that shows in the group figure and
cannot single out one rank (that needs pairwise tests).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import torch
import torch.distributed as dist

from aegis.checks.bandwidth import judge, rank_figures, slow_in_every
from aegis.checks.group import GroupManager, GroupSetup
from aegis.checks.params import CheckParams, Rendezvous
from aegis.checks.result import COLLECTIVE_CHECKS, CheckResult, CheckType, failed, passed

CheckFn = Callable[[GroupManager, CheckParams, float, float], CheckResult]
OVERRUN_SLACK_S = 0.05  # a collective that fails this close to its deadline ran out of budget


def run_collective_checks(
    groups: GroupManager, checks: Sequence[str], round_id: str, params: CheckParams
) -> list[CheckResult]:
    """Run the requested collective checks in their fixed order, each under its own budget."""
    rdzv = params.rendezvous or Rendezvous()
    results: list[CheckResult] = []
    setup: GroupSetup | None = None
    broken: str | None = None
    for check in (c for c in COLLECTIVE_CHECKS if c in checks):
        t0 = time.monotonic()
        deadline = t0 + params.budget(check)
        if broken is not None:
            results.append(failed(check, f"not run: no process group ({broken})", t0))
            continue
        first = setup is None
        try:
            if setup is None:
                setup = groups.ensure(
                    rdzv, round_id, deadline, params.probe_timeout_s, params.device_index
                )
            result = _CHECKS[check](groups, params, t0, deadline)
        except Exception as exc:
            broken = f"{type(exc).__name__}: {str(exc).strip()[:300]}"
            groups.destroy()
            over = time.monotonic() >= deadline - OVERRUN_SLACK_S
            budget = f"no result within its budget of {params.budget(check):g} s; " if over else ""
            result = failed(
                check,
                f"{budget}collective failed: {broken}",
                t0,
                rank=rdzv.rank,
                world_size=rdzv.world_size,
            )
        results.append(_annotate(result, setup if first else None, params.budget(check)))
    return results


def _health(groups: GroupManager, params: CheckParams, t0: float, deadline: float) -> CheckResult:
    """Bootcheck health: all_reduce + all_gather with every rank's values verified."""
    n, r, dev = groups.world_size, groups.rank, groups.device
    base = torch.arange(4, dtype=torch.float32, device=dev)
    summed = base + 4 * r
    groups.set_timeout(deadline - time.monotonic())
    dist.all_reduce(summed)
    gathered = [torch.empty_like(base) for _ in range(n)]
    dist.all_gather(gathered, base + 4 * r)
    bad = [i for i, g in enumerate(gathered) if not torch.equal(g.cpu(), (base + 4 * i).cpu())]
    if not torch.equal(summed.cpu(), (base * n + 2 * n * (n - 1)).cpu()):
        return failed(CheckType.COLLECTIVE, f"all_reduce sum wrong: {summed.tolist()}", t0)
    if bad:
        return failed(
            CheckType.COLLECTIVE, f"all_gather values wrong from ranks {bad}", t0, bad_ranks=bad
        )
    return passed(CheckType.COLLECTIVE, f"all_reduce + all_gather verified on {n} rank(s)", t0)


def _connection(
    groups: GroupManager, params: CheckParams, t0: float, deadline: float
) -> CheckResult:
    """An all_reduce sees n ranks, and each rank is in the group once (ids are 0..n-1)."""
    n, dev = groups.world_size, groups.device
    groups.set_timeout(deadline - time.monotonic())
    ones = torch.ones(1, device=dev)
    dist.all_reduce(ones)
    if int(ones.item()) != n:
        return failed(CheckType.ALLREDUCE_CONNECTION, f"all_reduce saw {ones.item():g} of {n}", t0)
    ids = [torch.empty(1, device=dev) for _ in range(n)]
    dist.all_gather(ids, torch.full((1,), float(groups.rank), device=dev))
    seen = [int(t.item()) for t in ids]
    if seen != list(range(n)):
        return failed(CheckType.ALLREDUCE_CONNECTION, f"topology incomplete: saw ranks {seen}", t0)
    return passed(CheckType.ALLREDUCE_CONNECTION, f"connected to all {n} rank(s)", t0)


def _performance(
    groups: GroupManager, params: CheckParams, t0: float, deadline: float
) -> CheckResult:
    """Measure every rank's bus bandwidth, share the samples, flag ranks below the peers.

    Every rank gathers every rank's samples and computes the same verdicts, so all of them
    agree whether to measure again: a rank is slow only when it is slow in each of up to
    `params.perf_attempts` measurements (the next one is taken only while a suspect remains).
    """
    n, r, dev = groups.world_size, groups.rank, groups.device
    numel = max(params.perf_bytes // 4, 1)
    nbytes, iters = numel * 4, max(params.perf_iters, 1)
    src, buf = torch.ones(numel), torch.empty(numel, device=dev)
    token = torch.zeros(1, device=dev)
    groups.set_timeout(deadline - time.monotonic())
    dist.all_reduce(buf.copy_(src))  # warm-up
    measurements, group_bw = _measurements(
        groups, params, (src, buf, token), iters, nbytes, deadline
    )
    figures = measurements[-1]
    slow_ranks = slow_in_every(measurements, params.slow_ratio)
    verdict = judge(figures, r, params.slow_ratio)
    details = {
        "busbw_gbps": round(verdict.own_gbps, 4),
        "group_busbw_gbps": round(group_bw, 4),
        "peers_gbps": [round(f, 4) for f in figures],
        "peers_median_gbps": verdict.peers_median_gbps,
        "slow_ranks": list(slow_ranks),
        "slow_ratio": params.slow_ratio,
        "bytes": nbytes,
        "iters": iters,
        "attempts": len(measurements),
    }
    check = CheckType.ALLREDUCE_PERFORMANCE
    if r in slow_ranks:
        k = len(measurements)
        return failed(
            check,
            f"slow: rank {r} of {n} measured {verdict.own_gbps:.3f} GB/s bus bandwidth, below "
            f"{params.slow_ratio:g} x its peers' median {verdict.peers_median_gbps:.3f} GB/s "
            f"(slow in {k} of {k} measurement{'s' if k > 1 else ''})",
            t0,
            **details,
        )
    if n == 1:
        text = f"bus bandwidth {verdict.own_gbps:.3f} GB/s (world of one: no peers to compare)"
        return passed(check, text, t0, **details)
    others = f"; slow rank(s) {list(slow_ranks)}" if slow_ranks else ""
    return passed(check, f"bus bandwidth {verdict.own_gbps:.3f} GB/s{others}", t0, **details)


def _measurements(
    groups: GroupManager,
    params: CheckParams,
    bufs: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    iters: int,
    nbytes: int,
    deadline: float,
) -> tuple[list[list[float]], float]:
    """Every rank's bus bandwidth per measurement (all ranks share their samples), taken
    again while a rank is slow in each so far; and the group's bandwidth in the last one."""
    n, dev = groups.world_size, groups.device
    measurements: list[list[float]] = []
    group_bw = 0.0
    for _ in range(max(params.perf_attempts, 1) if n > 1 else 1):
        own = _samples(groups, params, bufs, iters, deadline)
        mine = torch.tensor(own, dtype=torch.float64, device=dev)
        everyone = [torch.empty_like(mine) for _ in range(n)]
        groups.set_timeout(deadline - time.monotonic())
        dist.all_gather(everyone, mine)
        samples = [[(float(s), float(c)) for s, c in t.cpu().tolist()] for t in everyone]
        figures, group_bw = rank_figures(samples, nbytes)
        measurements.append(figures)
        if not slow_in_every(measurements, params.slow_ratio):
            break
    return measurements, group_bw


def _samples(
    groups: GroupManager,
    params: CheckParams,
    bufs: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    iters: int,
    deadline: float,
) -> list[tuple[float, float]]:
    """(staging s, all_reduce s) per iteration: barrier | stage | barrier | all_reduce.

    Every collective waits at most until `deadline`, so a peer that stalls past the budget
    fails the check at the budget (the worker stays usable) instead of after it.
    """
    src, buf, token = bufs
    dev = buf.device
    out = []
    for _ in range(iters):
        _barrier(groups, token, deadline)
        a = time.perf_counter()
        buf.copy_(src)
        _sync(dev)
        if params.simulates("slow_allreduce"):
            time.sleep(params.slow_sleep_s)
        b = time.perf_counter()
        _barrier(groups, token, deadline)  # waiting for a late stager is charged to nobody
        groups.set_timeout(deadline - time.monotonic())
        c = time.perf_counter()
        dist.all_reduce(buf)
        _sync(dev)
        out.append((b - a, time.perf_counter() - c))
    return out


def _barrier(groups: GroupManager, token: torch.Tensor, deadline: float) -> None:
    """A tiny all_reduce that returns only once every rank has reached it (NCCL included)."""
    groups.set_timeout(deadline - time.monotonic())
    dist.all_reduce(token)
    _sync(token.device)


def _sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def _annotate(result: CheckResult, setup: GroupSetup | None, budget: float) -> CheckResult:
    details = dict(result.details)
    if setup is not None:
        details.update(
            group=setup.status,
            setup_s=round(setup.setup_s, 6),
            backend=setup.backend,
            probe_error=setup.probe_error,
        )
    if result.passed and result.duration_s > budget:
        return CheckResult(
            result.check_type,
            False,
            f"took {result.duration_s:.2f} s, over its budget of {budget:g} s",
            result.timestamp,
            result.duration_s,
            True,
            details,
        )
    return CheckResult(
        result.check_type,
        result.passed,
        result.result,
        result.timestamp,
        result.duration_s,
        result.applicable,
        details,
    )


_CHECKS: dict[str, CheckFn] = {
    CheckType.COLLECTIVE: _health,
    CheckType.ALLREDUCE_CONNECTION: _connection,
    CheckType.ALLREDUCE_PERFORMANCE: _performance,
}
