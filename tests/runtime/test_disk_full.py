"""A state dir whose filesystem fills up mid-run (issue 42): the job's exit code and its
message say what ran, and status.json agrees; the full disk costs no controller restart."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.protocol.exitcodes import ControllerExit
from aegis.runtime.controller.core import ControllerCore, JobConfig
from aegis.runtime.controller.service import ControllerService
from aegis.runtime.controller.store import FileStatusStore
from aegis.runtime.controller.wal import WriteAheadLog
from aegis.runtime.errors import BusError
from aegis.runtime.transport.auth import JobAccount
from aegis.runtime.transport.bus import Bus
from aegis.runtime.transport.nats_server import NatsServer

from ..support import AEGIS, AegisRun
from .conftest import NAMESPACE, PODS_A

SCRIPT = str(Path(__file__).with_name("scripts") / "fill_then_train.py")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 48 MiB tmpfs of its own (root only: skipped where mount is not allowed)."""
    where = tmp_path / "disk"
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(where)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()[:200]}")
    try:
        yield where
    finally:
        with contextlib.suppress(OSError):
            subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_state_dir_that_fills_mid_run_ends_saying_what_ran(
    tmp_path: Path, small_disk: Path
) -> None:
    state = small_disk / "state"
    env = {"FILL_RANK": "0", "FILL_PATH": str(small_disk)}
    run = AegisRun(tmp_path, 2, cmd=[sys.executable, SCRIPT], env=env, state=state)
    try:
        code = run.finish(300)
    finally:
        run.stop()
    out = run.output
    assert "rank 0 filled" in out  # the disk was full before the job's last saves
    assert "rank 0 done (restart 0)" in out and "rank 1 done (restart 0)" in out
    status = json.loads((state / "status.json").read_text())
    assert code == 0, out[-3000:]
    assert status["phase"] == "Succeed", status["phase"]
    assert "restarting it (" not in out  # no controller restart spent on it
    assert "state dir" in out and "full" in out, out[-3000:]  # said clearly
    steps = (state / "steps.jsonl").read_bytes()
    assert steps.endswith(b"\n")  # no line cut in the middle
    for line in steps.splitlines():
        json.loads(line)


def test_a_state_dir_with_no_room_for_the_reserve_is_refused_at_once(
    tmp_path: Path, small_disk: Path
) -> None:
    """A disk full before the job starts: the controller refuses to run (exit 2), the job
    ends at once with the reason, no restart spent on a failure that would recur."""
    with contextlib.suppress(OSError), (small_disk / "fill.bin").open("wb") as f:
        while f.write(b"\0" * (1 << 16)):
            f.flush()
    (small_disk / "fill.bin").write_bytes(b"\0" * (1 << 20) * 44)  # 4 MiB left: no reserve
    out = subprocess.run(
        [*AEGIS, "run", "-n", "1", "--state-dir", str(small_disk / "s"), "--", "true"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 1, out.stderr[-2000:]
    assert "no room for the job's" in out.stderr and "refused to run" in out.stderr
    assert "restarting it (" not in out.stderr


@pytest.mark.asyncio(loop_scope="module")
async def test_saves_failing_past_the_bound_end_the_job_without_a_restart(
    nats_server: NatsServer, job_a: JobAccount, tmp_path: Path
) -> None:
    """A disk that stays full (the reserve already given back): every event is rolled back
    and handled again; past `save_give_up_s` the controller ends the job, saying what ran,
    with ControllerExit.STORAGE (the launcher does not restart it)."""
    wal = WriteAheadLog(tmp_path / "wal.jsonl")
    core = ControllerCore(
        JobConfig("train-a", NAMESPACE, PODS_A, 2), FileStatusStore(tmp_path / "s.json"), wal=wal
    )

    def full(number: int, body: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    bus = await Bus.connect(nats_server.url, job_a.controller_credentials())
    service = ControllerService(core, bus)
    service.save_give_up_s = 1.0
    wal.append = full  # type: ignore[method-assign]
    task = asyncio.create_task(service.run())
    worker = await Bus.connect(
        nats_server.url,
        job_a.account.new_user("w", job_a.worker_permissions(PODS_A[0], "i1")),
        inbox_prefix=job_a.subjects.inbox_prefix(PODS_A[0]),
    )
    try:
        for pod in PODS_A:  # joins that lead to an order: committed at once, and failing
            ack = Message("train-a", NAMESPACE, pod, MessageType.ACK, MessagePhase.BOOTCHECK,
                          {"incarnation": "i1"}, time.time(), 0)  # fmt: skip
            with contextlib.suppress(BusError):
                await worker.publish(job_a.subjects.join(PODS_A[0], "i1"), ack)
        code = await asyncio.wait_for(task, 30)
    finally:
        await worker.close()
        await bus.close()
        await service.close()
    assert code == ControllerExit.STORAGE
    assert core.journal.health.failures > 0 and "No space left" in core.journal.health.last_error
