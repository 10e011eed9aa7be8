"""PID 1 duties, exercised with a child subreaper (tests cannot run as PID 1)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

from aegis.runtime.agent.pid1 import exit_code

AGENT = textwrap.dedent(
    """
    import os, signal, subprocess, sys, time
    from aegis.runtime.agent import pid1 as pid1
    pid1.become_init(force=True)
    # from here on we are the agent; our parent is the reaper
    print("agent", os.getpid(), os.getppid(), flush=True)
    # an orphan: the shell exits at once, its background child is re-parented to the reaper
    out = subprocess.run(["sh", "-c", "sh -c 'exit 0' & echo $!"], capture_output=True, text=True)
    orphan = int(out.stdout)
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{orphan}"):  # a zombie keeps its /proc entry until reaped
        assert time.monotonic() < deadline, "orphan never reaped"
        time.sleep(0.01)
    print("reaped", orphan, flush=True)

    def on_term(signum, frame):
        print("agent got", signum, flush=True)
        sys.exit(7)

    signal.signal(signal.SIGTERM, on_term)
    print("ready", flush=True)
    while True:
        signal.pause()
    """
)


def test_exit_code_follows_the_shell_convention() -> None:
    assert exit_code(0) == 0
    assert exit_code(3 << 8) == 3
    assert exit_code(signal.SIGKILL) == 128 + signal.SIGKILL


def test_reaper_reaps_orphans_forwards_signals_and_returns_the_agents_code() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", AGENT], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert proc.stdout is not None
        agent, parent = map(int, proc.stdout.readline().split()[1:])
        assert parent == proc.pid and agent != proc.pid
        assert proc.stdout.readline().startswith("reaped")
        assert proc.stdout.readline() == "ready\n"
        os.kill(proc.pid, signal.SIGTERM)  # to the reaper, as the kubelet would
        assert proc.stdout.readline() == f"agent got {int(signal.SIGTERM)}\n"
        assert proc.wait(timeout=10) == 7
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
