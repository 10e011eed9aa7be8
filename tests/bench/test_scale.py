"""bench/scale.py at a tiny size, run as a program: real nats-server, credential service and
controller process.

It checks that the figures are there and mean something (the job really finished, every
agent left on the final order, the crash was recovered from, the CPU figures add up), not how
fast anything is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aegis.runtime.trace_check import check_steplog

ROOT = Path(__file__).resolve().parents[2]
FIELDS = {
    "agents", "creds_s", "creds_to_runcommand_s", "job_s", "reports_per_s", "event_p50_ms",
    "event_p99_ms", "fault_to_order_ms", "controller_rss_mb", "order_bytes", "status_bytes",
    "cpu_s", "controller_cpu_ms_per_event", "heartbeats",
}  # fmt: skip


def _run(
    *args: str, timeout: float, env: dict[str, str] | None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "bench" / "scale.py"), "--json", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=None if env is None else os.environ | env,
    )


def _scale(*args: str, timeout: float = 240, env: dict[str, str] | None = None) -> dict[str, Any]:
    done = _run(*args, timeout=timeout, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.mark.timeout(300)
def test_a_small_fleet_runs_a_healthy_job_and_one_with_a_crash() -> None:
    out = _scale("--agents", "8", "--faults", "1", "--timeout", "120")
    assert out.keys() >= FIELDS, sorted(FIELDS - out.keys())
    assert out["agents"] == 8 and out["succeeded"] is True and out["fault_job_succeeded"] is True
    assert out["fleet_gc"]["thresholds"] == [100_000, 1_000, 1_000]  # the fleet's own default
    # BootChecking and RunCommand: one Finish per agent each, all applied
    assert out["reports"] == 16 and out["receipts"] == {"applied": 16}, out
    assert out["refused"] == 0 and out["malformed_orders"] == 0
    fault = out["fault_to_order_ms"]
    assert isinstance(fault, dict) and fault["measured"] == 1 and fault["p99"] is not None
    # the controller's own clock (its metrics file): the crash, and the order that followed
    ours = out["controller_fault_to_order_ms"]
    assert isinstance(ours, dict) and ours["measured"] >= 1 and ours["p99_le"] is not None, ours
    # work a newer order replaced is counted, not reported (how much depends on --work-s)
    assert (
        isinstance(out["fault_job_work_superseded"], int) and out["fault_job_work_superseded"] >= 0
    )
    for key in ("creds_s", "creds_to_runcommand_s", "job_s", "reports_per_s", "event_p99_ms"):
        value = out[key]
        assert isinstance(value, int | float) and value > 0, (key, value)
    assert 0 < out["order_bytes"] < out["old_order_bytes"]
    assert isinstance(out["controller_rss_mb"], float) and out["controller_rss_mb"] > 10
    # CPU by process: the controller did the work of 8 ACKs and 16 reports, so it used some
    cpu = out["cpu_s"]
    assert isinstance(cpu, dict) and cpu.keys() == {"fleet", "controller", "nats_server"}, cpu
    assert cpu["controller"] > 0 and cpu["fleet"] > 0, cpu
    # the agents ran in the bench's process: its CPU is not the credential service's alone
    assert "system_floor_s" not in out and "fleet_split_to_runcommand" not in out, out
    per_event = out["controller_cpu_ms_per_event"]
    assert isinstance(per_event, float) and per_event == pytest.approx(
        1000 * cpu["controller"] / (8 + 16), rel=0.01
    )


@pytest.mark.timeout(120)
def test_the_in_process_mode_measures_the_core_alone() -> None:
    out = _scale("--agents", "4", "--in-process", timeout=100)
    assert out["succeeded"] is True and out["agents"] == 4
    assert isinstance(out["reports_per_s"], float) and out["reports_per_s"] > 0


@pytest.mark.timeout(120)
def test_the_in_process_core_persists_as_the_controller_does() -> None:
    """Its controller commits WAL records of grouped events and saves the whole status only
    at snapshots (it once saved the whole status after every event: O(pods) each, and a
    12,500-pod run did not end)."""
    out = _scale("--agents", "200", "--in-process", timeout=100)
    events = 200 + out["reports"]
    assert out["succeeded"] is True and out["reports"] == 400
    # a record per 50 events, and one before each of the job's orders (a partial batch)
    assert events / 50 <= out["commits"] <= events / 50 + out["publishes"] + 1, out
    assert 1 <= out["status_saves"] <= out["publishes"] + 2, out  # the first, then snapshots


@pytest.mark.timeout(300)
def test_while_the_agents_work_no_order_goes_again_and_the_cpu_share_is_measured() -> None:
    # beats every 0.25 s through 3 s of work: each heartbeat says which order the agent holds,
    # and with nothing lost the controller sends none again (agents used to re-ask every
    # max(4 beats, 1 s): about two re-asks per agent here)
    out = _scale("--agents", "4", "--work-s", "3", "--heartbeat-s", "0.25", "--timeout", "120")
    assert out["succeeded"] is True and out["receipts"] == {"applied": 8}, out
    assert out["orders_resent"] == out["orders_dropped"] == out["stopped_at_end"] == 0, out
    # the controller counts only copies the agents sent (none or a few here)
    copies = out["controller_report_copies"]
    assert isinstance(copies, dict) and sum(copies.values()) <= out["reports_resent"], out
    idle = out["idle_s"]
    assert isinstance(idle, float) and 1.0 <= idle <= 3.5, idle
    for key in ("idle_controller_cpu_pct", "idle_nats_server_cpu_pct"):
        share = out[key]
        assert isinstance(share, float) and 0 <= share <= 100 * (os.cpu_count() or 1), (key, out)


@pytest.mark.timeout(300)
def test_agents_that_lose_every_broadcast_get_each_order_on_their_heartbeat() -> None:
    # every order on the order subject is lost: the job runs on the orders the controller
    # sends again when a heartbeat shows the agent behind (grace 1 s at timeout 2 s)
    out = _scale(
        "--agents", "4", "--heartbeat-s", "0.25", "--heartbeat-timeout", "2",
        "--drop-orders", "1", "--timeout", "120",
    )  # fmt: skip
    assert out["succeeded"] is True and out["receipts"] == {"applied": 8}, out
    # BootChecking, RunCommand and the final order, to each of the 4 agents; BootChecking
    # came again on the heartbeats of the 3 agents that joined first (the last one's ACK
    # reply carried it), RunCommand on all 4; the final one could not (the controller had
    # exited): they were stopped, as aegis run's launcher stops them
    assert out["orders_dropped"] >= 12 and out["orders_resent"] >= 7, out
    assert out["stopped_at_end"] == 4, out


@pytest.mark.timeout(300)
def test_a_controller_killed_mid_job_is_restarted_and_the_job_ends_with_every_report() -> None:
    # each order's work takes 2 s: the job (two orders) runs 4 s or more, the kill comes at 1
    out = _scale(
        "--agents", "9", "--fleet-procs", "2", "--work-s", "2", "--kill-controller-after", "1",
        "--timeout", "120",
    )  # fmt: skip
    kill = out["controller_kill"]
    assert isinstance(kill, dict) and kill["processes"] == 2, out
    assert isinstance(kill["resume_s"], float) and kill["resume_s"] > 0, kill
    # resumed from the WAL: nothing redone, nothing lost, no retry spent
    assert (kill["final_phase"], kill["recover_count"]) == ("Succeed", 0), kill
    assert out["succeeded"] is True and out["receipts"] == {"applied": 18}, out
    assert (out["credentials"], out["joined"], out["reports"]) == (9, 9, 18), out


@pytest.mark.timeout(300)
def test_the_fleet_runs_in_child_processes_and_its_figures_add_up() -> None:
    # collector thresholds this low make the children collect often: they reach them
    out = _scale("--agents", "9", "--fleet-procs", "2", "--timeout", "120", "--fleet-gc", "50,5,5")
    assert out["fleet_procs"] == 2 and out["succeeded"] is True, out
    gc = out["fleet_gc"]
    assert isinstance(gc, dict) and gc["thresholds"] == [50, 5, 5] and gc["runs"] > 10, gc
    # every agent of both processes: its credential, its ACK, its two reports
    assert (out["credentials"], out["joined"], out["reports"]) == (9, 9, 18), out
    assert out["receipts"] == {"applied": 18} and out["refused"] == 0, out
    cpu = out["cpu_s"]
    assert isinstance(cpu, dict) and cpu["fleet"] > 0 and cpu["controller"] > 0, cpu
    # the windows (9 agents reach RunCommand within the samples' 0.2 s: only their shape)
    to_run = out["cpu_s_to_runcommand"]
    assert isinstance(to_run, dict) and to_run.keys() == cpu.keys(), out
    assert 0 <= to_run["fleet"] <= cpu["fleet"] + 0.5, (to_run, cpu)
    floor = (to_run["fleet"] + to_run["nats_server"]) / (os.cpu_count() or 1)
    assert out["runcommand_floor_s"] == pytest.approx(floor, abs=0.011)  # each part rounded
    split = out["fleet_split_to_runcommand"]  # the agents all in the children
    assert split["bench_process"] >= 0 and split["agent_processes"] >= 0, split
    assert sum(split.values()) == pytest.approx(to_run["fleet"], abs=0.011), (split, to_run)
    system = split["bench_process"] + to_run["nats_server"] + to_run["controller"]
    assert out["system_floor_s"] == pytest.approx(system / (os.cpu_count() or 1), abs=0.011)
    per = out["command_round_cpu_ms_per_report"]
    assert isinstance(per, dict) and all(v >= 0 for v in per.values()), per


@pytest.mark.timeout(300)
def test_a_crash_job_runs_its_other_pods_in_child_processes() -> None:
    # the crashing pods (and their replacements) beside the launcher's hook, the rest in two
    # children: the job ends with every pod of both parts gone, each crash timed
    out = _scale(
        "--agents", "9", "--faults", "2", "--fleet-procs", "2", "--timeout", "120",
        "--work-s", "0.2", "--crash-at", "1",  # each crash as the others report
    )  # fmt: skip
    assert out["fault_job_fleet_procs"] == 3 and out["fault_job_succeeded"] is True, out
    fault = out["fault_to_order_ms"]
    assert isinstance(fault, dict) and fault["measured"] == 2, fault


@pytest.mark.timeout(200)
def test_the_controller_state_is_kept_where_asked_and_removed_otherwise(tmp_path: Path) -> None:
    """A run left its controller's state dir in /tmp (status, WAL, a step log of up to
    80 MB at 12,500 agents): 303 of them, 2.9 GB, on the development machine."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = _scale("--agents", "3", "--timeout", "60", env={"TMPDIR": str(tmp)})
    assert out["succeeded"] is True
    assert not [p.name for p in tmp.iterdir() if p.name.startswith("aegis-scale-")]
    kept = tmp_path / "state"
    out = _scale("--agents", "3", "--timeout", "60", "--state-dir", str(kept))
    assert out["succeeded"] is True and sorted(p.name for p in kept.iterdir()) == ["healthy"]
    # 3 joins, two rounds of 3 reports (each agentWork and receive), 3 advances
    assert check_steplog(kept / "healthy" / "steps.jsonl") == 18
    refused = _run("--agents", "2", "--state-dir", str(kept), timeout=60, env=None)
    assert refused.returncode == 2 and "exists (give a new directory)" in refused.stderr


