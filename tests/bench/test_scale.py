"""bench/scale.py at a tiny size: real nats-server, credential service and controller process.

It checks that the figures are there and mean something (the job really finished, every
agent left on the final order, the crash was recovered from), not how fast anything is.
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
from bench.scale import parse_args

ROOT = Path(__file__).resolve().parents[2]
FIELDS = {
    "agents", "creds_s", "creds_to_runcommand_s", "job_s", "reports_per_s", "event_p50_ms",
    "event_p99_ms", "fault_to_order_ms", "controller_rss_mb", "order_bytes", "status_bytes",
    "cpu_s", "controller_cpu_ms_per_event", "heartbeats",
}  # fmt: skip


def _scale(*args: str, timeout: float = 240, env: dict[str, str] | None = None) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "scale.py"), "--json", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=None if env is None else os.environ | env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.mark.timeout(300)
def test_a_small_fleet_runs_a_healthy_job_and_one_with_a_crash() -> None:
    out = _scale("--agents", "8", "--faults", "1", "--timeout", "120")
    assert out.keys() >= FIELDS, sorted(FIELDS - out.keys())
    assert out["agents"] == 8 and out["succeeded"] is True and out["fault_job_succeeded"] is True
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


def test_the_in_process_core_persists_as_the_controller_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its controller commits WAL records of grouped events and saves the whole status only
    at snapshots (it once saved the whole status after every event: O(pods) each, and a
    12,500-pod run did not end)."""
    from aegis.runtime.controller.store import FileStatusStore, Status
    from bench.fleet_core import measure

    saves: list[Status] = []
    save = FileStatusStore.save

    def counted(self: FileStatusStore, status: Status) -> None:
        saves.append(status)
        save(self, status)

    monkeypatch.setattr(FileStatusStore, "save", counted)
    out = measure(24, batch=5)
    events = 24 + out["reports"]
    assert out["succeeded"] is True and out["reports"] == 48
    # a record per 5 events, and one before each of the job's orders (a partial batch)
    assert events / 5 <= out["commits"] <= events / 5 + out["publishes"] + 1
    assert 1 <= len(saves) <= out["publishes"] + 2, len(saves)  # the first, then snapshots


@pytest.mark.timeout(60)
async def test_the_lean_client_authenticates_for_real_and_is_held_to_its_pod() -> None:
    from aegis.runtime.transport.auth import Operator, new_user_keypair
    from aegis.runtime.transport.nats_server import NatsServer
    from bench.fleet import LeanNats, NatsError

    op = Operator()
    job = op.create_job_account("default", "lean")
    pod, other = "lean-worker-0", "lean-worker-1"
    kp = new_user_keypair()
    jwt = job.worker_jwt(kp.public_key.decode(), pod, "inc-1")
    got: list[tuple[str, bytes]] = []
    async with NatsServer(op, [job]) as nats:
        host, port = nats.url.removeprefix("nats://").rsplit(":", 1)
        conn = await LeanNats.connect(
            host, int(port), jwt, bytes(kp.seed), pod, lambda s, p: got.append((s, p))
        )
        conn.sub(job.subjects.master, 1)
        await conn.ping()  # allowed: no -ERR
        conn.pub(job.subjects.report(other, "inc-1"), b"{}")  # another pod's subject
        await conn.ping()
        assert any("Permissions Violation" in e for e in conn.errors), conn.errors
        conn.close()
        # a JWT signed for another key cannot be used with this seed (the nonce check)
        stranger = new_user_keypair()
        with pytest.raises(NatsError):
            await LeanNats.connect(host, int(port), jwt, bytes(stranger.seed), pod, print)


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


def test_a_drop_chance_outside_0_to_1_is_refused() -> None:
    from bench.scale import parse_args

    for bad in ("1.5", "-0.1"):
        with pytest.raises(SystemExit):
            parse_args(["--agents", "2", "--drop-orders", bad])


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


def test_a_kill_time_that_is_not_a_finite_number_of_seconds_is_refused() -> None:
    from bench.scale import parse_args

    for bad in ("-1", "nan", "inf", "soon"):
        with pytest.raises(SystemExit):
            parse_args(["--agents", "2", "--kill-controller-after", bad])
    assert parse_args(["--agents", "2", "--kill-controller-after", "0"]).kill_controller_after == 0


