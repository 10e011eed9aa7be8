"""Prometheus exposition in a dedicated registry, and the structured fault log."""

from __future__ import annotations

import io
import json
from pathlib import Path

import prometheus_client

from aegis.checks.faultlog import read_fault_log
from aegis.checks.metrics import CheckMetrics, FaultLogWriter, FaultRecord
from aegis.checks.result import CheckResult


def test_exposition_carries_the_labels() -> None:
    m = CheckMetrics()
    assert m.registry is not prometheus_client.REGISTRY
    res = [CheckResult("io", True, "ok", 0.0, 0.012), CheckResult("gpu", True, "n/a", 0.0, 0.001)]
    m.observe_round("troubleshoot", res, 0.05, gpu_type="H200", worker_num=4, round=2)
    m.observe_round("bootcheck", res, 0.5, gpu_type="H200", worker_num=4, round=0)
    m.job("created", gpu_type="H200", worker_num=4)
    m.job("failed", gpu_type="H200", worker_num=4)
    text = m.exposition().decode()
    assert (
        'aegis_check_duration_seconds_count{check_type="io",gpu_type="H200",round="2",'
        'worker_num="4"} 1.0'
    ) in text
    assert 'aegis_troubleshoot_duration_seconds_bucket{gpu_type="H200",le="0.05",round="2"' in text
    boot = 'aegis_bootcheck_duration_seconds_sum{gpu_type="H200",round="0",worker_num="4"} 0.5'
    assert boot in text
    assert 'aegis_jobs_total{event="created",gpu_type="H200",worker_num="4"} 1.0' in text
    assert 'aegis_jobs_total{event="failed",gpu_type="H200",worker_num="4"} 1.0' in text
    assert "aegis_check_duration_seconds" not in prometheus_client.generate_latest().decode()


def test_fault_log_lines(tmp_path: Path) -> None:
    rec = FaultRecord(
        "job-w1",
        "10.0.0.5",
        "node-3",
        "192.168.1.3",
        "Troubleshooting",
        "gpu check failed: GPU 2 lost",
        time=1700000000.0,
    )
    path = tmp_path / "faults.jsonl"
    FaultLogWriter(path).write(rec)
    FaultLogWriter(path).write(rec)
    assert read_fault_log(path) == [rec, rec]
    stream = io.StringIO()
    FaultLogWriter(stream).write(rec)
    obj = json.loads(stream.getvalue())
    # the fields docs/operations.md, "Fault log" lists: where and when, and what was decided
    assert set(obj) == {
        "pod", "pod_ip", "node", "node_ip", "time", "phase", "message",
        "kind", "level", "exit_code", "signal", "rank",
    }  # fmt: skip
    assert obj["kind"] == "other" and obj["level"] is None and obj["exit_code"] is None
