"""A run as a timeline: per pod, its inner phase over wall-clock time and its faults.

Sources (`load`):
- a state dir of `aegis run` (steps.jsonl, faults.jsonl, status.json);
- a step log alone (faults.jsonl and status.json beside it are used when present; without a
  fault log the markers come from the steps themselves);
- an Aegis CR status on Kubernetes (`from_cr_status`): the CR keeps no timed history, so the
  picture has markers (error nodes, each pod's last failure) but no phase bands, unless a
  fault log (the Aegis Controller's stdout) is given too.

Step logs are read through aegis.runtime.steplog (`open_steplog`: a header with the initial
state, then only the variables each step changed; the full state of each step is rebuilt by
applying the changes in order). Markers prefer the fault log (one per record, its kind and
level as the controller wrote them: aegis.timeline.events) over the steps.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from aegis.errors import AegisError
from aegis.protocol.faults import FaultKind, RecoveryLevel
from aegis.protocol.outcome import JobOutcome, fault_log_cause
from aegis.timeline.events import Marker, fault_markers, step_marker


class TimelineError(AegisError):
    """The source cannot be read as a run."""


@dataclass(frozen=True)
class Band:
    """`phase` from `start` to `end` (Unix seconds)."""

    phase: str
    start: float
    end: float
    recover_count: int = 0


@dataclass
class Timeline:
    """Everything a renderer draws."""

    title: str
    job: str
    namespace: str
    pods: list[str]
    start: float
    end: float
    pod_bands: dict[str, list[Band]] = field(default_factory=dict)
    job_bands: list[Band] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    error_nodes: list[dict[str, Any]] = field(default_factory=list)
    phase: str = ""
    recover_count: int = 0  # the retries used: failures counted, at most MaxRetry
    max_retry: int | None = None
    job_markers: list[Marker] = field(default_factory=list)  # the job's own: its stop
    cause: str = ""  # why the job failed ("" unless it did)
    exhausted: bool = False  # it counted more failures than MaxRetry allows

    @property
    def ending(self) -> str:
        """How a failed job ended, in two words (its job row says it): "" otherwise."""
        if self.phase != "Failed":
            return ""
        if self.job_markers:
            return "stopped"
        if self.exhausted:
            return "retries exhausted"
        return ""

    @property
    def job_label(self) -> str:
        """The job row's label: its phase, how it ended, the retries used of MaxRetry."""
        label = f"job: {self.phase}"
        if self.ending:
            label += f" ({self.ending})"
        label += f", retries {self.recover_count}"
        return label + (f"/{self.max_retry}" if self.max_retry is not None else "")

    def to_json(self) -> dict[str, Any]:
        """Plain data (the HTML embeds it)."""
        return {
            "title": self.title,
            "job": self.job,
            "namespace": self.namespace,
            "pods": list(self.pods),
            "start": self.start,
            "end": self.end,
            "phase": self.phase,
            "recoverCount": self.recover_count,
            "maxRetry": self.max_retry,
            "jobLabel": self.job_label,
            "cause": self.cause,
            "podBands": {
                p: [[b.phase, b.start, b.end] for b in bands] for p, bands in self.pod_bands.items()
            },
            "jobBands": [[b.phase, b.start, b.end, b.recover_count] for b in self.job_bands],
            "markers": [_marker_json(m) for m in self.markers],
            "jobMarkers": [_marker_json(m) for m in self.job_markers],
            "errorNodes": list(self.error_nodes),
        }


def _marker_json(m: Marker) -> dict[str, Any]:
    return {
        "pod": m.pod,
        "t": m.time,
        "kind": m.kind,
        "level": m.level,
        "node": m.node,
        "label": m.label,
        "text": m.text,
    }


# ---------------- loading ----------------


def load(source: str | os.PathLike[str]) -> Timeline:
    """A state dir or a step log (TimelineError if it is neither)."""
    path = Path(source)
    if path.is_dir():
        steps = path / "steps.jsonl"
        if not steps.is_file():
            raise TimelineError(f"{path} has no steps.jsonl: is it an `aegis run` state dir?")
        return from_steplog(steps, path / "faults.jsonl", path / "status.json")
    if path.is_file():
        return from_steplog(path, path.with_name("faults.jsonl"), path.with_name("status.json"))
    raise TimelineError(f"{path}: no such state dir or step log")


