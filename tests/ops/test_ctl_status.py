"""`aegis ctl status` on a real job: per pod node, inner phase, retries, last fault and when,
the error nodes with reasons, all within 100 columns; `--watch` refreshes until the job ends.

Rank 1 crashes once (a real fault, Level 1), then both ranks wait for a hold file: the job
sits in RunCommand with recoverCount 1 while ctl looks at it; the hold file ends it.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from ..support import AEGIS, AegisRun


def ctl(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*AEGIS, "ctl", "--state-dir", str(state), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_status_table_and_watch_on_a_real_job(tmp_path: Path) -> None:
    hold = tmp_path / "hold"
    env = {"CRASH_ONCE_RANK": "1", "CRASH_DIR": str(tmp_path / "crash"), "HOLD_FILE": str(hold)}
    run = AegisRun(tmp_path, 2, env=env)
    watcher: subprocess.Popen[str] | None = None
    try:
        state = run.state

        def recovered() -> bool:
            s = run.read_status()
            return s is not None and s["phase"] == "RunCommand" and s["recoverCount"] == 1

        run.wait_until(recovered, 120, "RunCommand after the crash's recovery")
        reason = "fan broken; " + "x" * 300
        assert ctl(state, "taint", "node-9", "--reason", reason, "--force").returncode == 0

        r = ctl(state, "status")
        assert r.returncode == 0, r.stderr
        lines = r.stdout.splitlines()
        assert all(len(line) <= 100 for line in lines), [len(x) for x in lines]
        assert lines[0] == "job default/local: RunCommand, retries 1/3"
        header = lines[1].split()
        assert header[:5] == ["POD", "NODE", "PHASE", "FAILED", "FLAGS"]
        assert "LAST FAULT" in lines[1] and "FAULT AT" in lines[1]
        rows = {line.split()[0]: line for line in lines[2:4]}
        assert set(rows) == {"local-worker-0", "local-worker-1"}
        crashed = rows["local-worker-1"].split()
        assert crashed[1].startswith("node-") and crashed[2] == "RunCommand" and crashed[3] == "1"
        # the pod that did not fail shows 0, though the spec aligned its retries to 1
        assert rows["local-worker-0"].split()[3] == "0"
        assert re.search(r"  \d+s ago +error: ", rows["local-worker-1"])
        assert rows["local-worker-0"].split()[-1] == "-"  # no fault on rank 0
        nodes = lines[lines.index("error nodes:") + 1 :]
        assert nodes[0].split() == ["NODE", "SINCE", "REASON"]
        assert nodes[1].startswith("node-9") and "fan broken" in nodes[1]
        assert nodes[1].endswith("…")  # the long reason is cut to fit

        # --json keeps the machine output, with the last fault
        j = ctl(state, "--json", "status")
        view = json.loads(j.stdout)["result"]
        fault = view["pods"]["local-worker-1"]["lastFault"]
        assert fault["message"].startswith("error: ") and fault["time"] > 0

        # --watch: refreshes while the job runs, returns when it ends
        watcher = subprocess.Popen(
            [
                *AEGIS,
                "ctl",
                "--state-dir",
                str(state),
                "--json",
                "status",
                "--watch",
                "--interval",
                "0.2",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert watcher.stdout is not None
        first = json.loads(watcher.stdout.readline())
        second = json.loads(watcher.stdout.readline())
        assert first["phase"] == second["phase"] == "RunCommand"
        hold.touch()
        out, err = watcher.communicate(timeout=120)
        assert watcher.returncode == 0, err
        # it ends with the final phase: the controller's last answer, or, once the controller
        # is gone, the state dir's (never the bus's error text)
        assert json.loads(out.splitlines()[-1])["phase"] == "Succeed"
        assert "ConnectionClosed" not in out + err and err == ""
        assert run.finish(120) == 0
    finally:
        if watcher is not None and watcher.poll() is None:
            watcher.kill()
            watcher.wait()
        run.stop()


def test_watch_needs_a_positive_interval(tmp_path: Path) -> None:
    (tmp_path / "ctl.json").write_text(
        json.dumps(
            {
                "natsUrl": "nats://127.0.0.1:1",
                "jwt": "j",
                "seed": "s",
                "namespace": "default",
                "job": "local",
                "pods": ["local-worker-0"],
            }
        )
    )
    r = ctl(tmp_path, "status", "--watch", "--interval", "0")
    assert r.returncode == 2 and "--interval must be > 0" in r.stderr


def test_failing_status_saves_are_shown_and_fit_the_width() -> None:
    from aegis.cli.ctl_config import CtlConfig
    from aegis.cli.ctl_status import WIDTH, render_status

    cfg = CtlConfig("nats://x", "jwt", "seed", "default", "local", None)
    view = {
        "phase": "Troubleshooting",
        "recoverCount": 1,
        "maxRetry": 3,
        "pods": {},
        "errorNodes": [],
        "persistence": {
            "ok": False,
            "failures": 5,
            "lastError": "[Errno 30] Read-only file system: '/job/status.json.tmp' " * 3,
            "lastFailed": 1_700_000_000.0,
        },
    }
    text = render_status(cfg, view, now=1_700_000_010.0)
    assert "status saves: FAILING, 5 failed" in text and "Read-only file system" in text
    assert max(len(line) for line in text.splitlines()) <= WIDTH
    healthy = render_status(cfg, {**view, "persistence": {"ok": True, "failures": 0}})
    assert "status saves" not in healthy