def test_a_crash_point_outside_0_to_1_is_refused() -> None:
    from bench.scale import parse_args

    for bad in ("2.5", "-0.1"):
        with pytest.raises(SystemExit):
            parse_args(["--agents", "2", "--faults", "1", "--crash-at", bad])
    assert parse_args(["--agents", "2", "--crash-at", "1"]).crash_at == 1.0


def test_the_cpu_share_ends_at_the_last_sample_when_the_process_left_first() -> None:
    from bench.scale import ProcSample

    p = ProcSample(1, series=[(0.0, 0.0), (1.0, 0.5), (2.0, 0.75)])
    assert p.cpu_share(0.5, 1.5) == 37.5  # 0 -> 2 s: 0.75 CPU s
    # it exited at 2.1 s, before a sample after the window's end came: up to its last one
    assert p.cpu_share(1.5, 3.0) == 25.0  # 1 -> 2 s: 0.25 CPU s
    assert p.cpu_share(-1.0, 1.5) is None  # no sample before the window
    assert ProcSample(1, series=[(0.0, 0.0)]).cpu_share(0.5, 1.0) is None


def test_cpu_windows_split_the_cpu_by_process_group_and_bound_what_the_machine_can_show() -> None:
    from bench.fleet import FleetStats
    from bench.scale import GroupSample, JobRun, ProcSample, cpu_windows

    def steady(rate: float, until: float = 20.0) -> list[tuple[float, float]]:
        return [(t / 5, rate * t / 5) for t in range(int(until * 5) + 1)]  # 0.2 s samples

    # the fleet uses 1.5 cores, nats-server 0.5, the controller 0.8 (it exits at 18 s)
    stats = FleetStats(started=1.1, run_orders={"a": 9.0, "b": 11.0})  # 1.1: between samples
    # the command round: three reports sent after the first RunCommand order (9 s), the last
    # answered at 13 s; one sent before it (a bootcheck report) is not the round's
    stats.report_times = [(5.0, 5.5), (9.5, 10.0), (11.0, 12.0), (11.2, 13.0)]
    job = JobRun(
        stats, 20.0, 0, 100.0, 0, None,
        sampled=[ProcSample(1, series=steady(0.8, 18.0)), ProcSample(2, series=steady(0.5))],
        fleet_sample=GroupSample(lambda: [], series=steady(1.5)),
    )  # fmt: skip
    out = cpu_windows(job, cores=2)
    # fleet start (1.1 s) -> the last RunCommand order (11 s): 9.9 s of each rate
    to_run = out["cpu_s_to_runcommand"]
    assert to_run == {"fleet": 14.85, "nats_server": 4.95, "controller": 7.92}, to_run
    assert out["runcommand_floor_s"] == 9.9  # (14.85 + 4.95) CPU s on 2 cores
    # 9 -> 13 s, three reports: the controller's share ends with its last sample (18 s: in it)
    per = out["command_round_cpu_ms_per_report"]
    assert per == pytest.approx({"fleet": 2000.0, "nats_server": 666.667, "controller": 1066.667})
    assert out["reports_per_s_ceiling"] == pytest.approx(2000 / 2666.667, abs=0.06)  # to 0.1
    # a window before the first sample is not guessed
    late = GroupSample(lambda: [], series=[(2.0, 0.0), (20.0, 9.0)])
    early = JobRun(stats, 20.0, 0, 100.0, 0, None, sampled=job.sampled, fleet_sample=late)
    assert "cpu_s_to_runcommand" not in cpu_windows(early, cores=2)
    # no agent in the bench's process: its 0.5 cores are the credential service's, and with
    # agents that cost nothing the rest would need (4.95 + 4.95 + 7.92) CPU s on 2 cores
    assert "system_floor_s" not in out  # not told which part of the fleet is the bench's
    job.bench_sample = GroupSample(lambda: [], series=steady(0.5))
    out = cpu_windows(job, cores=2)
    assert out["fleet_split_to_runcommand"] == {"bench_process": 4.95, "agent_processes": 9.9}
    assert out["system_floor_s"] == 8.91
    assert out["cpu_s_to_runcommand"] == to_run  # the groups as before


