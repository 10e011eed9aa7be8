"""`aegis ctl`: the operator's commands against a running job (docs/design.md, "Components").

    aegis ctl (--state-dir DIR | --kube --job NAME [-n NS]) COMMAND
        status [--watch] | stop | taint NODE [--reason R] | untaint NODE
        | hang POD [--reason R] | check [POD ...] [--check NAME] | burn POD [--seconds S]

Where the credential comes from:
- `--state-dir DIR`: `<DIR>/ctl.json`, written by `aegis run`;
- `--kube --job NAME [-n NS]`: the job's ctl Secret `<NAME>-aegis-ctl` (key `ctl.json`, the
  same fields), which the Aegis Controller writes and only the `aegis-operator` ClusterRole
  may read (`--nats-url` overrides its in-cluster URL, e.g. through `kubectl port-forward`);
- inside a worker pod (`kubectl exec POD -- aegis ctl ...`, no flag): the pod's own
  environment (AEGIS_JOB, AEGIS_POD, AEGIS_PROGRESS_DIR): only `hang`, `check` and `burn` of
  that pod, sent to its own agent over the agent's local socket (aegis.runtime.podctl). The
  pod's credential cannot stop the job, taint nodes or touch other pods (docs/operations.md).

It sends one control request per target (aegis.protocol.control). Exit codes: 0 done (for
check/burn: every check passed); 1 the job is unreachable, a target did not answer or refused,
or a check failed; 2 a usage error (bad flag, unknown pod, no credential).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from aegis.cli.ctl_config import (
    CTL_FILE,
    CtlConfig,
    Failure,
    Plan,
    UsageError,
    make_plan,
    resolve_config,
)
from aegis.cli.ctl_output import print_human, print_json
from aegis.cli.ctl_pod import ctl_in_pod, pod_environment
from aegis.cli.ctl_saved import saved_view
from aegis.cli.ctl_send import execute, watch_status
from aegis.cli.ctl_status import render_status


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
        "--kube",
        action="store_true",
        default=argparse.SUPPRESS,
        help="a job on Kubernetes: read its ctl Secret (needs --job)",
    )
    common.add_argument(
        "--job", default=argparse.SUPPRESS, metavar="NAME", help="(--kube) the AegisJob's name"
    )
    common.add_argument(
        "-n",
        "--namespace",
        default=argparse.SUPPRESS,
        metavar="NS",
        help="(--kube) the AegisJob's namespace (default: default)",
    )
    common.add_argument(
        "--kubeconfig", default=argparse.SUPPRESS, metavar="FILE", help="(--kube) kubeconfig"
    )
    common.add_argument(
        "--context", default=argparse.SUPPRESS, metavar="CTX", help="(--kube) kubeconfig context"
    )
    common.add_argument(
        "--nats-url",
        default=argparse.SUPPRESS,
        metavar="URL",
        help="(--kube) reach NATS here instead of the Secret's in-cluster URL",
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
        description=(
            "Send an operator command to a job: started by `aegis run --state-dir DIR`, on "
            "Kubernetes (--kube --job NAME -n NS), or, inside a worker pod, to that pod's agent."
        ),
        usage=(
            "aegis ctl (--state-dir DIR | --kube --job NAME [-n NS]) [--json] [--timeout S] "
            "COMMAND ..."
        ),
    )
    ctl.__class__ = _OneLineParser  # one-line usage errors for `aegis ctl` itself too
    cmds = ctl.add_subparsers(
        dest="ctl_command", required=True, metavar="COMMAND", parser_class=_OneLineParser
    )
    status = cmds.add_parser(
        "status",
        parents=[common],
        prog="aegis ctl status",
        help="the job's phase, pods and error nodes",
    )
    status.add_argument(
        "--watch",
        action="store_true",
        help="refresh until the job ends or Ctrl-C (with --json: one JSON line per refresh)",
    )
    status.add_argument(
        "--interval", type=float, default=2.0, metavar="S", help="(--watch) seconds between"
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
    taint.add_argument(
        "--force",
        action="store_true",
        help="taint a node none of the job's pods has run on (else refused as a likely typo)",
    )
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
        help="run the 4 local health checks on POD(s) now (default: every pod); the other 3 "
        "of the 7 need every rank of the job and run in troubleshoot rounds",
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


def _in_pod(args: argparse.Namespace) -> bool:
    """No credential named, and this process runs in a worker pod: ask the pod's own agent."""
    named = getattr(args, "state_dir", None) is not None or getattr(args, "kube", False)
    return not named and pod_environment() is not None


def _watching(args: argparse.Namespace, plan: Plan) -> bool:
    """`status --watch` (UsageError on a bad --interval)."""
    watch = plan.command == "status" and bool(getattr(args, "watch", False))
    if watch and not getattr(args, "interval", 2.0) > 0:
        raise UsageError("--interval must be > 0")
    return watch


def _ctl(args: argparse.Namespace) -> int:
    # the bus logs connection trouble as warnings; ctl says it once, as its error
    level = os.environ.get("AEGIS_LOG", "ERROR").upper()
    logging.basicConfig(level=level, format="aegis %(name)s %(levelname)s: %(message)s")
    as_json = bool(getattr(args, "json", False))
    saved = _saved_status(args)
    if saved is not None and saved.get("ended"):  # no controller to ask: the record says it
        return print_saved(saved, as_json, 0)
    try:
        if _in_pod(args):
            return ctl_in_pod(args, as_json)
        cfg = resolve_config(args)
        plan = make_plan(args, cfg)
        watch = _watching(args, plan)
    except UsageError as exc:
        if saved is not None and CTL_FILE in str(exc):  # its credentials went with the job
            return print_saved(saved, as_json, 1)
        print(f"aegis: error: {exc}", file=sys.stderr)
        return 2
    except Failure as exc:
        print(f"aegis: error: {exc}", file=sys.stderr)
        return 1
    if watch:
        state_dir = getattr(args, "state_dir", None)
        return asyncio.run(watch_status(cfg, plan, float(args.interval), as_json, saved=state_dir))
    return _send(args, cfg, plan, as_json)


def _send(args: argparse.Namespace, cfg: CtlConfig, plan: Plan, as_json: bool) -> int:
    """Send the plan and print its answers (or, if the job is gone, its saved status)."""
    try:
        answers = asyncio.run(execute(cfg, plan))
    except Failure as exc:
        saved = _saved_status(args)  # it may have ended meanwhile
        if saved is not None:
            return print_saved(saved, as_json, 0 if saved.get("ended") else 1)
        if as_json:
            print(json.dumps({"ok": False, "error": str(exc)}))
        print(f"aegis: error: {exc}", file=sys.stderr)
        return 1
    if as_json:
        return print_json(plan, answers)
    return print_human(cfg, plan, answers)


def _saved_status(args: argparse.Namespace) -> dict[str, Any] | None:
    """`status` of a job run with --state-dir: its saved view (None for other commands)."""
    state_dir = getattr(args, "state_dir", None)
    if args.ctl_command != "status" or state_dir is None or not Path(state_dir).is_dir():
        return None
    return saved_view(Path(state_dir))


def print_saved(view: dict[str, Any], as_json: bool, code: int) -> int:
    """Print a saved status view (human or `{"ok", "result"}`); return `code`."""
    if as_json:
        print(json.dumps({"ok": True, "result": view, "error": ""}, sort_keys=True))
    else:
        cfg = CtlConfig("", "-", "-", str(view["namespace"]), str(view["job"]), None)
        print(render_status(cfg, view))
    return code
