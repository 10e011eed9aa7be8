"""The figures the fleet bench (bench/scale.py) prints, from its jobs' runs (one JSON object;
times in seconds unless `_ms`; all on the bench's clock unless `controller_`).

  creds_s, creds_to_runcommand_s, job_s
        the fleet's start -> the last agent has its credential / its RunCommand order / left
        on the final order
  credentials, joined, reports, receipts
        credentials issued, ACKs answered, reports answered (by result): how far a job got
  reports_per_s, event_p50_ms, event_p99_ms
        Finish reports answered a second while reports were in flight; a report sent -> its
        receipt
  fault_to_order_ms (p50, p99, measured, each)
        the launcher's "lost" event -> the first newer order an agent receives (with the
        replacement's credential, connection and ACK, and the fleet's own delay)
  controller_fault_to_order_ms (p50_le, p99_le, measured)
        the same on the controller's clock, from its aegis_fault_to_order_seconds histogram
        (read from metrics.prom once it exits): bucket bounds
  controller_rss_mb, controller_cpu_ms_per_event, controller_gc
        the controller's peak resident set; its CPU per ACK or report; its collections
  order_bytes, pod_order_bytes, old_order_bytes
        the largest broadcast and per-pod order an agent received; the whole spec state at N
        pods, what orders carried before the agent's projection
  status_bytes, ctl_status_bytes
        the status file at the end; the `aegis ctl status` reply
  heartbeats, cpu_s (fleet, controller, nats_server)
        heartbeats sent; CPU seconds from the fleet's start to the job's end (fleet: the
        bench's process with the credential service, and any child fleet processes)
  orders_dropped, orders_resent, stopped_at_end, reports_resent, controller_report_copies
        orders lost on purpose (--drop-orders); orders the controller sent again on a
        heartbeat; agents stopped 10 s after the controller exited; report copies sent again;
        of those, the ones the controller did not handle again, by outcome
  idle_s, idle_controller_cpu_pct, idle_nats_server_cpu_pct
        while every agent works on RunCommand (give a long --work-s): the window and each
        process's share of one core
  cpu_s_to_runcommand, runcommand_floor_s, fleet_split_to_runcommand, system_floor_s
        CPU by group from the fleet's start to the last RunCommand order; (fleet +
        nats-server) / cores: the shortest credentials -> RunCommand with a controller that
        cost nothing; with --fleet-procs > 1, the bench's own process (the credential service)
        apart from the agents', and (service + nats-server + controller) / cores: the same with
        agents that cost nothing
  command_round_cpu_ms_per_report, reports_per_s_ceiling
        each group's CPU from the first RunCommand order to the last command receipt, per
        report; cores x 1000 / (fleet + nats-server ms per report): the most reports a second
        with a controller that cost nothing
  controller_kill (killed_at_s, resume_s, processes, final_phase, recover_count)
        with --kill-controller-after: the kill, the restarted controller answering, and the
        status at the end (a resume costs no retry)
  fleet_procs, fault_job_fleet_procs, fleet_gc, fault_job_work_superseded
        the processes each job's agents ran in; the fleet's own collections (the bench's
        cost, not the controller's); work a newer order replaced before it ended
"""

from __future__ import annotations

import argparse
import json
import os
import resource
from typing import Any

from aegis.protocol.state_codec import encode_state
from aegis.runtime.engine import initial_state, runtime_constants
from bench.procstat import GroupSample, ProcSample
from bench.scale_job import JOB, JobRun


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


def _busy_seconds(intervals: list[tuple[float, float]]) -> float:
    """The time during which at least one report was in flight."""
    busy, end = 0.0, float("-inf")
    for start, stop in sorted(intervals):
        if stop <= end:
            continue
        busy += stop - max(start, end)
        end = stop
    return busy


def _bucket_pct(buckets: list[tuple[float, float]], q: float) -> float | None:
    """The smallest bucket bound (ms) that holds the quantile `q` of a histogram."""
    total = buckets[-1][1] if buckets else 0
    if not total:
        return None
    return next(round(le * 1000, 1) for le, n in buckets if n >= q * total)


