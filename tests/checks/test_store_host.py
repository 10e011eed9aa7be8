"""The warm diagnosis worker hosts the training's rendezvous store (torchrun's agent store)."""

from __future__ import annotations

import asyncio
import socket
import time
from datetime import timedelta

import pytest
import torch.distributed as dist

from aegis.checks import DiagnosisClient

pytestmark = pytest.mark.timeout(120)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def client(port: int, timeout_s: float = 5.0) -> dist.TCPStore:
    return dist.TCPStore("127.0.0.1", port, 2, False, timedelta(seconds=timeout_s))


def listened(port: int) -> bool:
    """Whether something listens on `port` (connections to a closed listener may linger)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("", port))
            s.listen()
        except OSError:
            return True
        return False


async def test_a_rank_finds_the_store_up_and_the_next_one_replaces_it() -> None:
    async with DiagnosisClient() as diag:
        first, second = free_port(), free_port()
        assert await diag.host_store("127.0.0.1", first, 2) is None
        t0 = time.monotonic()
        store = client(first)  # no server to wait for: no connect backoff
        assert time.monotonic() - t0 < 0.5
        store.set("k", "v")
        assert client(first).get("k") == b"v"
        assert await diag.host_store("127.0.0.1", second, 2) is None
        assert client(second).add("n", 1) == 1
        assert not listened(first)  # one store at a time: the first one is closed
        assert listened(second)
        assert await diag.host_store("127.0.0.1", 0, 0) is None  # stop hosting
        assert not listened(second)


async def test_a_taken_port_or_a_busy_worker_is_a_reason_not_a_store() -> None:
    with socket.socket() as taken:
        taken.bind(("", 0))
        taken.listen()
        port = taken.getsockname()[1]
        async with DiagnosisClient() as diag:
            why = await diag.host_store("127.0.0.1", port, 2)
            assert why is not None and "cannot host it" in why
            assert diag.running  # the worker is still there for the next round
            busy = asyncio.create_task(diag.run(["hang"], "r1"))
            await asyncio.sleep(0)
            assert await diag.host_store("127.0.0.1", free_port(), 2) == (
                "the diagnosis worker is not idle"
            )
            await busy
    idle = DiagnosisClient()  # never started
    assert await idle.host_store("127.0.0.1", free_port(), 2) == "the diagnosis worker is not idle"


async def test_a_store_asked_while_the_worker_warms_up_waits_for_nobody() -> None:
    """A resumed job's RunCommand order can come before the warm worker has imported torch:
    the agent asks it to host the store while `start()` still waits for its "ready" line.
    Both read the worker's stdout; before the lock covered the start, the second reader
    raised `RuntimeError: readuntil() called while another coroutine is already waiting`
    (the agent then exited as if its node were broken)."""
    diag = DiagnosisClient()
    warm = asyncio.create_task(diag.start())
    try:
        while not diag.running:  # spawned, importing torch (seconds): not ready yet
            await asyncio.sleep(0.005)
        assert await diag.host_store("127.0.0.1", free_port(), 2) == (
            "the diagnosis worker is not idle"
        )
        await warm  # the start was not disturbed
        port = free_port()
        assert await diag.host_store("127.0.0.1", port, 2) is None
        assert listened(port)
    finally:
        warm.cancel()
        await diag.close()
