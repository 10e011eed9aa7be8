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
import textwrap
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from aegis.cli.ctl_saved import saved_head, saved_view

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
    nats_ca: str | None = None  # the job's CA when its nats-server speaks TLS


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
    return parse_config(obj, str(path))


def load_kube_config(api: Any, namespace: str, job: str, nats_url: str | None = None) -> CtlConfig:
    """The ctl credential of AegisJob `namespace/job` from its Secret (UsageError: missing or
    not allowed; Failure: the API server cannot be reached)."""
    import base64

    from aegis.k8s.errors import ApiError
    from aegis.k8s.manifests import CTL_SECRET_KEY, ctl_secret_name
    from aegis.k8s.resources import SECRET

    name = ctl_secret_name(job)
    try:
        secret = api.get(SECRET, namespace, name)
    except ApiError as exc:
        if exc.status == 404:
            raise UsageError(
                f"no Secret {namespace}/{name}: is AegisJob {namespace}/{job} running (the Aegis "
                "Controller writes it when the job starts)?"
            ) from None
        if exc.status in (401, 403):
            raise UsageError(
                f"not allowed to read Secret {namespace}/{name}: ctl on Kubernetes needs the "
                f"aegis-operator ClusterRole ({exc})"
            ) from None
        raise Failure(f"cannot read Secret {namespace}/{name}: {exc}") from None
    where = f"Secret {namespace}/{name}"
    try:
        raw = base64.b64decode((secret.get("data") or {})[CTL_SECRET_KEY])
        obj = json.loads(raw)
    except (KeyError, ValueError, TypeError) as exc:
        raise UsageError(f"{where} holds no readable {CTL_SECRET_KEY}: {exc!r}") from None
    if nats_url:
        obj = {**obj, "natsUrl": nats_url} if isinstance(obj, dict) else obj
    cfg = parse_config(obj, where)
    if (cfg.namespace, cfg.job) != (namespace, job):
        raise UsageError(f"{where} is for job {cfg.namespace}/{cfg.job}, not {namespace}/{job}")
    return cfg


