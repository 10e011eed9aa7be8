"""A run without --state-dir leaves no directory behind (its credentials were in it): removed
at the end, after Ctrl-C too, and one a killed launcher left is removed by the next run. A run
with --state-dir keeps its directory but not its credentials."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from ..support import AEGIS, Launch, wait_for


def run_in(tmp: Path, *argv: str) -> subprocess.Popen[str]:
    env = {**os.environ, "TMPDIR": str(tmp)}  # where tempfile puts the launcher's dirs
    return subprocess.Popen(
        [*AEGIS, "run", *argv],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_the_temporary_state_dir_goes_and_takes_stale_ones_with_it(tmp_path: Path) -> None:
    stale, live, foreign = (tmp_path / f"aegis-run-{n}" for n in ("stale", "live", "foreign"))
    for d in (stale, live, foreign):
        d.mkdir()
        (d / "ctl.json").write_text("{}")
    (stale / "owner.pid").write_text(str(dead_pid()))  # its launcher was SIGKILLed
    (live / "owner.pid").write_text(str(os.getpid()))  # another launcher, still running
    proc = run_in(tmp_path, "-n", "1", "--", "true")
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err[-2000:]
    assert "aegis: control this job with: aegis ctl --state-dir" in err
    assert "were in a temporary dir, now removed" in err
    left = sorted(p.name for p in tmp_path.glob("aegis-run-*"))
    assert left == ["aegis-run-foreign", "aegis-run-live"]  # not ours, or still in use


def test_ctrl_c_removes_it_too(tmp_path: Path) -> None:
    proc = run_in(tmp_path, "-n", "1", "--", "sleep", "300")
    try:
        wait_for(lambda: list(tmp_path.glob("aegis-run-*/ctl.json")), 120, "the job's ctl.json")
        os.kill(proc.pid, signal.SIGINT)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130
    assert not list(tmp_path.glob("aegis-run-*"))


def test_a_kept_state_dir_loses_its_credentials_at_the_end(aegis_run: Launch) -> None:
    r = aegis_run(1, cmd=["true"])
    r.wait_until(lambda: (r.state / "ctl.json").exists(), 120, "ctl.json")
    assert r.finish(120) == 0, r.output[-2000:]
    names = {p.name for p in r.state.iterdir()}
    assert "ctl.json" not in names and "controller.creds.json" not in names
    assert {"status.json", "job.json", "steps.jsonl", "timeline.html"} <= names
