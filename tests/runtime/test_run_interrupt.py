"""Ctrl-C on `aegis run` stops everything it started: nothing is left running."""

from __future__ import annotations

import os
import signal
import uuid
from pathlib import Path

from ..support import Launch, wait_for


def processes_with(marker: str) -> list[int]:
    """Live (non-zombie) processes whose command line or environment holds `marker`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path("/proc", entry, "stat").read_text()
            if stat.rsplit(")", 1)[1].split()[0] == "Z":
                continue
            blob = Path("/proc", entry, "cmdline").read_bytes()
            blob += Path("/proc", entry, "environ").read_bytes()
        except OSError:
            continue
        if marker.encode() in blob:
            found.append(int(entry))
    return found


def test_sigint_stops_launcher_controller_agents_and_commands(
    tmp_path: Path, aegis_run: Launch
) -> None:
    marker = f"AEGIS_TEST_MARKER_{uuid.uuid4().hex}"
    started = tmp_path / "started"
    # each rank's command announces itself, then sleeps far longer than the test
    cmd = f"touch {started}-$RANK; exec sleep 300"
    run = aegis_run(2, cmd=["sh", "-c", cmd], env={marker: "1"})
    try:
        wait_for(lambda: all(Path(f"{started}-{r}").exists() for r in (0, 1)), 120, "both ranks")
        assert len(processes_with(marker)) >= 5  # launcher, controller, 2 agents, 2 commands
        run.send_signal(signal.SIGINT)
        run.proc.wait(timeout=60)
        wait_for(lambda: not processes_with(marker), 15, "every process to exit")
    finally:
        if run.returncode is None:
            os.killpg(run.pid, signal.SIGKILL)
        for pid in processes_with(marker):
            os.kill(pid, signal.SIGKILL)
    assert run.returncode != 0
