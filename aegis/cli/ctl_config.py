"""`aegis ctl`: whose credential a command uses and what it sends (the plan).

The credential is `<state dir>/ctl.json` (written by `aegis run`) or, with `--kube`, the job's
ctl Secret; the plan is the one control request per target, validated against the protocol
(aegis.protocol.control) and the job's pods before anything is sent.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CTL_FILE = "ctl.json"
CONTROLLER_TIMEOUT_S = 10.0
CHECK_TIMEOUT_S = 150.0  # the local checks' budgets: io 30 + gpu 66 + runtime 5 + rdma 25
BURN_SLACK_S = 30.0


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


def _read_secret(api: Any, namespace: str, job: str, name: str) -> Any:
    """The job's ctl Secret (UsageError: missing or not allowed; Failure: unreachable)."""
    from aegis.k8s.errors import ApiError
    from aegis.k8s.resources import SECRET

    try:
        return api.get(SECRET, namespace, name)
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


def load_kube_config(api: Any, namespace: str, job: str, nats_url: str | None = None) -> CtlConfig:
    """The ctl credential of AegisJob `namespace/job` from its Secret (UsageError: missing or
    not allowed; Failure: the API server cannot be reached)."""
    import base64

    from aegis.k8s.manifests import CTL_SECRET_KEY, ctl_secret_name

    name = ctl_secret_name(job)
    secret = _read_secret(api, namespace, job, name)
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


def _kube_config(args: argparse.Namespace) -> CtlConfig:
    """`--kube --job NAME [-n NS]`: the credential in the job's ctl Secret."""
    from aegis.k8s.api import KubeApi
    from aegis.k8s.errors import ApiError

    job = getattr(args, "job", None)
    if not job:
        raise UsageError("ctl --kube: --job NAME is required (the AegisJob's name)")
    namespace = getattr(args, "namespace", None) or "default"
    try:
        api = KubeApi.from_config(getattr(args, "kubeconfig", None), getattr(args, "context", None))
    except ApiError as exc:
        raise UsageError(f"ctl --kube: {exc}") from None
    try:
        return load_kube_config(api, namespace, job, getattr(args, "nats_url", None))
    finally:
        api.close()


def resolve_config(args: argparse.Namespace) -> CtlConfig:
    """The credential the command line names: --state-dir, or --kube --job (UsageError)."""
    state_dir = getattr(args, "state_dir", None)
    kube = bool(getattr(args, "kube", False))
    if state_dir is not None and kube:
        raise UsageError("ctl: --state-dir and --kube exclude each other")
    if state_dir is not None:
        return load_config(state_dir)
    if kube:
        return _kube_config(args)
    raise UsageError(
        "ctl: --state-dir DIR is required (the job's `aegis run --state-dir`), or --kube "
        "--job NAME [-n NS] for a job on Kubernetes"
    )


@dataclass(frozen=True)
class Plan:
    """The requests one ctl invocation sends: to the controller, or to each listed pod."""

    command: str
    args: dict[str, Any]
    pods: tuple[str, ...]  # empty: the controller
    timeout: float


def _taint_args(args: argparse.Namespace) -> dict[str, Any]:
    kw: dict[str, Any] = {"node": args.node}
    if args.reason is not None:
        kw["reason"] = args.reason
    if args.force:
        kw["force"] = True
    return kw


def _hang_args(args: argparse.Namespace) -> dict[str, Any]:
    return {} if args.reason is None else {"reason": args.reason}


def _check_args(args: argparse.Namespace) -> dict[str, Any]:
    return {"checks": list(args.checks)} if args.checks else {}


def _burn_args(args: argparse.Namespace) -> dict[str, Any]:
    return {} if args.seconds is None else {"seconds": args.seconds}


# each command's request arguments from its command line (status and stop take none)
_REQUEST_ARGS: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "taint": _taint_args,
    "untaint": lambda args: {"node": args.node},
    "hang": _hang_args,
    "check": _check_args,
    "burn": _burn_args,
}


def _targets(args: argparse.Namespace, cfg: CtlConfig) -> tuple[str, ...]:
    """The pods a command goes to (empty: the controller)."""
    cmd = args.ctl_command
    if cmd in ("hang", "burn"):
        return (args.pod,)
    if cmd == "check":
        return tuple(dict.fromkeys(args.pods)) or _all_pods(cfg)
    return ()


def _default_timeout(cmd: str, request_args: Mapping[str, Any]) -> float:
    if cmd == "check":
        return CHECK_TIMEOUT_S
    if cmd == "burn":
        return float(request_args["seconds"]) + BURN_SLACK_S
    return CONTROLLER_TIMEOUT_S


def make_plan(args: argparse.Namespace, cfg: CtlConfig) -> Plan:
    """Validate the command line against the protocol and the job's pods (UsageError)."""
    from aegis.protocol.control import ControlError, validate

    cmd: str = args.ctl_command
    arg_builder = _REQUEST_ARGS.get(cmd)
    kw = arg_builder(args) if arg_builder is not None else {}
    pods = _targets(args, cfg)
    try:
        req = validate(cmd, kw, (cmd,))
    except ControlError as exc:
        raise UsageError(f"ctl {cmd}: {exc}") from None
    unknown = [p for p in pods if cfg.pods is not None and p not in cfg.pods]
    if unknown:
        raise UsageError(
            f"unknown pod(s) {', '.join(unknown)}; job {cfg.job} has {', '.join(cfg.pods or ())}"
        )
    timeout = getattr(args, "timeout", None)
    if timeout is None:
        timeout = _default_timeout(cmd, req.args)
    if not timeout > 0:
        raise UsageError(f"--timeout must be > 0, got {timeout}")
    return Plan(cmd, dict(kw), pods, float(timeout))


def _all_pods(cfg: CtlConfig) -> tuple[str, ...]:
    if not cfg.pods:
        raise UsageError(f"{CTL_FILE} lists no pods: name the pod(s) to check")
    return cfg.pods
