"""Attacks from a job's own training code, in a real `aegis run` (issue 42).

The attacker is the training process (tests/runtime/scripts/attacker.py): real nats-server,
real gRPC credential service, real controller and agents. Each attack must end as the job
would have without it (rc 0, every rank's real training done, restarts only for the faults
it injected), its forged traffic refused and counted. docs/security.md lists them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..support import AEGIS, AegisRun, Launch, wait_for

SCRIPT = str(Path(__file__).with_name("scripts") / "attacker.py")
TRAIN = [sys.executable, SCRIPT]


def report(path: Path) -> dict[str, list[dict[str, Any]]]:
    """The attacker's report: its lines by step."""
    steps: dict[str, list[dict[str, Any]]] = {}
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        steps.setdefault(rec["step"], []).append(rec)
    assert "error" not in steps, steps["error"]
    return steps


def every_rank_trained(out: str, ranks: int, restart: int) -> bool:
    return all(f"rank {r} done (restart {restart})" in out for r in range(ranks))


def test_a_stale_credential_a_race_and_a_flood_of_refusals_get_nothing(
    tmp_path: Path, aegis_run: Launch
) -> None:
    """Rank 1's daemon steals pod 0's credential, kills pod 0's agent and speaks with the
    credential it kept; it races the replacement for its credential and asks for that
    identity at full speed meanwhile. The stale credential is cut off and revoked (no
    reconnection, no renewal); nothing it sent is applied; the replacement gets its own
    credential; the job ends Succeed after the one restart the kill cost."""
    log = tmp_path / "attack.jsonl"
    env = {"ATTACK_RANK": "1", "ATTACK_MODE": "stale", "ATTACK_REPORT": str(log)}
    r = aegis_run(2, cmd=TRAIN, env=env)
    assert r.finish(300) == 0, r.output[-3000:]
    assert every_rank_trained(r.stdout, 2, restart=1), r.stdout[-2000:]
    status = r.status()
    assert (status["phase"], status["recoverCount"]) == ("Succeed", 1)  # the kill, only
    steps = report(log)  # its helper may have been ended with rank 1's first attempt
    stolen_inc = steps["steal"][0]["incarnation"]
    assert steps["steal"][0]["stolen"] and steps["connected"][0]["ok"]
    # the server closed the stale connection; nothing it sent was applied
    stale = steps["stale"][0]
    assert stale["closed"] and stale["sent"] > 0 and "applied" not in stale["receipts"], stale
    assert steps["reconnect"][0]["ok"] is False  # revoked: refused at connect
    renew = steps["renew"][0]
    assert renew["ok"] is False and ("revoked" in renew["why"] or "too often" in renew["why"])
    # the replacement's secret could not be read, nor its identity had without it
    race = steps["race"][0]
    assert race["secret_fd"].startswith(("refused", "no descriptor")), race
    assert race["token"] is False
    assert race["incarnation"] != stolen_inc
    assert race["tries"] and all(t.startswith("refused") for t in race["tries"]), race
    spam = {tuple(s["incarnations"]): s for s in steps["spam"]}  # the last count of each
    assert all(s["refused"] == s["sent"] for s in spam.values()), spam  # never one granted
    assert (race["incarnation"],) in spam  # some at the replacement's identity, as it asked
    asked = sum(s["sent"] for s in spam.values())
    assert asked >= 400
    # the controller: the stolen incarnation is retired, the pod runs as its replacement
    runtime = status["runtime"]
    assert stolen_inc in runtime["retired"]["local-worker-0"]
    assert runtime["incarnations"]["local-worker-0"] not in (None, stolen_inc)
    counters = runtime["counters"]
    print(f"attack: {stale['sent']} stale messages, receipts {stale['receipts']}, {asked} "
          f"refused credential requests; counters {counters}")  # fmt: skip


