"""`aegis ctl` inside a worker pod (`kubectl exec POD -- aegis ctl ...`): hang, check and burn
of that pod only, sent to its own agent over the agent's local socket (aegis.ops.podctl).

The pod's identity comes from its environment (the pod contract's AEGIS_*); its credential
cannot stop the job, taint nodes or touch other pods (docs/operations.md).
"""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import Mapping
from dataclasses import dataclass

from aegis.cli.ctl_config import CtlConfig, UsageError, make_plan
from aegis.cli.ctl_output import print_human, print_json
from aegis.cli.ctl_send import Answer


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


def _only_this_pod(me: PodEnv, args: argparse.Namespace) -> None:
    """UsageError unless the command is hang/check/burn addressed to this pod alone."""
    from aegis.protocol.control import AGENT_COMMANDS

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


def ctl_in_pod(args: argparse.Namespace, as_json: bool) -> int:
    """hang/check/burn of this pod, through its own agent's local socket."""
    from aegis.ops.podctl import ask_pod, find_pod_socket
    from aegis.protocol.control import ControlError, make_request, reply_result

    me = pod_environment()
    assert me is not None
    _only_this_pod(me, args)
    cfg = CtlConfig("", "-", "-", me.namespace, me.job, (me.pod,))
    if args.ctl_command == "check":
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
        return print_json(plan, [answer])
    return print_human(cfg, plan, [answer])
