"""`aegis ctl` and `aegis run --metrics-port` against a real running job (every process real).

One 2-rank job (rank 1 crashes once, then every rank holds on HOLD_FILE) is driven through
every ctl command; the metrics endpoint and the fault log are checked on the way; `ctl stop`
ends it. Usage errors need no job.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from aegis.protocol.control import make_request, reply_result
from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.protocol.subjects import JobSubjects
from aegis.runtime.launcher.local import free_port
from aegis.runtime.steplog import read_steplog
from aegis.runtime.transport.auth import UserCredentials
from aegis.runtime.transport.bus import Bus

from ..support import AEGIS, Launch, wait_for

PODS = ("local-worker-0", "local-worker-1")


def ctl(state: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    argv = [*AEGIS, "ctl", "--state-dir", str(state), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def ctl_json(state: Path, *args: str) -> tuple[int, Any]:
    r = ctl(state, "--json", *args)
    assert r.stdout.strip(), r.stderr
    return r.returncode, json.loads(r.stdout)


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def metrics(port: int) -> dict[str, list[tuple[dict[str, str], float]]]:
    """name -> [(labels, value)] of every sample at /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        assert resp.status == 200
        text = resp.read().decode()
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append((dict(s.labels), s.value))
    return out


def creds_of(state: Path) -> tuple[dict[str, Any], UserCredentials]:
    obj = json.loads((state / "ctl.json").read_text())
    return obj, UserCredentials(obj["jwt"], obj["seed"].encode())


async def raw_requests(state: Path) -> list[Message]:
    """Bad requests straight to the agent's and the controller's ctl subjects; then the ctl
    user tries to publish a report on a pod's report subject (refused by NATS)."""
    obj, creds = creds_of(state)
    subjects = JobSubjects(obj["namespace"], obj["job"])
    bus = await Bus.connect(obj["natsUrl"], creds, inbox_prefix=subjects.ctl_inbox_prefix)
    try:
        replies = []
        plan: list[tuple[str, dict[str, Any]]] = [
            (subjects.ctl_agent(PODS[0]), {"command": "burn", "seconds": -1}),
            (subjects.ctl_agent(PODS[0]), {"command": "stop"}),
            (subjects.ctl_controller, {"command": "taint", "node": "Bad Node"}),
        ]
        for subject, data in plan:
            m = Message(
                "local", "default", "ctl", MessageType.CONTROL, MessagePhase.COMMAND, data, 1.0
            )
            replies.append(await bus.request(subject, m, 10))
        replies.append(
            await bus.request(subjects.ctl_controller, make_request("default", "local", "status"))
        )
        forged = Message(
            "local", "default", PODS[0], MessageType.FINISH, MessagePhase.COMMAND, {}, 1.0, 1
        )
        await bus.publish(subjects.report(PODS[0], "i1"), forged)
        await bus.flush()
        denied = await bus.wait_permission_denied(5)
        assert f'publish to "{subjects.report(PODS[0], "i1")}"' in denied
        return replies
    finally:
        await bus.close()


def hang_steps(state: Path, pod: str) -> bool:
    """agentHang of `pod` applied, then the receive of its Hang message."""
    seen_hang = False
    for rec in read_steplog(state / "steps.jsonl"):
        if "rejected" in rec or "action" not in rec:
            continue
        text = json.dumps(rec["choices"])
        if rec["action"] == "agentHang" and pod in text:
            seen_hang = True
        elif seen_hang and rec["action"] == "receive" and pod in text and '"Hang"' in text:
            return True
    return False