def _read_json_lines(path: Path) -> list[dict[str, Any]]:
    out = []
    with path.open("rb") as f:
        for line in f:
            if line.strip():
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue  # a line cut by a crash (maybe inside a UTF-8 character)
                if isinstance(obj, dict):
                    out.append(obj)
    return out


class _Steps(NamedTuple):
    """A step log read through: each pod's and the job's phase over time, the markers its
    steps give, its first and last time, its last state and its MaxRetry."""

    pods: list[str]
    pod_seq: dict[str, list[tuple[float, str, int]]]
    job_seq: list[tuple[float, str, int]]
    markers: list[Marker]
    t0: float
    t: float
    last: Any
    max_retry: int


def _read_steps(steplog: Path) -> _Steps:
    """Each pod's inner phase where it changed, and the job's phase and retries used at every
    step: a step that changes a few pods costs O(those pods) (a 12,500-pod run's log has
    ~90,000 steps: keeping every state, or reading every pod at every step, did not end)."""
    from aegis.runtime.steplog import Resume, apply_changes, open_steplog
    from aegis.values import ModelValue, apply

    header, events = open_steplog(steplog)
    times = {int(r["_line"]): float(r.get("t", 0.0)) for r in _raw_records(steplog)}
    workers = sorted(header.constants.Workers, key=str)
    pods = [str(w) for w in workers]
    keys = [w if isinstance(w, ModelValue) else ModelValue(str(w)) for w in workers]
    state = header.init
    t = t0 = times.get(header.line, 0.0)
    inner = {k: str(apply(state.innerPhase, k)) for k in keys}
    pod_seq = {str(k): [(t0, phase, 0)] for k, phase in inner.items()}
    max_retry = int(header.constants.MaxRetry)
    job_seq = [(t0, str(state.phase), _used(state, max_retry))]
    markers: list[Marker] = []
    moved: Sequence[Any]
    for ev in events:
        t = times.get(ev.line, t)
        if isinstance(ev, Resume):
            state, moved = ev.state, keys
        else:
            state = apply_changes(state, ev.changes)
            markers.extend(step_marker(ev.action, dict(ev.choices), t, pods))
            moved = _keys_of(ev.changes.get("innerPhase"), keys)
        for k, phase in _moved_phases(state, moved, inner):
            inner[k] = phase
            pod_seq[str(k)].append((t, phase, 0))
        job_seq.append((t, str(state.phase), _used(state, max_retry)))
    return _Steps(pods, pod_seq, job_seq, markers, t0, t, state, max_retry)


def _moved_phases(state: Any, moved: Sequence[Any], inner: Mapping[Any, str]) -> list[Any]:
    """(pod, inner phase) of each pod in `moved` whose inner phase is not `inner`'s."""
    from aegis.values import apply

    now = ((k, str(apply(state.innerPhase, k))) for k in moved)
    return [(k, phase) for k, phase in now if phase != inner[k]]


def from_steplog(steplog: Path, faults: Path | None = None, status: Path | None = None) -> Timeline:
    """Bands from the step log; markers from the fault log if there is one, else the steps."""
    from aegis.runtime.steplog import StepLogError

    try:
        run = _read_steps(steplog)
    except (StepLogError, OSError) as exc:
        raise TimelineError(str(exc)) from None
    fault_records = _fault_records(faults)
    status_obj = _load_status(status)
    end = _end_of(run, fault_records)
    job = str(status_obj.get("job") or _job_of(run.pods))
    markers, job_markers = fault_markers(fault_records, run.pods, job)
    tl = Timeline(
        title="",
        job=job,
        namespace=str(status_obj.get("namespace") or ""),
        pods=run.pods,
        start=run.t0,
        end=max(end, run.t0 + 1e-3),
        pod_bands={pod: _bands(run.pod_seq[pod], end) for pod in run.pods},
        job_bands=_bands(run.job_seq, end),
        markers=sorted(markers if fault_records else run.markers, key=lambda m: m.time),
        error_nodes=list(status_obj.get("errorNodes") or []),
        phase=str(status_obj.get("phase") or run.last.phase),
        recover_count=_used(run.last, run.max_retry),
        max_retry=run.max_retry,
        job_markers=job_markers,
    )
    if tl.phase == "Failed":
        tl.cause = fault_log_cause(fault_records, _counted(run.last), run.max_retry)
        tl.exhausted = _counted(run.last) > run.max_retry
    tl.title = summary_line(tl, status_obj)
    return tl