def test_a_process_group_keeps_counting_what_an_exited_member_used() -> None:
    from bench.scale import GroupSample, cpu_seconds

    # the child burns 0.3 s of CPU, says so, then waits for its stdin to close
    busy = (
        "import sys, time\nt = time.process_time()\n"
        "while time.process_time() - t < 0.3: pass\nprint('burnt', flush=True)\nsys.stdin.read()"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", busy], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        assert child.stdout.readline() == "burnt\n"
        group = GroupSample(lambda: [os.getpid(), child.pid])
        group.sample()
        assert group.last[child.pid] >= 0.3
    finally:
        child.stdin.close()
        child.wait(10)
    group.sample()  # the child is gone: its last reading still counts
    mine = cpu_seconds(os.getpid())
    assert mine is not None
    assert group.series[-1][1] == pytest.approx(mine + group.last[child.pid], abs=0.05)
    assert [v for _, v in group.series] == sorted(v for _, v in group.series)


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


def test_fleet_stats_from_processes_merge_into_the_whole_fleets() -> None:
    from bench.fleet import FleetStats

    a = FleetStats(
        started=10.0, creds_done=[11.0, 12.0], receipts={"applied": 2}, first_seen={1: 13.0},
        order_bytes=400, left={"p0": "done"}, heartbeats=5, first_command_report=None,
        report_times=[(1.0, 2.0)],
    )  # fmt: skip
    b = FleetStats(
        started=9.5, creds_done=[11.5], receipts={"applied": 1, "stale": 1},
        first_seen={1: 12.5, 2: 14.0}, order_bytes=420, left={"p1": "done"}, heartbeats=7,
        first_command_report=15.0, report_times=[(1.5, 2.5)],
    )  # fmt: skip
    for part in (a, b):  # what a child process sends survives the pipe
        assert FleetStats.from_json(json.loads(json.dumps(part.to_json()))) == part
    m = FleetStats.merged([a, b])
    assert m.started == 9.5 and m.first_command_report == 15.0
    assert sorted(m.creds_done) == [11.0, 11.5, 12.0] and m.heartbeats == 12
    assert m.receipts == {"applied": 3, "stale": 1} and m.first_seen == {1: 12.5, 2: 14.0}
    assert m.order_bytes == 420 and m.left == {"p0": "done", "p1": "done"}
    assert sorted(m.report_times) == [(1.0, 2.0), (1.5, 2.5)]


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
    with pytest.raises(SystemExit):  # never into a directory that holds something
        parse_args(["--agents", "2", "--state-dir", str(kept)])


def test_fleet_processes_outside_1_to_agents_are_refused() -> None:
    from bench.scale import parse_args

    for bad in ("0", "3"):
        with pytest.raises(SystemExit):
            parse_args(["--agents", "2", "--fleet-procs", bad])


def test_fleet_gc_thresholds_are_three_integers() -> None:
    from bench.fleet import FLEET_GC_THRESHOLDS
    from bench.scale import parse_args

    assert parse_args(["--agents", "2"]).fleet_gc == FLEET_GC_THRESHOLDS
    assert parse_args(["--agents", "2", "--fleet-gc", "700,10,10"]).fleet_gc == (700, 10, 10)
    for bad in ("700,10", "700,10,10,1", "a,b,c", "0,10,10", "700,-1,10", ""):
        with pytest.raises(SystemExit):
            parse_args(["--agents", "2", "--fleet-gc", bad])


@pytest.mark.timeout(120)
def test_a_fleet_in_child_processes_that_runs_out_of_time_says_how_far_it_got() -> None:
    # each order's work takes 30 s, the job may take 6: the children are told to end and
    # send what they measured (the run under a profiler that never ended said 0 credentials
    # and a job of 12,346 s)
    out = _scale("--agents", "6", "--fleet-procs", "2", "--work-s", "30", "--timeout", "6")
    assert out["succeeded"] is False and out["fleet_procs"] == 2, out
    assert (out["credentials"], out["joined"], out["reports"]) == (6, 6, 0), out
    assert isinstance(out["job_s"], float) and 5 < out["job_s"] < 60, out
