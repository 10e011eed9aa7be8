"""What the controller knows of its job: its name, its pods, MaxRetry, where its ranks meet,
and the heartbeat rules derived from its size (no I/O)."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

from aegis.protocol.environment import DEFAULT_HEARTBEAT_RATE
from aegis.protocol.job_settings import DEFAULT_HEARTBEAT_TIMEOUT_S, JobSettings
from aegis.protocol.payloads import MAX_BEAT_S
from aegis.runtime.controller.status_budget import StatusBudget

_PORT_SLOTS = 500


@dataclass(frozen=True)
class JobConfig:
    """What the controller knows of its job."""

    name: str
    namespace: str
    pods: tuple[str, ...]
    max_retry: int
    rdzv_host: str = "127.0.0.1"
    port_base: int = 29500
    heartbeat_timeout: float = DEFAULT_HEARTBEAT_TIMEOUT_S  # <= 0: never declare a pod lost
    heartbeat_rate: float = DEFAULT_HEARTBEAT_RATE  # <= 0: no budget
    # the room its reasons and history may take in the status (an Aegis CR's is limited)
    status_budget: StatusBudget = field(default_factory=StatusBudget)

    @classmethod
    def of(
        cls,
        settings: JobSettings,
        rdzv_host: str = "127.0.0.1",
        port_base: int = 29500,
        status_budget: StatusBudget | None = None,
    ) -> JobConfig:
        """The controller's view of a job with these settings: its pods by rank, where its
        ranks meet, and the room its status has."""
        return cls(
            settings.job,
            settings.namespace,
            settings.pods,
            settings.max_retry,
            rdzv_host,
            port_base,
            settings.heartbeat_timeout,
            settings.heartbeat_rate,
            status_budget or StatusBudget(),
        )

    @functools.cached_property
    def beat_s(self) -> float:
        """The heartbeat period every agent is asked to keep at least (the orders' `beat_s`):
        the pods spread over the heartbeat budget, so that a job of any size sends at most
        `heartbeat_rate` beats a second (0 without a budget; at most MAX_BEAT_S), rounded up
        to a tenth of a second (an order's size does not depend on the job's)."""
        if self.heartbeat_rate <= 0:
            return 0.0
        spread = len(self.pods) / self.heartbeat_rate  # inf for a rate of 1e-320: no ceil
        return MAX_BEAT_S if spread >= MAX_BEAT_S else math.ceil(10 * spread) / 10

    @functools.cached_property
    def silence_timeout(self) -> float:
        """How long an agent may stay silent before its pod counts as lost: the configured
        `heartbeat_timeout`, or 4 of the budget's beats when those are longer (<= 0: never)."""
        if self.heartbeat_timeout <= 0:
            return self.heartbeat_timeout
        return max(self.heartbeat_timeout, 4 * self.beat_s)

    @functools.cached_property
    def pod_set(self) -> frozenset[str]:
        """The pods as a set: `pod in job.pod_set` is O(1) (a 12,500-pod tuple is not)."""
        return frozenset(self.pods)

    def ports(self, seq: int) -> tuple[int, int]:
        """(training MASTER_PORT of order `seq`, the job's check rendezvous port).

        The training port moves with every order (a fresh rendezvous per attempt); the check
        port stays the same for the whole job, so the diagnosis workers keep the process group
        they built at the bootcheck and only probe it in later rounds (warm diagnosis).
        """
        return self.port_base + 2 * (seq % _PORT_SLOTS), self.port_base + 2 * _PORT_SLOTS
