"""Three real diagnosis workers on loopback: gloo collectives, warm reuse, faults, a dead peer."""

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

# the rounds the agent runs (its order, not TROUBLESHOOT_CHECKS')
AGENT_BOOTCHECK = ("env", "collective", "allreduce_performance")
AGENT_TROUBLESHOOT = (
    "io",
    "runtime",
    "gpu",
    "rdma",
    "allreduce_connection",
    "allreduce_performance",
    "hang",
)
N = 3


def free_port() -> int:
    """A TCP port that was free a moment ago on loopback."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class World:
    """N clients (ranks 0..N-1) sharing one store port."""

    def __init__(self, n: int) -> None:
        self.clients = [DiagnosisClient() for _ in range(n)]
        self.port = free_port()

    def params(self, rank: int, **kw: Any) -> CheckParams:
        rdzv = Rendezvous(port=self.port, rank=rank, world_size=len(self.clients))
        return CheckParams(rendezvous=rdzv, io_bytes=1 << 12, **kw)

    async def round(
        self,
        checks: Sequence[str],
        round_id: str,
        per_rank: Sequence[dict[str, Any]] | None = None,
    ) -> list[dict[str, CheckResult]]:
        per_rank = per_rank or [{}] * len(self.clients)
        runs = [
            c.run(checks, round_id, self.params(r, **per_rank[r]))
            for r, c in enumerate(self.clients)
        ]
        return [{x.check_type: x for x in res} for res in await asyncio.gather(*runs)]


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def world() -> AsyncIterator[World]:
    w = World(N)
    await asyncio.gather(*(c.start() for c in w.clients))
    yield w
    await asyncio.gather(*(c.close() for c in w.clients))


async def test_bootcheck_then_warm_rounds_reuse_the_group(world: World) -> None:
    assert tuple(BOOTCHECK_CHECKS) == AGENT_BOOTCHECK
    assert set(TROUBLESHOOT_CHECKS) == set(AGENT_TROUBLESHOOT)
    boot = await world.round(AGENT_BOOTCHECK, "boot")
    for rank in range(N):
        assert all(r.passed for r in boot[rank].values()), boot[rank]
        assert boot[rank]["collective"].details["group"] == "initialised"
        assert "group" not in boot[rank]["allreduce_performance"].details  # same group
        assert boot[rank]["env"].details["torch"]
    pids = [c.pid for c in world.clients]
    for i in range(2):
        rounds = await world.round(AGENT_TROUBLESHOOT, f"t{i}")
        for rank in range(N):
            res = rounds[rank]
            assert list(res) == list(AGENT_TROUBLESHOOT)
            assert not [r for r in res.values() if r.failed], res
            assert not res["gpu"].applicable and not res["rdma"].applicable
            assert not res["hang"].applicable and "no progress source" in res["hang"].result
            assert res["allreduce_connection"].details["group"] == "reused"
            perf = res["allreduce_performance"]
            assert perf.details["busbw_gbps"] > 0 and len(perf.details["peers_gbps"]) == N
            assert perf.details["slow_ranks"] == []
            assert perf.duration_s < 1.0  # cheap by default
    assert [c.pid for c in world.clients] == pids


async def test_simulated_slow_rank_alone_fails_its_performance_check(world: World) -> None:
    per_rank: list[dict[str, Any]] = [{} for _ in range(N)]
    per_rank[1] = {"simulate": ("slow_allreduce",)}
    res = await world.round(["allreduce_connection", "allreduce_performance"], "slow", per_rank)
    perf = [r["allreduce_performance"] for r in res]
    slow = perf[1]
    assert slow.failed and slow.result.startswith("slow: rank 1 of 3")
    assert "below 0.5 x its peers' median" in slow.result
    assert "slow in 2 of 2 measurements" in slow.result
    for rank in (0, 2):
        assert perf[rank].passed and "slow rank(s) [1]" in perf[rank].result
    assert all(p.details["slow_ranks"] == [1] and p.details["attempts"] == 2 for p in perf)
    assert all(r["allreduce_connection"].passed for r in res)


async def test_slow_ratio_is_configurable(world: World) -> None:
    per_rank: list[dict[str, Any]] = [{"slow_ratio": 0.001} for _ in range(N)]
    per_rank[2]["simulate"] = ("slow_allreduce",)
    res = await world.round(["allreduce_performance"], "ratio", per_rank)
    assert all(r["allreduce_performance"].passed for r in res)  # not 1000x slower
    assert res[0]["allreduce_performance"].details["attempts"] == 1


async def test_simulated_gpu_lost_fails_gpu_check(world: World) -> None:
    per_rank: list[dict[str, Any]] = [{} for _ in range(N)]
    per_rank[0] = {"simulate": ("gpu_lost",)}
    res = await world.round(["gpu", "runtime"], "gpu", per_rank)
    assert res[0]["gpu"].failed and "lost" in res[0]["gpu"].result
    assert res[0]["runtime"].passed
    assert not res[1]["gpu"].applicable


async def test_burn_runs_in_the_warm_worker(world: World) -> None:
    client = world.clients[0]
    pid = client.pid
    t0 = time.monotonic()
    [res] = await client.run(("burn",), "burn", {"burn_seconds": 0.2})
    assert res.passed and res.check_type == "burn", res
    assert res.details["gflops"] > 0 and res.details["iters"] >= 1
    assert res.details["device"] == "cpu" and res.details["elapsed_s"] >= 0.2
    assert "GFLOP/s" in res.result
    assert time.monotonic() - t0 < 10
    [bad] = await client.run(("burn",), "burn2", {"burn_seconds": 0.2, "simulate": ["gpu_lost"]})
    assert bad.failed and "device error during burn" in bad.result
    assert client.pid == pid


async def test_performance_overrun_fails_and_the_next_round_rebuilds(world: World) -> None:
    per_rank: list[dict[str, Any]] = [
        {"budgets": {"allreduce_performance": 0.5}, "probe_timeout_s": 1.0} for _ in range(N)
    ]
    per_rank[1].update(simulate=("slow_allreduce",), slow_sleep_s=0.3)
    pids = [c.pid for c in world.clients]
    res = await world.round(["allreduce_performance"], "overrun", per_rank)
    for r in res:
        perf = r["allreduce_performance"]
        assert perf.failed and "no result within its budget of 0.5 s" in perf.result, perf
        assert perf.duration_s < 0.5 + 0.5  # each collective waits only until the deadline
    assert [c.pid for c in world.clients] == pids  # no check thread overran: workers kept
    again = await world.round(["allreduce_connection", "allreduce_performance"], "after-overrun")
    assert all(r["allreduce_performance"].passed for r in again), again
    assert again[0]["allreduce_connection"].details["group"] == "initialised"


async def test_restarted_peer_rebuilds_the_group(world: World) -> None:
    victim = world.clients[1]
    old = victim.pid
    await victim.kill()
    await victim.start()
    assert victim.pid != old
    res = await world.round(["allreduce_connection"], "rebuilt")
    conn = res[0]["allreduce_connection"]
    assert all(r["allreduce_connection"].passed for r in res)
    assert conn.details["group"] == "initialised"
    assert conn.details["probe_error"]  # the warm group noticed its dead peer and was rebuilt


async def test_killed_peer_fails_within_budget(world: World) -> None:
    survivor, victim = world.clients[0], world.clients[1]
    await victim.kill()
    budget = 1.0
    params = world.params(
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
