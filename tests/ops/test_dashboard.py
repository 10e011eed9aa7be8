"""deploy/grafana/aegis.json: every query names only metrics (and labels) the code exports."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from aegis.checks.result import CheckResult
from aegis.protocol.faults import Fault, FaultKind, FaultRecord
from aegis.runtime.controller.observability import JobObserver

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "aegis.json"
METRIC = re.compile(r"\baegis_[a-z_]+\b")
BY = re.compile(r"\bby\s*\(([^)]*)\)")
SELECTOR = re.compile(r"(aegis_[a-z_]+)\{([^}]*)\}")


def exported() -> dict[str, set[str]]:
    """Every sample name the controller exports, with its label names, after one of each
    event went through the real observer."""
    obs = JobObserver(2)
    obs.job_started(fresh=True)
    result = CheckResult("io", True, "ok", 0.0, 0.5)
    for kind in ("bootcheck", "troubleshoot"):
        obs.metrics.observe_round(kind, [result], 1.0, gpu_type="cpu", worker_num=2, round=1)
    for kind in (FaultKind.ERROR, FaultKind.CONTAINER_RESTART, FaultKind.RESCHEDULE):
        fault = Fault(kind, "p-worker-0", "a fault", node="node-1")
        obs.on_fault(FaultRecord.of(fault, "RunCommand"))
    obs.job_ended("Failed")
    obs.dropped.labels(reason="checks").inc()
    out: dict[str, set[str]] = {}
    for family in obs.shared.registry.collect():
        for sample in family.samples:
            out.setdefault(sample.name, set()).update(sample.labels)
    return out


def panels(obj: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for p in obj.get("panels", []):
        if p.get("type") == "row":
            out.extend(panels(p))
        else:
            out.append(p)
    return out


def test_every_panel_queries_exported_metrics_with_their_labels() -> None:
    metrics = exported()
    dash = json.loads(DASHBOARD.read_text())
    queried: set[str] = set()
    found = panels(dash)
    assert len(found) >= 10
    for panel in found:
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            expr = target["expr"]
            names = set(METRIC.findall(expr))
            assert names, f"{panel['title']}: {expr} names no Aegis metric"
            unknown = names - set(metrics)
            assert not unknown, f"{panel['title']}: {sorted(unknown)} are not exported"
            queried |= names
            labels = set().union(*(metrics[n] for n in names)) | {"le"}
            for group in BY.findall(expr):
                used = {x.strip() for x in group.split(",") if x.strip()}
                assert used <= labels, f"{panel['title']}: by ({group}) not labels of {names}"
            for name, sel in SELECTOR.findall(expr):
                used = {m.split("=")[0].rstrip("!~").strip() for m in sel.split(",") if m.strip()}
                assert used <= metrics[name], f"{panel['title']}: {name} has no label in {used}"
    for var in dash["templating"]["list"]:
        m = re.fullmatch(r"label_values\((aegis_[a-z_]+),\s*(\w+)\)", var.get("definition", ""))
        if var["type"] == "query":
            assert m, var
            assert m.group(1) in metrics and m.group(2) in metrics[m.group(1)], var
    # what the dashboard is for (issue 18): each of these is on it
    for family in (
        "aegis_check_duration_seconds_bucket",
        "aegis_bootcheck_duration_seconds_bucket",
        "aegis_troubleshoot_duration_seconds_bucket",
        "aegis_jobs_total",
        "aegis_recoveries_total",
        "aegis_faults_total",
    ):
        assert family in queried, f"no panel shows {family}"


def test_faults_and_recoveries_are_counted_by_node_kind_and_level() -> None:
    obs = JobObserver(2)
    sink_seen: list[FaultRecord] = []
    sink = obs.fault_sink(sink_seen.append)
    for pod, kind in [
        ("w-1", FaultKind.ERROR),
        ("w-1", FaultKind.CHECK_FAILED),
        ("w-1", FaultKind.RESCHEDULE),
        ("w-0", FaultKind.CONTAINER_RESTART),
        ("w-0", FaultKind.EVICTED),
        ("w-0", FaultKind.EVICTED_EXIT),  # the evicted pod leaving: not a second recovery
        ("w-0", FaultKind.HANG),
    ]:
        # the message is for people: the observer counts the record's kind and level
        fault = Fault(kind, pod, "agent exited 1", node="node-2" if pod == "w-1" else "node-1")
        sink(FaultRecord.of(fault, "x"))
    assert len(sink_seen) == 7
    text = obs.exposition().decode()
    for line in (
        'aegis_recoveries_total{gpu_type="unknown",level="1",worker_num="2"} 1.0',
        'aegis_recoveries_total{gpu_type="unknown",level="2",worker_num="2"} 1.0',
        'aegis_recoveries_total{gpu_type="unknown",level="3",worker_num="2"} 1.0',
        'aegis_recoveries_total{gpu_type="unknown",level="evict",worker_num="2"} 1.0',
        'aegis_faults_total{kind="reschedule",node="node-2"} 1.0',
        'aegis_faults_total{kind="evicted_exit",node="node-1"} 1.0',
        'aegis_faults_total{kind="hang",node="node-1"} 1.0',
        'aegis_faults_total{kind="check_failed",node="node-2"} 1.0',
    ):
        assert line in text, line
    assert 'level="3",worker_num="2"} 2.0' not in text
