"""aegis.testing.lean_nats against a real nats-server: it authenticates with the signed nonce,
the server holds it to its pod's permissions, and it takes messages split across reads."""

from __future__ import annotations

import asyncio

import pytest

from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.runtime.transport.auth import Operator, new_user_keypair
from aegis.runtime.transport.bus import Bus
from aegis.runtime.transport.nats_server import NatsServer
from aegis.testing.lean_nats import LeanNats, NatsError

from ..support import wait_for_async


@pytest.mark.timeout(60)
async def test_the_lean_client_authenticates_for_real_and_is_held_to_its_pod() -> None:
    op = Operator()
    job = op.create_job_account("default", "lean")
    pod, other = "lean-worker-0", "lean-worker-1"
    kp = new_user_keypair()
    jwt = job.worker_jwt(kp.public_key.decode(), pod, "inc-1")
    got: list[tuple[str, bytes]] = []
    async with NatsServer(op, [job]) as nats:
        host, port = nats.url.removeprefix("nats://").rsplit(":", 1)
        conn = await LeanNats.connect(
            host, int(port), jwt, bytes(kp.seed), pod, lambda s, p: got.append((s, p))
        )
        conn.sub(job.subjects.master, 1)
        await conn.ping()  # allowed: no -ERR
        assert conn.errors == []
        conn.pub(job.subjects.report(other, "inc-1"), b"{}")  # another pod's subject
        await conn.ping()
        assert any("Permissions Violation" in e for e in conn.errors), conn.errors
        # an order from the controller reaches it, whole
        controller = await Bus.connect(nats.url, job.controller_credentials(), name="ctl")
        order = Message("lean", "default", "master", MessageType.ORDER, MessagePhase.COMMAND,
                        {"pad": "x" * 100_000}, 0.0, 1)  # fmt: skip
        await controller.publish(job.subjects.master, order)
        await controller.flush()
        await wait_for_async(lambda: bool(got), 10, "the order")
        assert got == [(job.subjects.master, order.encode())]
        await controller.close()
        conn.close()
        await asyncio.wait_for(conn.closed.wait(), 5)
        # a JWT signed for another key cannot be used with this seed (the nonce check)
        stranger = new_user_keypair()
        with pytest.raises(NatsError):
            await LeanNats.connect(host, int(port), jwt, bytes(stranger.seed), pod, print)
