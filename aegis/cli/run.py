"""`aegis run` (a local job), `aegis agent` and `aegis controller` (its processes)."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import os
from pathlib import Path
from typing import Any

from aegis.cli.path_flags import path_problems
from aegis.cli.run_nodes import NodeFlagError, add_node_arguments, node_job, wants_nodes
from aegis.cli.torchrun_compat import add_torchrun_flags, training_command
from aegis.errors import AegisError
from aegis.protocol.environment import (
    DEFAULT_CREDENTIAL_TTL_S as DEFAULT_TTL_S,
)
from aegis.protocol.environment import FALLBACKS, ConfigError, parse_nproc, parse_preload
from aegis.protocol.job_settings import ENV_VAR, JobSettings


def register(sub: Any) -> None:
    """Add the top-level `run`, `agent` and `controller` subcommands."""
    run = sub.add_parser(
        "run",
        help="run a training command under Aegis on this machine",
        usage="aegis run [--nnodes N] [--nproc-per-node K] [options] [--] CMD...",
        description="Run CMD under Aegis on this machine: a controller, a NATS server and N "
        "node agents, each starting K ranks with torchrun's environment. torchrun's flags "
        "work where they mean the same (--nproc_per_node, --max-restarts, --standalone, -m, "
        "--no-python; a .py script runs with python, as in torchrun); the others are refused "
        "with what to use instead.",
    )
    run.add_argument(
        "-n",
        "--nnodes",
        dest="workers",
        metavar="N",
        help="number of node agents (pods) on this machine (default 1); -n is its short form "
        "here (in `aegis ctl --kube` and `aegis timeline`, -n is the namespace). With "
        "--node-rank / --rdzv-endpoint (or under srun): the job's hosts, N or MIN:MAX (MIN "
        "train, the rest join as spares)",
    )
    run.add_argument(
        "--nproc-per-node",
        default="1",
        metavar="K",
        help="training processes per node agent (world size N x K; 'auto': the visible GPUs, "
        "else 1; default 1)",
    )
    run.add_argument(
        "--log-dir",
        default="",
        metavar="DIR",
        help="also write each rank's stdout/stderr to DIR/<pod>/attempt_<n>/<local rank>/",
    )
    JobSettings.add_flags(run)  # --max-retry, --job, --namespace, the heartbeat rules
    run.add_argument("--state-dir", type=Path, help="status and step log (default: temp dir)")
    run.add_argument(
        "--fallback",
        choices=FALLBACKS,
        default="fail",
        help="an agent that cannot reach the controller within --connect-timeout: fail the "
        "job (default), or run its command alone (the job then ends when every agent has)",
    )
    run.add_argument(
        "--standby",
        action="store_true",
        help="keep each rank's next interpreter started, waiting (for `python SCRIPT` and "
        "`python -m MODULE` commands): a restart skips the interpreter's start-up",
    )
    run.add_argument(
        "--preload",
        default="",
        metavar="MOD[,MOD]",
        help="modules the standby interpreters import ahead, e.g. torch (implies --standby; "
        "each standby holds them in memory)",
    )
    run.add_argument(
        "--resume",
        action="store_true",
        help="the state dir's job already ended: report its result instead of refusing",
    )
    run.add_argument(
        "--connect-timeout",
        type=float,
        default=10.0,
        help="seconds an agent waits for the controller; then --fallback says what it does "
        "(default fail: the job fails; independent: it runs its command alone)",
    )
    run.add_argument(
        "--checkpoint-file",
        default="",
        metavar="PATH",
        help="a marker file the training touches when a checkpoint is safely stored "
        "(besides aegis.checkpoint_done); a slow node is evicted only after one",
    )
    run.add_argument(
        "--credential-ttl",
        type=float,
        default=DEFAULT_TTL_S,
        metavar="S",
        help="seconds an agent's NATS credential lives (its agent renews it at half; a "
        f"credential kept by anyone else dies with it; default {DEFAULT_TTL_S:g})",
    )
    run.add_argument(
        "--metrics-port",
        type=int,
        default=0,
        metavar="PORT",
        help="serve Prometheus metrics on 127.0.0.1:PORT/metrics (default 0: off)",
    )
    run.add_argument(
        "--simulate",
        action="append",
        default=[],
        metavar="NODE=FAULT[,FAULT]",
        help="fault injection for tests: agents on node slot NODE (node-1, node-2, ...) "
        "simulate these check faults (e.g. node-2=gpu_lost); repeatable",
    )
    add_node_arguments(run)
    run.add_argument(
        "cmd", nargs=argparse.REMAINDER, help="[--] the training command, after every flag"
    )
    add_torchrun_flags(run)  # last: its refusals only cover flags nobody else defines
    run.set_defaults(func=_run, parser=run)

    # `agent` and `controller` are the processes `aegis run` and the Kubernetes manifests
    # start: no `help=`, so `aegis --help` does not list them (each has its own --help)
    agent = sub.add_parser(
        "agent",
        usage="aegis agent [--connect-timeout S] [--nproc-per-node K] [-- CMD...]",
        description="An agent process (configured by AEGIS_* variables); started by "
        "`aegis run` and by the worker pods' manifests, not by hand.",
    )
    agent.add_argument("--connect-timeout", type=float, help="override AEGIS_CONNECT_TIMEOUT")
    agent.add_argument(
        "--nproc-per-node",
        metavar="K",
        help="training processes this agent supervises (override AEGIS_NPROC_PER_NODE; 'auto')",
    )
    agent.add_argument(
        "cmd", nargs=argparse.REMAINDER, help="-- the training command (else AEGIS_COMMAND)"
    )
    agent.set_defaults(func=_agent)

    ctl = sub.add_parser(
        "controller",
        description="A job's controller process, started by `aegis run`; not by hand. Its "
        f"job's settings come whole in ${ENV_VAR}.",
    )
    ctl.add_argument(
        "--state-dir",
        type=Path,
        help="its state directory (default: handed over on AEGIS_STATE_DIR_FD, as `aegis "
        "run` passes it)",
    )
    ctl.add_argument("--nats-url", required=True)
    ctl.add_argument(
        "--creds", type=Path, help="controller credentials file (default: in the state dir)"
    )
    ctl.add_argument(
        "--nats-ca", type=Path, help="the CA certificate (PEM) of a nats-server speaking TLS"
    )
    ctl.add_argument(
        "--nats-tls",
        action="store_true",
        help="nats-server speaks TLS; its CA is ca.pem in the state dir (as `aegis run` does)",
    )
    ctl.add_argument("--port-base", type=int, default=29500)
    ctl.add_argument("--rdzv-host", default="127.0.0.1")
    ctl.add_argument("--metrics-port", type=int, default=0, help="0: no metrics endpoint")
    ctl.add_argument("--events", action="store_true", help="read launcher events on stdin")
    ctl.add_argument(
        "--resumed-run",
        action="store_true",
        help="the saved job's agents ended with the run that was interrupted: each pod's "
        "first new agent continues its incarnation (no retry counted)",
    )
    ctl.set_defaults(func=_controller, parser=ctl)


def single_machine_nodes(text: str | None) -> int:
    """`-n/--nnodes` of a job on this machine: a number of nodes >= 1, 1 when not given
    (torchrun's default); ValueError saying what is wrong (MIN:MAX is a job across hosts)."""
    if text is None:
        return 1
    low, sep, high = text.partition(":")
    try:
        n, top = int(low), int(high) if sep else int(low)
    except ValueError:
        raise ValueError(
            f"--nnodes (-n) {text!r} is not a number of nodes (e.g. -n 2); the job's namespace "
            "is --namespace"
        ) from None
    if n != top:
        raise ValueError(
            f"--nnodes {text!r}: on one machine use a number (MIN:MAX needs --rdzv-endpoint and "
            "--node-rank: a job across hosts, docs/multihost.md)"
        )
    if n < 1:
        raise ValueError(f"--nnodes (-n) {text!r}: use at least 1 node")
    return n


def _logging() -> None:
    level = os.environ.get("AEGIS_LOG", "WARNING").upper()
    logging.basicConfig(level=level, format="aegis %(name)s %(levelname)s: %(message)s")


def _run(args: argparse.Namespace) -> int:
    from aegis.runtime.agent.command import command_problem
    from aegis.runtime.errors import CommandError

    cmd = training_command(args.cmd, module=args.module, no_python=args.no_python)
    if not cmd:
        args.parser.error("no command given: aegis run [-n N] [--] CMD...")
    nodes = _nodes(args)
    problem = command_problem(cmd)
    if problem is not None:  # the user's error: nothing is started for it
        raise CommandError(f"the command cannot start: {problem}")
    try:
        nproc = parse_nproc(args.nproc_per_node)
    except AegisError as exc:
        args.parser.error(str(exc))
    _check_flags(args)
    try:
        preload = parse_preload(args.preload)
    except ConfigError as exc:
        args.parser.error(str(exc))
    simulate = _simulations(args)
    # the launcher (and the controller's tables it imports) only once the line is right: a
    # mistake is said in about a second
    from aegis.runtime.launcher.local import LocalJob, available_memory, capacity_problem, run_local

    too_many = None if nodes else capacity_problem(args.workers, available_memory())
    if too_many is not None:  # first: says what this machine holds
        args.parser.error(too_many)
    settings = _settings(args)
    _logging()
    job = LocalJob(
        command=cmd,
        workers=settings.workers,
        max_retry=settings.max_retry,
        job=settings.job,
        namespace=settings.namespace,
        state_dir=args.state_dir,
        connect_timeout=args.connect_timeout,
        heartbeat_timeout=settings.heartbeat_timeout,
        heartbeat_rate=settings.heartbeat_rate,
        hang_timeout=settings.hang_timeout,
        checkpoint_file=args.checkpoint_file,
        checkpoint_dir=str(Path(settings.checkpoint_dir).resolve())
        if settings.checkpoint_dir
        else "",
        checkpoint_every=settings.checkpoint_every,
        checkpoint_shm_bytes=settings.checkpoint_shm_bytes,
        simulate=simulate,
        metrics_port=args.metrics_port,
        nproc_per_node=nproc,
        resume=args.resume,
        fallback=args.fallback,
        standby=args.standby,
        preload=preload,
        log_dir=str(Path(args.log_dir).resolve()) if args.log_dir else "",
        credential_ttl=args.credential_ttl,
    )
    if nodes is not None:
        return _run_node(job, nodes)
    return asyncio.run(run_local(job))


def _check_flags(args: argparse.Namespace) -> None:
    """A usage error for a port, a time or a path flag that cannot work, said before anything
    starts (every path problem at once: aegis.cli.path_flags)."""
    if not 0 <= args.metrics_port <= 65535:
        args.parser.error(f"--metrics-port {args.metrics_port}: use 1..65535 (0: off)")
    # (--hang-timeout and the checkpoint flags are the job settings': JobSettings checks them)
    for flag, value in (
        ("--connect-timeout", args.connect_timeout),
        ("--credential-ttl", args.credential_ttl),
    ):
        if not (math.isfinite(value) and value > 0):
            args.parser.error(f"{flag} {value}: use a finite number of seconds > 0")
    problems = path_problems(args.state_dir, args.log_dir, args.checkpoint_file)
    if problems:
        args.parser.error("; ".join(problems))


def _settings(args: argparse.Namespace) -> JobSettings:
    """The job's settings from its flags, checked (a usage error if one is wrong); without
    `--job`, the job its state dir holds, else a name no other job has."""
    from aegis.runtime.launcher.state_dir import saved_job_name, unique_job_name

    if not args.job:
        args.job = saved_job_name(args.state_dir) or unique_job_name()
    settings = JobSettings.from_flags(args)
    problem = settings.problem()  # the one check of each setting
    if problem is not None:
        args.parser.error(problem)
    return settings


def _nodes(args: argparse.Namespace) -> Any:
    """The job's hosts when it runs across hosts (None: on this machine); `args.workers`
    becomes the number of node agents (a usage error if `--nnodes` does not say one)."""
    nodes = None
    try:
        if wants_nodes(args, os.environ):
            nodes = node_job(args, os.environ)
            args.workers = str(nodes.nnodes)
    except NodeFlagError as exc:
        args.parser.error(str(exc))
    try:
        args.workers = single_machine_nodes(args.workers)
    except ValueError as exc:
        args.parser.error(str(exc))
    return nodes


def _simulations(args: argparse.Namespace) -> dict[str, tuple[str, ...]]:
    """`--simulate NODE=FAULT[,FAULT]`s as node -> faults (a usage error if one is not)."""
    from aegis.checks.params import SIMULATIONS

    simulate: dict[str, tuple[str, ...]] = {}
    for item in args.simulate:
        node, sep, faults = item.partition("=")
        if not sep or not node or not faults:
            args.parser.error(f"--simulate {item!r}: expected NODE=FAULT[,FAULT...]")
        wanted = tuple(f for f in faults.split(",") if f)
        unknown = sorted(set(wanted) - SIMULATIONS)
        if unknown:
            args.parser.error(f"--simulate: unknown fault(s) {unknown}; use {sorted(SIMULATIONS)}")
        simulate[node] = (*simulate.get(node, ()), *wanted)
    return simulate


def _run_node(job: Any, nodes: Any) -> int:
    """One node of a job across hosts: node 0's launcher, or a member's."""
    from aegis.cli.run_nodes import forget_secret
    from aegis.protocol.environment import AUTO
    from aegis.runtime.agent.placement import visible_gpus
    from aegis.runtime.launcher.node import run_member
    from aegis.runtime.launcher.node_zero import run_node_zero

    forget_secret()  # read already: no agent, check or rank inherits it
    nproc = job.nproc_per_node if job.nproc_per_node != AUTO else max(visible_gpus(), 1)
    if nodes.node_rank == 0:
        return asyncio.run(run_node_zero(job, nodes, nproc))
    return asyncio.run(run_member(job, nodes, nproc))


def _agent(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from aegis.protocol.environment import AgentConfig, Var
    from aegis.runtime.agent.containment import set_child_subreaper
    from aegis.runtime.agent.identity import agent_proof
    from aegis.runtime.agent.pid1 import become_init
    from aegis.runtime.agent.service import agent_main
    from aegis.runtime.lifetime import keep_memory_private

    # first of all: the proof of this incarnation, out of reach of anything started later,
    # and this process's memory (its credential's seed) out of the training's reach
    keep_memory_private()
    proof = agent_proof(os.environ)
    # as PID 1 in a container: a forked parent stays PID 1, reaps zombies, forwards signals
    become_init()
    # whatever a rank leaves behind comes to this agent, never to init (containment.py)
    set_child_subreaper()
    _logging()
    env = dict(os.environ)
    cmd = list(args.cmd)
    if cmd[:1] == ["--"]:
        cmd = cmd[1:]
    if cmd:
        env[Var.COMMAND] = json.dumps(cmd)
    cfg = replace(AgentConfig.from_env(env), token=proof)
    if args.connect_timeout is not None:
        cfg = replace(cfg, connect_timeout=args.connect_timeout)
    if args.nproc_per_node is not None:
        cfg = replace(cfg, nproc_per_node=parse_nproc(args.nproc_per_node))
    return asyncio.run(agent_main(cfg))


def _controller(args: argparse.Namespace) -> int:
    from aegis.protocol.environment import Var
    from aegis.runtime.controller.gc_tuning import tune_controller_process
    from aegis.runtime.controller.job import JobConfig
    from aegis.runtime.controller.service import (
        CA_FILE,
        CONTROLLER_CREDS,
        load_credentials,
        serve,
    )
    from aegis.runtime.handover import take_handed
    from aegis.runtime.lifetime import keep_memory_private

    try:  # the launcher's settings of the job, whole (checked once, in JobSettings)
        settings = JobSettings.from_env(os.environ)
    except ConfigError as exc:
        args.parser.error(str(exc))
    handed = take_handed(os.environ, Var.STATE_DIR_FD)
    state_dir: Path | None = args.state_dir or (Path(handed) if handed else None)
    if state_dir is None:
        args.parser.error(f"--state-dir (or {Var.STATE_DIR_FD}) is required")
        return 2  # error() exits
    _logging()
    keep_memory_private()  # its credentials and the job's state: not the training's to read
    tune_controller_process()
    job = JobConfig.of(settings, args.rdzv_host, args.port_base)
    creds = load_credentials(args.creds or state_dir / CONTROLLER_CREDS)
    nats_ca = args.nats_ca.read_bytes() if args.nats_ca is not None else None
    if nats_ca is None and args.nats_tls:
        nats_ca = (state_dir / CA_FILE).read_bytes()
    return asyncio.run(
        serve(
            job,
            state_dir,
            args.nats_url,
            creds,
            events=args.events,
            metrics_port=args.metrics_port,
            resumed_run=args.resumed_run,
            nats_ca=nats_ca,
        )
    )
