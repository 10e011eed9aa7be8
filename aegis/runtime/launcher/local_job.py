"""What `aegis run` is asked to run on one machine (`LocalJob`: its options), and whether this
machine can hold it (`capacity_problem`: an agent process per node, said before anything
starts)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from aegis.checks.params import DEFAULT_HANG_TIMEOUT_S
from aegis.protocol.environment import DEFAULT_HEARTBEAT_RATE
from aegis.protocol.job_settings import DEFAULT_HEARTBEAT_TIMEOUT_S, DEFAULT_MAX_RETRY
from aegis.runtime.launcher.state_dir import saved_job_name, unique_job_name
from aegis.runtime.transport.grpc_credentials import DEFAULT_TTL_S

# the memory one agent process takes before its command's ranks (Python, its imports, the NATS
# client; its RSS is under this), `aegis run` starts one per node on this machine
AGENT_PROCESS_BYTES = 64 << 20


def available_memory() -> int | None:
    """The bytes of memory this machine can give new processes (MemAvailable; None if the
    kernel does not say)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def capacity_problem(workers: int, available: int | None) -> str | None:
    """Why this machine cannot run `workers` agent processes (None if it can, or if its
    memory is not known): a job that cannot fit fails at once, before it starts anything."""
    need = workers * AGENT_PROCESS_BYTES
    if available is None or need <= available:
        return None
    return (
        f"--nnodes {workers}: aegis run starts an agent process per node on this machine "
        f"(~{AGENT_PROCESS_BYTES >> 20} MiB each, before the command's own ranks): that needs "
        f"~{need / 2**30:,.1f} GiB and this machine has {available / 2**30:,.1f} GiB available "
        f"(at most {available // AGENT_PROCESS_BYTES} nodes); for a fleet of that size without "
        "processes, see bench/scale.py"
    )


@dataclass
class LocalJob:
    """The options of `aegis run`."""

    command: list[str]
    workers: int
    max_retry: int = DEFAULT_MAX_RETRY
    job: str = ""  # "": a name of its own (`local-<random>`), no other job's on this machine
    namespace: str = "default"
    state_dir: Path | None = None
    connect_timeout: float = 10.0
    heartbeat_s: float = 5.0
    heartbeat_timeout: float = DEFAULT_HEARTBEAT_TIMEOUT_S
    heartbeat_rate: float = DEFAULT_HEARTBEAT_RATE  # the controller's heartbeat budget
    hang_timeout: float = DEFAULT_HANG_TIMEOUT_S  # <= 0: no hang detection
    checkpoint_file: str = ""  # marker file meaning "checkpoint done" (besides the API)
    checkpoint_dir: str = ""  # where the agents persist complete steps
    checkpoint_every: int = 0  # persist the steps that are multiples of it
    checkpoint_shm_bytes: int = 0  # shared memory each agent's store may use (0: /dev/shm's)
    extra_env: dict[str, str] = field(default_factory=dict)
    simulate: dict[str, tuple[str, ...]] = field(default_factory=dict)  # node -> faults
    metrics_port: int = 0  # > 0: the controller serves GET /metrics on 127.0.0.1:port
    nproc_per_node: int = 1  # ranks per node agent (AUTO: its visible GPUs, else 1)
    log_dir: str = ""  # per-rank stdout/stderr files under it
    resume: bool = False  # a state dir whose job already ended: report it, run nothing
    fallback: str = "fail"  # an agent without a controller: "fail" the job, or "independent"
    standby: bool = False  # agents start each rank's next attempt ahead
    preload: tuple[str, ...] = ()  # modules those standbys import ahead (implies standby)
    credential_ttl: float = DEFAULT_TTL_S  # a worker JWT's lifetime (renewed at half of it)

    def __post_init__(self) -> None:
        if not self.job:  # the job its state dir holds, else a name of its own
            self.job = saved_job_name(self.state_dir) or unique_job_name()

    @property
    def heartbeat_interval(self) -> float:
        """Agents beat at least 4 times per timeout."""
        if self.heartbeat_timeout <= 0:
            return self.heartbeat_s
        return min(self.heartbeat_s, self.heartbeat_timeout / 4)

    @property
    def pods(self) -> list[str]:
        """The pod names, rank order."""
        return [f"{self.job}-worker-{i}" for i in range(self.workers)]

    def shared_host_env(self) -> dict[str, str]:
        """OMP_NUM_THREADS=1 when this host runs more than one rank and the user did not set
        it, as torchrun does: every node agent of `aegis run` shares this host's cores, and
        each rank's OpenMP pool would otherwise take them all (docs/operations.md)."""
        ranks = self.workers * max(self.nproc_per_node, 1)
        told = "OMP_NUM_THREADS" in os.environ or "OMP_NUM_THREADS" in self.extra_env
        return {} if ranks <= 1 or told else {"OMP_NUM_THREADS": "1"}


def say_shared_host(env: dict[str, str]) -> None:
    """Say on the console that the ranks get OMP_NUM_THREADS=1, when `env` gives it them."""
    if env:
        print(
            "aegis: OMP_NUM_THREADS=1 for each rank (several ranks share this host, as "
            "torchrun sets it); set OMP_NUM_THREADS to tune",
            file=sys.stderr,
            flush=True,
        )
