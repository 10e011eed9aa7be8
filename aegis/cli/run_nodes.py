"""`aegis run`'s flags for a job across hosts, torchrun's way, and Slurm's variables.

`aegis run --nnodes N --node-rank R --rdzv-endpoint HOST:PORT -- CMD` on every node (or
`srun aegis run -- CMD`: SLURM_NNODES, SLURM_NODEID and the first host of the step's node
list stand in for the three flags). Without any of them, and outside Slurm, `--nnodes N`
keeps its meaning on one machine: N node agents here. docs/multihost.md has the whole story.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aegis.errors import AegisError
from aegis.protocol.environment import Var
from aegis.protocol.rendezvous import (
    DEFAULT_HOST_TIMEOUT_S,
    DEFAULT_JOIN_TIMEOUT_S,
    secret_problem,
)
from aegis.runtime.launcher.slurm import DEFAULT_RDZV_PORT, HostlistError, slurm_nodes

if TYPE_CHECKING:
    from aegis.runtime.launcher.node import NodeJob


class NodeFlagError(AegisError, ValueError):
    """The multi-node flags (or Slurm's variables) do not describe a job (says why)."""


def add_node_arguments(run: Any) -> None:
    """The flags of a job across hosts, in a group of their own."""
    group = run.add_argument_group(
        "a job across hosts (torchrun's flags; under srun, Slurm's variables stand in)"
    )
    group.add_argument(
        "--node-rank",
        type=int,
        metavar="R",
        help="this node's rank: 0 hosts the control plane (default: SLURM_NODEID); ranks "
        "from --nnodes' MIN up join as spares",
    )
    group.add_argument(
        "--rdzv-endpoint",
        metavar="HOST[:PORT]",
        help="node 0's address every node can reach, and the rendezvous port (default "
        f"{DEFAULT_RDZV_PORT}; under Slurm: the first host of the step's node list)",
    )
    group.add_argument(
        "--join-secret-file",
        type=Path,
        metavar="FILE",
        help=f"a file holding the secret every node of the job shares (else ${Var.JOIN_SECRET})",
    )
    group.add_argument(
        "--join-timeout",
        type=float,
        default=DEFAULT_JOIN_TIMEOUT_S,
        metavar="S",
        help="how long node 0 waits for the others, and a node for node 0 "
        f"(default {DEFAULT_JOIN_TIMEOUT_S:g})",
    )
    group.add_argument(
        "--host-timeout",
        type=float,
        default=DEFAULT_HOST_TIMEOUT_S,
        metavar="S",
        help="a host silent this long is lost (node 0's value applies to every node; "
        f"default {DEFAULT_HOST_TIMEOUT_S:g})",
    )


def parse_nnodes(text: str) -> tuple[int, int]:
    """`N` or `MIN:MAX` (torchrun's elastic form) -> (MIN, MAX)."""
    low, sep, high = text.partition(":")
    try:
        lo = int(low)
        hi = int(high) if sep else lo
    except ValueError:
        raise NodeFlagError(f"--nnodes {text!r}: use N or MIN:MAX") from None
    if not 1 <= lo <= hi:
        raise NodeFlagError(f"--nnodes {text!r}: need 1 <= MIN <= MAX")
    return lo, hi


def parse_endpoint(text: str) -> tuple[str, int]:
    """`HOST[:PORT]` (IPv6 in brackets) -> (host, port)."""
    host, port = text, DEFAULT_RDZV_PORT
    if text.startswith("["):
        inner, _, rest = text[1:].partition("]")
        host = inner
        if rest:
            if not rest.startswith(":"):
                raise NodeFlagError(f"--rdzv-endpoint {text!r}: use HOST[:PORT]")
            port = _port(rest[1:], text)
    elif text.count(":") == 1:
        host, _, tail = text.partition(":")
        port = _port(tail, text)
    if not host:
        raise NodeFlagError(f"--rdzv-endpoint {text!r}: no host")
    return host, port


def _port(text: str, whole: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise NodeFlagError(f"--rdzv-endpoint {whole!r}: {text!r} is not a port") from None
    if not 1 <= port <= 65535:
        raise NodeFlagError(f"--rdzv-endpoint {whole!r}: port {port} is not in 1..65535")
    return port


def read_secret(path: Path | None, env: Mapping[str, str]) -> bytes:
    """The join secret: the file's content (stripped), else $AEGIS_JOIN_SECRET."""
    if path is not None:
        try:
            text = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise NodeFlagError(f"--join-secret-file {path}: {exc}") from None
    else:
        text = env.get(Var.JOIN_SECRET, "").strip()
        if not text:
            raise NodeFlagError(
                f"a job across hosts needs a secret every node shares: export {Var.JOIN_SECRET}"
                "=$(openssl rand -hex 32) where every node inherits it (e.g. before srun), or "
                "give --join-secret-file FILE"
            )
    problem = secret_problem(text)
    if problem is not None:
        raise NodeFlagError(problem)
    return text.encode()


def wants_nodes(args: argparse.Namespace, env: Mapping[str, str]) -> bool:
    """Whether this `aegis run` is one node of a job across hosts: a multi-node flag was
    given, or Slurm describes the step and --nnodes was not given (a count for this machine)."""
    if args.rdzv_endpoint is not None or args.node_rank is not None:
        return True
    return args.workers is None and env.get("SLURM_NODEID") is not None


def node_job(args: argparse.Namespace, env: Mapping[str, str]) -> NodeJob:
    """The node's place in the job from the flags, Slurm's variables filling the gaps."""
    from aegis.runtime.launcher.node import NodeJob

    count, rank, endpoint = _placement(args, env)
    low, high = parse_nnodes(count)
    if not 0 <= rank < high:
        raise NodeFlagError(f"--node-rank {rank}: use 0..{high - 1} (--nnodes {count})")
    for flag, value in (
        ("--join-timeout", args.join_timeout),
        ("--host-timeout", args.host_timeout),
    ):
        if not (math.isfinite(value) and value > 0):
            raise NodeFlagError(f"{flag} {value}: use a finite number of seconds > 0")
    host, port = parse_endpoint(endpoint)
    return NodeJob(
        nnodes=low,
        max_nodes=high,
        node_rank=rank,
        rdzv_host=host,
        rdzv_port=port,
        secret=read_secret(args.join_secret_file, env),
        join_timeout=args.join_timeout,
        host_timeout=args.host_timeout,
    )


def _placement(args: argparse.Namespace, env: Mapping[str, str]) -> tuple[str, int, str]:
    """(--nnodes, --node-rank, --rdzv-endpoint), each from its flag or else from Slurm's
    variables (NodeFlagError naming the first that neither gives)."""
    try:
        slurm = slurm_nodes(env)
    except HostlistError as exc:
        raise NodeFlagError(str(exc)) from None
    count = args.workers if args.workers is not None else slurm and str(slurm.nnodes)
    rank = args.node_rank if args.node_rank is not None else slurm and slurm.node_rank
    endpoint = args.rdzv_endpoint or (slurm and slurm.rdzv_endpoint)
    _require(
        ("--nnodes", count, "SLURM_NNODES"),
        ("--node-rank", rank, "SLURM_NODEID"),
        ("--rdzv-endpoint", endpoint, "SLURM_JOB_NODELIST"),
    )
    assert isinstance(count, str) and isinstance(rank, int) and isinstance(endpoint, str)
    return count, rank, endpoint


def _require(*given: tuple[str, object, str]) -> None:
    """NodeFlagError for the first (flag, value, Slurm variable) without a value."""
    for flag, value, slurm_var in given:
        if value is None:
            raise NodeFlagError(f"a job across hosts needs {flag} (or run under srun: {slurm_var})")


def forget_secret() -> None:
    """Drop the join secret from this process's environment: no child inherits it."""
    os.environ.pop(Var.JOIN_SECRET, None)
