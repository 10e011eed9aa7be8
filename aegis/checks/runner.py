"""Runs one diagnosis round inside the worker: local checks concurrently, collectives in order."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

from aegis.checks.burn import check_burn
from aegis.checks.collective import run_collective_checks
from aegis.checks.device import check_gpu, check_runtime
from aegis.checks.environment import check_env
from aegis.checks.group import GroupManager
from aegis.checks.local import check_hang, check_io, check_rdma
from aegis.checks.params import CheckParams
from aegis.checks.result import COLLECTIVE_CHECKS, CheckResult, CheckType, failed

LocalCheck = Callable[[CheckParams], CheckResult]
LOCAL_CHECKS: dict[str, LocalCheck] = {
    CheckType.IO: check_io,
    CheckType.GPU: check_gpu,
    CheckType.RUNTIME: check_runtime,
    CheckType.RDMA: check_rdma,
    CheckType.HANG: check_hang,
    CheckType.ENV: check_env,
    CheckType.BURN: check_burn,
}
GRACE_S = 0.5  # slack past a budget before a check thread counts as stuck


class RoundRunner:
    """Holds the warm process group and a thread pool across rounds."""

    def __init__(self, simulated: Sequence[str] = ()) -> None:
        self.groups = GroupManager()
        self.simulated = tuple(simulated)
        self.tainted = False  # a check thread overran its budget: the worker should be replaced
        self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="aegis-check")

    def run(self, checks: Sequence[str], round_id: str, params: CheckParams) -> list[CheckResult]:
        """Results in the order of `checks`; a budget overrun is a failed result."""
        params = params.with_simulated(self.simulated)
        start = time.monotonic()
        coll = [c for c in checks if c in COLLECTIVE_CHECKS]
        futures: list[tuple[list[str], float, Future[list[CheckResult]]]] = []
        if coll:
            fut = self._pool.submit(run_collective_checks, self.groups, coll, round_id, params)
            futures.append((coll, sum(params.budget(c) for c in coll), fut))
        for c in checks:
            if c not in COLLECTIVE_CHECKS:
                futures.append(([c], params.budget(c), self._pool.submit(_one, c, params)))
        by_name: dict[str, CheckResult] = {}
        for names, budget, fut in futures:
            for r in self._collect(names, budget, fut, start):
                by_name[r.check_type] = r
        return [by_name[c] for c in checks]

    def _collect(
        self, names: list[str], budget: float, fut: Future[list[CheckResult]], start: float
    ) -> list[CheckResult]:
        try:
            return fut.result(timeout=max(start + budget + GRACE_S - time.monotonic(), 0.0))
        except FutureTimeout:
            self.tainted = True
            return [failed(n, f"no answer within its budget of {budget:g} s", start) for n in names]
        except Exception as exc:
            return [failed(n, f"check crashed: {type(exc).__name__}: {exc}", start) for n in names]

    def close(self) -> None:
        """Destroy the group; threads stuck in a check are left to the process exit."""
        self.groups.destroy()
        self._pool.shutdown(wait=False, cancel_futures=True)


def _one(check: str, params: CheckParams) -> list[CheckResult]:
    t0 = time.monotonic()
    result = LOCAL_CHECKS[check](params)
    budget = params.budget(check)
    if result.passed and result.applicable and result.duration_s > budget:
        return [
            failed(
                check,
                f"took {result.duration_s:.2f} s, over its budget of {budget:g} s",
                t0,
                **result.details,
            )
        ]
    return [result]
