"""`aegis ctl` on the bus: send a plan's requests as the ctl user, and `status --watch`.

Requests go to the controller (status, stop, taint, untaint) or to each named pod's agent
(hang, check, burn), concurrently; each target's answer is kept, with why it is missing.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aegis.cli.ctl_config import CtlConfig, Failure, Plan
from aegis.cli.ctl_saved import json_object, saved_view
from aegis.cli.ctl_status import TERMINAL, render_status

CLEAR = "\x1b[H\x1b[2J"


@dataclass(frozen=True)
class Answer:
    """One target's answer: its result, or why there is none."""

    target: str
    ok: bool
    result: Any = None
    error: str = ""


async def _connect(cfg: CtlConfig, timeout: float, name: str) -> Any:
    """A bus connection with the ctl credential (BusError if the job cannot be reached)."""
    from aegis.protocol.subjects import JobSubjects
    from aegis.runtime.transport.auth import UserCredentials
    from aegis.runtime.transport.bus import Bus

    subjects = JobSubjects(cfg.namespace, cfg.job)
    return await Bus.connect(
        cfg.nats_url,
        UserCredentials(cfg.jwt, cfg.seed.encode("ascii")),
        name=name,
        timeout=min(timeout, 5.0),
        reconnect_attempts=1,
        inbox_prefix=subjects.ctl_inbox_prefix,  # replies only ctl's credential can read
        tls_ca=cfg.nats_ca,
    )


async def execute(cfg: CtlConfig, plan: Plan) -> list[Answer]:
    """Connect as the ctl user and send the plan's requests (concurrently to pods)."""
    from aegis.protocol.control import make_request
    from aegis.protocol.subjects import JobSubjects
    from aegis.runtime.errors import BusError

    subjects = JobSubjects(cfg.namespace, cfg.job)
    try:
        bus = await _connect(cfg, plan.timeout, "aegis-ctl")
    except BusError as exc:
        raise Failure(
            f"cannot reach job {cfg.namespace}/{cfg.job} (has it ended?): {exc}"
        ) from None
    try:
        msg = make_request(cfg.namespace, cfg.job, plan.command, **plan.args)
        if not plan.pods:
            return [await _ask(bus, subjects.ctl_controller, "controller", msg, plan.timeout)]
        asks = [_ask(bus, subjects.ctl_agent(p), p, msg, plan.timeout) for p in plan.pods]
        return list(await asyncio.gather(*asks))
    finally:
        await bus.close()


async def _ask(bus: Any, subject: str, target: str, msg: Any, timeout: float) -> Answer:
    from aegis.protocol.control import ControlError, reply_result
    from aegis.runtime.errors import BusError

    try:
        reply = await bus.request(subject, msg, timeout=timeout)
    except BusError as exc:
        if "nobody is subscribed" in str(exc):
            who = (
                "the controller is not running"
                if target == "controller"
                else ("its agent is not connected (restarting, or running without a controller)")
            )
            return Answer(target, False, error=f"no answer: {who}")
        return Answer(target, False, error=f"no answer within {timeout:g} s ({exc})")
    try:
        return Answer(target, True, result=reply_result(reply))
    except ControlError as exc:
        return Answer(target, False, error=f"refused: {exc}")


def _show_ended(cfg: CtlConfig, saved: Path | None, as_json: bool, out: Any) -> None:
    """The controller is gone after it was seen: how the job ended, from its state dir."""
    view = saved_view(saved) if saved is not None else None
    if view is None:
        print(f"job {cfg.namespace}/{cfg.job} has ended", file=out)
    elif as_json:
        print(json.dumps(view, sort_keys=True), file=out, flush=True)
    else:
        print(render_status(cfg, view), file=out, flush=True)


def _no_answer(
    cfg: CtlConfig, answer: Answer, seen: bool, saved: Path | None, as_json: bool, out: Any
) -> int:
    """The controller did not answer: the job ended if it was seen before (0), else 1."""
    if seen:
        _show_ended(cfg, saved, as_json, out)
        return 0
    print(f"aegis: error: status: {answer.error}", file=sys.stderr)
    return 1


def _show(cfg: CtlConfig, view: dict[str, Any], as_json: bool, out: Any) -> None:
    """One refresh: a JSON line, or the status redrawn (in place on a terminal)."""
    if as_json:
        print(json.dumps(view, sort_keys=True), file=out, flush=True)
        return
    stamp = time.strftime("%H:%M:%S")
    tty = hasattr(out, "isatty") and out.isatty()
    print(
        (CLEAR if tty else "") + f"{render_status(cfg, view)}\n(refreshed {stamp}; Ctrl-C to stop)",
        file=out,
        flush=True,
    )


async def watch_status(
    cfg: CtlConfig,
    plan: Plan,
    interval: float,
    as_json: bool,
    *,
    out: Any = None,
    max_refreshes: int | None = None,
    saved: Path | None = None,
) -> int:
    """`status --watch`: ask for the status every `interval` s over one connection and redraw
    it, until the job ends (its phase is terminal, or its controller is gone after it was
    seen: then its state dir `saved`, if given, shows how it ended) or Ctrl-C. Exit 0 when it
    ended or was interrupted, 1 if it was never reached."""
    from aegis.protocol.control import make_request
    from aegis.protocol.subjects import JobSubjects
    from aegis.runtime.errors import BusError

    out = out or sys.stdout
    subject = JobSubjects(cfg.namespace, cfg.job).ctl_controller
    try:
        bus = await _connect(cfg, plan.timeout, "aegis-ctl-watch")
    except BusError as exc:
        print(f"aegis: error: cannot reach job {cfg.namespace}/{cfg.job}: {exc}", file=sys.stderr)
        return 1
    refreshes = 0
    try:
        while max_refreshes is None or refreshes < max_refreshes:
            msg = make_request(cfg.namespace, cfg.job, "status")
            answer = await _ask(bus, subject, "controller", msg, plan.timeout)
            if not answer.ok:
                return _no_answer(cfg, answer, bool(refreshes), saved, as_json, out)
            refreshes += 1
            view = json_object(answer.result)
            _show(cfg, view, as_json, out)
            if view.get("phase") in TERMINAL or view.get("terminal") in TERMINAL:
                return 0
            await asyncio.sleep(interval)
        return 0
    except (KeyboardInterrupt, asyncio.CancelledError):
        return 0
    finally:
        await bus.close()