def test_ctl_drives_a_running_job(aegis_run: Launch, tmp_path: Path) -> None:
    """A running 2-rank job with a metrics port; rank 1 crashes once, then all hold."""
    port = free_port()
    env = {
        "HOLD_FILE": str(tmp_path / "hold"),
        "CRASH_ONCE_RANK": "1",
        "CRASH_DIR": str(tmp_path / "crash"),
    }
    job = aegis_run(2, "--metrics-port", str(port), env=env)
    state = job.state

    def running_again() -> bool:
        s = read_json(state / "status.json")
        return bool(s and s["phase"] == "RunCommand" and s["recoverCount"] == 1)

    job.wait_until(running_again, 240, "the job to run again after rank 1's crash")
    ctl_file = state / "ctl.json"
    assert ctl_file.stat().st_mode & 0o777 == 0o600
    assert set(read_json(ctl_file)) >= {"natsUrl", "jwt", "seed", "namespace", "job"}
    assert f"aegis ctl --state-dir {state} status" in job.output

    # the fault log has the crash, with the pod's node
    faults = [json.loads(line) for line in (state / "faults.jsonl").read_text().splitlines()]
    crash = [f for f in faults if f["pod"] == PODS[1]]
    assert crash and crash[0]["node"] == "node-2" and crash[0]["phase"], faults

    # metrics after the bootcheck of a 2-worker job (and a troubleshoot round)
    m = metrics(port)
    boot = [(lab, v) for lab, v in m["aegis_bootcheck_duration_seconds_count"]]
    assert sum(v for lab, v in boot if lab["worker_num"] == "2") >= 2, boot
    checks = {lab["check_type"] for lab, _ in m["aegis_check_duration_seconds_count"]}
    assert {"env", "collective"} <= checks, checks
    created = [lab for lab, v in m["aegis_jobs_total"] if lab["event"] == "created" and v == 1]
    assert created and created[0]["worker_num"] == "2", m["aegis_jobs_total"]
    assert m["aegis_troubleshoot_duration_seconds_count"]
    # rank 1's crash was acted on: its fault-to-order time is measured
    ((_, acted),) = m["aegis_fault_to_order_seconds_count"]
    ((_, took),) = m["aegis_fault_to_order_seconds_sum"]
    assert acted >= 1 and 0 < took < 10 * acted, (acted, took)

    # status, human and JSON
    r = ctl(state, "status")
    assert r.returncode == 0, r.stderr
    assert "job default/local: RunCommand, retries 1/3" in r.stdout
    assert all(p in r.stdout for p in PODS) and "error nodes: none" in r.stdout
    code, view = ctl_json(state, "status")
    assert code == 0 and view["ok"] and view["result"]["pods"][PODS[1]]["retries"] == 1
    incarnations = {p: view["result"]["pods"][p]["incarnation"] for p in PODS}

    # taint / untaint, persisted in status.json
    r = ctl(state, "taint", "node-9", "--reason", "bad fan")  # no pod ran there: a typo?
    assert r.returncode == 1 and "node node-9 is not a node of this job" in r.stderr, r
    assert "its pods ran on: node-1, node-2" in r.stderr
    r = ctl(state, "taint", "node-9", "--reason", "bad fan", "--force")
    assert (r.returncode, r.stdout.strip()) == (0, "node node-9 tainted"), r.stderr
    saved = read_json(state / "status.json")["errorNodes"]
    assert [(e["node"], e["reason"]) for e in saved] == [("node-9", "bad fan")]
    assert "node-9" in ctl(state, "status").stdout
    assert ctl(state, "taint", "node-9").stdout.strip() == "node node-9 was already tainted"
    r = ctl(state, "untaint", "node-9")
    assert (r.returncode, r.stdout.strip()) == (0, "node node-9 untainted")
    assert read_json(state / "status.json")["errorNodes"] == []

    # check: every pod's local checks; one pod, one check, as a table
    code, got = ctl_json(state, "check")
    assert code == 0 and got["ok"], got
    for pod in PODS:
        names = [c["check_type"] for c in got["pods"][pod]["result"]]
        assert names == ["io", "runtime", "gpu", "rdma"], got
    r = ctl(state, "check", PODS[0], "--check", "io")
    assert r.returncode == 0 and r.stdout.splitlines()[0].split() == [
        "POD",
        "CHECK",
        "RESULT",
        "SECONDS",
        "DETAIL",
    ]
    assert r.stdout.splitlines()[1].split()[:3] == [PODS[0], "io", "PASS"], r.stdout

    # burn: a result
    code, got = ctl_json(state, "burn", PODS[0], "--seconds", "1")
    burn = got["pods"][PODS[0]]["result"]
    assert code == 0 and burn[0]["check_type"] == "burn" and burn[0]["passed"], got

    # bad requests straight on the bus get error replies; everyone keeps serving
    replies = asyncio.run(raw_requests(state))
    assert [r.data["ok"] for r in replies] == [False, False, False, True]
    assert "must be > 0" in replies[0].data["error"]
    assert "command for the controller" in replies[1].data["error"]
    assert "is not a DNS-1123 subdomain" in replies[2].data["error"]
    assert reply_result(replies[3])["phase"] == "RunCommand"

    # hang: the agent reports Hang, the controller marks the pod; nothing is killed
    r = ctl(state, "hang", PODS[1], "--reason", "operator test")
    assert r.returncode == 0 and f"pod {PODS[1]} marked hung" in r.stdout, r.stderr
    wait_for(lambda: hang_steps(state, PODS[1]), 30, "agentHang then receive in the step log")
    r = ctl(state, "hang", PODS[1])  # marked already: the agent says so, exit 1
    assert r.returncode == 1 and f"pod {PODS[1]} not marked" in r.stderr, r
    code, view = ctl_json(state, "status")
    pods = view["result"]["pods"]
    assert pods[PODS[1]]["slow"] is True and pods[PODS[0]]["slow"] is False, view
    assert {p: pods[p]["incarnation"] for p in PODS} == incarnations
    assert view["result"]["phase"] == "RunCommand" and view["result"]["recoverCount"] == 1

    # stop: the job ends Failed (the controller exits 3, `aegis run` 1)
    r = ctl(state, "stop")
    assert r.returncode == 0 and "job default/local stop" in r.stdout, r.stderr
    assert job.finish(120) == 1
    final = read_json(state / "status.json")
    assert final["phase"] == "Failed" and final["shouldQuit"] is True
    assert 'aegis_jobs_total{event="failed"' in (state / "metrics.prom").read_text()

    # the job has ended, its credentials with it: status answers from the state dir, exit 0
    assert not (state / "ctl.json").exists()
    r = ctl(state, "status")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "job default/local: ended Failed, retries 1/3 (from its state dir)"
    assert lines[1] == "why it failed: stopped: asked by the operator (aegis ctl stop)"
    assert all(len(line) <= 100 for line in lines)
    r = ctl(state, "status", "--watch")  # ends at once: the job has ended
    assert r.returncode == 0 and "ended Failed" in r.stdout
    code, view = ctl_json(state, "status")
    assert code == 0 and view["result"]["saved"] is True and view["result"]["phase"] == "Failed"


