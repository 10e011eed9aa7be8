"""`aegis check`: the seven checks on this node as a world of one, through a real worker."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aegis.checks.result import CheckResult
from aegis.cli import check


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="aegis")
    check.register(parser.add_subparsers(dest="command"))
    return parser.parse_args(["check", *argv])


SEVEN = ["io", "gpu", "runtime", "rdma", "allreduce_connection", "allreduce_performance", "hang"]


def test_aegis_check_json_on_a_cpu_node_passes(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AEGIS_")}
    proc = subprocess.run(
        [sys.executable, "-m", "aegis.cli", "check", "--json", "--dir", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = {r["check_type"]: r for r in map(json.loads, proc.stdout.splitlines())}
    assert list(out) == SEVEN
    for name in ("gpu", "rdma", "hang"):  # no GPU, no RDMA NIC, no progress source here
        assert out[name]["applicable"] is False and out[name]["passed"], out[name]
    for name in ("io", "runtime", "allreduce_connection", "allreduce_performance"):
        assert out[name]["applicable"] and out[name]["passed"], out[name]
    assert "no peers to compare" in out["allreduce_performance"]["result"]
    assert list(tmp_path.iterdir()) == []


def test_check_json_with_a_simulated_lost_gpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AEGIS_SIMULATE", "gpu_lost")  # reaches the worker through its env
    args = parse("--json", "--dir", str(tmp_path))
    assert args.func(args) == 1
    out = {r["check_type"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert list(out) == SEVEN
    assert not out["gpu"]["passed"] and "simulated" in out["gpu"]["result"]
    assert out["rdma"]["applicable"] is False and out["hang"]["applicable"] is False
    for name in ("io", "runtime", "allreduce_connection", "allreduce_performance"):
        assert out[name]["passed"], out[name]
    assert out["io"]["details"]["dir"] == str(tmp_path)


def test_exit_code_counts_only_applicable_failures(capsys: pytest.CaptureFixture[str]) -> None:
    na = CheckResult("rdma", True, "no RDMA device", 0.0, 0.0, applicable=False)
    ok = CheckResult("io", True, "ok", 0.0, 0.001)
    bad = CheckResult("runtime", False, "broken", 0.0, 0.001)
    assert check.exit_code([na, ok]) == 0
    assert check.exit_code([na, ok, bad]) == 1
    check._print([na, ok, bad], as_json=False)
    lines = capsys.readouterr().out.splitlines()
    assert [line[:4] for line in lines] == ["N/A ", "PASS", "FAIL"]
