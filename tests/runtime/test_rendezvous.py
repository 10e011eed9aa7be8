"""Node 0's rendezvous and a joining node, on loopback: the CA is taken only from a holder of
the join secret, joins are checked, a peer's bytes never end the server, a lost node is
reported once; and `aegis run` waits for missing nodes only as long as it was told."""

from __future__ import annotations

import asyncio
import os
import ssl
import subprocess
import time
from pathlib import Path

import pytest

from aegis.protocol import rendezvous as wire
from aegis.runtime.launcher.control_plane import free_port
from aegis.runtime.launcher.rendezvous import (
    Link,
    RendezvousError,
    RendezvousServer,
    Session,
    discover_ca,
    join,
)
from aegis.runtime.transport.tls import JobTls, unverified_client_context

from ..support import AEGIS

SECRET = b"the-job-secret-0123456789"
HOST = "127.0.0.1"


class Node0:
    """A rendezvous server recording what it was told."""

    def __init__(self, secret: bytes = SECRET, host_timeout: float = 30.0) -> None:
        self.tls = JobTls.generate([HOST])
        self.refuse: str | None = None
        self.messages: list[tuple[str, wire.NodeMessage]] = []
        self.lost: list[tuple[str, str]] = []
        self.server = RendezvousServer(
            self.tls, secret, self.admit, self.message, self.gone, host_timeout
        )
        self.port = free_port()

    def admit(self, msg: wire.Join, link: Link) -> wire.Welcome | str:
        if self.refuse is not None:
            return self.refuse
        return wire.Welcome("train", "team", f"node-{msg.node_rank}", False, 30.0)

    async def message(self, session: Session, msg: wire.NodeMessage) -> None:
        self.messages.append((session.name, msg))

    async def gone(self, session: Session, why: str) -> None:
        self.lost.append((session.name, why))

    async def __aenter__(self) -> Node0:
        await self.server.start(HOST, self.port)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.server.close()


def request(rank: int = 1, secret: bytes = SECRET) -> wire.Join:
    return wire.Join(wire.join_token(secret), rank, "h", 1)


async def until(cond: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def test_a_node_with_the_secret_gets_the_ca_and_joins() -> None:
    async with Node0() as node0:
        ca = await discover_ca(HOST, node0.port, SECRET, time.monotonic() + 5)
        assert ca == node0.tls.ca_pem
        link, welcome = await join(HOST, node0.port, ca, request(), 5.0)
        assert welcome.node == "node-1"
        await link.send(wire.Exited("train-worker-1", "inc", 3))
        await until(lambda: node0.messages)
        assert node0.messages == [("node-1", wire.Exited("train-worker-1", "inc", 3))]
        await link.close()
        await until(lambda: node0.lost)
        assert node0.lost[0][0] == "node-1" and "closed" in node0.lost[0][1]


async def test_the_ca_of_a_server_without_the_secret_is_refused() -> None:
    async with Node0(secret=b"another-jobs-secret-000") as impostor:
        with pytest.raises(RendezvousError, match="does not hold this job's join secret"):
            await discover_ca(HOST, impostor.port, SECRET, time.monotonic() + 5)


async def test_a_join_without_the_secret_or_refused_says_why() -> None:
    async with Node0() as node0:
        ca = node0.tls.ca_pem
        with pytest.raises(RendezvousError, match="wrong join token"):
            await join(HOST, node0.port, ca, request(secret=b"guessed-secret-0000"), 5.0)
        node0.refuse = "node rank 1 already joined from 10.0.0.2"
        with pytest.raises(RendezvousError, match="already joined"):
            await join(HOST, node0.port, ca, request(), 5.0)
        other = JobTls.generate([HOST]).ca_pem  # a CA that did not sign node 0's certificate
        with pytest.raises(RendezvousError, match="did not sign"):
            await join(HOST, node0.port, other, request(), 5.0)
        assert node0.lost == [] and node0.messages == []


async def test_a_node_waits_for_node_0_only_until_its_deadline() -> None:
    port = free_port()
    said: list[str] = []
    started = time.monotonic()
    with pytest.raises(RendezvousError, match="did not answer in time"):
        await discover_ca(HOST, port, SECRET, time.monotonic() + 1.5, said.append)
    assert time.monotonic() - started < 4.0
    assert said == ["connection refused"]  # said once, not at every try


async def test_garbage_does_not_end_the_server() -> None:
    async with Node0() as node0:
        # plain TCP bytes to a TLS port
        _, writer = await asyncio.open_connection(HOST, node0.port)
        writer.write(b"GET / HTTP/1.0\r\n\r\n")
        writer.close()
        # TLS, then not JSON; then a line over the limit; then a message out of turn
        for junk in (
            b"\x00\xff{not json\n",
            b"x" * (wire.MAX_LINE + 10) + b"\n",
            wire.encode(wire.Exited("p", "i", 1)),
        ):
            reader, writer = await asyncio.open_connection(
                HOST, node0.port, ssl=unverified_client_context(), server_hostname=HOST
            )
            writer.write(junk)
            await writer.drain()
            assert await asyncio.wait_for(reader.read(), 12) == b""  # closed on us
            writer.close()
        ca = await discover_ca(HOST, node0.port, SECRET, time.monotonic() + 5)
        link, _ = await join(HOST, node0.port, ca, request(), 5.0)
        await link.close()


async def test_a_silent_node_is_lost_after_the_host_timeout() -> None:
    async with Node0(host_timeout=1.0) as node0:
        ctx = ssl.create_default_context(cadata=node0.tls.ca_pem.decode())
        _reader, writer = await asyncio.open_connection(
            HOST, node0.port, ssl=ctx, server_hostname=HOST
        )
        writer.write(wire.encode(request()))  # joins, then never says a word
        await writer.drain()
        joined = time.monotonic()
        await until(lambda: node0.lost, 10.0)
        assert "nothing from" in node0.lost[0][1]
        assert 0.9 < time.monotonic() - joined < 5.0
        writer.close()


def _run(argv: list[str], tmp: Path, timeout: float) -> tuple[int, str, float]:
    env = {**os.environ, "AEGIS_JOIN_SECRET": SECRET.decode()}
    started = time.monotonic()
    done = subprocess.run(
        [*AEGIS, "run", *argv], env=env, capture_output=True, text=True, timeout=timeout, cwd=tmp
    )
    return done.returncode, done.stderr, time.monotonic() - started


def test_a_node_without_node_0_gives_up_at_its_join_timeout(tmp_path: Path) -> None:
    port = free_port()
    code, err, took = _run(
        [
            "--nnodes",
            "2",
            "--node-rank",
            "1",
            "--rdzv-endpoint",
            f"{HOST}:{port}",
            "--join-timeout",
            "2",
            "--",
            "true",
        ],
        tmp_path,
        60,
    )
    assert code == 1, err
    assert f"waiting for node 0 at {HOST}:{port}" in err and "did not answer in time" in err
    assert took < 20.0


def test_node_0_without_its_nodes_fails_at_the_join_timeout(tmp_path: Path) -> None:
    port = free_port()
    code, err, took = _run(
        [
            "--nnodes",
            "3",
            "--node-rank",
            "0",
            "--rdzv-endpoint",
            f"{HOST}:{port}",
            "--join-timeout",
            "3",
            "--state-dir",
            str(tmp_path / "state"),
            "--",
            "true",
        ],
        tmp_path,
        90,
    )
    assert code == 1, err
    assert "node rank(s) 1, 2 did not join within 3 s (--join-timeout): the job fails" in err
    assert took < 45.0