@pytest.mark.timeout(120)
def test_a_fleet_in_child_processes_that_runs_out_of_time_says_how_far_it_got() -> None:
    # each order's work takes 30 s, the job may take 6: the children are told to end and
    # send what they measured (the run under a profiler that never ended said 0 credentials
    # and a job of 12,346 s)
    out = _scale("--agents", "6", "--fleet-procs", "2", "--work-s", "30", "--timeout", "6")
    assert out["succeeded"] is False and out["fleet_procs"] == 2, out
    assert (out["credentials"], out["joined"], out["reports"]) == (6, 6, 0), out
    # the job ran out its 6 s (job_s counts from the children's own start, late on a busy
    # machine), and the figures came back after it, within the children's end wait
    assert isinstance(out["job_s"], float) and 0 < out["job_s"] < 60, out
    assert 6 <= out["bench_s"] < 60, out


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--drop-orders", "1.5"], "--drop-orders must be in 0..1"),
        (["--drop-orders", "-0.1"], "--drop-orders must be in 0..1"),
        (["--kill-controller-after", "-1"], "--kill-controller-after must be a finite"),
        (["--kill-controller-after", "nan"], "--kill-controller-after must be a finite"),
        (["--kill-controller-after", "soon"], "invalid float value"),
        (["--faults", "1", "--crash-at", "2.5"], "--crash-at must be in 0..2"),
        (["--fleet-procs", "0"], "--fleet-procs must be in 1..agents"),
        (["--fleet-procs", "3"], "--fleet-procs must be in 1..agents"),
        (["--fleet-gc", "700,10"], "expected G0,G1,G2"),
        (["--fleet-gc", "a,b,c"], "expected G0,G1,G2"),
        (["--fleet-gc", "0,10,10"], "expected G0,G1,G2"),
    ],
)
def test_a_bad_argument_is_refused_before_anything_starts(args: list[str], says: str) -> None:
    done = _run("--agents", "2", *args, timeout=60, env=None)
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert done.stdout == ""
