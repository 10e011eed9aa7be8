"""Two real diagnosis workers on loopback: gloo collectives, warm reuse, faults, a dead peer."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
import pytest_asyncio

from aegis.checks import (
    BOOTCHECK_CHECKS,
    TROUBLESHOOT_CHECKS,
    CheckParams,
    CheckResult,
    DiagnosisClient,
    Rendezvous,
)

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(120)]


def free_port() -> int:
    """A TCP port that was free a moment ago on loopback."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Pair:
    """Two clients (ranks 0 and 1) sharing one store port."""

    def __init__(self) -> None:
        self.clients = [DiagnosisClient(), DiagnosisClient()]
        self.port = free_port()

    def params(self, rank: int, **kw: Any) -> CheckParams:
        rdzv = Rendezvous(port=self.port, rank=rank, world_size=2)
        return CheckParams(
            rendezvous=rdzv, perf_bytes=1 << 16, perf_iters=5, io_bytes=1 << 12, **kw
        )

    async def round(
        self, checks: Sequence[str], round_id: str, per_rank: Sequence[dict[str, Any]] = ({}, {})
    ) -> list[dict[str, CheckResult]]:
        runs = [
            c.run(checks, round_id, self.params(r, **per_rank[r]))
            for r, c in enumerate(self.clients)
        ]
        return [{x.check_type: x for x in res} for res in await asyncio.gather(*runs)]


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def pair() -> AsyncIterator[Pair]:
    p = Pair()
    await asyncio.gather(*(c.start() for c in p.clients))
    yield p
    await asyncio.gather(*(c.close() for c in p.clients))


async def test_bootcheck_then_warm_round_reuses_group(pair: Pair) -> None:
    boot = await pair.round(BOOTCHECK_CHECKS, "boot")
    for rank in (0, 1):
        assert all(r.passed for r in boot[rank].values()), boot[rank]
        assert boot[rank]["collective"].details["group"] == "initialised"
        assert boot[rank]["env"].details["torch"]
    pids = [c.pid for c in pair.clients]
    rounds = await pair.round(TROUBLESHOOT_CHECKS, "t1")
    for rank in (0, 1):
        res = rounds[rank]
        assert not [r for r in res.values() if r.failed], res
        assert not res["gpu"].applicable and not res["rdma"].applicable
        assert res["allreduce_connection"].details["group"] == "reused"
        assert res["allreduce_performance"].details["busbw_gbps"] > 0
    assert [c.pid for c in pair.clients] == pids


async def test_simulated_slow_rank_is_flagged(pair: Pair) -> None:
    res = await pair.round(
        ["allreduce_performance"],
        "slow",
        [{}, {"simulate": ("slow_allreduce",), "slow_sleep_s": 0.08}],
    )
    slow, fast = res[1]["allreduce_performance"], res[0]["allreduce_performance"]
    assert not slow.passed and slow.result.startswith("slow")
    assert fast.passed
    assert slow.details["slow_ranks"] == fast.details["slow_ranks"] == [1]


async def test_simulated_gpu_lost_fails_gpu_check(pair: Pair) -> None:
    res = await pair.round(["gpu", "runtime"], "gpu", [{"simulate": ("gpu_lost",)}, {}])
    assert res[0]["gpu"].failed and "lost" in res[0]["gpu"].result
    assert res[0]["runtime"].passed
    assert not res[1]["gpu"].applicable


async def test_restarted_peer_rebuilds_the_group(pair: Pair) -> None:
    victim = pair.clients[1]
    old = victim.pid
    await victim.kill()
    await victim.start()
    assert victim.pid != old
    res = await pair.round(["allreduce_connection"], "rebuilt")
    conn = res[0]["allreduce_connection"]
    assert conn.passed and res[1]["allreduce_connection"].passed
    assert conn.details["group"] == "initialised"
    assert conn.details["probe_error"]  # the warm group noticed its dead peer and was rebuilt


async def test_killed_peer_fails_within_budget(pair: Pair) -> None:
    survivor, victim = pair.clients
    await victim.kill()
    budget = 1.0
    params = pair.params(
        0,
        budgets={"allreduce_connection": budget, "allreduce_performance": budget},
        probe_timeout_s=1.0,
    )
    t0 = time.monotonic()
    res = await survivor.run(["allreduce_connection", "allreduce_performance"], "dead", params)
    elapsed = time.monotonic() - t0
    assert [r.failed for r in res] == [True, True]
    assert res[0].duration_s < budget + 0.5
    assert elapsed < 2 * budget + 1.0
    assert survivor.running
