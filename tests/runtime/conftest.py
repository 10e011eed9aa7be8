"""Fixtures for the runtime tests: a real nats-server per test module, two jobs in it, job A's
controller, and `aegis run` jobs (tests/support)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from aegis.runtime.transport.auth import JobAccount, Operator
from aegis.runtime.transport.nats_server import NatsServer

from ..support import RunningController, running_controller
from ..support.launch import aegis_run

__all__ = ["aegis_run"]  # the launcher fixture, for every runtime test
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


PODS_A = ("train-a-worker-0", "train-a-worker-1")


@pytest_asyncio.fixture(loop_scope="module")
async def controller(
    nats_server: NatsServer, job_a: JobAccount, tmp_path: Path
) -> AsyncIterator[RunningController]:
    """Job A's controller (2 pods, MaxRetry 2) serving on the module's nats-server."""
    async with running_controller(nats_server.url, job_a, tmp_path / "status.json", PODS_A) as c:
        yield c