def fake_state(tmp: Path, url: str = "nats://127.0.0.1:1") -> Path:
    state = tmp / "state"
    state.mkdir()
    (state / "ctl.json").write_text(
        json.dumps(
            {
                "natsUrl": url,
                "jwt": "x",
                "seed": "SU",
                "namespace": "default",
                "job": "local",
                "pods": list(PODS),
            }
        )
    )
    return state


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["hang", "nobody"], "unknown pod(s) nobody; job local has local-worker-0"),
        (["check", PODS[0], "nobody"], "unknown pod(s) nobody"),
        (["burn", PODS[0], "--seconds", "0"], "seconds must be > 0"),
        (["check", "--check", "collective"], "unknown or collective check(s)"),
        (["taint", "Node_1"], "is not a DNS-1123 subdomain"),
        (["status", "--bogus"], "aegis ctl status: unrecognized arguments: --bogus"),
        (["reboot"], "invalid choice: 'reboot'"),
        (["taint"], "the following arguments are required: NODE"),
        (["status", "--timeout", "0"], "--timeout must be > 0"),
    ],
)
def test_usage_errors_are_one_line(tmp_path: Path, args: list[str], error: str) -> None:
    r = ctl(fake_state(tmp_path), *args, timeout=60)
    assert r.returncode == 2, r
    assert r.stderr.startswith("aegis: error: ") and r.stderr.count("\n") == 1, r.stderr
    assert error in r.stderr and r.stdout == ""


def test_no_state_dir_and_no_job(tmp_path: Path) -> None:
    r = ctl(tmp_path / "missing", "status", timeout=60)
    assert r.returncode == 2 and "state dir" in r.stderr and "does not exist" in r.stderr
    r = ctl(tmp_path, "status", timeout=60)
    assert r.returncode == 2 and "no ctl.json in" in r.stderr
    r = subprocess.run([*AEGIS, "ctl", "status"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--state-dir DIR is required" in r.stderr
    # a job that has ended (nothing listens on its NATS port): exit 1, said clearly
    state = fake_state(tmp_path, f"nats://127.0.0.1:{free_port()}")
    r = ctl(state, "--json", "status", timeout=60)
    assert r.returncode == 1 and "cannot reach job default/local" in r.stderr
    assert r.stderr.startswith("aegis: error: ") and r.stderr.count("\n") == 1, r.stderr
    assert json.loads(r.stdout)["ok"] is False


def test_run_refuses_a_bad_metrics_port() -> None:
    r = subprocess.run(
        [*AEGIS, "run", "-n", "1", "--metrics-port", "70000", "--", "true"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and "--metrics-port 70000" in r.stderr
