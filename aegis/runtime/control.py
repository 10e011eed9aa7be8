"""Both sides' handlers of the operator's control protocol (`aegis ctl`).

The schema, validation and message builders are in `aegis.protocol.control`; here the
controller answers status/stop/taint/untaint and an agent answers hang/check/burn. Nothing here
raises into the controller's or the agent's subscription.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from aegis.protocol.control import (
    AGENT_COMMANDS,
    CONTROLLER_COMMANDS,
    ControlError,
    ControlRequest,
    jsonable,
    make_reply,
    parse_request,
)
from aegis.protocol.envelope import Message

log = logging.getLogger(__name__)


# ---------------- the controller's side ----------------


class ControllerControlApi(Protocol):
    """What the controller's handler needs of ControllerCore."""

    def status_view(self) -> dict[str, Any]:
        """The job's status, JSON-able."""
        ...

    def taint(self, node: str, reason: str) -> bool:
        """Add `node` to ErrorNodes (False: it was there)."""
        ...

    def untaint(self, node: str) -> bool:
        """Remove `node` from ErrorNodes (False: it was not there)."""
        ...

    def known_nodes(self) -> set[str]:
        """The nodes the job's pods are known to have run on, and its error nodes."""
        ...

    def on_quit(self) -> Any:
        """The operator asks the job to stop (an Outcome)."""
        ...


# the service's way to apply an event: persist, publish the order it causes, reply
ApplyFn = Callable[[Callable[[], Any]], Awaitable[Message | None]]


class ControllerControl:
    """Answers control requests on the controller (call `handle` under the service's lock)."""

    def __init__(self, core: ControllerControlApi, apply: ApplyFn, namespace: str, job: str):
        self.core = core
        self.apply = apply
        self.namespace = namespace
        self.job = job
        self.refused = 0  # requests answered with an error

    async def handle(self, msg: Message) -> Message:
        """The reply to one request (never raises)."""
        try:
            if (msg.aegis_namespace, msg.aegis_name) != (self.namespace, self.job):
                raise ControlError(
                    f"request for job {msg.aegis_namespace}/{msg.aegis_name}; "
                    f"this is {self.namespace}/{self.job}"
                )
            req = parse_request(msg, CONTROLLER_COMMANDS)
            result = await self._run(req)
        except ControlError as exc:
            self.refused += 1
            log.warning("control request refused: %s", exc)
            return make_reply(msg, ok=False, error=str(exc))
        except Exception as exc:  # a bug must not take the controller down
            self.refused += 1
            log.exception("control request %s failed", msg.data.get("command"))
            return make_reply(msg, ok=False, error=f"controller failed: {exc!r}")
        log.info("control request %s done", req.command)
        return make_reply(msg, ok=True, result=result)

    async def _run(self, req: ControlRequest) -> Any:
        core = self.core
        if req.command == "status":
            return core.status_view()
        if req.command == "stop":
            before = core.status_view()
            await self.apply(core.on_quit)
            after = core.status_view()
            return {
                "accepted": not before.get("shouldQuit") and bool(after.get("shouldQuit")),
                "phase": after.get("phase"),
                "shouldQuit": after.get("shouldQuit"),
            }
        node = req.args["node"]
        if req.command == "taint":
            known = core.known_nodes()
            if node not in known and not req.args["force"]:
                ran = ", ".join(sorted(known)[:8]) or "none reported yet"
                raise ControlError(
                    f"node {node} is not a node of this job (its pods ran on: {ran}); "
                    "--force taints it anyway (on Kubernetes: to keep the job's pods off it)"
                )
            return {"node": node, "changed": bool(core.taint(node, req.args["reason"]))}
        return {"node": node, "changed": bool(core.untaint(node))}


# ---------------- the agent's side ----------------


class AgentControlApi(Protocol):
    """What an agent provides to answer control requests (implemented by Agent)."""

    async def ctl_hang(self, reason: str) -> dict[str, Any]:
        """Mark this pod slow/hung: report Hang; nothing is killed."""
        ...

    async def ctl_check(self, checks: Sequence[str]) -> list[dict[str, Any]]:
        """Run these local checks now, out of band; CheckResult dicts."""
        ...

    async def ctl_burn(self, seconds: float) -> list[dict[str, Any]]:
        """A burn-in compute stress of about `seconds`; CheckResult dicts."""
        ...


async def handle_agent_request(api: AgentControlApi, msg: Message) -> Message:
    """The agent's reply to one control request (never raises)."""
    try:
        req = parse_request(msg, AGENT_COMMANDS)
        result: Any
        if req.command == "hang":
            result = await api.ctl_hang(req.args["reason"])
        elif req.command == "check":
            result = await api.ctl_check(list(req.args["checks"]))
        else:
            result = await api.ctl_burn(req.args["seconds"])
        result = jsonable(result)
    except ControlError as exc:
        log.warning("control request refused: %s", exc)
        return make_reply(msg, ok=False, error=str(exc))
    except Exception as exc:
        log.exception("control request %s failed", msg.data.get("command"))
        return make_reply(msg, ok=False, error=f"agent failed: {exc!r}")
    return make_reply(msg, ok=True, result=result)
