"""An agent's answers to `aegis ctl` (aegis.runtime.control): mark its pod hung, run local
checks or a burn-in now, out of band."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from aegis.protocol.control import CTL_CHECKS

if TYPE_CHECKING:
    from aegis.runtime.agent.service import AgentService

LOCAL_CHECKS = CTL_CHECKS  # `aegis ctl check`: io, runtime, gpu, rdma (no peers needed)


class AgentCtl:
    """The control requests of one agent (aegis.runtime.control.AgentControlApi)."""

    def __init__(self, agent: AgentService) -> None:
        self.agent = agent

    async def ctl_hang(self, reason: str) -> dict[str, Any]:
        """`aegis ctl hang`: mark this pod slow/hung (report Hang); nothing is killed."""
        running = self.agent.ranks is not None and self.agent.ranks.running
        if not running:
            return {"marked": False, "detail": "no training command is running"}
        marked = await self.agent.report_hang(f"operator: {reason}" if reason else "operator")
        detail = "reported Hang" if marked else "agentHang not enabled (already marked?)"
        return {"marked": marked, "detail": detail}

    async def ctl_check(self, checks: Sequence[str]) -> list[dict[str, Any]]:
        """`aegis ctl check`: run local checks now, out of band (no peers needed)."""
        names = tuple(checks) or LOCAL_CHECKS
        bad = [c for c in names if c not in LOCAL_CHECKS]
        if bad:
            raise ValueError(f"not a local check: {', '.join(bad)}; use {', '.join(LOCAL_CHECKS)}")
        params = {"simulate": list(self.agent.cfg.simulate)}
        results = await self.agent.diag.run(names, f"ctl-{os.urandom(4).hex()}", params)
        return [r.to_dict() for r in results]

    async def ctl_burn(self, seconds: float) -> list[dict[str, Any]]:
        """`aegis ctl burn`: a compute burn-in of `seconds` on this node's device."""
        params = {"burn_seconds": float(seconds), "simulate": list(self.agent.cfg.simulate)}
        results = await self.agent.diag.run(("burn",), f"burn-{os.urandom(4).hex()}", params)
        return [r.to_dict() for r in results]
