"""`aegis ctl`'s answers printed: one JSON object, or a line or table per command; and the
exit code they make (1 when a target did not answer, a check failed or a hang was refused).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from aegis.cli.ctl_config import CtlConfig, Plan
from aegis.cli.ctl_saved import json_object
from aegis.cli.ctl_send import Answer
from aegis.cli.ctl_status import render_checks, render_status


def _failed_checks(result: Any) -> bool:
    if not isinstance(result, list):
        return False
    return any(
        isinstance(r, dict) and r.get("applicable", True) and not r.get("passed") for r in result
    )


def exit_code(plan: Plan, answers: list[Answer]) -> int:
    """0 when every target answered and every check passed (and a hang was marked), else 1."""
    if not all(a.ok for a in answers):
        return 1
    if plan.command in ("check", "burn") and any(_failed_checks(a.result) for a in answers):
        return 1
    refused = [a for a in answers if json_object(a.result).get("marked") is False]
    if plan.command == "hang" and refused:
        return 1
    return 0


def print_json(plan: Plan, answers: list[Answer]) -> int:
    """The answers as one JSON object; return the exit code."""
    code = exit_code(plan, answers)
    if not plan.pods:
        a = answers[0]
        obj: dict[str, Any] = {"ok": a.ok, "result": a.result, "error": a.error}
    else:
        obj = {
            "ok": code == 0,
            "pods": {a.target: {"ok": a.ok, "result": a.result, "error": a.error} for a in answers},
        }
    print(json.dumps(obj, sort_keys=True))
    return code


def _print_status(cfg: CtlConfig, plan: Plan, ok: list[Answer]) -> None:
    print(render_status(cfg, ok[0].result))


def _print_stop(cfg: CtlConfig, plan: Plan, ok: list[Answer]) -> None:
    r = json_object(ok[0].result)
    phase = r.get("phase", "?")
    if not r.get("accepted"):
        state = "was already stopping or ended"
    else:
        state = "stopped" if phase in ("Failed", "Succeed") else "stopping"
    print(f"job {cfg.namespace}/{cfg.job} {state} (phase {phase})")


# (changed, unchanged) for taint and untaint
_NODE_CHANGE = {
    "taint": ("tainted", "was already tainted"),
    "untaint": ("untainted", "was not tainted"),
}


def _print_node_change(cfg: CtlConfig, plan: Plan, ok: list[Answer]) -> None:
    r = json_object(ok[0].result)
    node = r.get("node", plan.args.get("node"))
    changed, unchanged = _NODE_CHANGE[plan.command]
    print(f"node {node} {changed if r.get('changed') else unchanged}")


def _print_hang(cfg: CtlConfig, plan: Plan, ok: list[Answer]) -> None:
    for a in ok:
        r = json_object(a.result)
        detail = f": {r['detail']}" if r.get("detail") else ""
        if r.get("marked") is False:
            print(f"aegis: error: hang: pod {a.target} not marked{detail}", file=sys.stderr)
        else:
            print(f"pod {a.target} marked hung (nothing is killed){detail}")


def _print_checks(cfg: CtlConfig, plan: Plan, ok: list[Answer]) -> None:
    print(render_checks([(a.target, a.result) for a in ok]))


# how each command's answers (those that came) read to a person
_HUMAN: dict[str, Callable[[CtlConfig, Plan, list[Answer]], None]] = {
    "status": _print_status,
    "stop": _print_stop,
    "taint": _print_node_change,
    "untaint": _print_node_change,
    "hang": _print_hang,
    "check": _print_checks,
    "burn": _print_checks,
}


def print_human(cfg: CtlConfig, plan: Plan, answers: list[Answer]) -> int:
    """Each missing answer as an error, the others as the command's line or table; return
    the exit code."""
    for a in answers:
        if not a.ok:
            where = "controller" if a.target == "controller" else f"pod {a.target}"
            print(f"aegis: error: {plan.command}: {where}: {a.error}", file=sys.stderr)
    ok = [a for a in answers if a.ok]
    printer = _HUMAN.get(plan.command)
    if ok and printer is not None:
        printer(cfg, plan, ok)
    return exit_code(plan, answers)