def figures(args: argparse.Namespace, healthy: JobRun, faulty: JobRun | None) -> dict[str, Any]:
    """The JSON object the bench prints."""
    s = healthy.stats
    n = args.agents
    creds = sorted(s.creds_done)[:n]
    run = sorted(s.run_orders.values())
    busy = _busy_seconds(s.report_times)
    pods = tuple(f"{JOB}-worker-{i}" for i in range(n))
    old_order = len(json.dumps(encode_state(initial_state(runtime_constants(pods, 3)))))
    out: dict[str, Any] = {
        "agents": n,
        # the controller ended it Succeed and every agent left on the final order, or (one
        # that lost it, --drop-orders) was stopped after the controller exited
        "succeeded": healthy.controller_exit == 0 and len(s.left) + s.stopped_at_end == n,
        "creds_s": _all_done_s(creds, n, s.started),
        "creds_to_runcommand_s": _all_done_s(run, n, s.started),
        "job_s": round(healthy.ended - s.started, 3),
        "credentials": len(s.creds_done),  # issued (a job that did not end: how far it got)
        "joined": len(s.joined),  # ACKs answered (a job that did not end: how far it got)
        "reports": len(s.report_ms),
        "reports_per_s": _per_s(len(s.report_ms), busy),
        "event_p50_ms": _pct(s.report_ms, 0.5),
        "event_p99_ms": _pct(s.report_ms, 0.99),
        "receipts": s.receipts,
        "controller_rss_mb": round(healthy.rss_peak_mb, 1),
        "heartbeats": s.heartbeats,
        # CPU seconds from the fleet's start to the job's end: the controller's per ACK or
        # report (its heartbeats ride along); "fleet" includes the credential service
        "cpu_s": healthy.cpu_s,
        "controller_cpu_ms_per_event": _ms_per(
            healthy.cpu_s["controller"], len(s.joined) + len(s.report_ms)
        ),
        "order_bytes": s.order_bytes,
        "pod_order_bytes": s.pod_order_bytes,
        "old_order_bytes": old_order,  # peer: the whole spec state every order carried before
        "status_bytes": healthy.status_bytes,
        "ctl_status_bytes": healthy.ctl_status_bytes,
        "refused": len(s.refused),
        "malformed_orders": s.malformed,
        "connect_retries": s.connect_retries,
        "nofile": list(resource.getrlimit(resource.RLIMIT_NOFILE)),
        "start_rate": args.start_rate,
        "heartbeat_s": args.heartbeat_s,
        "heartbeat_rate": args.heartbeat_rate,
        "fleet_procs": healthy.fleet_procs,
        "controller_gc": healthy.controller_gc,
        # the fleet's cyclic collections and their time (its processes' sum; not the
        # controller's): a bench artefact, see bench/fleet.py FLEET_GC_THRESHOLDS
        "fleet_gc": {
            "thresholds": list(args.fleet_gc),
            "runs": s.gc_collections,
            "s": round(s.gc_s, 2),
        },
    }
    out |= idle_figures(healthy)
    if healthy.controller_kill is not None:
        # with the status it ended with: a resume must not have cost a retry
        out["controller_kill"] = {
            **healthy.controller_kill,
            "final_phase": healthy.final_phase,
            "recover_count": healthy.recover_count,
        }
    out |= cpu_windows(healthy, os.cpu_count() or 1)
    if faulty is not None:
        out |= fault_figures(args, faulty)
    return out


def _all_done_s(times: list[float], n: int, started: float) -> float | None:
    """Seconds from the start to the last of `n` events (None: not all of them came)."""
    return round(times[-1] - started, 3) if len(times) == n else None


def _per_s(count: int, seconds: float) -> float | None:
    return round(count / seconds, 1) if seconds else None


def _ms_per(cpu_s: float, events: int) -> float | None:
    return round(1000 * cpu_s / events, 3) if events else None


def _fault_delays_ms(faulty: JobRun) -> list[float]:
    """Each loss -> the first order after it that an agent received (ms)."""
    f = faulty.stats
    delays = []
    for lost_at, seen in faulty.faults:
        later = [t for seq, t in f.first_seen.items() if seq > seen and t >= lost_at]
        if later:
            delays.append((min(later) - lost_at) * 1000)
    return delays


def fault_figures(args: argparse.Namespace, faulty: JobRun) -> dict[str, Any]:
    """The figures of the job with lost pods: how soon an order followed each loss."""
    f = faulty.stats
    n = args.agents
    delays = _fault_delays_ms(faulty)
    return {
        "faults": args.faults,
        "fault_job_succeeded": faulty.controller_exit == 0 and len(f.left) == n,
        "fault_job_fleet_procs": faulty.fleet_procs,
        "fault_to_order_ms": {
            "p50": _pct(delays, 0.5),
            "p99": _pct(delays, 0.99),
            "measured": len(delays),
            "each": [round(d, 1) for d in delays],
        },
        # the same, on the controller's clock: from reading the loss to publishing the order
        # (the fleet's own delay in taking the order is not in it); bucket bounds
        "controller_fault_to_order_ms": {
            "p50_le": _bucket_pct(faulty.fault_to_order, 0.5),
            "p99_le": _bucket_pct(faulty.fault_to_order, 0.99),
            "measured": faulty.fault_to_order[-1][1] if faulty.fault_to_order else 0,
        },
        "fault_job_work_superseded": f.superseded,
        "fault_job_s": round(faulty.ended - f.started, 3),
        "fault_job_controller_rss_mb": round(faulty.rss_peak_mb, 1),
        "fault_job_controller_gc": faulty.controller_gc,
    }


