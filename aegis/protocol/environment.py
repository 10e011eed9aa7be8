"""The `AEGIS_*` environment contract: what a launcher (`aegis run`, a Kubernetes worker pod)
tells its agent, and what an agent tells the training command; the only place that spells
these names.

`AgentConfig.from_env` validates every variable (a clear error naming it); `to_env` is its
inverse, used by the local launcher. On Kubernetes some variables come from the downward API
or a Secret: the manifests name them through `Var`.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from aegis.errors import AegisError

DEFAULT_HANG_TIMEOUT_S = 600.0  # no progress for this long: the command is hung
DEFAULT_CONNECT_TIMEOUT_S = 10.0
DEFAULT_HEARTBEAT_S = 5.0
# heartbeats a second a job's agents send at most, together: the controller asks for a longer
# period when pods / period would exceed it (Order.beat_s; docs/operations.md, "Heartbeats")
DEFAULT_HEARTBEAT_RATE = 1000.0
DEFAULT_MASTER_PORT = 29500
# a worker's NATS credential lives this long (its agent renews it at half of it): one kept
# by anyone else after its incarnation was replaced dies within it (docs/security.md)
DEFAULT_CREDENTIAL_TTL_S = 300.0
AUTO = 0  # nproc_per_node "auto": the node's visible GPUs, else 1 (resolved by the agent)
FALLBACKS = ("independent", "fail")  # what an agent does without a controller


class Var(StrEnum):
    """Every `AEGIS_*` variable of the contract."""

    JOB = "AEGIS_JOB"
    NAMESPACE = "AEGIS_NAMESPACE"
    POD = "AEGIS_POD"
    RANK = "AEGIS_RANK"
    WORLD_SIZE = "AEGIS_WORLD_SIZE"
    COMMAND = "AEGIS_COMMAND"  # JSON list of strings
    GRPC = "AEGIS_GRPC"  # host:port of the credential service
    BOOTSTRAP_TOKEN = "AEGIS_BOOTSTRAP_TOKEN"  # secret: never passed to the training command
    INCARNATION = "AEGIS_INCARNATION"  # this agent process's identity (pod uid on Kubernetes)
    NODE = "AEGIS_NODE"
    POD_IP = "AEGIS_POD_IP"
    NODE_IP = "AEGIS_NODE_IP"
    CONNECT_TIMEOUT = "AEGIS_CONNECT_TIMEOUT"
    HEARTBEAT_S = "AEGIS_HEARTBEAT_S"
    MASTER_ADDR = "AEGIS_MASTER_ADDR"
    MASTER_PORT = "AEGIS_MASTER_PORT"
    SIMULATE = "AEGIS_SIMULATE"  # comma-separated check faults to simulate (tests)
    HANG_TIMEOUT = "AEGIS_HANG_TIMEOUT"
    PROGRESS_DIR = "AEGIS_PROGRESS_DIR"
    CHECKPOINT_FILE = "AEGIS_CHECKPOINT_FILE"  # also told to the training command
    CONTAINER_RESTARTS = "AEGIS_CONTAINER_RESTARTS"  # Level 2 restarts on this node so far
    LAUNCHER_PID = "AEGIS_LAUNCHER_PID"  # local mode: exit when this parent is gone
    PROGRESS_FILE = "AEGIS_PROGRESS_FILE"  # to the training command: where progress goes
    RETRY = "AEGIS_RETRY"  # to the training command: the job's recover count
    NPROC_PER_NODE = "AEGIS_NPROC_PER_NODE"  # local ranks per pod: a number or "auto"
    LOG_DIR = "AEGIS_LOG_DIR"  # per-rank stdout/stderr files (torchrun's --log-dir)
    FALLBACK = "AEGIS_FALLBACK"  # no controller: "independent" (run alone) or "fail"
    STANDBY = "AEGIS_STANDBY"  # "on": keep each rank's next interpreter started ("off")
    PRELOAD = "AEGIS_PRELOAD"  # comma-separated modules the standbys import ahead
    CHECKPOINT_DIR = "AEGIS_CHECKPOINT_DIR"  # where the agent persists complete steps
    CHECKPOINT_EVERY = "AEGIS_CHECKPOINT_EVERY"  # persist the steps that are multiples of K
    CHECKPOINT_SHM_BYTES = "AEGIS_CHECKPOINT_SHM_BYTES"  # shared memory the agent may use
    CHECKPOINT_SOCKET = "AEGIS_CHECKPOINT_SOCKET"  # to the training command: its agent's store
    CHECKPOINT_TOKEN = "AEGIS_CHECKPOINT_TOKEN"  # to the training command: who it is to it
    STACK_FILE = "AEGIS_STACK_FILE"  # to the training command: where a stack dump goes
    # local mode: the inherited socket holding this incarnation's one-time secret (read once;
    # aegis.runtime.handover); the number is no secret
    SECRET_FD = "AEGIS_SECRET_FD"
    # Kubernetes: the pod's projected service-account token (audience "aegis"), the proof of
    # its identity (docs/security.md)
    TOKEN_FILE = "AEGIS_TOKEN_FILE"
    # local mode: the inherited socket holding the controller's state directory (handed over
    # as a secret is: neither its command line nor its environment names the directory)
    STATE_DIR_FD = "AEGIS_STATE_DIR_FD"
    CA = "AEGIS_CA"  # the job's CA certificate (PEM): its control plane speaks TLS
    JOIN_SECRET = "AEGIS_JOIN_SECRET"  # a job across hosts: never passed to an agent or command


# what the training command is told (everything else of the contract is the agent's own): its
# job and pod names, the recover count, and where its progress and checkpoint markers go
COMMAND_VARS: frozenset[str] = frozenset(
    {
        Var.JOB,
        Var.POD,
        Var.RETRY,
        Var.PROGRESS_FILE,
        Var.CHECKPOINT_FILE,
        Var.CHECKPOINT_SOCKET,
        Var.CHECKPOINT_TOKEN,
        Var.STACK_FILE,
    }
)


class ConfigError(AegisError, ValueError):
    """An `AEGIS_*` variable is missing or invalid; the message names it."""


def _get(env: Mapping[str, str], var: Var, default: str | None = None) -> str:
    value = env.get(var)
    if value is None or (value == "" and default is not None):
        if default is None:
            raise ConfigError(f"{var} is not set; the launcher must set it")
        return default
    return value


def _int(env: Mapping[str, str], var: Var, default: str | None = None, *, low: int = 0) -> int:
    text = _get(env, var, default)
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"{var} must be an integer, got {text!r}") from None
    if value < low:
        raise ConfigError(f"{var} must be >= {low}, got {value}")
    return value


def _seconds(env: Mapping[str, str], var: Var, default: str, *, positive: bool = True) -> float:
    text = _get(env, var, default)
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"{var} must be a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or (positive and value <= 0):
        what = "a finite number > 0" if positive else "a finite number"
        raise ConfigError(f"{var} must be {what}, got {text!r}")
    return value


def _choice(env: Mapping[str, str], var: Var, allowed: tuple[str, ...], default: str) -> str:
    value = env.get(var) or default
    if value not in allowed:
        raise ConfigError(f"{var} must be one of {', '.join(allowed)}, got {value!r}")
    return value


def _certificate(env: Mapping[str, str]) -> str:
    text = env.get(Var.CA, "")
    if text and not text.lstrip().startswith("-----BEGIN CERTIFICATE-----"):
        raise ConfigError(f"{Var.CA} must be a PEM certificate, got {text[:40]!r}")
    return text


def _command(env: Mapping[str, str]) -> tuple[str, ...]:
    text = _get(env, Var.COMMAND)
    try:
        cmd = json.loads(text)
    except ValueError:
        raise ConfigError(
            f"{Var.COMMAND} must be a JSON list of strings, got {text!r:.80}"
        ) from None
    if not isinstance(cmd, list) or not cmd or not all(isinstance(a, str) for a in cmd):
        raise ConfigError(f"{Var.COMMAND} must be a non-empty JSON list of strings")
    return tuple(cmd)


@dataclass(frozen=True)
class AgentConfig:
    """Everything an agent is told by its launcher (one field per `Var`, plus budgets)."""

    job: str
    namespace: str
    pod: str
    rank: int
    world_size: int
    command: tuple[str, ...]
    grpc_target: str = ""
    token: str = field(default="", repr=False)
    incarnation: str = ""
    node: str = ""
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S
    heartbeat_s: float = DEFAULT_HEARTBEAT_S
    master_addr: str = "127.0.0.1"
    master_port: int = DEFAULT_MASTER_PORT
    simulate: tuple[str, ...] = ()
    check_budget_s: float = 60.0  # not in the environment: each check's time budget
    hang_timeout: float = DEFAULT_HANG_TIMEOUT_S  # <= 0: no hang detection
    pod_ip: str = ""
    node_ip: str = ""
    progress_dir: str = ""  # where the command's progress file goes (default: tmp)
    checkpoint_file: str = ""  # a marker file whose change means "checkpoint done"
    container_restarts: int = 0  # Level 2 restarts of this pod on this node so far
    nproc_per_node: int = 1  # local ranks of this pod (AUTO: its visible GPUs, else 1)
    log_dir: str = ""  # per-rank stdout/stderr files go under it (empty: console only)
    fallback: str = "independent"  # no controller: run the command alone, or "fail"
    standby: bool = False  # start each rank's next attempt ahead (aegis.runtime.agent.standby)
    preload: tuple[str, ...] = ()  # modules the standbys import ahead
    checkpoint_dir: str = ""  # complete steps are persisted here (empty: memory only)
    checkpoint_every: int = 0  # persist the steps that are multiples of it (0: never)
    checkpoint_shm_bytes: int = 0  # shared memory the store may use (0: what /dev/shm has)
    ca: str = ""  # the job's CA (PEM): gRPC and NATS over TLS trusting it alone ("" plain)

    def __post_init__(self) -> None:
        if not self.incarnation:  # every agent process is an incarnation of its own
            object.__setattr__(self, "incarnation", os.urandom(8).hex())

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> AgentConfig:
        """Read and validate the `AEGIS_*` variables (ConfigError naming a bad one)."""
        world = _int(env, Var.WORLD_SIZE, low=1)
        rank = _int(env, Var.RANK)
        if rank >= world:
            raise ConfigError(f"{Var.RANK} {rank} is not below {Var.WORLD_SIZE} {world}")
        return cls(
            job=_get(env, Var.JOB),
            namespace=_get(env, Var.NAMESPACE, "default"),
            pod=_get(env, Var.POD),
            rank=rank,
            world_size=world,
            command=_command(env),
            grpc_target=env.get(Var.GRPC, ""),
            token=env.get(Var.BOOTSTRAP_TOKEN, ""),
            incarnation=env.get(Var.INCARNATION) or os.urandom(8).hex(),
            node=env.get(Var.NODE, ""),
            connect_timeout=_seconds(env, Var.CONNECT_TIMEOUT, str(DEFAULT_CONNECT_TIMEOUT_S)),
            heartbeat_s=_seconds(env, Var.HEARTBEAT_S, str(DEFAULT_HEARTBEAT_S)),
            master_addr=_get(env, Var.MASTER_ADDR, "127.0.0.1"),
            master_port=_int(env, Var.MASTER_PORT, str(DEFAULT_MASTER_PORT), low=1),
            simulate=tuple(s for s in env.get(Var.SIMULATE, "").split(",") if s),
            hang_timeout=_seconds(
                env, Var.HANG_TIMEOUT, str(DEFAULT_HANG_TIMEOUT_S), positive=False
            ),
            pod_ip=env.get(Var.POD_IP, ""),
            node_ip=env.get(Var.NODE_IP, ""),
            progress_dir=env.get(Var.PROGRESS_DIR, ""),
            checkpoint_file=env.get(Var.CHECKPOINT_FILE, ""),
            container_restarts=_int(env, Var.CONTAINER_RESTARTS, "0"),
            nproc_per_node=parse_nproc(env.get(Var.NPROC_PER_NODE) or "1", str(Var.NPROC_PER_NODE)),
            log_dir=env.get(Var.LOG_DIR, ""),
            fallback=_choice(env, Var.FALLBACK, FALLBACKS, "independent"),
            standby=_choice(env, Var.STANDBY, ("on", "off"), "off") == "on",
            preload=parse_preload(env.get(Var.PRELOAD, ""), str(Var.PRELOAD)),
            checkpoint_dir=env.get(Var.CHECKPOINT_DIR, ""),
            checkpoint_every=_int(env, Var.CHECKPOINT_EVERY, "0"),
            checkpoint_shm_bytes=_int(env, Var.CHECKPOINT_SHM_BYTES, "0"),
            ca=_certificate(env),
        )

    def to_env(self) -> dict[str, str]:
        """The variables that make `from_env` return this config (budgets aside)."""
        return {
            Var.JOB: self.job,
            Var.NAMESPACE: self.namespace,
            Var.POD: self.pod,
            Var.RANK: str(self.rank),
            Var.WORLD_SIZE: str(self.world_size),
            Var.COMMAND: json.dumps(list(self.command)),
            Var.GRPC: self.grpc_target,
            Var.BOOTSTRAP_TOKEN: self.token,
            Var.INCARNATION: self.incarnation,
            Var.NODE: self.node,
            Var.POD_IP: self.pod_ip,
            Var.NODE_IP: self.node_ip,
            Var.CONNECT_TIMEOUT: repr(self.connect_timeout),
            Var.HEARTBEAT_S: repr(self.heartbeat_s),
            Var.MASTER_ADDR: self.master_addr,
            Var.MASTER_PORT: str(self.master_port),
            Var.SIMULATE: ",".join(self.simulate),
            Var.HANG_TIMEOUT: repr(self.hang_timeout),
            Var.PROGRESS_DIR: self.progress_dir,
            Var.CHECKPOINT_FILE: self.checkpoint_file,
            Var.CONTAINER_RESTARTS: str(self.container_restarts),
            Var.NPROC_PER_NODE: "auto" if self.nproc_per_node == AUTO else str(self.nproc_per_node),
            Var.LOG_DIR: self.log_dir,
            Var.FALLBACK: self.fallback,
            Var.STANDBY: "on" if self.standby else "off",
            Var.PRELOAD: ",".join(self.preload),
            Var.CHECKPOINT_DIR: self.checkpoint_dir,
            Var.CHECKPOINT_EVERY: str(self.checkpoint_every),
            Var.CHECKPOINT_SHM_BYTES: str(self.checkpoint_shm_bytes),
            Var.CA: self.ca,
        }


MODULE_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def parse_preload(text: str, what: str = "--preload") -> tuple[str, ...]:
    """Comma-separated module names (e.g. "torch,numpy"); ConfigError naming a bad one."""
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    for name in names:
        if not MODULE_NAME.fullmatch(name):
            raise ConfigError(f"{what}: {name!r} is not a module name")
    return names


def parse_nproc(text: str, what: str = "--nproc-per-node") -> int:
    """A number of local ranks per node: an integer >= 1, or "auto" (AUTO)."""
    if text.strip().lower() == "auto":
        return AUTO
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"{what} must be an integer >= 1 or 'auto', got {text!r}") from None
    if value < 1:
        raise ConfigError(f"{what} must be >= 1 (or 'auto'), got {value}")
    return value


def user_env(env: Mapping[str, str]) -> dict[str, str]:
    """`env` without the agent's variables: what a training command may see. It never gets
    the bootstrap token, the credential service's address or the launcher's paths."""
    agent_only = set(Var) - COMMAND_VARS
    return {k: v for k, v in env.items() if k not in agent_only}
