""" "Restart the controller up to 5 times in a row" means in a row (issue 42): the count starts
again after a controller that moved the job on, measured by the last step on disk."""

from __future__ import annotations

import asyncio
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.runtime.controller.core import ControllerCore, JobConfig
from aegis.runtime.controller.store import FileStatusStore
from aegis.runtime.controller.wal import WriteAheadLog
from aegis.runtime.launcher.local import progress_mark

PODS = ("job-worker-0", "job-worker-1")


def ack(pod: str) -> Message:
    data = {"incarnation": "i1"}
    return Message("job", "ns", pod, MessageType.ACK, MessagePhase.BOOTCHECK, data, time.time())


def test_the_mark_is_the_last_step_on_disk_in_the_snapshot_or_the_log(tmp_path: Path) -> None:
    assert progress_mark(tmp_path) == -1  # nothing saved yet
    wal = WriteAheadLog(tmp_path / "wal.jsonl")
    core = ControllerCore(
        JobConfig("job", "ns", PODS, 2), FileStatusStore(tmp_path / "status.json"), wal=wal
    )
    start = progress_mark(tmp_path)
    core.on_ack(ack(PODS[0]))  # one WAL record: the join
    joined = progress_mark(tmp_path)
    assert joined > start and joined == core.engine.seq_no
    core.on_ack(ack(PODS[1]))  # BootChecking
    assert progress_mark(tmp_path) == core.engine.seq_no > joined
    core.journal.compact()  # a snapshot takes it all in, the log emptied: the mark stays
    assert progress_mark(tmp_path) == core.engine.seq_no
    wal.close()
    (tmp_path / "status.json").write_text("{not json")
    assert progress_mark(tmp_path) == -1  # unreadable: no progress claimed


async def test_a_controller_that_moved_the_job_on_starts_a_new_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Controllers that crash at once: given up after MAX_CONTROLLER_RESTARTS restarts in a
    row; one that saved a step before it crashed starts the count again (a total would have
    given up after 6 starts)."""
    from aegis.runtime.launcher import local

    starts: list[int] = []
    marks = iter([0, 0, 0, 0, 0, 5] + [5] * 40)  # before and after each start: the 3rd moves

    def mark(_state: Path) -> int:
        return next(marks)

    monkeypatch.setattr(local, "progress_mark", mark)
    monkeypatch.setattr(local, "_python_aegis", lambda: [sys.executable, "-c", "exit(1)"])
    launcher = local.Launcher(local.LocalJob(["true"], 1, state_dir=tmp_path))
    launcher._ctl_args, launcher._ctl_env = [], {}
    real_exec = asyncio.create_subprocess_exec

    async def counted(*argv: Any, **kw: Any) -> asyncio.subprocess.Process:
        starts.append(1)
        return await real_exec(*argv, **kw)

    monkeypatch.setattr(asyncio, "create_subprocess_exec", counted)
    try:
        await asyncio.wait_for(launcher._controller_loop(), 120)
    finally:
        shutil.rmtree(launcher.progress_dir, ignore_errors=True)
    assert launcher.done.is_set() and launcher.exit_code == 1
    assert len(starts) == 2 + 1 + local.MAX_CONTROLLER_RESTARTS  # 2, then a new row of 6
