"""How large a job's Aegis CR status grows, and the budget that keeps it within the limit.

The API server keeps each object whole in etcd, which refuses a write past its
`--max-request-bytes` (1.5 MiB by default): the CR's status, with its per-pod entries (the
spec state's functions over the pods, podInfos, workerSeqs, incarnations), must fit in that.
Once every pod has joined it takes ~230 bytes plus ~13 per character of the pod's name, per
pod (`estimated_status_bytes`, held by tests/k8s/test_status_size.py against the CR store's
own encoding). While the job runs it gains what its faults leave: each pod's last failure
reason, error nodes (a node name and a reason each), the incarnations of lost pods, each
pod's last replaced incarnations (up to RETIRED_PER_POD, docs/security.md) and the
history (an entry per phase reached, with every pod's retries). `status_budget` gives the
reasons and the history room that keeps the status within `SAVE_SHARE` of the limit even when
every pod fails with a reason of the most that room allows, one node in eight is an error
node and the history is full; the controller clips reasons to it
(aegis/runtime/controller/status_budget.py).
A job for which even the least room (`MIN_REASON_BYTES`,
`MIN_HISTORY`) does not fit (`status_budget` is None: past `max_workers`) keeps its status in
ConfigMaps instead, the CR a summary (aegis.k8s.chunked_store).
"""

from __future__ import annotations

from dataclasses import dataclass

from aegis.k8s.resources import pod_name
from aegis.runtime.controller.identity import RETIRED_PER_POD
from aegis.runtime.controller.status_budget import StatusBudget
from aegis.runtime.controller.store import HISTORY_LIMIT

MAX_STATUS_BYTES = 1_572_864  # etcd's default --max-request-bytes: the largest object it keeps
SAVE_SHARE = 0.9  # of the limit, for the status (the rest: the CR's metadata and spec)
PER_POD_BYTES = 260  # an upper bound of the measured per-pod cost, less the name's
PER_NAME_CHAR_BYTES = 14  # the pod's name appears in ~13 per-pod maps
FIXED_BYTES = 4096

MIN_REASON_BYTES = 96  # a reason's least room (as a JSON string): ~90 characters of text
MAX_REASON_BYTES = 1024  # its most (a reason has at most 500 characters)
MIN_HISTORY = 8  # entries: a recovery adds 3-4
ERROR_NODE_SHARE = 8  # room for one error node per this many pods (and a few more)
ERROR_NODE_BYTES = 330  # an entry less its reason: a node name of up to 253 bytes, the time
LOST_POD_BYTES = 50  # runtime.evicted's entry of a lost pod, less its name: the pod's uid
RETIRED_BYTES = 41  # one incarnation in runtime.retired's list of a pod: a pod's uid, quoted
RETIRED_KEY_BYTES = 8  # that list's key, less the pod's name
HISTORY_ENTRY_BYTES = 64  # a history entry less its retries
LEAST_BUDGET = StatusBudget(MIN_REASON_BYTES, MIN_HISTORY)


@dataclass(frozen=True)
class JobShape:
    """What the status's size depends on: the job's name, pods and MaxRetry."""

    name: str
    workers: int
    max_retry: int

    @property
    def name_bytes(self) -> int:
        """The length of the job's longest pod name."""
        return len(pod_name(self.name, max(self.workers - 1, 0)))

    def joined_bytes(self) -> int:
        """An upper bound of the status once every pod has joined (bytes of JSON)."""
        return FIXED_BYTES + self.workers * (PER_POD_BYTES + PER_NAME_CHAR_BYTES * self.name_bytes)

    @property
    def error_nodes(self) -> int:
        """The error nodes the budget keeps room for."""
        return self.workers // ERROR_NODE_SHARE + 4

    def history_entry_bytes(self) -> int:
        """A history entry's bytes: every pod's retries, up to MaxRetry + 1."""
        return HISTORY_ENTRY_BYTES + self.workers * (len(str(self.max_retry + 1)) + 1)

    def grown_bytes(self, budget: StatusBudget) -> int:
        """An upper bound of the status when the job's faults have filled `budget`."""
        reason = budget.reason_bytes or MAX_REASON_BYTES
        per_pod = reason + self.name_bytes + LOST_POD_BYTES  # a reason, a lost incarnation
        # and its last replaced incarnations
        per_pod += self.name_bytes + RETIRED_KEY_BYTES + RETIRED_PER_POD * RETIRED_BYTES
        nodes = self.error_nodes * (ERROR_NODE_BYTES + reason)
        history = budget.history * self.history_entry_bytes()
        return self.joined_bytes() + self.workers * per_pod + nodes + history


def estimated_status_bytes(job_name: str, worker_num: int) -> int:
    """An upper bound of the CR status's size once every pod has joined (bytes of JSON)."""
    return JobShape(job_name, worker_num, 0).joined_bytes()


def status_budget(
    job_name: str, worker_num: int, max_retry: int, limit: int = MAX_STATUS_BYTES
) -> StatusBudget | None:
    """The room for reasons and history that keeps the job's status within SAVE_SHARE of
    `limit` (the history gets up to half of what is left past the least room, the reasons
    the rest); None if even the least room does not fit."""
    shape = JobShape(job_name, worker_num, max_retry)
    room = SAVE_SHARE * limit
    spare = room - shape.grown_bytes(LEAST_BUDGET)
    if spare < 0:
        return None
    more_entries = int(spare / 2 // shape.history_entry_bytes())
    history = min(HISTORY_LIMIT, MIN_HISTORY + more_entries)
    spare -= (history - MIN_HISTORY) * shape.history_entry_bytes()
    more_bytes = int(spare // (worker_num + shape.error_nodes))
    return StatusBudget(min(MAX_REASON_BYTES, MIN_REASON_BYTES + more_bytes), history)


def max_workers(job_name: str, max_retry: int, limit: int = MAX_STATUS_BYTES) -> int:
    """The most pods a job of this name and MaxRetry may have for its status to fit in its CR
    (a larger one keeps it in ConfigMaps)."""
    lo, hi = 0, 1 << 20
    while lo < hi:  # the status grows with the pods: the last count that has a budget
        mid = (lo + hi + 1) // 2
        if status_budget(job_name, mid, max_retry, limit) is not None:
            lo = mid
        else:
            hi = mid - 1
    return lo
