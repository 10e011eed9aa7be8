"""`aegis run` on several namespaced hosts (aegis.testing.netns): one job, one process a host.

`start_job(hosts, tmp, ...)` starts `aegis run --nnodes ... --node-rank i --rdzv-endpoint
<host 0>:PORT` in each host (node 0 with the state dir), with one join secret; each node's
output goes to `tmp/node<i>.out`. `NodeRun.finish(timeout)` waits for a node's exit code.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .launch import AEGIS, ROOT, TRAIN
from .netns import Hosts
from .wait import wait_for

RDZV_PORT = 29400


@dataclass
class NodeRun:
    """One node's `aegis run` in its host."""

    rank: int
    proc: subprocess.Popen[str]
    out: Path
    started: float

    @property
    def output(self) -> str:
        """What it printed so far (stdout and stderr)."""
        return self.out.read_text(errors="replace")

    def finish(self, timeout: float) -> int:
        """Its exit code; fails with its output's tail if it runs past `timeout` s."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"node {self.rank} still running after {timeout}s; output ends:\n"
                + self.output[-3000:]
            ) from None

    def wait_output(self, text: str, timeout: float) -> float:
        """Wait until it printed `text`; when (monotonic)."""
        wait_for(lambda: text in self.output, timeout, f"node {self.rank} printing {text!r}")
        return time.monotonic()


@dataclass
class Job:
    """A job's nodes, its state dir (node 0's) and secret."""

    nodes: list[NodeRun]
    state: Path
    secret: str

    def status(self) -> dict[str, Any]:
        """Node 0's saved status."""
        return dict(json.loads((self.state / "status.json").read_text()))

    def history(self) -> list[tuple[str, tuple[int, ...], int]]:
        """(phase, retries, recoverCount) of every saved step."""
        return [
            (h["phase"], tuple(h["retries"]), h["recoverCount"]) for h in self.status()["history"]
        ]

    def outputs(self) -> str:
        """Every node's output, each under a header."""
        return "\n".join(f"--- node {n.rank}:\n{n.output[-2500:]}" for n in self.nodes)


def start_job(
    hosts: Hosts,
    tmp: Path,
    nnodes: str = "3",
    *opts: str,
    count: int | None = None,
    cmd: Sequence[str] | None = None,
    env: dict[str, str] | None = None,
    node_opts: dict[int, Sequence[str]] | None = None,
) -> Job:
    """Start one node per host (the first `count`; all by default), node 0 first."""
    secret = secrets.token_hex(32)
    state = tmp / "state"
    base = {**os.environ, "AEGIS_JOIN_SECRET": secret, **(env or {})}
    nodes = []
    for i in range(count if count is not None else len(hosts.hosts)):
        argv = [
            *AEGIS,
            "run",
            "--nnodes",
            nnodes,
            "--node-rank",
            str(i),
            "--rdzv-endpoint",
            f"{hosts[0].address}:{RDZV_PORT}",
            *opts,
            *(node_opts or {}).get(i, ()),
        ]
        if i == 0:  # the tests' pods are named local-worker-N (a job's default name is random)
            argv += ["--state-dir", str(state), *(() if "--job" in opts else ("--job", "local"))]
        argv += ["--", *(cmd or [sys.executable, TRAIN])]
        out = tmp / f"node{i}.out"
        proc = hosts.popen(i, argv, env=base, out=out, cwd=ROOT)
        nodes.append(NodeRun(i, proc, out, time.monotonic()))
    return Job(nodes, state, secret)


def agent_pids(hosts: Hosts, i: int) -> list[int]:
    """The `aegis agent` processes in host i."""
    found = []
    for pid in hosts.pids(i):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"aegis.cli" in cmd and b"agent" in cmd:
            found.append(pid)
    return found
