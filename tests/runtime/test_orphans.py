"""No process of a job outlives the job (issue 14): a SIGKILLed agent takes its training
command with it, and a SIGKILLed launcher leaves no agent, command, controller, diagnosis
worker or nats-server behind (parent-death signals, and agents watching their launcher)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from ..support import AEGIS, Launch, wait_for


def tree() -> dict[int, int]:
    """pid -> parent pid of every live (non-zombie) process."""
    out = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] not in ("Z", "X"):
                out[int(entry.name)] = int(fields[1])
    return out


def descendants(root: int) -> set[int]:
    parents = tree()
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {p for p, pp in parents.items() if pp in frontier} - found
        found |= frontier
    return found


def alive(pids: set[int]) -> set[int]:
    return pids & set(tree())


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def test_a_killed_agent_takes_its_command_with_it(tmp_path: Path, aegis_run: Launch) -> None:
    # a silent command: nothing it writes could end it through a broken pipe
    sleeper = [sys.executable, "-c", "import time; time.sleep(600)  # aegis-orphan-probe"]
    r = aegis_run(2, cmd=sleeper)

    def agent_and_command() -> tuple[int, int] | None:
        for pid, ppid in tree().items():
            if "aegis-orphan-probe" in cmdline(pid) and "aegis.cli agent" in cmdline(ppid):
                return ppid, pid
        return None

    agent, command = r.wait_until(agent_and_command, 120, "a rank under its agent")
    os.kill(agent, signal.SIGKILL)
    wait_for(lambda: not alive({command}), 10, "the command to die with its agent")


def test_a_killed_launcher_leaves_nothing_behind(tmp_path: Path, aegis_run: Launch) -> None:
    hold = tmp_path / "go"  # never created: the ranks wait until they are stopped
    r = aegis_run(2, env={"HOLD_FILE": str(hold)})
    r.wait_until(lambda: (r.read_status() or {}).get("phase") == "RunCommand", 120, "RunCommand")
    job = r.wait_until(
        lambda: (d := descendants(r.pid)) and any("train_ddp.py" in cmdline(p) for p in d) and d,
        60,
        "the ranks",
    )
    kinds = {"nats-server", "aegis.cli controller", "aegis.cli agent", "train_ddp.py"}
    assert all(any(k in cmdline(p) for p in job) for k in kinds), [cmdline(p) for p in job]
    nats_conf = next(cmdline(p).split()[-1] for p in job if "nats-server" in cmdline(p))
    agent = next(p for p in job if "aegis.cli agent" in cmdline(p))
    progress = environ(agent)["AEGIS_PROGRESS_DIR"]
    temp_dirs = [Path(nats_conf).parent, Path(progress)]
    os.kill(r.pid, signal.SIGKILL)
    left = wait_for(lambda: not alive(job), 30, "every process of the job to end")
    assert left, [cmdline(p) for p in alive(job)]
    # a SIGKILLed launcher cannot remove its temp dirs; the next one does
    assert all(d.is_dir() for d in temp_dirs), temp_dirs
    later = [*AEGIS, "run", "-n", "1", "--state-dir", str(tmp_path / "later"), "--", "true"]
    assert subprocess.run(later, capture_output=True, timeout=180).returncode == 0
    assert not any(d.exists() for d in temp_dirs), temp_dirs


def environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    pairs = (item.decode(errors="replace").split("=", 1) for item in raw if b"=" in item)
    return {k: v for k, v in pairs}
