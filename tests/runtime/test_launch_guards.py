"""`aegis run` refuses what would hang or report a false success (issue 14), clearly and at once:
a state dir that already holds a finished job, one in use by another launcher, one that is
a file. A command that cannot start is refused too (tests/runtime/test_user_error.py)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.runtime.controller.core import ControllerCore, JobConfig
from aegis.runtime.controller.store import FileStatusStore
from aegis.runtime.controller.wal import WriteAheadLog
from aegis.runtime.launcher.local import (
    AGENT_PROCESS_BYTES,
    STATUS_FILE,
    WAL_FILE,
    available_memory,
    capacity_problem,
    never_joined,
)

from ..support import AEGIS, Launch


def aegis(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*AEGIS, *args], capture_output=True, text=True, timeout=timeout)


def test_a_finished_jobs_state_dir_is_refused_unless_resumed(
    tmp_path: Path, aegis_run: Launch
) -> None:
    r = aegis_run(1, cmd=["true"])
    assert r.finish(120) == 0, r.output[-2000:]
    marker = tmp_path / "ran"
    again = ["run", "-n", "1", "--state-dir", str(r.state), "--", "touch", str(marker)]
    refused = aegis(*again)
    assert refused.returncode == 2
    assert "already ended Succeed: nothing would run" in refused.stderr
    resumed = aegis(*again[:-3], "--resume", *again[-3:])
    assert resumed.returncode == 0 and "already ended Succeed; nothing was run" in resumed.stderr
    assert not marker.exists()  # no rank ran either time


def test_one_state_dir_holds_one_running_job(tmp_path: Path, aegis_run: Launch) -> None:
    r = aegis_run(1, cmd=[sys.executable, "-c", "import time; time.sleep(120)"])
    lock = r.state / "launcher.lock"
    r.wait_until(lambda: lock.exists() and lock.read_text().strip() == str(r.pid), 60, "the lock")
    second = aegis("run", "-n", "1", "--state-dir", str(r.state), "--", "true")
    assert second.returncode == 2
    assert f"in use by another aegis run (pid {r.pid})" in second.stderr
    assert r.running()  # the first job is untouched


def test_a_state_dir_that_is_a_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_text("not a directory")
    out = aegis("run", "-n", "1", "--state-dir", str(path), "--", "true")
    assert out.returncode == 2 and "exists and is not a directory" in out.stderr
    assert "Traceback" not in out.stderr


def test_no_controller_fails_the_job_by_default(tmp_path: Path, aegis_run: Launch) -> None:
    marker = tmp_path / "ran"
    r = aegis_run(2, "--connect-timeout", "0.001", cmd=["touch", str(marker)])
    assert r.finish(120) == 1, r.output[-2000:]
    assert "could not reach the controller within 0.001 s and --fallback is fail" in r.stderr
    assert not marker.exists()  # nothing ran alone


def test_fallback_independent_runs_alone_and_ends(tmp_path: Path, aegis_run: Launch) -> None:
    marker = tmp_path / "ran"
    r = aegis_run(
        2, "--connect-timeout", "0.001", "--fallback", "independent",
        cmd=[sys.executable, "-c", f"import os; open('{marker}' + os.environ['RANK'], 'w')"],
    )  # fmt: skip
    assert r.finish(120) == 0, r.output[-2000:]
    assert "every agent ran its command alone" in r.stderr
    assert (tmp_path / "ran0").exists() and (tmp_path / "ran1").exists()


def test_a_join_counts_before_the_snapshot_shows_it(tmp_path: Path) -> None:
    """`--fallback independent` treats an agent that exits as having run alone only if none
    ever joined. The snapshot may lag a commit by up to 0.5 s now (docs/persistence.md), so
    the WAL's join records count too, and a snapshot taken before every pod joined (still
    Pending) counts by its incarnations."""
    pods = ("job-worker-0", "job-worker-1", "job-worker-2")
    core = ControllerCore(
        JobConfig("job", "default", pods, 2),
        FileStatusStore(tmp_path / STATUS_FILE),
        wal=WriteAheadLog(tmp_path / WAL_FILE),
    )
    core.autocommit = False
    assert never_joined(tmp_path)

    ack = Message("job", "default", pods[0], MessageType.ACK, MessagePhase.BOOTCHECK,
                  {"incarnation": "i1", "node": "n"}, time.time(), 0)  # fmt: skip
    core.on_ack(ack)
    core.journal.commit(compact=False)  # durable in the WAL; the snapshot not taken yet
    assert core.state.phase == "Pending" and not never_joined(tmp_path)

    core.journal.snapshot()  # the WAL is emptied; the snapshot is still Pending, master_seq 0
    assert WriteAheadLog(tmp_path / WAL_FILE).read() == []
    status = FileStatusStore(tmp_path / STATUS_FILE).load()
    assert status is not None and status.phase == "Pending" and status.master_seq == 0
    assert not never_joined(tmp_path)


def test_more_nodes_than_this_machine_can_hold_are_refused_at_once() -> None:
    """`aegis run -n 100000000` was taken: the launcher grew to 8.8 GB and its controller to
    5.4 GB on the job's 10^8 pods while agents kept starting, and ten minutes after a SIGTERM
    (`timeout 60`) it still ran. It is refused before anything starts, saying what the
    machine holds."""
    r = aegis("run", "-n", "100000000", "--", "true", timeout=30)
    assert r.returncode == 2, r.stderr
    assert "--nnodes 100000000" in r.stderr and "GiB available" in r.stderr, r.stderr
    assert "nats" not in r.stderr.lower()  # nothing was started


def test_the_nodes_a_machine_holds_are_its_available_memory_over_an_agents() -> None:
    assert capacity_problem(10, 10 * AGENT_PROCESS_BYTES) is None
    why = capacity_problem(11, 10 * AGENT_PROCESS_BYTES)
    assert why is not None and "at most 10 nodes" in why
    assert capacity_problem(10**9, None) is None  # the kernel did not say: not refused
    available = available_memory()
    assert available is None or available > 0
