"""A controller that refuses to run ends the local job at once (issue 14): the launcher does not
restart it six times; its error (naming what is wrong) is the run's last word."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from aegis.runtime.controller.core import ControllerCore, JobConfig
from aegis.runtime.controller.store import FileStatusStore

from ..support import AEGIS

PODS = ("local-worker-0", "local-worker-1")


def a_status_with_a_bogus_phase(state: Path) -> None:
    """A status file the launcher accepts (its top-level phase is Pending, so the job has not
    ended) but whose spec state is not a state of the spec: only the controller can tell."""
    ControllerCore(JobConfig("local", "default", PODS, 3), FileStatusStore(state / "status.json"))
    path = state / "status.json"
    doc = json.loads(path.read_text())
    doc["specState"]["variables"]["phase"] = "Bogus"
    path.write_text(json.dumps(doc))


def test_a_refusing_controller_ends_the_run_at_once(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    a_status_with_a_bogus_phase(state)
    marker = tmp_path / "ran"
    out = subprocess.run(
        [
            *AEGIS,
            "run",
            "-n",
            "2",
            "--state-dir",
            str(state),
            "--job",
            "local",
            "--",
            "touch",
            str(marker),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 1, out.stderr[-2000:]
    # the controller's own message, once: it was started once and not restarted
    assert out.stderr.count("breaks the spec's invariant(s) ValidPhase") == 1, out.stderr[-2000:]
    assert "refused to run (exit 2" in out.stderr
    assert "controller exited 2; restarting it" not in out.stderr
    assert not marker.exists()  # no rank ran