def _fault_records(faults: Path | None) -> list[dict[str, Any]]:
    """The fault log's records ([] without one)."""
    return _read_json_lines(faults) if faults is not None and faults.is_file() else []


def _end_of(run: _Steps, fault_records: Sequence[Mapping[str, Any]]) -> float:
    """Where the run's bands end: its last step or fault, plus a terminal band's width."""
    end = max([run.t, *(float(r.get("time", 0)) for r in fault_records)])
    if str(run.last.phase) in _TERMINAL:
        # a terminal phase is a state, not an interval: its band gets a width to be seen
        end += max(TERMINAL_BAND * (end - run.t0), MIN_TERMINAL_BAND_S)
    return end


_TERMINAL = ("Succeed", "Failed")
TERMINAL_BAND = 0.03  # of the run's span: the width of the final (terminal) band
MIN_TERMINAL_BAND_S = 0.5


def _counted(state: Any) -> int:
    """The failures a state has counted (its recoverCount in a log older than the ghost)."""
    counted = getattr(state, "countedFailures", None)
    return int(counted) if counted is not None else int(state.recoverCount)


def _used(state: Any, max_retry: int) -> int:
    """The retries a state has used: its counted failures, at most MaxRetry (recoverCount is
    MaxRetry + 1 once a failed job is wrapped up: not a retry used)."""
    return min(_counted(state), max_retry)


def _keys_of(change: Any, keys: Sequence[Any]) -> Sequence[Any]:
    """The pods a step's change of innerPhase may have moved: none without a change, the keys
    of an except, else (a phase change sets every pod) all of them."""
    if change is None:
        return []
    if change.kind == "except":
        return [k for k, _ in change.pairs]
    return keys


def _raw_records(path: Path) -> Iterable[dict[str, Any]]:
    from aegis.runtime.steplog import read_steplog

    return read_steplog(path)


def _load_status(path: Path | None) -> dict[str, Any]:
    if path is None or not path.is_file():
        return {}
    try:
        obj = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return obj if isinstance(obj, dict) else {}


def _job_of(pods: Sequence[str]) -> str:
    first = pods[0] if pods else "job"
    return first.rsplit("-worker-", 1)[0]


def _bands(seq: Sequence[tuple[float, str, int]], end: float) -> list[Band]:
    """Merge consecutive samples of the same (phase, count) into bands ending at the next."""
    out: list[Band] = []
    for i, (t, phase, count) in enumerate(seq):
        if out and out[-1].phase == phase and out[-1].recover_count == count:
            continue
        if out:
            prev = out[-1]
            out[-1] = Band(prev.phase, prev.start, t, prev.recover_count)
        out.append(Band(phase, t, t, count))
        del i
    if out:
        last = out[-1]
        out[-1] = Band(last.phase, last.start, max(end, last.start), last.recover_count)
    return out


def summary_line(tl: Timeline, status: Mapping[str, Any]) -> str:
    """The run's user-facing line (as `aegis run` prints it), rebuilt from the status."""
    runtime = status.get("runtime") if isinstance(status.get("runtime"), Mapping) else {}
    assert isinstance(runtime, Mapping)
    counters = runtime.get("counters") if isinstance(runtime.get("counters"), Mapping) else {}
    assert isinstance(counters, Mapping)
    orders = runtime.get("commandOrders")
    known = "counters" in runtime
    return JobOutcome(
        tl.job,
        tl.phase,
        tl.max_retry,
        max(orders - 1, 0) if isinstance(orders, int) else None,
        int(counters.get("node_faults", 0)) if known else None,
        int(counters.get("evicted_slow", 0)) if known else None,
    ).line()


