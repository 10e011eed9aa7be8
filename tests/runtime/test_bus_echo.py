"""The bus's own round trip (issue 14): a frozen nats-server keeps the TCP connection up, so the
connection looks fine, but the controller's probe to itself stops coming back until the server
runs again. The heartbeat watch declares pods lost only while something comes through."""

from __future__ import annotations

import asyncio
import os
import signal

from aegis.runtime.transport.auth import Operator
from aegis.runtime.transport.bus import Bus
from aegis.runtime.transport.nats_server import NatsServer

from ..support import wait_for_async


async def test_a_frozen_server_stops_the_probe_and_a_running_one_returns_it() -> None:
    operator = Operator()
    job = operator.create_job_account("team", "echo")
    async with NatsServer(operator, [job]) as server:
        bus = await Bus.connect(server.url, job.controller_credentials(), name="controller")
        try:
            assert bus.echoed_at is None  # no probe sent yet
            await bus.echo()
            first = await wait_for_async(lambda: bus.echoed_at, 10, "the first probe back")
            assert first is not None
            pid = server._proc.pid if server._proc is not None else None
            assert pid is not None
            os.kill(pid, signal.SIGSTOP)
            try:
                for _ in range(5):  # 1 s of probes into a frozen server
                    await bus.echo()
                    await asyncio.sleep(0.2)
                assert bus.connected  # the freeze is not seen as a disconnect...
                assert bus.echoed_at == first  # ...but nothing came back
            finally:
                os.kill(pid, signal.SIGCONT)
            await bus.echo()
            await wait_for_async(
                lambda: (bus.echoed_at or 0) > first, 10, "a probe back once the server runs"
            )
        finally:
            await bus.close()


async def test_a_probe_on_a_closed_bus_is_not_an_error() -> None:
    operator = Operator()
    job = operator.create_job_account("team", "echo2")
    async with NatsServer(operator, [job]) as server:
        bus = await Bus.connect(server.url, job.controller_credentials())
        await bus.close()
        await bus.echo()  # nothing sent, nothing raised
        assert bus.echoed_at is None
