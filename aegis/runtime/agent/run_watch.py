"""What an agent watches while its command runs (one task per run of the command).

Every poll (min(1 s, hang timeout / 4)) of each local rank's HangWatch:
- a checkpoint the rank signalled: `aegis.checkpoint_done(step)` is a step that rank saved
  (the store counts it); a change of the marker file is a whole checkpoint, reported as is;
- a stall: no progress for the hang timeout ends in the culprit's stop (agent/stall.py), or,
  when no pod found one, in stopping this pod's ranks one hang timeout later;
- while an eviction waits (agentCheckpoint enabled), the newest step every local rank saved
  since the decision goes to the controller as a Checkpoint report: the one that makes a
  step every pod saved releases the eviction (docs/checkpoints.md).
A slowness the pod's last performance check found is reported (Hang) once, at the start.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from aegis.checks.hangwatch import MARKER_CHECKPOINT, HangVerdict, HangWatch
from aegis.generated.aegis_phase import Label
from aegis.protocol.envelope import Message
from aegis.protocol.environment import AgentConfig
from aegis.runtime.agent.checkpoint_store import CheckpointStore
from aegis.runtime.agent.core import AgentCore
from aegis.runtime.agent.ranks import LocalRanks
from aegis.runtime.agent.stall import Stall


class WatchedAgent(Protocol):
    """What the watch needs of its agent (AgentService)."""

    cfg: AgentConfig
    core: AgentCore
    store: CheckpointStore
    ranks: LocalRanks | None
    stall: Stall | None
    slow_note: str

    def stack_file(self, local_rank: int) -> Path: ...

    async def report_hang(self, reason: str) -> bool: ...

    async def send_report(self, report: Message) -> None: ...


class RunWatch:
    """The watch of one run of the command."""

    def __init__(self, agent: WatchedAgent, watches: Sequence[HangWatch]) -> None:
        self.agent = agent
        self.watches = watches
        self.floor: tuple[int, int] | None = None  # (order, newest saved step when the
        # eviction was first seen): a Checkpoint report names only a step saved after it

    async def run(self) -> None:
        """Poll until cancelled (the command ended)."""
        agent, timeout = self.agent, self.agent.cfg.hang_timeout
        period = min(w.poll_interval_s for w in self.watches)
        if agent.slow_note:
            await agent.report_hang(agent.slow_note)
        while True:
            await asyncio.sleep(period)
            for lr, watch in enumerate(self.watches):
                step = watch.new_checkpoint()
                if step == MARKER_CHECKPOINT:
                    await self.report_checkpoint(MARKER_CHECKPOINT)
                elif step is not None:
                    agent.store.note_saved(lr, step)
                verdict = watch.poll() if timeout > 0 else None
                if verdict is not None:
                    await self.stalled(verdict, timeout)
            age = min(w.age_s() for w in self.watches)
            if timeout > 0 and agent.stall is not None and agent.stall.fallback_due(age):
                self.give_up(age)
            await self.report_saved()

    async def stalled(self, verdict: HangVerdict, timeout: float) -> None:
        """No progress for the hang timeout: stop the culprit ranks, if they are here. Only a
        rank that itself made no progress for the timeout can be one (a rank still importing
        while its peer waits for it is slow, not hung)."""
        ranks, stall = self.agent.ranks, self.agent.stall
        if ranks is None or stall is None:
            return
        looks = [
            (lr, pid, str(self.agent.stack_file(lr)))
            for lr, r in enumerate(ranks.runners)
            if (pid := r.command_pid) is not None
        ]
        quiet = {lr for lr, w in enumerate(self.watches) if w.age_s() >= timeout}
        await stall.on_verdict(self.agent.cfg.pod, verdict, looks, quiet)

    def give_up(self, age_s: float) -> None:
        """No pod found a culprit within a second timeout: stop this pod's ranks."""
        ranks, stall = self.agent.ranks, self.agent.stall
        if ranks is not None and stall is not None:
            pids = [r.pid for r in ranks.runners if r.pid is not None]
            stall.give_up(self.agent.cfg.pod, age_s, pids)

    async def report_saved(self) -> None:
        """While an eviction waits: report the newest step every local rank saved after the
        agent first saw the decision."""
        core, store = self.agent.core, self.agent.store
        if not core.enabled(Label.agentCheckpoint):
            self.floor = None
            return
        saved, seq = store.saved(), core.work_seq
        if self.floor is None or self.floor[0] != seq:
            self.floor = (seq, -1 if saved is None else saved)
            return
        if saved is not None and saved > self.floor[1]:
            self.floor = (seq, saved)
            await self.report_checkpoint(saved)

    async def report_checkpoint(self, step: int) -> None:
        """agentCheckpoint: the Checkpoint report of `step`, if the view enables it."""
        msg = self.agent.core.checkpoint(step)
        if msg is not None:
            await self.agent.send_report(msg)