def from_cr_status(
    name: str,
    namespace: str,
    status: Mapping[str, Any],
    spec: Mapping[str, Any],
    faults: Sequence[Mapping[str, Any]] = (),
    now: float | None = None,
) -> Timeline:
    """A Kubernetes job from its Aegis CR (and, optionally, fault records of its pods)."""
    pods = _cr_pods(name, status, spec)
    markers, job_markers = _job_markers(name, faults, status, pods)
    end = now if now is not None else time.time()
    start = min((m.time for m in markers), default=end - 60)
    phase = str(status.get("phase") or "Pending")
    recovered = int(status.get("recoverCount") or 0)
    max_retry = int(spec["maxRetry"]) if isinstance(spec.get("maxRetry"), int) else None
    tl = Timeline(
        title="",
        job=name,
        namespace=namespace,
        pods=pods,
        start=start,
        end=max(end, start + 1e-3),
        pod_bands={p: [] for p in pods},
        job_bands=[Band(phase, start, end, recovered)],
        markers=sorted(markers, key=lambda m: m.time),
        error_nodes=[dict(e) for e in _error_nodes(status)],
        phase=phase,
        recover_count=recovered if max_retry is None else min(recovered, max_retry),
        max_retry=max_retry,
        job_markers=job_markers,
    )
    tl.title = summary_line(tl, status)
    return tl


def _cr_pods(name: str, status: Mapping[str, Any], spec: Mapping[str, Any]) -> list[str]:
    """The pods the CR's status knows, else the job's workers by name."""
    pod_infos = _mapping(status.get("podInfos"))
    worker_num = int(spec.get("workerNum") or 0)
    return sorted(pod_infos) or [f"{name}-worker-{i}" for i in range(worker_num)]


def _job_markers(
    name: str, faults: Sequence[Mapping[str, Any]], status: Mapping[str, Any], pods: Sequence[str]
) -> tuple[list[Marker], list[Marker]]:
    """The pods' and the job's markers: from the fault records of the job (its pods' and its
    own), else from what the CR's status keeps."""
    prefix = f"{name}-worker-"
    records = [r for r in faults if str(r.get("pod", "")).startswith(prefix)]
    records += [r for r in faults if str(r.get("pod", "")) == name]
    if not records:
        return _cr_markers(status, pods), []
    return fault_markers(records, pods, name)


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _cr_markers(status: Mapping[str, Any], pods: Sequence[str]) -> list[Marker]:
    """The markers a CR's status alone gives: each pod's last failure (the CR keeps its text
    only, so its kind is `other`) and each error node (a Level 3 reschedule)."""
    markers = []
    pod_infos = _mapping(status.get("podInfos"))
    for pod in pods:
        info = _mapping(pod_infos.get(pod))
        reason = str(info.get("lastFailedReason") or "")
        ts = float(info.get("updatedTimestamp") or 0)
        if reason and ts:
            markers.append(Marker(pod, ts, FaultKind.OTHER.value, None, "", reason))
    timed = [e for e in _error_nodes(status) if e.get("time")]
    return markers + [_reschedule_marker(e, pods) for e in timed]


def _error_nodes(status: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The CR status's error nodes (the objects among them)."""
    return [e for e in status.get("errorNodes") or [] if isinstance(e, Mapping)]


def _reschedule_marker(e: Mapping[str, Any], pods: Sequence[str]) -> Marker:
    """An error node as a Level 3 reschedule of the pod its reason names (ErrorNode keeps no
    pod of its own), else of the first pod."""
    reason, node = str(e.get("reason", "")), str(e.get("node", ""))
    pod = next((p for p in pods if p in reason), pods[0] if pods else "")
    level = RecoveryLevel.NODE.value
    kind = FaultKind.RESCHEDULE.value
    return Marker(pod, float(e["time"]), kind, level, node, reason)
