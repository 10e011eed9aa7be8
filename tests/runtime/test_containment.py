"""A rank cannot outlive or escape its agent (issue 42): what its main process leaves behind
(a `sleep infinity`, a `setsid` daemon holding its output pipes) is ended within the
reaper's grace, its outcome is its main process's exit, nothing is left; the same with the
agent as PID 1 of a new PID namespace (a Kubernetes worker), and when the agent is killed
outright (the launcher, a subreaper too, ends what comes to it)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aegis.runtime.agent.containment import DESCENDANT_GRACE_S, alive, descendants
from aegis.runtime.agent.runner import _DRAIN_S, RankEnv, Runner

from ..support import AEGIS, Launch, alone_agent_env, wait_for

LEAVES = str(Path(__file__).with_name("scripts") / "leaves_children.py")
# the grace, the output drained, and the reaper's own start and kill (a loaded machine)
BOUND_S = DESCENDANT_GRACE_S + _DRAIN_S + 5.0


def all_gone(pids: list[int]) -> bool:
    return not any(map(alive, pids))


def left_by(path: Path) -> tuple[list[int], float]:
    obj = json.loads(path.read_text())
    return [int(p) for p in obj["pids"]], float(obj["exited"])


@pytest.mark.parametrize("code", [0, 3])
async def test_the_rank_ends_with_its_main_process_and_leaves_nothing(
    tmp_path: Path, code: int
) -> None:
    left = tmp_path / "left.json"
    env = {**os.environ, "LEFT_PIDS": str(left), "EXIT_CODE": str(code)}
    runner = Runner([sys.executable, LEAVES], RankEnv(0, 1), env=env)
    await runner.start()
    tree = [runner.pid or 0]
    got = await asyncio.wait_for(runner.wait(), 60)
    ended = time.time()
    pids, exited = left_by(left)
    assert got == code  # its outcome is its main process's exit
    assert ended - exited < BOUND_S, ended - exited
    tree += pids
    assert all_gone(tree), [p for p in tree if alive(p)]
    assert not [p for p in descendants(os.getpid()) if p in tree]


async def test_a_stopped_rank_takes_its_setsid_daemons_with_it(tmp_path: Path) -> None:
    """stop() reaches the whole tree, not only the process group."""
    script = tmp_path / "daemon.py"
    script.write_text(
        "import os, subprocess, sys, time\n"
        "p = subprocess.Popen(['sleep', '100000'], start_new_session=True)\n"
        f"open({str(tmp_path / 'pid')!r}, 'w').write(str(p.pid))\n"
        "signal_ignored = __import__('signal').signal(15, lambda *a: None)\n"
        "time.sleep(100000)\n"
    )
    runner = Runner([sys.executable, str(script)], RankEnv(0, 1), env=dict(os.environ))
    await runner.start()
    pid_file = tmp_path / "pid"
    await asyncio.wait_for(_exists(pid_file), 30)
    daemon = int(pid_file.read_text())
    await asyncio.wait_for(runner.stop(grace=1.0), 30)  # the main ignores SIGTERM: SIGKILL
    assert not alive(daemon) and not alive(runner.pid or 0)


async def _exists(path: Path) -> None:
    while not path.exists():
        await asyncio.sleep(0.05)


def test_aegis_run_ends_within_the_grace_after_the_rank_exits(
    tmp_path: Path, aegis_run: Launch
) -> None:
    left = tmp_path / "left.json"
    r = aegis_run(1, cmd=[sys.executable, LEAVES], env={"LEFT_PIDS": str(left)})
    assert r.finish(240) == 0, r.output[-3000:]
    ended = time.time()
    pids, exited = left_by(left)
    assert all_gone(pids), [p for p in pids if alive(p)]
    # the Finish report, the final order and the launcher's shutdown besides the grace
    assert ended - exited < BOUND_S + 15, ended - exited
    assert r.status()["phase"] == "Succeed"


@pytest.mark.skipif(shutil.which("unshare") is None, reason="util-linux unshare is missing")
def test_the_agent_as_pid_1_of_a_pid_namespace_ends_what_a_rank_left(tmp_path: Path) -> None:
    """A Kubernetes worker: the agent is PID 1 of the container's PID namespace. With no
    controller it runs the command alone (fallback independent): it exits with the rank's
    code within the grace, the daemons ended (the kernel would end them with PID 1 anyway:
    what matters is that the agent does not wait for them)."""
    probe = subprocess.run(["unshare", "--pid", "--fork", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"no new PID namespace here: {probe.stderr.decode()[:200]}")
    left = tmp_path / "left.json"
    env = alone_agent_env("pidns", LEFT_PIDS=str(left), EXIT_CODE="5")
    cmd = ["unshare", "--pid", "--fork", "--mount-proc", *AEGIS, "agent", "--", sys.executable]
    started = time.time()
    out = subprocess.run([*cmd, LEAVES], env=env, capture_output=True, text=True, timeout=180)
    ended = time.time()
    assert out.returncode == 5, out.stdout[-2000:] + out.stderr[-2000:]
    _, exited = left_by(left)
    assert started < exited and ended - exited < BOUND_S, ended - exited


def test_what_a_killed_agents_rank_left_is_ended_by_the_launcher(
    tmp_path: Path, aegis_run: Launch
) -> None:
    """The agent is SIGKILLed: its rank's reaper dies with it, the rank's setsid daemon is
    re-parented to the launcher (a subreaper), which ends it within a sweep."""
    script = tmp_path / "daemon.py"
    pid_file = tmp_path / "pid"
    hold = tmp_path / "hold"
    script.write_text(
        "import os, subprocess, sys, time\n"
        f"if os.environ['AEGIS_RETRY'] == '0':\n"
        "    p = subprocess.Popen(['sleep', '100000'], start_new_session=True)\n"
        f"    open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
        f"while not os.path.exists({str(hold)!r}): time.sleep(0.1)\n"
    )
    r = aegis_run(1, cmd=[sys.executable, str(script)])
    daemon = int(r.wait_until(lambda: pid_file.exists() and pid_file.read_text(), 120, "a pid"))
    agent = next(p for p in descendants(r.pid) if b"agent" in _cmdline(p) and daemon in
                 descendants(p))  # fmt: skip
    os.kill(agent, signal.SIGKILL)
    wait_for(lambda: not alive(daemon), 20, "the daemon ended")
    hold.touch()
    assert r.finish(240) == 0, r.output[-3000:]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
