"""DiagnosisClient against fake workers: a silent worker is killed and replaced, a dying one too."""

from __future__ import annotations

import stat
import time
from pathlib import Path

import pytest

from aegis.checks import DiagnosisClient, WorkerError

READY = 'echo \'not protocol\'; echo \'{"event": "ready", "pid": \'$$\', "torch": "x"}\''


def fake(tmp_path: Path, name: str, body: str) -> str:
    """An executable that stands in for `python -m aegis.checks.worker`."""
    path = tmp_path / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


async def test_silent_worker_is_killed_and_replaced(tmp_path: Path) -> None:
    client = DiagnosisClient(
        python=fake(tmp_path, "silent", f"{READY}\nexec sleep 30"), grace_s=0.2, start_timeout_s=10
    )
    await client.start()
    first = client.pid
    t0 = time.monotonic()
    res = await client.run(["io", "rdma"], "r1", {"budgets": {"io": 0.1, "rdma": 0.1}})
    assert time.monotonic() - t0 < 2.0
    assert [r.failed for r in res] == [True, True]
    assert "no answer within" in res[0].result
    await client.run(["io"], "r2", {"budgets": {"io": 0.1}})  # waits for the replacement
    assert client.pid is not None and client.pid != first
    await client.close(timeout_s=0.1)
    assert not client.running


async def test_dying_worker_gives_failed_results(tmp_path: Path) -> None:
    body = f"{READY}\nread line\necho boom >&2\nexit 3"
    client = DiagnosisClient(python=fake(tmp_path, "dying", body), start_timeout_s=10)
    await client.start()
    res = await client.run(["gpu"], "r1")
    assert res[0].failed and "died (exit code 3" in res[0].result and "boom" in res[0].result
    await client.close(timeout_s=0.5)


async def test_worker_that_never_gets_ready(tmp_path: Path) -> None:
    client = DiagnosisClient(python=fake(tmp_path, "broken", "echo nope >&2; exit 1"))
    with pytest.raises(WorkerError, match="nope"):
        await client.start()
    assert not client.running
