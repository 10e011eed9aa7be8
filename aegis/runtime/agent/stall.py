"""A hang of the running command ends in seconds: find the culprit, stop it, report Error.

When the HangWatch of a local rank says no progress for the hang timeout, the agent looks at
all its local ranks once (aegis.checks.culprit). The culprits (stopped, or not in a
collective) are SIGKILLed: the pod's ranks end, the agent reports Error with what it found
(agentWork's Error: the job troubleshoots and restarts every rank in place, one retry charged
to this pod, no node blacklisted). Ranks waiting in a collective behind a culprit elsewhere
are left alone: their pod stays unmarked, and the culprit's pod's Error restarts them. If no
pod finds a culprit (every rank waits, or none could be sampled), each agent whose ranks are
still stalled another hang timeout later stops them itself (`fallback_due`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection, Sequence

from aegis.checks.culprit import RankLook, look, stop_culprit
from aegis.checks.hangwatch import HangVerdict

log = logging.getLogger(__name__)


class Stall:
    """The hang handling of one run of the command."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.reason = ""  # why this pod stopped its ranks (the Error report's reason)
        self.looks: list[RankLook] = []

    async def on_verdict(
        self,
        pod: str,
        verdict: HangVerdict,
        ranks: Sequence[tuple[int, int, str]],
        quiet: Collection[int],
    ) -> bool:
        """Look at the ranks ((local rank, pid, dump file) each); stop the culprits among
        the `quiet` ones (no progress of their own for the timeout). True when some were
        stopped (the command ends, with `reason`)."""
        if self.reason:
            return True
        self.looks = await asyncio.to_thread(look, ranks)
        culprits = [x for x in self.looks if x.culprit and x.local_rank in quiet]
        found = "; ".join(x.describe() for x in self.looks)
        if not culprits:
            print(
                f"aegis: agent {pod}: no progress for {verdict.age_s:.1f} s, no culprit here: "
                f"{found}",
                flush=True,
            )
            return False
        self.reason = f"hang: no progress for {verdict.age_s:.1f} s; {found}"
        print(f"aegis: agent {pod}: {self.reason}: stopping the culprit", flush=True)
        for x in culprits:
            stop_culprit(x.pid)
        return True

    def fallback_due(self, age_s: float) -> bool:
        """Whether ranks stalled for `age_s` must be stopped though no culprit was found."""
        return not self.reason and age_s >= 2 * self.timeout_s

    def give_up(self, pod: str, age_s: float, pids: Sequence[int]) -> None:
        """Stop every local rank: no pod found a culprit within a second timeout."""
        seen = "; ".join(x.describe() for x in self.looks) or "nothing sampled"
        self.reason = f"hang: no progress for {age_s:.1f} s and no culprit found ({seen})"
        print(f"aegis: agent {pod}: {self.reason}: stopping its ranks", flush=True)
        for pid in pids:
            stop_culprit(pid)
