"""How large a job's Aegis CR status grows, and the largest the cluster stores.

The API server keeps each object whole in etcd, which refuses a write past its
`--max-request-bytes` (1.5 MiB by default): the CR's status, with its per-pod entries (the
spec state's functions over the pods, podInfos, workerSeqs), must fit in that. It costs
~230 bytes plus ~13 per character of the pod's name, per pod (measured by
tests/k8s/test_status_size.py against the CR store's own encoding), so a default cluster
holds the status of ~2,500 pods named `<job>-worker-<rank>` with a 5-character job name.
Past that a save is refused; the Job Controller refuses such a job at once instead
(`status_size_problem`), leaving room for what the status gains while the job runs
(failure reasons, error nodes).
"""

from __future__ import annotations

from aegis.k8s.resources import pod_name

MAX_STATUS_BYTES = 1_572_864  # etcd's default --max-request-bytes: the largest object it keeps
ADMIT_SHARE = 0.8  # a job is admitted while its estimate is within this share of the limit
PER_POD_BYTES = 260  # an upper bound of the measured per-pod cost, less the name's
PER_NAME_CHAR_BYTES = 14  # the pod's name appears in ~13 per-pod maps
FIXED_BYTES = 4096


def estimated_status_bytes(job_name: str, worker_num: int) -> int:
    """An upper bound of the CR status's size once every pod has joined (bytes of JSON)."""
    longest = len(pod_name(job_name, max(worker_num - 1, 0)))
    return FIXED_BYTES + worker_num * (PER_POD_BYTES + PER_NAME_CHAR_BYTES * longest)


def max_workers(job_name: str, limit: int = MAX_STATUS_BYTES) -> int:
    """The most pods a job of this name may have for its status to be admitted."""
    lo, hi = 0, 1 << 20
    while lo < hi:  # the estimate grows with the pods: the last count within the share
        mid = (lo + hi + 1) // 2
        if estimated_status_bytes(job_name, mid) <= ADMIT_SHARE * limit:
            lo = mid
        else:
            hi = mid - 1
    return lo


def status_size_problem(
    job_name: str, worker_num: int, limit: int = MAX_STATUS_BYTES
) -> str | None:
    """Why the job's status would not fit in its CR (None if it would)."""
    size = estimated_status_bytes(job_name, worker_num)
    if size <= ADMIT_SHARE * limit:
        return None
    return (
        f"spec.workerNum {worker_num}: the job's status would take ~{size / 2**20:.1f} MiB of "
        f"its Aegis CR, and the API server keeps objects of at most {limit / 2**20:.1f} MiB "
        f"(etcd's --max-request-bytes); a job named {job_name!r} may have at most "
        f"{max_workers(job_name, limit)} workers (docs/kubernetes.md, 'Job size')"
    )