def idle_figures(job: JobRun) -> dict[str, Any]:
    """What the job costs while every agent works on RunCommand (from the last agent's
    RunCommand order to the first command report; a long --work-s gives a long window): the
    controller's and nats-server's CPU share then, and the orders the controller sent again
    to agents whose heartbeat showed them behind (none while nothing is lost: agents no
    longer re-ask, docs/scale.md)."""
    s = job.stats
    run = sorted(s.run_orders.values())
    start, end = (run[-1] if run else None), s.first_command_report
    out: dict[str, Any] = {
        "orders_resent": s.orders_resent,
        "orders_dropped": s.orders_dropped,
        "stopped_at_end": s.stopped_at_end,
        "reports_resent": s.resent,
        # of those, the ones the controller did not handle again (dropped / answered alike)
        "controller_report_copies": {k: int(v) for k, v in job.report_copies.items()},
        "idle_s": None,
    }
    if start is None or end is None or end - start < 1.0 or len(job.sampled) < 2:
        return out
    out["idle_s"] = round(end - start, 2)
    for name, proc in zip(("controller", "nats_server"), job.sampled, strict=True):
        out[f"idle_{name}_cpu_pct"] = proc.cpu_share(start, end)
    return out


def cpu_windows(job: JobRun, cores: int) -> dict[str, Any]:
    """Where the CPU went in two windows of the job, by process group, from the 0.2 s
    samples: from the fleet's start to the last agent's RunCommand order, and the command
    round (from the first RunCommand order to the last command report's receipt; the
    order's fan-out included, and any --work-s). With the simulated agents and nats-server
    on the same `cores` as the controller, their CPU bounds what the machine can show: the
    floor on credentials -> RunCommand and the ceiling on reports/s with a controller that
    cost nothing (on a cluster the agents run on their own nodes). With the agents in child
    processes the bench's own process is the credential service: its CPU, nats-server's and
    the controller's bound credentials -> RunCommand with agents that cost nothing."""
    s = job.stats
    run = sorted(s.run_orders.values())
    if not run or job.fleet_sample is None or len(job.sampled) < 2:
        return {}
    groups: dict[str, ProcSample | GroupSample] = {
        "fleet": job.fleet_sample,
        "nats_server": job.sampled[1],
        "controller": job.sampled[0],
    }
    figures = _to_runcommand(job, groups, run[-1], cores)
    return figures | _command_round(s.report_times, groups, run[0], cores)


Groups = dict[str, ProcSample | GroupSample]


def _cpu_used(groups: Groups, start: float, end: float) -> dict[str, float] | None:
    """Each group's CPU seconds from `start` to `end` (None: a sample is missing)."""
    out = {}
    for name, group in groups.items():
        a, b = group.cpu_at(start), group.cpu_at(end)
        if a is None or b is None:
            return None
        out[name] = b - a
    return out


def _to_runcommand(job: JobRun, groups: Groups, last_run: float, cores: int) -> dict[str, Any]:
    """The CPU from the fleet's start to the last RunCommand order, and the floor it puts
    on that time on `cores`."""
    started = job.stats.started
    to_run = _cpu_used(groups, started, last_run)
    if to_run is None:
        return {}
    figures: dict[str, Any] = {
        "cpu_s_to_runcommand": {k: round(v, 2) for k, v in to_run.items()},
        "runcommand_floor_s": round((to_run["fleet"] + to_run["nats_server"]) / cores, 2),
    }
    return figures | _fleet_split(job.bench_sample, started, last_run, to_run, cores)


def _fleet_split(
    bench: GroupSample | None, start: float, end: float, to_run: dict[str, float], cores: int
) -> dict[str, Any]:
    """With the agents in child processes: the bench's own process is the credential service
    (and the bench's bookkeeping), a part of the system under test; the floor without the
    agents' cost."""
    a = None if bench is None else bench.cpu_at(start)
    b = None if bench is None else bench.cpu_at(end)
    if a is None or b is None:
        return {}
    service = min(b - a, to_run["fleet"])
    system = service + to_run["nats_server"] + to_run["controller"]
    return {
        "fleet_split_to_runcommand": {
            "bench_process": round(service, 2),
            "agent_processes": round(to_run["fleet"] - service, 2),
        },
        "system_floor_s": round(system / cores, 2),
    }


def _command_round(
    report_times: list[tuple[float, float]], groups: Groups, first_run: float, cores: int
) -> dict[str, Any]:
    """The CPU per report in the command round, and the reports/s it allows on `cores`
    with a controller that cost nothing."""
    round_reports = [answered for sent, answered in report_times if sent >= first_run]
    in_round = _cpu_used(groups, first_run, max(round_reports)) if round_reports else None
    if in_round is None:
        return {}
    per = {k: 1000 * v / len(round_reports) for k, v in in_round.items()}
    others = per["fleet"] + per["nats_server"]
    return {
        "command_round_cpu_ms_per_report": {k: round(v, 3) for k, v in per.items()},
        "reports_per_s_ceiling": round(1000 * cores / others, 1) if others else None,
    }
