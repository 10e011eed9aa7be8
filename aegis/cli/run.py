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

from aegis.checks.params import DEFAULT_HANG_TIMEOUT_S
from aegis.cli.path_flags import path_problems
from aegis.cli.run_nodes import NodeFlagError, add_node_arguments, node_job, wants_nodes
from aegis.errors import AegisError
from aegis.protocol.environment import (
    DEFAULT_CREDENTIAL_TTL_S as DEFAULT_TTL_S,
)
from aegis.protocol.environment import (
    DEFAULT_HEARTBEAT_RATE,
    FALLBACKS,
    ConfigError,
    parse_nproc,
    parse_preload,
)


def register(sub: Any) -> None:
    """Add the top-level `run`, `agent` and `controller` subcommands."""
    run = sub.add_parser(
        "run",
        help="run a training command under Aegis on this machine",
        usage="aegis run --nnodes N [--nproc-per-node K] [options] -- CMD...",
    )
    run.add_argument(
        "-n",
        "--nnodes",
        dest="workers",
        metavar="N",
        help="number of node agents (pods); -n is its short form. With --node-rank / "
        "--rdzv-endpoint (or under srun): the job's hosts, N or MIN:MAX (MIN train, the "
        "rest join as spares)",
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
    run.add_argument("--max-retry", type=int, default=3, help="restarts allowed (default 3)")
    run.add_argument(
        "--job",
        default="",
        help="job name (DNS label; default: local-<6 random hex digits>, no other job's)",
    )
    run.add_argument("--namespace", default="default", help="namespace (DNS label)")
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
        help="seconds an agent waits for the controller before running alone",
    )
    run.add_argument(
        "--heartbeat-timeout",
        type=float,
        default=10.0,
        help="seconds without an agent's heartbeat before its pod counts as lost (0: never)",
    )
    run.add_argument(
        "--heartbeat-rate",
        type=float,
        default=DEFAULT_HEARTBEAT_RATE,
        metavar="PER_S",
        help="heartbeats a second the agents send at most, together: a job of more pods "
        "than that times the beat period beats less often, and its timeout grows to 4 "
        f"beats (default {DEFAULT_HEARTBEAT_RATE:g}; 0: no budget)",
    )
    run.add_argument(
        "--hang-timeout",
        type=float,
        default=DEFAULT_HANG_TIMEOUT_S,
        metavar="S",
        help="seconds without progress (progress file, output, CPU) before a running rank "
        f"is marked hung, not killed (default {DEFAULT_HANG_TIMEOUT_S:g}; 0: off)",
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
    run.add_argument("cmd", nargs=argparse.REMAINDER, help="-- the training command")
    run.set_defaults(func=_run, parser=run)

    agent = sub.add_parser(
        "agent",
        usage="aegis agent [--connect-timeout S] [--nproc-per-node K] [-- CMD...]",
        help="an agent process (configured by AEGIS_* variables)",
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

    ctl = sub.add_parser("controller", help="a job's controller process")
    ctl.add_argument(
        "--state-dir",
        type=Path,
        help="its state directory (default: handed over on AEGIS_STATE_DIR_FD, as `aegis "
        "run` passes it)",
    )
    ctl.add_argument("--job", required=True)
    ctl.add_argument("--namespace", default="default")
    ctl.add_argument("--workers", type=int, required=True)
    ctl.add_argument("--max-retry", type=int, required=True)
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
    ctl.add_argument("--heartbeat-timeout", type=float, default=10.0)
    ctl.add_argument("--heartbeat-rate", type=float, default=DEFAULT_HEARTBEAT_RATE)
    ctl.add_argument("--metrics-port", type=int, default=0, help="0: no metrics endpoint")
    ctl.add_argument("--events", action="store_true", help="read launcher events on stdin")
    ctl.set_defaults(func=_controller, parser=ctl)


def _logging() -> None:
    level = os.environ.get("AEGIS_LOG", "WARNING").upper()
    logging.basicConfig(level=level, format="aegis %(name)s %(levelname)s: %(message)s")


def _run(args: argparse.Namespace) -> int:
    from aegis.checks.params import SIMULATIONS
    from aegis.runtime.launcher.local import LocalJob, available_memory, capacity_problem, run_local

    cmd = list(args.cmd)
    if cmd[:1] == ["--"]:
        cmd = cmd[1:]
    if not cmd:
        args.parser.error("no command given: aegis run -n N -- CMD...")
    nodes = None
    try:
        if wants_nodes(args, os.environ):
            nodes = node_job(args, os.environ)
            args.workers = str(nodes.nnodes)
    except NodeFlagError as exc:
        args.parser.error(str(exc))
    if args.workers is None:
        args.parser.error("--nnodes (-n) is required: aegis run -n N -- CMD...")
    try:
        args.workers = int(args.workers)
    except ValueError:
        args.parser.error(
            f"--nnodes {args.workers!r}: on one machine use a number (MIN:MAX needs "
            "--rdzv-endpoint and --node-rank: a job across hosts)"
        )
    if args.workers < 1 or args.max_retry < 0:
        args.parser.error("--nnodes (-n) must be >= 1 and --max-retry >= 0")
    too_many = None if nodes else capacity_problem(args.workers, available_memory())
    if too_many is not None:
        args.parser.error(too_many)
    try:
        nproc = parse_nproc(args.nproc_per_node)
    except AegisError as exc:
        args.parser.error(str(exc))
    if not 0 <= args.metrics_port <= 65535:
        args.parser.error(f"--metrics-port {args.metrics_port}: use 1..65535 (0: off)")
    for flag, value, low in (
        ("--connect-timeout", args.connect_timeout, None),
        ("--credential-ttl", args.credential_ttl, None),
        ("--heartbeat-timeout", args.heartbeat_timeout, 0.0),
        ("--hang-timeout", args.hang_timeout, 0.0),
    ):
        if not math.isfinite(value) or (value <= 0 if low is None else value < low):
            need = "> 0" if low is None else f">= {low:g}"
            args.parser.error(f"{flag} {value}: use a finite number of seconds {need}")
    if not (math.isfinite(args.heartbeat_rate) and args.heartbeat_rate >= 0):
        args.parser.error(
            f"--heartbeat-rate {args.heartbeat_rate}: use a finite number of beats a second "
            ">= 0 (0: no budget)"
        )
    try:
        preload = parse_preload(args.preload)
    except ConfigError as exc:
        args.parser.error(str(exc))
    problems = path_problems(args.state_dir, args.log_dir, args.checkpoint_file)
    if problems:
        args.parser.error("; ".join(problems))
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
    _logging()
    job = LocalJob(
        command=cmd,
        workers=args.workers,
        max_retry=args.max_retry,
        job=args.job,
        namespace=args.namespace,
        state_dir=args.state_dir,
        connect_timeout=args.connect_timeout,
        heartbeat_timeout=args.heartbeat_timeout,
        heartbeat_rate=args.heartbeat_rate,
        hang_timeout=args.hang_timeout,
        checkpoint_file=args.checkpoint_file,
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


def _run_node(job: Any, nodes: Any) -> int:
    """One node of a job across hosts: node 0's launcher, or a member's."""
    from aegis.cli.run_nodes import forget_secret
    from aegis.protocol.environment import AUTO
    from aegis.runtime.agent.service import visible_gpus
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
    from aegis.runtime.controller.core import JobConfig
    from aegis.runtime.controller.gc_tuning import tune_controller_process
    from aegis.runtime.controller.service import (
        CA_FILE,
        CONTROLLER_CREDS,
        load_credentials,
        serve,
    )
    from aegis.runtime.handover import take_handed
    from aegis.runtime.lifetime import keep_memory_private

    for flag, value in (
        ("--heartbeat-timeout", args.heartbeat_timeout),
        ("--heartbeat-rate", args.heartbeat_rate),
    ):
        if not (math.isfinite(value) and value >= 0):
            args.parser.error(f"{flag} {value}: use a finite number >= 0 (0: off)")
    handed = take_handed(os.environ, Var.STATE_DIR_FD)
    state_dir: Path | None = args.state_dir or (Path(handed) if handed else None)
    if state_dir is None:
        args.parser.error(f"--state-dir (or {Var.STATE_DIR_FD}) is required")
        return 2  # error() exits
    _logging()
    keep_memory_private()  # its credentials and the job's state: not the training's to read
    tune_controller_process()
    pods = tuple(f"{args.job}-worker-{i}" for i in range(args.workers))
    job = JobConfig(
        args.job,
        args.namespace,
        pods,
        args.max_retry,
        args.rdzv_host,
        args.port_base,
        args.heartbeat_timeout,
        args.heartbeat_rate,
    )
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
            nats_ca=nats_ca,
        )
    )
