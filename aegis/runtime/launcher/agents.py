"""A launcher's agent processes: starting one with its proof handed over, stopping one, and
ending what a killed agent's ranks left behind.

`spawn_agent` is the one place a secret goes from a launcher to its agent: on an inherited
socket (aegis.runtime.handover), never in its environment or argv. The launcher is a child
subreaper (aegis.runtime.agent.containment): what a killed agent's ranks leave comes to it,
and `sweep_strays` ends it (docs/operations.md, "Every fault ends").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Set
from dataclasses import dataclass

from aegis.protocol.environment import AgentConfig, Var
from aegis.runtime.agent.containment import children, kill_tree
from aegis.runtime.handover import hand_over
from aegis.runtime.lifetime import dies_with_parent

log = logging.getLogger(__name__)
GRACE_S = 10.0  # an agent's process group gets this long after SIGTERM, then SIGKILL


def python_aegis() -> list[str]:
    """`python -m aegis.cli`, with this interpreter."""
    return [sys.executable, "-m", "aegis.cli"]


@dataclass
class AgentProc:
    """One agent process a launcher started (or, `proc` None, one another host runs)."""

    pod: str
    rank: int
    node: str
    incarnation: str
    proc: asyncio.subprocess.Process | None  # None: it runs on another host


async def spawn_agent(cfg: AgentConfig, env: dict[str, str]) -> asyncio.subprocess.Process:
    """Start `aegis agent` configured by `cfg` (its AEGIS_* variables over `env`), in a
    session of its own, killed if this process dies. Its proof (`cfg.token`: its
    incarnation's secret) is handed over on an inherited socket, never in its environment
    (aegis.runtime.handover): the one place a secret goes from a launcher to its agent."""
    agent_env = {**env, **cfg.to_env(), Var.LAUNCHER_PID: str(os.getpid())}
    agent_env.pop(Var.BOOTSTRAP_TOKEN, None)
    handed = hand_over(cfg.token) if cfg.token else None
    if handed is not None:
        agent_env.update(handed.env)
    try:
        return await asyncio.create_subprocess_exec(
            *dies_with_parent([*python_aegis(), "agent"]),
            env=agent_env,
            start_new_session=True,
            pass_fds=() if handed is None else (handed.fd,),
        )
    finally:
        if handed is not None:
            handed.close()  # the agent holds the only copy now


async def terminate_group(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM the process group, SIGKILL after the grace period."""
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        await asyncio.wait_for(proc.wait(), GRACE_S)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()


def sweep_strays(ours: Set[int]) -> list[int]:
    """Kill (with everything under them) this process's children but `ours`, and reap those
    dead (they were never asyncio's); the pids killed."""
    killed = []
    for pid in children(os.getpid()):
        if pid not in ours:
            killed += kill_tree(pid)
            log.warning("ended process %d, left by a rank whose agent was killed", pid)
    for pid in children(os.getpid(), zombies=True):
        if pid not in ours:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
    return killed
