"""`aegis ctl --state-dir DIR status` from what the job left on disk, when no controller answers.

A job's controller lives as long as the job, and `aegis run` removes the job's credentials
(ctl.json) when it ends. What stays is the record: `status.json` (the final phase, written
before the controller exits), `faults.jsonl`, the step log's header (MaxRetry) and `job.json`
(namespace and job name). `saved_view` turns them into the same view the controller answers
`status` with, marked `"saved": true`, plus the job's ending in words (`summary`, `cause`), so
that `status` of an ended job says how it ended, and `status --watch` ends with it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aegis.protocol.outcome import JobOutcome, fault_log_cause

STATUS_FILE = "status.json"
FAULTS_FILE = "faults.jsonl"
STEPS_FILE = "steps.jsonl"
JOB_FILE = "job.json"  # written by `aegis run`: namespace, job, pods (no secret)
TERMINAL = ("Succeed", "Failed")


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def json_object(value: Any) -> dict[str, Any]:
    """`value` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def _fn(value: Any) -> dict[str, Any]:
    """A TLA+ function of the saved spec state ({"fn": [[{"mv": pod}, value], ...]})."""
    out: dict[str, Any] = {}
    pairs = value.get("fn") if isinstance(value, Mapping) else None
    for pair in pairs if isinstance(pairs, list) else []:
        if isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], Mapping):
            out[str(pair[0].get("mv"))] = pair[1]
    return out


def _max_retry(state_dir: Path) -> int | None:
    """MaxRetry from the step log's first line (its header's constants)."""
    try:
        with (state_dir / STEPS_FILE).open("rb") as f:
            header = json.loads(f.readline())
        value = header["constants"]["MaxRetry"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return value if isinstance(value, int) else None


def _faults(state_dir: Path) -> list[dict[str, Any]]:
    out = []
    try:
        with (state_dir / FAULTS_FILE).open("rb") as f:
            for line in f:
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue  # a line cut by a crash
                if isinstance(obj, dict):
                    out.append(obj)
    except OSError:
        return []
    return out


def ended(status: Mapping[str, Any]) -> bool:
    """Whether a saved status is the end of its job (Succeed, or Failed and wrapped up)."""
    phase = status.get("phase")
    return phase == "Succeed" or (phase == "Failed" and status.get("shouldQuit") is True)


def _pod_views(
    status: Mapping[str, Any], variables: Mapping[str, Any], faults: list[dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Each pod's entry of the view, from the saved status, spec state and fault log."""
    agent_states = _fn(variables.get("agentState"))
    last = {str(f.get("pod")): f for f in faults}
    runtime = json_object(status.get("runtime"))
    failures = json_object(runtime.get("failures"))
    pods = {}
    for pod, info in sorted((status.get("podInfos") or {}).items()):
        info = json_object(info)
        fault = last.get(pod)
        pods[pod] = {
            "innerPhase": info.get("innerPhase", "-"),
            "retries": info.get("retries", "-"),
            "failures": failures.get(pod, 0) if "failures" in runtime else "-",
            "finished": info.get("finished") is True,
            "agentState": agent_states.get(pod, ""),
            "node": (fault or {}).get("node") or "",
            "lastFailedReason": info.get("lastFailedReason") or "",
            "lastFault": None
            if fault is None
            else {k: fault.get(k) for k in ("message", "time", "node")},
        }
    return pods


def _summary(name: str, phase: str, max_retry: int | None, runtime: Mapping[str, Any]) -> str:
    """The job's ending in one line (aegis.protocol.outcome)."""
    counters = json_object(runtime.get("counters"))
    orders = runtime.get("commandOrders")
    return JobOutcome(
        name,
        phase,
        max_retry,
        max(orders - 1, 0) if isinstance(orders, int) else None,
        counters.get("node_faults", 0) if counters else None,
        counters.get("evicted_slow", 0) if counters else None,
    ).line()


def saved_view(state_dir: Path) -> dict[str, Any] | None:
    """The status view of the job saved in `state_dir` (None if it holds no status)."""
    status = _read_json(state_dir / STATUS_FILE)
    if not isinstance(status, dict) or not isinstance(status.get("phase"), str):
        return None
    job = json_object(_read_json(state_dir / JOB_FILE))
    variables = json_object(json_object(status.get("specState")).get("variables"))
    counted = variables.get("countedFailures")
    max_retry = _max_retry(state_dir)
    faults = _faults(state_dir)
    pods = _pod_views(status, variables, faults)
    runtime = json_object(status.get("runtime"))
    name = str(job.get("job") or (next(iter(pods), "job").rsplit("-worker-", 1)[0]))
    phase = str(status["phase"])
    is_ended = ended(status)
    view: dict[str, Any] = {
        "saved": True,
        "ended": is_ended,
        "job": name,
        "namespace": str(job.get("namespace") or "default"),
        "phase": phase,
        "terminal": phase if is_ended else None,
        "recoverCount": status.get("recoverCount"),
        "countedFailures": counted,
        "maxRetry": max_retry,
        "shouldQuit": status.get("shouldQuit") is True,
        "pods": pods,
        "errorNodes": status.get("errorNodes") or [],
        "counters": json_object(runtime.get("counters")),
        "summary": _summary(name, phase, max_retry, runtime),
    }
    if phase == "Failed":
        view["cause"] = fault_log_cause(
            faults, counted if isinstance(counted, int) else None, max_retry
        )
    return view


def saved_head(view: Mapping[str, Any]) -> list[str]:
    """The first lines of a saved status: how the job ended (or that it is not running)."""
    used = view.get("countedFailures")
    top = view.get("maxRetry")
    retries = ""
    if isinstance(used, int) and isinstance(top, int):
        retries = f", retries {min(used, top)}/{top}"
    where = f"job {view.get('namespace')}/{view.get('job')}"
    if view.get("ended"):
        lines = [f"{where}: ended {view.get('phase')}{retries} (from its state dir)"]
        if view.get("cause"):
            lines.append(f"why it failed: {view['cause']}")
        return lines
    return [
        f"{where}: not running (no controller answers); its last saved phase is "
        f"{view.get('phase')}{retries}. Run the same `aegis run --state-dir` again to resume it"
    ]
