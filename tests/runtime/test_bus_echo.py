"""The bus's own round trip (issue 14): a frozen nats-server keeps the TCP connection up, so the
connection looks fine, but the controller's probe to itself stops coming back until the server
runs again. The heartbeat watch declares pods lost only while something comes through."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from aegis.runtime.errors import BusError
from aegis.runtime.transport.auth import Operator
from aegis.runtime.transport.bus import Bus
from aegis.runtime.transport.nats_server import NatsServer

from ..support import freeze, wait_for_async


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
            freeze(pid)
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


async def test_a_flush_given_up_on_leaves_the_connection_working() -> None:
    """nats-py's own flush timeout leaves the cancelled PING waiter queued, and the late PONG
    then broke the connection's read loop (1,000-agent bench runs hung in BootChecking, their
    orders never read): a flush the bus stopped waiting for must cost nothing."""
    operator = Operator()
    job = operator.create_job_account("team", "flush")
    async with NatsServer(operator, [job]) as server:
        bus = await Bus.connect(server.url, job.controller_credentials(), name="controller")
        try:
            pid = server._proc.pid if server._proc is not None else None
            assert pid is not None
            freeze(pid)
            try:
                with pytest.raises(BusError):
                    await bus.flush(timeout=0.5)
            finally:
                os.kill(pid, signal.SIGCONT)
            for _ in range(3):  # the late PONG, then fresh round trips
                await bus.flush(timeout=10)
            await bus.echo()
            await wait_for_async(lambda: bus.echoed_at, 10, "a probe back after the late PONG")
        finally:
            await bus.close()
