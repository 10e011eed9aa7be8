"""A bus outage is not a pod loss (issue 14): nats-server SIGKILLed in the middle of a real
job is restarted on its port, the controller and the agents reconnect, and the job ends as
it would have: Succeed, no retry counted, no pod declared lost."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from ..support import Launch


def nats_server_pids(launcher: int) -> list[int]:
    """The nats-server processes the launcher started (its direct children)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes().split(b"\0")[0]
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == launcher and cmd.endswith(b"nats-server"):
            pids.append(int(entry.name))
    return pids


def test_nats_server_killed_mid_job_is_restarted_and_costs_no_retry(
    tmp_path: Path, aegis_run: Launch
) -> None:
    hold = tmp_path / "go"
    # 1 s: shorter than the outage (a restart, then the clients' 1 s reconnect wait)
    r = aegis_run(2, "--heartbeat-timeout", "1", env={"HOLD_FILE": str(hold)})
    r.wait_until(lambda: (r.read_status() or {}).get("phase") == "RunCommand", 120, "RunCommand")
    (old,) = r.wait_until(lambda: nats_server_pids(r.pid), 10, "the nats-server")
    os.kill(old, signal.SIGKILL)
    new = r.wait_until(lambda: [p for p in nats_server_pids(r.pid) if p != old], 30, "a restart")
    assert new and "nats-server exited" in r.stderr
    time.sleep(3)  # longer than the heartbeat timeout: a lost pod would be declared by now
    hold.write_text("go")
    assert r.finish(120) == 0, r.output[-3000:]
    status = r.status()
    assert (status["phase"], status["recoverCount"]) == ("Succeed", 0)
    counters = status["runtime"]["counters"]
    assert counters.get("heartbeat_lost", 0) == 0, counters
    assert "rank 0 done (restart 0)" in r.stdout and "rank 1 done (restart 0)" in r.stdout
