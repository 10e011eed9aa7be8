"""Time a healthy diagnosis round: warm workers (torch imported at bootcheck) vs cold ones.

    python bench/diagnosis_round.py [--ranks 2 4] [--rounds 7]

Warm: the median of several full rounds (the seven checks, real gloo collectives across all
ranks) through already-started workers that keep their process group. Cold: start fresh
workers (each imports torch), run one round, stop them -- what a checker without a warm
worker pays after every crash.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import time

from aegis.checks import (
    BOOTCHECK_CHECKS,
    TROUBLESHOOT_CHECKS,
    CheckParams,
    DiagnosisClient,
    Rendezvous,
)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _round(
    clients: list[DiagnosisClient], checks: tuple[str, ...], rid: str, port: int
) -> float:
    n = len(clients)
    t0 = time.perf_counter()
    runs = [
        c.run(checks, rid, CheckParams(rendezvous=Rendezvous(port=port, rank=r, world_size=n)))
        for r, c in enumerate(clients)
    ]
    for res in await asyncio.gather(*runs):
        bad = [r for r in res if r.failed]
        if bad:
            raise SystemExit(f"round {rid} not healthy: {bad}")
    return time.perf_counter() - t0


async def warm(n: int, rounds: int) -> float:
    clients = [DiagnosisClient() for _ in range(n)]
    await asyncio.gather(*(c.start() for c in clients))
    port = _port()
    try:
        await _round(clients, BOOTCHECK_CHECKS, "boot", port)
        times = [await _round(clients, TROUBLESHOOT_CHECKS, f"t{i}", port) for i in range(rounds)]
    finally:
        await asyncio.gather(*(c.close() for c in clients))
    return statistics.median(times)


async def cold(n: int) -> float:
    t0 = time.perf_counter()
    clients = [DiagnosisClient() for _ in range(n)]
    await asyncio.gather(*(c.start() for c in clients))
    try:
        await _round(clients, TROUBLESHOOT_CHECKS, "cold", _port())
    finally:
        await asyncio.gather(*(c.close() for c in clients))
    return time.perf_counter() - t0


async def main(ranks: list[int], rounds: int) -> None:
    print(f"{'ranks':>5}  {'warm round':>11}  {'cold round':>11}  {'cold/warm':>9}")
    for n in ranks:
        w = await warm(n, rounds)
        c = await cold(n)
        print(f"{n:>5}  {w * 1000:>8.1f} ms  {c * 1000:>8.1f} ms  {c / w:>8.1f}x")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    asyncio.run(main(a.ranks, a.rounds))
