"""An agent service on a real nats-server, as its pod (its own credential), for tests that
drive its parts (the join, the heartbeat loop) directly."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aegis.protocol.environment import AgentConfig
from aegis.runtime.agent.service import AgentService
from aegis.runtime.transport.auth import JobAccount, Operator, UserCredentials, new_user_keypair
from aegis.runtime.transport.bus import Bus
from aegis.runtime.transport.nats_server import NatsServer


class NoDiagnosis:
    """No diagnosis worker: what these tests drive does not need one."""

    async def start(self) -> None:
        return None


@asynccontextmanager
async def job_nats(namespace: str, job: str) -> AsyncIterator[tuple[NatsServer, JobAccount]]:
    """A real nats-server in operator mode with one job's account."""
    operator = Operator()
    account = operator.create_job_account(namespace, job)
    async with NatsServer(operator, [account]) as server:
        yield server, account


async def connected_agent(server: NatsServer, job: JobAccount, cfg: AgentConfig) -> AgentService:
    """An agent connected as its pod `cfg.pod` (its own credential), not yet joined; the
    caller closes `agent.bus`."""
    agent = AgentService(cfg, diag=NoDiagnosis())  # type: ignore[arg-type]
    kp = new_user_keypair()
    jwt = job.worker_jwt(kp.public_key.decode(), cfg.pod, cfg.incarnation)
    creds = UserCredentials(jwt, bytes(kp.seed))
    agent.bus = await Bus.connect(
        server.url, creds, name=cfg.pod, inbox_prefix=job.subjects.inbox_prefix(cfg.pod)
    )
    return agent