def parse_config(obj: Any, where: str) -> CtlConfig:
    """A ctl credential's JSON (ctl.json, or the key of a job's ctl Secret)."""
    path = where
    try:
        pods = obj.get("pods")
        return CtlConfig(
            nats_url=_str(obj["natsUrl"]),
            jwt=_str(obj["jwt"]),
            seed=_str(obj["seed"]),
            namespace=_str(obj["namespace"]),
            job=_str(obj["job"]),
            pods=None if pods is None else tuple(_str(p) for p in pods),
            nats_ca=None if obj.get("natsCa") is None else _str(obj["natsCa"]),
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
    from aegis.protocol.control import ControlError, validate

    cmd: str = args.ctl_command
    kw: dict[str, Any] = {}
    pods: tuple[str, ...] = ()
    if cmd in ("taint", "untaint"):
        kw["node"] = args.node
    if cmd in ("taint", "hang") and args.reason is not None:
        kw["reason"] = args.reason
    if cmd == "taint" and args.force:
        kw["force"] = True
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
    from aegis.protocol.control import make_request
    from aegis.protocol.subjects import JobSubjects
    from aegis.runtime.errors import BusError
    from aegis.runtime.transport.auth import UserCredentials
    from aegis.runtime.transport.bus import Bus

    subjects = JobSubjects(cfg.namespace, cfg.job)
    creds = UserCredentials(cfg.jwt, cfg.seed.encode("ascii"))
    try:
        bus = await Bus.connect(
            cfg.nats_url,
            creds,
            name="aegis-ctl",
            timeout=min(plan.timeout, 5.0),
            reconnect_attempts=1,
            inbox_prefix=subjects.ctl_inbox_prefix,  # replies only ctl's credential can read
            tls_ca=cfg.nats_ca,
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


# ---------------- output ----------------


def resolve_config(args: argparse.Namespace) -> CtlConfig:
    """The credential the command line names: --state-dir, or --kube --job (UsageError)."""
    state_dir = getattr(args, "state_dir", None)
    kube = bool(getattr(args, "kube", False))
    if state_dir is not None and kube:
        raise UsageError("ctl: --state-dir and --kube exclude each other")
    if state_dir is not None:
        return load_config(state_dir)
    if kube:
        from aegis.k8s.api import KubeApi
        from aegis.k8s.errors import ApiError

        job = getattr(args, "job", None)
        if not job:
            raise UsageError("ctl --kube: --job NAME is required (the AegisJob's name)")
        namespace = getattr(args, "namespace", None) or "default"
        try:
            api = KubeApi.from_config(
                getattr(args, "kubeconfig", None), getattr(args, "context", None)
            )
        except ApiError as exc:
            raise UsageError(f"ctl --kube: {exc}") from None
        try:
            return load_kube_config(api, namespace, job, getattr(args, "nats_url", None))
        finally:
            api.close()
    raise UsageError(
        "ctl: --state-dir DIR is required (the job's `aegis run --state-dir`), or --kube "
        "--job NAME [-n NS] for a job on Kubernetes"
    )


def _ctl(args: argparse.Namespace) -> int:
    # the bus logs connection trouble as warnings; ctl says it once, as its error
    level = os.environ.get("AEGIS_LOG", "ERROR").upper()
    logging.basicConfig(level=level, format="aegis %(name)s %(levelname)s: %(message)s")
    as_json = bool(getattr(args, "json", False))
    pod_local = (
        getattr(args, "state_dir", None) is None
        and not getattr(args, "kube", False)
        and pod_environment() is not None
    )
    saved = _saved_status(args)
    if saved is not None and saved.get("ended"):  # no controller to ask: the record says it
        return print_saved(saved, as_json, 0)
    try:
        if pod_local:
            return _ctl_in_pod(args, as_json)
        cfg = resolve_config(args)
        plan = make_plan(args, cfg)
        watch = plan.command == "status" and bool(getattr(args, "watch", False))
        if watch and not getattr(args, "interval", 2.0) > 0:
            raise UsageError("--interval must be > 0")
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
        return _print_json(plan, answers)
    return _print_human(cfg, plan, answers)


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


# ---------------- inside a worker pod ----------------


@dataclass(frozen=True)
class PodEnv:
    """A worker pod's own identity, from its environment (the pod contract's AEGIS_*)."""

    namespace: str
    job: str
    pod: str
    progress_dir: str
    progress_file: str = ""


def pod_environment(env: Mapping[str, str] | None = None) -> PodEnv | None:
    """The pod this process runs in (None outside a worker pod)."""
    from aegis.protocol.environment import Var

    env = os.environ if env is None else env
    job, pod = env.get(Var.JOB), env.get(Var.POD)
    if not job or not pod:
        return None
    # the agent's socket lies in its progress dir: named by AEGIS_PROGRESS_DIR (the pod's
    # environment, e.g. under kubectl exec), else found from the command's progress file
    return PodEnv(
        env.get(Var.NAMESPACE) or "default",
        job,
        pod,
        env.get(Var.PROGRESS_DIR) or "",
        env.get(Var.PROGRESS_FILE) or "",
    )


def _ctl_in_pod(args: argparse.Namespace, as_json: bool) -> int:
    """hang/check/burn of this pod, through its own agent's local socket."""
    from aegis.ops.podctl import ask_pod, find_pod_socket
    from aegis.protocol.control import AGENT_COMMANDS, ControlError, make_request, reply_result

    me = pod_environment()
    assert me is not None
    cmd: str = args.ctl_command
    if cmd not in AGENT_COMMANDS:
        raise UsageError(
            f"ctl {cmd}: inside worker pod {me.pod} only hang, check and burn of this pod work "
            "(its own credential cannot stop the job or change error nodes); run `aegis ctl "
            f"--kube --job {me.job} -n {me.namespace} {cmd}` with the aegis-operator role"
        )
    named = [args.pod] if cmd in ("hang", "burn") else list(args.pods)
    others = sorted({p for p in named if p != me.pod})
    if others:
        raise UsageError(
            f"ctl {cmd}: inside worker pod {me.pod} only this pod can be addressed, not "
            f"{', '.join(others)}"
        )
    cfg = CtlConfig("", "-", "-", me.namespace, me.job, (me.pod,))
    if cmd == "check":
        args.pods = [me.pod]
    plan = make_plan(args, cfg)
    msg = make_request(me.namespace, me.job, plan.command, **plan.args)
    path = find_pod_socket(me.pod, me.progress_dir, me.progress_file)
    try:
        reply = asyncio.run(ask_pod(path, msg, plan.timeout))
        answer = Answer(me.pod, True, result=reply_result(reply))
    except ControlError as exc:
        answer = Answer(me.pod, False, error=f"refused: {exc}")
    except (OSError, TimeoutError) as exc:
        answer = Answer(me.pod, False, error=f"no answer from this pod's agent at {path}: {exc}")
    if as_json:
        return _print_json(plan, [answer])
    return _print_human(cfg, plan, [answer])


# ---------------- status --watch ----------------

TERMINAL = ("Succeed", "Failed")
CLEAR = "\x1b[H\x1b[2J"


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
    from aegis.runtime.transport.auth import UserCredentials
    from aegis.runtime.transport.bus import Bus

    out = out or sys.stdout
    subjects = JobSubjects(cfg.namespace, cfg.job)
    try:
        bus = await Bus.connect(
            cfg.nats_url,
            UserCredentials(cfg.jwt, cfg.seed.encode("ascii")),
            name="aegis-ctl-watch",
            timeout=min(plan.timeout, 5.0),
            reconnect_attempts=1,
            inbox_prefix=subjects.ctl_inbox_prefix,
            tls_ca=cfg.nats_ca,
        )
    except BusError as exc:
        print(f"aegis: error: cannot reach job {cfg.namespace}/{cfg.job}: {exc}", file=sys.stderr)
        return 1
    seen = False
    refreshes = 0
    tty = hasattr(out, "isatty") and out.isatty()
    try:
        while max_refreshes is None or refreshes < max_refreshes:
            refreshes += 1
            msg = make_request(cfg.namespace, cfg.job, "status")
            answer = await _ask(bus, subjects.ctl_controller, "controller", msg, plan.timeout)
            if not answer.ok:
                if seen:
                    view = saved_view(saved) if saved is not None else None
                    if view is not None and as_json:
                        print(json.dumps(view, sort_keys=True), file=out, flush=True)
                    elif view is not None:
                        print(render_status(cfg, view), file=out, flush=True)
                    else:
                        print(f"job {cfg.namespace}/{cfg.job} has ended", file=out)
                    return 0
                print(f"aegis: error: status: {answer.error}", file=sys.stderr)
                return 1
            seen = True
            view = _dict(answer.result)
            if as_json:
                print(json.dumps(view, sort_keys=True), file=out, flush=True)
            else:
                stamp = time.strftime("%H:%M:%S")
                text = render_status(cfg, view)
                print(
                    (CLEAR if tty else "") + f"{text}\n(refreshed {stamp}; Ctrl-C to stop)",
                    file=out,
                    flush=True,
                )
            if view.get("phase") in TERMINAL or view.get("terminal") in TERMINAL:
                return 0
            await asyncio.sleep(interval)
        return 0
    except (KeyboardInterrupt, asyncio.CancelledError):
        return 0
    finally:
        await bus.close()


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


WIDTH = 100  # the human status fits this many columns
MIN_FAULT_COLUMN = 30


def _fit(cells: list[list[str]], col: int, width: int) -> None:
    """Shorten column `col` of every row (with '…') so that the table fits `width`."""
    others = sum(max(len(r[i]) for r in cells) for i in range(len(cells[0])) if i != col)
    room = max(width - others - 2 * (len(cells[0]) - 1), 8)
    for r in cells:
        if len(r[col]) > room:
            r[col] = r[col][: room - 1] + "…"


def _fitted_table(header: Sequence[str], rows: Sequence[Sequence[object]], col: int) -> str:
    cells = [list(header), *[[str(c) for c in r] for r in rows]]
    _fit(cells, col, WIDTH)
    return _table(cells[0], cells[1:])


def _flags(i: Mapping[str, Any]) -> str:
    out = [name for name in ("finished", "slow", "evict") if i.get(name) is True]
    state = i.get("agentState")
    if isinstance(state, str) and state not in ("Ready", "Working", ""):
        out.append(state.lower())
    return ",".join(out) or "-"


def _ago(t: object, now: float) -> str:
    if not isinstance(t, int | float) or isinstance(t, bool) or t <= 0:
        return "-"
    secs = max(now - float(t), 0.0)
    if secs < 120:
        return f"{secs:.0f}s ago"
    if secs < 7200:
        return f"{secs / 60:.0f}m ago"
    if secs < 172800:
        return f"{secs / 3600:.0f}h ago"
    return time.strftime("%Y-%m-%d", time.localtime(float(t)))


def render_status(cfg: CtlConfig, view: Any, now: float | None = None) -> str:
    """The status view: a head line, a table of pods (node, inner phase, failures counted,
    flags, last fault and when) and the error nodes with their reasons; every line fits WIDTH
    columns. A saved view (`saved_view`: the job is not running) says how it ended first."""
    now = time.time() if now is None else now
    v = _dict(view)
    used, top = v.get("recoverCount", "?"), v.get("maxRetry", "?")
    if isinstance(used, int) and isinstance(top, int):
        used = min(used, top)  # a failed job's wrap-up sets it to MaxRetry + 1
    head = f"job {cfg.namespace}/{cfg.job}: {v.get('phase', '?')}, retries {used}/{top}"
    if v.get("shouldQuit") and v.get("phase") not in TERMINAL:
        head += ", stopping (shouldQuit)"
    rows, messages = [], []
    for pod, info in sorted(_dict(v.get("pods")).items()):
        i = _dict(info)
        fault = _dict(i.get("lastFault"))
        messages.append(str(fault.get("message") or i.get("lastFailedReason") or "-"))
        rows.append(
            [
                pod,
                i.get("node") or "-",
                i.get("innerPhase", "-"),
                i.get("failures", "-"),
                _flags(i),
                _ago(fault.get("time"), now),
            ]
        )
    # FAILED: the failures counted against the pod; the spec's per-pod retries (--json) are
    # aligned to the job's count at each restart, so every pod would show the job's number
    header = ["POD", "NODE", "PHASE", "FAILED", "FLAGS", "FAULT AT"]
    cells = [header, *[[str(c) for c in r] for r in rows]]
    width = sum(max(len(r[k]) for r in cells) + 2 for k in range(len(header)))
    out = [head[:WIDTH]]
    if v.get("saved"):
        out = [
            w for line in saved_head(v) for w in textwrap.wrap(line, WIDTH, subsequent_indent="  ")
        ]
    if WIDTH - width >= MIN_FAULT_COLUMN:  # the last fault fits as a column
        table_rows = [[*r, m] for r, m in zip(rows, messages, strict=True)]
        out.append(_fitted_table([*header, "LAST FAULT"], table_rows, len(header)))
    else:  # long pod or node names: each pod's last fault on a line of its own below it
        lines = _table(header, rows).split("\n")
        out.append(lines[0])
        for line, message in zip(lines[1:], messages, strict=True):
            out.append(line)
            if message != "-":
                text = f"  last fault: {message}"
                out.append(text if len(text) <= WIDTH else text[: WIDTH - 1] + "…")
    summary = _dict(v.get("podSummary"))
    if summary:  # a large job: only the pods with something to see are listed
        counts = _dict(summary.get("byPhase"))
        line = (
            f"{summary.get('shown', '?')} of {summary.get('total', '?')} pods listed "
            f"({summary.get('notable', '?')} with a fault, retries, a mark or another phase); "
            "by phase: " + ", ".join(f"{k} {counts[k]}" for k in sorted(counts))
        )
        out.extend(textwrap.wrap(line, WIDTH, subsequent_indent="  "))
    nodes = [_dict(n) for n in v.get("errorNodes") or []]
    if nodes:
        out.append("error nodes:")
        node_rows = [[n.get("node", "?"), _when(n.get("time")), n.get("reason", "")] for n in nodes]
        out.append(_fitted_table(["NODE", "SINCE", "REASON"], node_rows, 2))
    else:
        out.append("error nodes: none")
    saves = _dict(v.get("persistence"))
    if saves.get("failures"):
        state = "ok again" if saves.get("ok") else "FAILING"
        when = _when(saves.get("lastFailed"))
        line = f"status saves: {state}, {saves['failures']} failed, last {when}: "
        line += str(saves.get("lastError", ""))
        out.extend(textwrap.wrap(line, WIDTH, subsequent_indent="  "))
    counters = _dict(v.get("counters"))
    if counters:
        line = "counters: " + ", ".join(f"{k}={counters[k]}" for k in sorted(counters))
        out.extend(textwrap.wrap(line, WIDTH, subsequent_indent="  "))
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
