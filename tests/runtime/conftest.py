"""Fixtures for the runtime tests: a real nats-server per test module, two jobs in it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import pytest_asyncio

from aegis.runtime.errors import BusError
from aegis.runtime.messages import Message
from aegis.runtime.transport.auth import JobAccount, Operator
from aegis.runtime.transport.bus import Bus
from aegis.runtime.transport.nats_server import NatsServer

NAMESPACE = "team"


@pytest.fixture(scope="module")
def operator() -> Operator:
    """A fresh trust root for the module."""
    return Operator()


@pytest.fixture(scope="module")
def job_a(operator: Operator) -> JobAccount:
    """The job whose workers the tests play."""
    return operator.create_job_account(NAMESPACE, "train-a")


@pytest.fixture(scope="module")
def job_b(operator: Operator) -> JobAccount:
    """Another job on the same server, which job A's workers must not reach."""
    return operator.create_job_account(NAMESPACE, "train-b")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def nats_server(
    operator: Operator, job_a: JobAccount, job_b: JobAccount
) -> AsyncIterator[NatsServer]:
    """A real nats-server in operator mode on a free loopback port, both jobs preloaded."""
    async with NatsServer(operator, [job_a, job_b]) as server:
        yield server


WaitUntil = Callable[..., Awaitable[None]]


async def _wait_until(cond: Callable[[], bool], timeout: float = 5.0, what: str = "") -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or cond}")
        await asyncio.sleep(0.01)


@pytest.fixture
def wait_until() -> WaitUntil:
    """`await wait_until(cond, timeout, what)`: poll a condition, fail after `timeout` s."""
    return _wait_until


async def first_request(bus: Bus, subject: str, m: Message) -> Message:
    """The first request to a service, retried (bounded) until it has subscribed."""
    for _ in range(100):
        try:
            return await bus.request(subject, m, 0.1)
        except BusError:
            continue
    raise AssertionError("the service never answered")
