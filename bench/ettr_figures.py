"""The figures of bench/ettr.py: a run of the job under one launcher (`Job`, the faults applied
to it) and what its event log says (`summarize`): ETTR, time lost per fault, training again,
steps recomputed, save and restore times."""

from __future__ import annotations

import json
import statistics
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KINDS = ("crash", "hang", "node", "slow")


@dataclass(frozen=True)
class Fault:
    """One fault: when (s after launch), what, to which rank."""

    at: float
    kind: str
    rank: int


@dataclass
class Job:
    """One run of the job under one launcher."""

    name: str
    argv: list[str]
    env: dict[str, str]
    work: Path
    marker: str = field(default_factory=lambda: uuid.uuid4().hex)
    applied: list[tuple[float, Fault]] = field(default_factory=list)
    node_losses: int = 0

    @property
    def log(self) -> Path:
        return self.work / "events.jsonl"

    def events(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        # only whole lines: a rank may be writing the last one while it is read
        lines = self.log.read_text().split("\n")[:-1]
        return [json.loads(x) for x in lines if x.strip()]

    def rank_pid(self, rank: int) -> int | None:
        """The live process of rank `rank` of this job: the pid of its newest start event
        (a rank that a standby interpreter runs has no script in its command line), if that
        process still runs this job (its environment has the job's marker)."""
        starts = [e["pid"] for e in self.events() if e["e"] == "start" and e["rank"] == rank]
        if not starts:
            return None
        pid = starts[-1]
        try:
            env = set(Path("/proc", str(pid), "environ").read_bytes().split(b"\0"))
            state = Path("/proc", str(pid), "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return None
        if f"ETTR_RUN={self.marker}".encode() not in env or state[0] in "ZX":
            return None
        return pid


def step_time(job: Job) -> float:
    """The median step time of rank 0 in a run (what a step costs at that run's pace)."""
    times = [e["dt"] for e in job.events() if e["e"] == "step" and e["rank"] == 0]
    return statistics.median(times) if times else 0.0


def summarize(
    job: Job,
    wall: float,
    finished: bool,
    ff_wall: float,
    ff_step: float | None = None,
    ff_productive: float | None = None,
) -> dict[str, Any]:
    """The figures of one faulty run against its fault-free run (`ff_wall` s, `ff_step` s a
    step, `ff_productive` s in its steps). ETTR is the share of the wall time that trains
    (productive time over wall time, the definition of Meta's "Revisiting Reliability in
    Large-Scale Machine Learning Research Clusters"): time lost is the wall time beyond the
    steps the job kept (their save blocking excluded) and beyond the fault-free run's time
    outside its steps (start-up, the end). A step run again after a restart, a restart and
    a save's blocking are lost; a slow step still trains. `ettr_pace` is stricter: it also
    counts a step slower than the run's median as lost (a slow rank's cost); `ettr_raw` is
    the plain fault-free / faulty walls."""
    ev = job.events()
    steps = [e for e in ev if e["e"] == "step"]
    rank0 = [e for e in steps if e["rank"] == 0]
    distinct = len({e["step"] for e in rank0})
    pace = statistics.median(e["dt"] for e in rank0) if rank0 else 0.0
    outside = ff_wall - distinct * (pace if ff_step is None else ff_step)
    lost_pace = wall - distinct * pace - outside
    if ff_productive is None:  # a kept run of before: its steps at their median
        ff_productive = distinct * (pace if ff_step is None else ff_step)
    lost = wall - productive(rank0) - (ff_wall - ff_productive)
    n = len(job.applied)
    restores, recomputed = _restores(job, ev, rank0)
    return {
        "wall_s": round(wall, 2),
        "fault_free_wall_s": round(ff_wall, 2),
        "step_s": round(pace, 4),
        "fault_free_step_s": _rounded(ff_step, 4),
        "finished": finished,
        "faults": n,
        "faults_by_kind": _by_kind(job),
        "ettr": _ratio(wall - lost, wall, 3),
        "ettr_pace": _ratio(wall - lost_pace, wall, 3),
        "ettr_raw": _ratio(ff_wall, wall, 3),
        "lost_per_fault_s": _ratio(lost, n, 2),
        "lost_per_fault_pace_s": _ratio(lost_pace, n, 2),
        "training_again_s": _training_again(job, ev, rank0),
        "recomputed_per_fault": _ratio(len(rank0) - distinct, n, 2),
        "recomputed_by_kind": {k: v for k, v in recomputed.items() if v},
        "save_blocking_s": _stats([e["save_s"] for e in steps if e["save_s"] > 0]),
        "restore_s": {k: _stats(v) for k, v in restores.items()},
        "recovered": f"{_recovered(job, rank0)}/{n}",
        "step_compute_during_persist_ratio": _persist_ratio(rank0),
    }


def productive(rank0: Sequence[dict[str, Any]]) -> float:
    """Seconds of rank 0's steps whose result the job kept (a step's last run: an earlier
    run of a step done again after a restart was lost), less their save blocking."""
    kept: dict[int, dict[str, Any]] = {}
    for e in rank0:
        kept[e["step"]] = e
    return sum(e["dt"] - e["save_s"] for e in kept.values())


def _training_again(
    job: Job, ev: Sequence[dict[str, Any]], rank0: Sequence[dict[str, Any]]
) -> dict[str, list[float]]:
    """Per fault kind: seconds from each fault that restarted the ranks to rank 0's first
    step after that restart."""
    starts = [e["t"] for e in ev if e["e"] == "start" and e["rank"] == 0]
    out: dict[str, list[float]] = {}
    for t, fault in job.applied:
        start = next((s for s in starts if s > t), None)
        if start is None or fault.kind == "slow":
            continue
        step = next((e["t"] for e in rank0 if e["t"] > start), None)
        if step is not None:
            out.setdefault(fault.kind, []).append(round(step - t, 2))
    return out


def _rounded(x: float | None, digits: int) -> float | None:
    return None if x is None else round(x, digits)


def _ratio(a: float, b: float, digits: int) -> float | None:
    """a / b rounded (None when b is 0: no wall time, no fault)."""
    return round(a / b, digits) if b else None


def _by_kind(job: Job) -> dict[str, int]:
    return {k: sum(1 for _, f in job.applied if f.kind == k) for k in KINDS}


def _recovered(job: Job, rank0: Sequence[dict[str, Any]]) -> int:
    """The faults after which rank 0 made a step again."""
    return sum(1 for t, _ in job.applied if any(s["t"] > t for s in rank0))


def _restores(
    job: Job, ev: Sequence[dict[str, Any]], rank0: Sequence[dict[str, Any]]
) -> tuple[dict[str, list[float]], dict[str, list[int]]]:
    """Rank 0's restore times by source, and the steps each restart recomputed by the kind
    of the fault that caused it (the last one applied before the restore, a slow rank aside)."""
    restores: dict[str, list[float]] = {}
    recomputed: dict[str, list[int]] = {k: [] for k in KINDS}
    for e in (x for x in ev if x["e"] == "restored" and x["rank"] == 0):
        restores.setdefault(e["source"], []).append(e["s"])
        before = [s for s in rank0 if s["t"] < e["t"]]
        cause = [f for t, f in job.applied if t < e["t"] and f.kind != "slow"]
        if before and cause:
            recomputed[cause[-1].kind].append(max(s["step"] for s in before) - e["step"])
    return restores, recomputed


def _persist_ratio(rank0: Sequence[dict[str, Any]]) -> float | None:
    """A step's compute in the three steps after a persist began, over the other steps'."""
    persist = [i for i, e in enumerate(rank0) if e.get("persisting")]
    near = {i + k for i in persist for k in (1, 2, 3)}
    during = [rank0[i]["compute"] for i in near if i < len(rank0)]
    other = [e["compute"] for i, e in enumerate(rank0) if i not in near and i not in persist]
    if not (during and other):
        return None
    return round(statistics.mean(during) / statistics.median(other), 3)


def _stats(xs: Sequence[float]) -> dict[str, float] | None:
    if not xs:
        return None
    return {
        "n": len(xs),
        "median": round(statistics.median(xs), 5),
        "mean": round(statistics.mean(xs), 5),
    }


def summarize_kept(work: Path) -> dict[str, Any]:
    """`summarize` of a run kept in `work`: its events.jsonl and a run.json of the run's
    name, wall, finished, fault-free wall, step and productive seconds, and the faults
    applied ([t, at, kind, rank])."""
    run = json.loads((work / "run.json").read_text())
    job = Job(run["name"], [], {}, work)
    job.applied = [(t, Fault(at, kind, rank)) for t, at, kind, rank in run["applied"]]
    return summarize(
        job,
        run["wall"],
        run["finished"],
        run["ff_wall"],
        run.get("ff_step"),
        run.get("ff_productive"),
    )
