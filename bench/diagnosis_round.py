"""Time healthy diagnosis rounds through warm workers, beside a cold round (fresh workers).

    python bench/diagnosis_round.py [--ranks 2 4] [--rounds 20] [--no-cold]

Per world size: the agent's bootcheck ("env", "collective", "allreduce_performance"; it builds
the process group), then `--rounds` troubleshoot rounds of all seven checks ("io", "runtime",
"gpu", "rdma", "allreduce_connection", "allreduce_performance", "hang"; real gloo collectives
over loopback, default parameters) through the same already-started workers, which keep their
process group. A round's time is from sending it to every rank until the last rank answered.
Printed: median and p90 of the troubleshoot rounds, the allreduce_performance check's own
median, and how many rounds were not healthy (any failed check; each is printed). Cold: start
fresh workers (each imports torch), run one troubleshoot round, stop them -- what a checker
without a warm worker pays after every crash.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import sys
import time
from dataclasses import dataclass

from aegis.checks import CheckParams, CheckResult, DiagnosisClient, Rendezvous

BOOTCHECK = ("env", "collective", "allreduce_performance")
TROUBLESHOOT = (
    "io",
    "runtime",
    "gpu",
    "rdma",
    "allreduce_connection",
    "allreduce_performance",
    "hang",
)


@dataclass
class Figures:
    """One world size's measurements."""

    ranks: int
    boot_s: float
    rounds_s: list[float]
    perf_s: list[float]
    unhealthy: int
    cold_s: float | None = None


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _round(
    clients: list[DiagnosisClient], checks: tuple[str, ...], rid: str, port: int
) -> tuple[float, list[list[CheckResult]]]:
    n = len(clients)
    t0 = time.perf_counter()
    runs = [
        c.run(checks, rid, CheckParams(rendezvous=Rendezvous(port=port, rank=r, world_size=n)))
        for r, c in enumerate(clients)
    ]
    results = await asyncio.gather(*runs)
    return time.perf_counter() - t0, list(results)


def _failures(rid: str, results: list[list[CheckResult]]) -> bool:
    bad = [(rank, r) for rank, res in enumerate(results) for r in res if r.failed]
    for rank, r in bad:
        print(f"  round {rid} rank {rank}: {r.check_type} failed: {r.result}", file=sys.stderr)
    return bool(bad)


async def warm(n: int, rounds: int) -> Figures:
    clients = [DiagnosisClient() for _ in range(n)]
    await asyncio.gather(*(c.start() for c in clients))
    port = _port()
    try:
        boot_s, boot = await _round(clients, BOOTCHECK, "boot", port)
        if _failures("boot", boot):
            raise SystemExit(f"bootcheck of {n} ranks failed; nothing to measure")
        times, perf, unhealthy = [], [], 0
        for i in range(rounds):
            t, results = await _round(clients, TROUBLESHOOT, f"t{i}", port)
            times.append(t)
            perf.append(
                max(r.duration_s for res in results for r in res if r.check_type == TROUBLESHOOT[5])
            )
            unhealthy += _failures(f"t{i}", results)
    finally:
        await asyncio.gather(*(c.close() for c in clients))
    return Figures(n, boot_s, times, perf, unhealthy)


async def cold(n: int) -> float:
    t0 = time.perf_counter()
    clients = [DiagnosisClient() for _ in range(n)]
    await asyncio.gather(*(c.start() for c in clients))
    try:
        _, results = await _round(clients, TROUBLESHOOT, "cold", _port())
        _failures("cold", results)
    finally:
        await asyncio.gather(*(c.close() for c in clients))
    return time.perf_counter() - t0


def p90(xs: list[float]) -> float:
    """The 90th percentile (inclusive method; the one value when there is one)."""
    return xs[0] if len(xs) == 1 else statistics.quantiles(xs, n=10, method="inclusive")[-1]


async def main(ranks: list[int], rounds: int, with_cold: bool) -> int:
    head = (
        f"{'ranks':>5}  {'rounds':>6}  {'median':>9}  {'p90':>9}  {'max':>9}  "
        f"{'perf med':>9}  {'boot':>9}  {'unhealthy':>9}"
    )
    print(head + (f"  {'cold':>9}  {'cold/warm':>9}" if with_cold else ""), flush=True)
    bad = 0
    for n in ranks:
        f = await warm(n, rounds)
        f.cold_s = await cold(n) if with_cold else None
        med = statistics.median(f.rounds_s)
        line = (
            f"{n:>5}  {len(f.rounds_s):>6}  {_ms(med)}  {_ms(p90(f.rounds_s))}  "
            f"{_ms(max(f.rounds_s))}  {_ms(statistics.median(f.perf_s))}  {_ms(f.boot_s)}  "
            f"{f.unhealthy:>9}"
        )
        if f.cold_s is not None:
            line += f"  {_ms(f.cold_s)}  {f.cold_s / med:>8.1f}x"
        print(line, flush=True)
        bad += f.unhealthy
    return 1 if bad else 0


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:>6.1f} ms"


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--no-cold", action="store_true", help="skip the cold-round comparison")
    a = ap.parse_args()
    sys.exit(asyncio.run(main(a.ranks, max(a.rounds, 1), not a.no_cold)))
