"""A simulated fleet over several processes (bench/fleet.py): `ProcFleet` runs a healthy job's
agents in child processes (`python -m bench.fleet_procs`, each a Fleet over its share of the
pods), `SplitFleet` a crash job's crashing pods in this process beside the launcher's hook and
the rest in children. The children's figures are merged (bench/fleet_stats.py).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import resource
import secrets
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # as a child: `-m bench.fleet_procs`

from aegis.runtime.lifetime import dies_with_parent
from bench.fleet import Fleet, FleetConfig
from bench.fleet_stats import FleetStats

END_WAIT_S = 15.0  # a child told to end (SIGTERM) sends its figures within this


class ProcFleet:
    """The fleet split over `procs` child processes (`python -m bench.fleet_procs`), each a Fleet
    over every procs-th pod in its own asyncio loop; their stats merged once they end.

    One Python process simulating 12,500 agents is one core's work for the whole job (their
    NKeys, credential calls, connections, orders and heartbeats): the bench measured itself
    however many cores the machine had. Healthy jobs only: a crash's replacement is started
    by the launcher's hook, which lives in the bench's process (a SplitFleet runs a crash
    job's other pods in a ProcFleet)."""

    def __init__(self, cfg: FleetConfig, expected: dict[str, str], procs: int) -> None:
        if procs < 2:
            raise ValueError("a ProcFleet has 2 or more processes (use Fleet for one)")
        if cfg.crashes:
            raise ValueError("a fleet in child processes runs healthy jobs only")
        self.cfg = cfg
        self.expected = expected
        self.procs = procs
        self.stats = FleetStats()  # merged when the children have ended
        self.cpu_s = 0.0  # the children's CPU seconds, as each measured itself at its end
        self.children: list[asyncio.subprocess.Process] = []

    async def run(self, pods: tuple[str, ...]) -> None:
        """Start the children, each with its share of the pods and their incarnations (the
        credential service expects them before any child calls it); return when every child
        has reported. RuntimeError if one failed. Cancelled (the bench's timeout), it tells
        them to end, keeps the figures of those that send them within END_WAIT_S (how far
        the job got), and kills the rest."""
        incarnations = {pod: secrets.token_hex(8) for pod in pods}
        self.expected.update(incarnations)
        self.stats.started = time.monotonic()  # until a child's own start is known
        shares = [share for i in range(self.procs) if (share := pods[i :: self.procs])]
        talks: list[asyncio.Task[tuple[bytes, bytes]]] = []
        try:
            for share in shares:
                talks.append(await self._start(share, incarnations))
            await asyncio.wait(talks)
        except asyncio.CancelledError:  # past the bench's timeout: the figures so far
            self.end()
            if talks:
                await asyncio.wait(talks, timeout=END_WAIT_S)
            self._merge(talks)
            raise
        finally:
            await self._kill_left()
            for talk in talks:
                talk.cancel()
        for child in self.children:
            if child.returncode != 0:
                raise RuntimeError(f"a fleet process exited with {child.returncode}")
        self._merge(talks)

    async def _start(
        self, share: tuple[str, ...], incarnations: dict[str, str]
    ) -> asyncio.Task[tuple[bytes, bytes]]:
        """A child running `share` of the pods; the task that sends its spec and reads its
        figures."""
        argv = dies_with_parent([sys.executable, "-m", "bench.fleet_procs"])
        pipe = asyncio.subprocess.PIPE
        root = Path(__file__).resolve().parents[1]
        child = await asyncio.create_subprocess_exec(*argv, stdin=pipe, stdout=pipe, cwd=root)
        self.children.append(child)
        spec = {
            "cfg": dataclasses.asdict(self.cfg),
            "pods": share,
            "incarnations": {p: incarnations[p] for p in share},
        }
        return asyncio.create_task(child.communicate(json.dumps(spec).encode()))

    async def _kill_left(self) -> None:
        """Kill the children still running."""
        for child in self.children:
            if child.returncode is None:
                child.kill()
                await child.wait()

    @property
    def processes(self) -> int:
        """The child processes started (as many as `procs`, or pods if fewer)."""
        return len(self.children)

    @property
    def child_pids(self) -> list[int]:
        """The child processes' ids (for the bench's CPU samples)."""
        return [child.pid for child in self.children]

    def _merge(self, talks: list[asyncio.Task[tuple[bytes, bytes]]]) -> None:
        """The stats and CPU time of every child that reported (each ends with one line)."""
        parts = []
        for talk in talks:
            if not talk.done() or talk.cancelled() or talk.exception() is not None:
                continue
            out = talk.result()[0]
            if not out.strip():
                continue
            result = json.loads(out)
            parts.append(FleetStats.from_json(result["stats"]))
            self.cpu_s += float(result["cpu_s"])
        if parts:
            self.stats = FleetStats.merged(parts)

    def end(self) -> None:
        """The controller exited: each child stops the agents it still has (Fleet.end)."""
        for child in self.children:
            if child.returncode is None:
                child.send_signal(signal.SIGTERM)


class SplitFleet:
    """A crash job's fleet over processes: the pods that crash (and their replacements) run in
    this process, beside the launcher's hook that tells the controller and starts each
    replacement; every other pod runs in `procs` child processes (a ProcFleet).

    With every agent of the crash job in one process, a replacement would ask for its
    credential and join behind that process's own work on the RunCommand order (thousands of
    agents taking it and sending their reports), and the bench would time itself. The hook and
    the crash queue (one crash per RunCommand order) need only the crashing pods, which see
    every order."""

    def __init__(
        self,
        cfg: FleetConfig,
        expected: dict[str, str],
        on_lost: Callable[[str, str, int], None],
        procs: int,
    ) -> None:
        if not cfg.crashes:
            raise ValueError("a SplitFleet runs a job with crashes (use a ProcFleet)")
        self.crashing = frozenset(cfg.crashes)
        self.local = Fleet(cfg, expected, on_lost)
        self.rest = ProcFleet(dataclasses.replace(cfg, crashes=()), expected, procs)
        self._merged: FleetStats | None = None

    @property
    def stats(self) -> FleetStats:
        """While the job runs, the crashing pods' (they see every order); once it ended, the
        whole fleet's."""
        return self._merged if self._merged is not None else self.local.stats

    @property
    def cpu_s(self) -> float:
        """The child processes' CPU seconds (this process's are the bench's)."""
        return self.rest.cpu_s

    @property
    def processes(self) -> int:
        """This process and the children started."""
        return 1 + self.rest.processes

    @property
    def child_pids(self) -> list[int]:
        """The child processes' ids (for the bench's CPU samples)."""
        return self.rest.child_pids

    async def run(self, pods: tuple[str, ...]) -> None:
        """Run both parts until every agent has left; the stats merged whatever the end."""
        mine = tuple(p for p in pods if p in self.crashing)
        others = tuple(p for p in pods if p not in self.crashing)
        parts = [self.local.run(mine)] + ([self.rest.run(others)] if others else [])
        try:
            async with asyncio.TaskGroup() as group:
                for part in parts:
                    group.create_task(part)
        finally:
            shares = [self.local.stats] + ([self.rest.stats] if others else [])
            self._merged = FleetStats.merged(shares)

    def end(self) -> None:
        """The controller exited: both parts stop the agents they still have."""
        self.local.end()
        self.rest.end()


def _no_launcher(pod: str, incarnation: str, code: int) -> None:
    raise RuntimeError(f"{pod} ({incarnation}) was lost in a child fleet process (exit {code})")


async def _child(spec: dict[str, Any]) -> dict[str, Any]:
    given = spec["cfg"]
    cfg = FleetConfig(
        **{
            **given,
            "crashes": tuple(given["crashes"]),
            "gc_thresholds": tuple(given["gc_thresholds"]),
        }
    )
    fleet = Fleet(cfg, {}, _no_launcher)
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, fleet.end)
    await fleet.run(tuple(spec["pods"]), spec["incarnations"])
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {"stats": fleet.stats.to_json(), "cpu_s": usage.ru_utime + usage.ru_stime}


def child_main() -> int:
    """A child of ProcFleet: its share of the fleet from stdin (JSON), its stats to stdout."""
    spec = json.loads(sys.stdin.buffer.read())
    print(json.dumps(asyncio.run(_child(spec))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(child_main())