@pytest.fixture
def job_b(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """Another job named `twin`, started as a user would (its state in a temp dir of its
    own), its one rank waiting for `hold` before it trains."""
    hold = tmp_path / "hold-b"
    out = (tmp_path / "b.out").open("w")
    cmd = [*AEGIS, "run", "-n", "1", "--job", "twin", "--", sys.executable, str(HOLDING)]
    proc = subprocess.Popen(
        cmd,
        env={**os.environ, "HOLD_FILE": str(hold)},
        stdout=out,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        yield proc, hold
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(60)
        out.close()


HOLDING = Path(__file__).with_name("scripts") / "holding_train.py"


def test_a_job_of_the_same_name_is_not_reachable_by_that_name(
    tmp_path: Path, job_b: tuple[subprocess.Popen[str], Path]
) -> None:
    """Two jobs of one user, both named `twin`: job A's training looks for job B by the
    name, in what the OS shows of every process carrying it (environments, command lines),
    for secrets and state directories, and asks B's credential service for B's pods. It
    finds neither secret nor state dir, and is refused; B then trains as if alone."""
    proc_b, hold = job_b
    out_b = tmp_path / "b.out"
    wait_for(lambda: "waiting for" in out_b.read_text(), 120, "job B's rank to wait")
    log = tmp_path / "attack.jsonl"
    env = {"ATTACK_RANK": "0", "ATTACK_MODE": "cross", "ATTACK_JOB": "twin",
           "ATTACK_REPORT": str(log)}  # fmt: skip
    (tmp_path / "a").mkdir()
    a = AegisRun(tmp_path / "a", 1, "--job", "twin", cmd=TRAIN, env=env)
    try:
        assert a.finish(300) == 0, a.output[-3000:]
    finally:
        a.stop()
    steps = report(log)
    found = steps["cross-found"][0]
    assert found["processes"] >= 3, found  # B's launcher, controller, agent, rank at least
    assert found["secrets"] == [] and found["state_dirs"] == [], found
    assert found["pods"] == ["twin-worker-0"], found
    for ask in steps["cross-ask"]:
        assert all(t.startswith("refused") for t in ask["tries"]), ask
    hold.touch()
    assert proc_b.wait(240) == 0, out_b.read_text()[-3000:]
    assert "rank 0 done (restart 0)" in out_b.read_text()
    assert "restarted 0 times" in out_b.read_text()


def ctl_latencies(state: Path, stop_at: float) -> list[float]:
    """`aegis ctl status` request round trips (seconds) until `stop_at`, one after another."""
    import asyncio

    from aegis.cli.ctl_config import load_config
    from aegis.protocol.control import make_request
    from aegis.protocol.subjects import JobSubjects
    from aegis.runtime.transport.auth import UserCredentials
    from aegis.runtime.transport.bus import Bus

    cfg = load_config(state)
    subjects = JobSubjects(cfg.namespace, cfg.job)

    async def probe() -> list[float]:
        creds = UserCredentials(cfg.jwt, cfg.seed.encode())
        bus = await Bus.connect(cfg.nats_url, creds, inbox_prefix=subjects.ctl_inbox_prefix)
        times = []
        try:
            while time.monotonic() < stop_at:
                t0 = time.monotonic()
                request = make_request(cfg.namespace, cfg.job, "status")
                reply = await bus.request(subjects.ctl_controller, request, 10)
                times.append(time.monotonic() - t0)
                assert reply.data.get("ok") is True, reply.data
                await asyncio.sleep(0.2)
        finally:
            await bus.close()
        return times

    return asyncio.run(probe())


# the growth a flood may cause, whatever its length: warnings are one line per sending pod
# and kind a minute, and a refused observation is one step-log line per pod and kind until
# the state changes (docs/operations.md, "Every fault ends")
LOG_BOUND_BYTES = 16 * 1024
STEPLOG_BOUND_BYTES = 16 * 1024


def flood(tmp_path: Path, aegis_run: Launch, seconds: float) -> None:
    log = tmp_path / "attack.jsonl"
    env = {"ATTACK_RANK": "1", "ATTACK_MODE": "flood", "ATTACK_REPORT": str(log),
           "FLOOD_S": str(seconds), "ATTACK_WAIT_S": str(seconds + 60)}  # fmt: skip
    r = aegis_run(2, cmd=TRAIN, env=env)
    started = r.wait_until(lambda: log.exists() and "flood-start" in log.read_text(), 180, "flood")
    assert started
    err0 = r.stderr_path.stat().st_size
    steps0 = (r.state / "steps.jsonl").stat().st_size
    latencies = ctl_latencies(r.state, time.monotonic() + seconds)
    assert r.finish(300) == 0, r.output[-3000:]
    assert every_rank_trained(r.stdout, 2, restart=0), r.stdout[-2000:]
    status = r.status()
    assert (status["phase"], status["recoverCount"]) == ("Succeed", 0)
    (done,) = report(log)["flood"]
    grew_log = r.stderr_path.stat().st_size - err0
    grew_steps = (r.state / "steps.jsonl").stat().st_size - steps0
    counters = status["runtime"]["counters"]
    slowest = max(latencies, default=float("nan"))
    print(f"flood: {done['sent']} messages in {done['seconds']:.1f} s ({done['rate']:.0f}/s); "
          f"controller log +{grew_log} B, step log +{grew_steps} B; ctl status "
          f"{len(latencies)} answers, slowest {slowest:.2f} s; counters {counters}")  # fmt: skip
    assert done["sent"] >= 1000 * seconds
    assert latencies and max(latencies) < 2.0, latencies
    assert grew_log < LOG_BOUND_BYTES, r.stderr[-3000:]
    assert grew_steps < STEPLOG_BOUND_BYTES
    refused = sum(counters.get(k, 0) for k in ("impersonation", "unexpected_type", "stale"))
    assert refused > 0  # what it read of the flood, refused and counted


def test_a_short_flood_on_a_pods_own_subjects_is_refused_within_bounds(
    tmp_path: Path, aegis_run: Launch
) -> None:
    flood(tmp_path, aegis_run, 5.0)


@pytest.mark.slow
def test_a_25_s_flood_on_a_pods_own_subjects_is_refused_within_bounds(
    tmp_path: Path, aegis_run: Launch
) -> None:
    flood(tmp_path, aegis_run, 25.0)
