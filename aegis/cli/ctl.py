"""`aegis ctl`: the operator's commands against a running job (design §3's ctl CLI).

    aegis ctl --state-dir DIR status | stop | taint NODE [--reason R] | untaint NODE
                              | hang POD [--reason R] | check [POD ...] [--check NAME]
                              | burn POD [--seconds S]

It reads `<DIR>/ctl.json` (written by `aegis run`: NATS URL, a ctl user's JWT and seed, the
job and its pods) and sends one control request per target (aegis.runtime.control). Exit
codes: 0 done (for check/burn: every check passed); 1 the job is unreachable, a target did
not answer or refused, or a check failed; 2 a usage error (bad flag, unknown pod, no ctl.json).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

CTL_FILE = "ctl.json"
CONTROLLER_TIMEOUT_S = 10.0
CHECK_TIMEOUT_S = 150.0  # the local checks' budgets: io 30 + gpu 66 + runtime 5 + rdma 25
BURN_SLACK_S = 30.0


class _OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line, `aegis: error: ...`, exit 2."""

    def error(self, message: str) -> NoReturn:
        print(f"aegis: error: {self.prog}: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        ns, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return ns, []


def register(sub: Any) -> None:
    """Add the top-level `ctl` subcommand."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--state-dir",
        type=Path,
        default=argparse.SUPPRESS,
        help="the job's state dir (`aegis run --state-dir`), holding ctl.json",
    )
    common.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="one JSON object out"
    )
    common.add_argument(
        "--timeout",
        type=float,
        default=argparse.SUPPRESS,
        metavar="S",
        help="seconds to wait for the answer (default: 10; check 150; burn S + 30)",
    )
    ctl = sub.add_parser(
        "ctl",
        parents=[common],
        help="control a running job: status, stop, taint, untaint, hang, check, burn",
        description="Send an operator command to a job started by `aegis run --state-dir DIR`.",
        usage="aegis ctl --state-dir DIR [--json] [--timeout S] COMMAND ...",
    )
    ctl.__class__ = _OneLineParser  # one-line usage errors for `aegis ctl` itself too
    cmds = ctl.add_subparsers(
        dest="ctl_command", required=True, metavar="COMMAND", parser_class=_OneLineParser
    )
    cmds.add_parser(
        "status",
        parents=[common],
        prog="aegis ctl status",
        help="the job's phase, pods and error nodes",
    )
    cmds.add_parser(
        "stop",
        parents=[common],
        prog="aegis ctl stop",
        help="stop the job (ShouldQuit: it ends Failed)",
    )
    taint = cmds.add_parser(
        "taint", parents=[common], prog="aegis ctl taint", help="add NODE to the job's ErrorNodes"
    )
    taint.add_argument("node", metavar="NODE")
    taint.add_argument("--reason", help="why (kept in the status)")
    untaint = cmds.add_parser(
        "untaint", parents=[common], prog="aegis ctl untaint", help="remove NODE from ErrorNodes"
    )
    untaint.add_argument("node", metavar="NODE")
    hang = cmds.add_parser(
        "hang",
        parents=[common],
        prog="aegis ctl hang",
        help="mark POD slow/hung (its agent reports Hang; no kill)",
    )
    hang.add_argument("pod", metavar="POD")
    hang.add_argument("--reason", help="why (in the agent's report)")
    check = cmds.add_parser(
        "check",
        parents=[common],
        prog="aegis ctl check",
        help="run the local health checks on POD(s) now (default: all)",
    )
    check.add_argument("pods", nargs="*", metavar="POD")
    check.add_argument(
        "--check",
        action="append",
        dest="checks",
        metavar="NAME",
        help="a check to run (repeatable; default io, runtime, gpu, rdma)",
    )
    burn = cmds.add_parser(
        "burn", parents=[common], prog="aegis ctl burn", help="burn-in compute stress on POD"
    )
    burn.add_argument("pod", metavar="POD")
    burn.add_argument("--seconds", type=float, help="how long (default 10, at most 600)")
    ctl.set_defaults(func=_ctl)


# ---------------- the session ----------------


class UsageError(Exception):
    """Exit 2: the command line or the state dir is wrong."""


class Failure(Exception):
    """Exit 1: the job is unreachable or refused."""


@dataclass(frozen=True)
class CtlConfig:
    """What ctl.json says."""

    nats_url: str
    jwt: str
    seed: str
    namespace: str
    job: str
    pods: tuple[str, ...] | None


def load_config(state_dir: Path) -> CtlConfig:
    """Read `<state_dir>/ctl.json` (UsageError saying what is missing)."""
    if not state_dir.is_dir():
        raise UsageError(f"state dir {state_dir} does not exist")
    path = state_dir / CTL_FILE
    try:
        obj = json.loads(path.read_text())
    except FileNotFoundError:
        raise UsageError(
            f"no {CTL_FILE} in {state_dir}: is a job running with `aegis run --state-dir "
            f"{state_dir}`?"
        ) from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None
    try:
        pods = obj.get("pods")
        return CtlConfig(
            nats_url=_str(obj["natsUrl"]),
            jwt=_str(obj["jwt"]),
            seed=_str(obj["seed"]),
            namespace=_str(obj["namespace"]),
            job=_str(obj["job"]),
            pods=None if pods is None else tuple(_str(p) for p in pods),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise UsageError(f"{path} is not a ctl file: {exc!r}") from None


def _str(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected a non-empty string, got {value!r}")
    return value


@dataclass(frozen=True)
class Plan:
    """The requests one ctl invocation sends: to the controller, or to each listed pod."""

    command: str
    args: dict[str, Any]
    pods: tuple[str, ...]  # empty: the controller
    timeout: float


def make_plan(args: argparse.Namespace, cfg: CtlConfig) -> Plan:
    """Validate the command line against the protocol and the job's pods (UsageError)."""
    from aegis.runtime.control import ControlError, validate

    cmd: str = args.ctl_command
    kw: dict[str, Any] = {}
    pods: tuple[str, ...] = ()
    if cmd in ("taint", "untaint"):
        kw["node"] = args.node
    if cmd in ("taint", "hang") and args.reason is not None:
        kw["reason"] = args.reason
    if cmd in ("hang", "burn"):
        pods = (args.pod,)
    if cmd == "check":
        pods = tuple(dict.fromkeys(args.pods)) or _all_pods(cfg)
        if args.checks:
            kw["checks"] = list(args.checks)
    if cmd == "burn" and args.seconds is not None:
        kw["seconds"] = args.seconds
    try:
        req = validate(cmd, kw, (cmd,))
    except ControlError as exc:
        raise UsageError(f"ctl {cmd}: {exc}") from None
    if cfg.pods is not None:
        unknown = [p for p in pods if p not in cfg.pods]
        if unknown:
            raise UsageError(
                f"unknown pod(s) {', '.join(unknown)}; job {cfg.job} has {', '.join(cfg.pods)}"
            )
    timeout = getattr(args, "timeout", None)
    if timeout is None:
        timeout = CONTROLLER_TIMEOUT_S
        if cmd == "check":
            timeout = CHECK_TIMEOUT_S
        elif cmd == "burn":
            timeout = float(req.args["seconds"]) + BURN_SLACK_S
    if not timeout > 0:
        raise UsageError(f"--timeout must be > 0, got {timeout}")
    return Plan(cmd, dict(kw), pods, float(timeout))


def _all_pods(cfg: CtlConfig) -> tuple[str, ...]:
    if not cfg.pods:
        raise UsageError(f"{CTL_FILE} lists no pods: name the pod(s) to check")
    return cfg.pods


@dataclass(frozen=True)
class Answer:
    """One target's answer: its result, or why there is none."""

    target: str
    ok: bool
    result: Any = None
    error: str = ""


async def execute(cfg: CtlConfig, plan: Plan) -> list[Answer]:
    """Connect as the ctl user and send the plan's requests (concurrently to pods)."""
    from aegis.runtime.control import make_request
    from aegis.runtime.errors import BusError
    from aegis.runtime.transport.auth import UserCredentials
    from aegis.runtime.transport.bus import Bus
    from aegis.runtime.transport.subjects import JobSubjects

    subjects = JobSubjects(cfg.namespace, cfg.job)
    creds = UserCredentials(cfg.jwt, cfg.seed.encode("ascii"))
    try:
        bus = await Bus.connect(
            cfg.nats_url,
            creds,
            name="aegis-ctl",
            timeout=min(plan.timeout, 5.0),
            reconnect_attempts=1,
        )
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
    from aegis.runtime.control import ControlError, reply_result
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


# ---------------- output ----------------


def _ctl(args: argparse.Namespace) -> int:
    # the bus logs connection trouble as warnings; ctl says it once, as its error
    level = os.environ.get("AEGIS_LOG", "ERROR").upper()
    logging.basicConfig(level=level, format="aegis %(name)s %(levelname)s: %(message)s")
    as_json = bool(getattr(args, "json", False))
    try:
        state_dir = getattr(args, "state_dir", None)
        if state_dir is None:
            raise UsageError("ctl: --state-dir DIR is required (the job's `aegis run --state-dir`)")
        cfg = load_config(state_dir)
        plan = make_plan(args, cfg)
    except UsageError as exc:
        print(f"aegis: error: {exc}", file=sys.stderr)
        return 2
    try:
        answers = asyncio.run(execute(cfg, plan))
    except Failure as exc:
        if as_json:
            print(json.dumps({"ok": False, "error": str(exc)}))
        print(f"aegis: error: {exc}", file=sys.stderr)
        return 1
    if as_json:
        return _print_json(plan, answers)
    return _print_human(cfg, plan, answers)


def _failed_checks(result: Any) -> bool:
    if not isinstance(result, list):
        return False
    return any(
        isinstance(r, dict) and r.get("applicable", True) and not r.get("passed") for r in result
    )


def _code(plan: Plan, answers: list[Answer]) -> int:
    if not all(a.ok for a in answers):
        return 1
    if plan.command in ("check", "burn") and any(_failed_checks(a.result) for a in answers):
        return 1
    if plan.command == "hang" and any(_dict(a.result).get("marked") is False for a in answers):
        return 1
    return 0


def _print_json(plan: Plan, answers: list[Answer]) -> int:
    code = _code(plan, answers)
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


def _print_human(cfg: CtlConfig, plan: Plan, answers: list[Answer]) -> int:
    for a in answers:
        if not a.ok:
            where = "controller" if a.target == "controller" else f"pod {a.target}"
            print(f"aegis: error: {plan.command}: {where}: {a.error}", file=sys.stderr)
    ok = [a for a in answers if a.ok]
    if plan.command == "status" and ok:
        print(render_status(cfg, ok[0].result))
    elif plan.command == "stop" and ok:
        r = _dict(ok[0].result)
        phase = r.get("phase", "?")
        if not r.get("accepted"):
            state = "was already stopping or ended"
        else:
            state = "stopped" if phase in ("Failed", "Succeed") else "stopping"
        print(f"job {cfg.namespace}/{cfg.job} {state} (phase {phase})")
    elif plan.command in ("taint", "untaint") and ok:
        r = _dict(ok[0].result)
        node, changed = r.get("node", plan.args.get("node")), bool(r.get("changed"))
        if plan.command == "taint":
            print(f"node {node} tainted" if changed else f"node {node} was already tainted")
        else:
            print(f"node {node} untainted" if changed else f"node {node} was not tainted")
    elif plan.command == "hang":
        for a in ok:
            r = _dict(a.result)
            detail = f": {r['detail']}" if r.get("detail") else ""
            if r.get("marked") is False:
                print(f"aegis: error: hang: pod {a.target} not marked{detail}", file=sys.stderr)
            else:
                print(f"pod {a.target} marked hung (nothing is killed){detail}")
    elif plan.command in ("check", "burn") and ok:
        print(render_checks([(a.target, a.result) for a in ok]))
    return _code(plan, answers)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [list(header), *[[str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(line.rstrip() for line in lines)


def _yn(value: object) -> str:
    return "yes" if value is True else "no" if value is False else "-"


def render_status(cfg: CtlConfig, view: Any) -> str:
    """The status view as a few lines and a table of pods."""
    v = _dict(view)
    head = (
        f"job {cfg.namespace}/{cfg.job}: {v.get('phase', '?')}, "
        f"retries {v.get('recoverCount', '?')}/{v.get('maxRetry', '?')}"
    )
    if v.get("shouldQuit"):
        head += ", stopping (shouldQuit)"
    rows = []
    for pod, info in sorted(_dict(v.get("pods")).items()):
        i = _dict(info)
        rows.append(
            [
                pod,
                i.get("innerPhase", "-"),
                i.get("retries", "-"),
                _yn(i.get("finished")),
                _yn(i.get("slow")),
                _yn(i.get("evict")),
                i.get("node") or "-",
                i.get("incarnation") or "-",
            ]
        )
    header = ["POD", "PHASE", "RETRIES", "FINISHED", "SLOW", "EVICT", "NODE", "INCARNATION"]
    out = [head, _table(header, rows)]
    nodes = [_dict(n) for n in v.get("errorNodes") or []]
    if nodes:
        out.append("error nodes:")
        out.append(
            _table(
                ["NODE", "SINCE", "REASON"],
                [[n.get("node", "?"), _when(n.get("time")), n.get("reason", "")] for n in nodes],
            )
        )
    else:
        out.append("error nodes: none")
    counters = _dict(v.get("counters"))
    if counters:
        out.append("counters: " + ", ".join(f"{k}={counters[k]}" for k in sorted(counters)))
    return "\n".join(out)


def _when(t: object) -> str:
    if isinstance(t, int | float) and not isinstance(t, bool):
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))
    return "-"


def render_checks(results: Sequence[tuple[str, Any]]) -> str:
    """Check results of each pod as one table."""
    rows = []
    for pod, result in results:
        for r in result if isinstance(result, list) else []:
            d = _dict(r)
            verdict = (
                "n/a" if d.get("applicable") is False else "PASS" if d.get("passed") else "FAIL"
            )
            secs = d.get("duration_s")
            rows.append(
                [
                    pod,
                    d.get("check_type", "?"),
                    verdict,
                    f"{secs:.3f}" if isinstance(secs, int | float) else "-",
                    d.get("result", ""),
                ]
            )
    return _table(["POD", "CHECK", "RESULT", "SECONDS", "DETAIL"], rows)
