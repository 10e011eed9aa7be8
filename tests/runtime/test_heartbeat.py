"""Missed heartbeats -> envPodRestart: the controller core, and `aegis run` with a frozen agent."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.protocol.payloads import Eviction, Receipt, ReceiptResult
from aegis.runtime.controller.core import ControllerCore, JobConfig
from aegis.runtime.controller.store import FileStatusStore, Status
from aegis.runtime.engine import runtime_constants
from aegis.runtime.trace_check import check_steplog
from aegis.values import ModelValue, apply

from ..support import Launch, freeze, wait_for

PODS = ("hb-worker-0", "hb-worker-1")


def msg(pod: str, kind: MessageType, inc: str, seq: int = 0) -> Message:
    data = {"incarnation": inc}
    return Message("hb", "default", pod, kind, MessagePhase.BOOTCHECK, data, time.time(), seq)


def running_core(path: Path, timeout: float = 5.0) -> ControllerCore:
    """A core whose two agents (incarnation i1) joined and passed the bootcheck."""
    core = ControllerCore(
        JobConfig("hb", "default", PODS, 2, heartbeat_timeout=timeout), FileStatusStore(path)
    )
    for p in PODS:
        core.on_ack(msg(p, MessageType.ACK, "i1"))
    for p in PODS:
        core.on_report(msg(p, MessageType.FINISH, "i1", core.state.masterSeq))
    assert core.state.phase == "RunCommand"
    return core


def test_silent_agent_is_lost_and_its_incarnation_evicted(tmp_path: Path) -> None:
    core = running_core(tmp_path / "status.json")
    now = time.monotonic()
    assert core.silent_pods(now) == []
    core.on_heartbeat(msg(PODS[0], MessageType.HEARTBEAT, "i1"))  # pod 0 beats, pod 1 is silent
    core.last_seen[PODS[1]] = now - 6.0
    assert core.silent_pods(now) == [PODS[1]]

    core.on_heartbeat_lost(PODS[1])
    s, w1 = core.state, ModelValue(PODS[1])
    assert s.phase == "Restarting" and apply(s.retries, w1) == 1 and s.recoverCount == 1
    assert core.extras.counters["heartbeat_lost"] == 1
    assert PODS[1] not in core.silent_pods(now + 100)  # declared once
    # the frozen agent comes back: its heartbeat and its report are answered with an eviction
    eviction = core.on_heartbeat(msg(PODS[1], MessageType.HEARTBEAT, "i1")).reply
    assert eviction is not None and eviction.pod_name == PODS[1]
    assert Eviction.from_data(eviction.data) == Eviction("i1")
    receipt = core.on_report(msg(PODS[1], MessageType.FINISH, "i1", s.masterSeq)).reply
    assert receipt is not None and core.state == s
    assert Receipt.from_data(receipt.data).result is ReceiptResult.EVICTED
    # the launcher then sees the old process exit: not a second loss
    core.on_pod_lost(PODS[1], "i1", 75, "node-2")
    assert core.state == s and core.extras.counters["lost_unknown"] == 1
    # the replacement joins: Troubleshooting for everyone
    core.on_ack(msg(PODS[1], MessageType.ACK, "i2"))
    assert core.state.phase == "Troubleshooting"

    # the bookkeeping lives in Status.runtime and survives a controller restart
    saved = FileStatusStore(tmp_path / "status.json").load()
    assert saved is not None and "runtime" not in saved.spec_state
    assert saved.runtime["evicted"] == {PODS[1]: "i1"}
    again = ControllerCore(core.job, FileStatusStore(tmp_path / "status.json"))
    assert again.state == core.state and again.extras.evicted == {PODS[1]: "i1"}
    assert set(again.last_seen) == set(PODS)  # a full timeout for every known agent


def test_lost_after_the_end_is_logged_not_applied(tmp_path: Path) -> None:
    core = running_core(tmp_path / "status.json")
    core.on_quit()
    assert core.terminal == "Failed" and core.silent_pods(time.monotonic() + 100) == []
    before = core.state
    core.on_heartbeat_lost(PODS[0])
    assert core.state == before and core.extras.counters["heartbeat_lost_not_enabled"] == 1


def test_disabled_timeout_never_declares_loss(tmp_path: Path) -> None:
    core = running_core(tmp_path / "status.json", timeout=0)
    assert core.silent_pods(time.monotonic() + 1e6) == []


def test_status_without_runtime_field_still_loads(tmp_path: Path) -> None:
    """Files written before Status.runtime kept the bookkeeping inside specState."""
    core = running_core(tmp_path / "status.json")
    obj = json.loads((tmp_path / "status.json").read_text())
    obj["specState"]["runtime"] = obj.pop("runtime")
    old = tmp_path / "old.json"
    old.write_text(json.dumps(obj))
    status = Status.from_json(old.read_text())
    assert status.runtime == {}
    restored = ControllerCore(core.job, FileStatusStore(old))
    assert restored.state == core.state
    assert restored.extras.incarnations == {p: "i1" for p in PODS}
    assert restored.engine.seq_no == core.engine.seq_no


# ---------------- end to end: a frozen agent (SIGSTOP) ----------------


def read_status(state: Path) -> dict[str, Any] | None:
    try:
        return json.loads((state / "status.json").read_text())
    except (OSError, ValueError):
        return None


def lost_counted(state: Path) -> dict[str, Any] | None:
    """The saved status once it counts a heartbeat loss, else None."""
    s = read_status(state)
    counters = ((s or {}).get("runtime") or {}).get("counters") or {}
    return s if counters.get("heartbeat_lost") else None


def phase_is(state: Path, phase: str, recover: int) -> bool:
    s = read_status(state)
    return s is not None and (s["phase"], s["recoverCount"]) == (phase, recover)


def agent_pid(launcher: int, pod: str) -> int | None:
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            env = Path("/proc", entry, "environ").read_bytes().split(b"\0")
            cmd = Path("/proc", entry, "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (
            b"agent" in cmd
            and f"AEGIS_POD={pod}".encode() in env
            and f"AEGIS_LAUNCHER_PID={launcher}".encode() in env
        ):
            return int(entry)
    return None


def lost_steps(state: Path) -> list[dict[str, Any]]:
    try:
        lines = (state / "steps.jsonl").read_text().splitlines()
    except OSError:
        return []
    recs = [json.loads(line) for line in lines if line.strip()]
    return [r for r in recs if r.get("action") == "envPodRestart" and "rejected" not in r]


def test_frozen_agent_is_lost_within_the_timeout_and_replaced(
    tmp_path: Path, aegis_run: Launch
) -> None:
    timeout = 2.0
    hold = tmp_path / "hold"
    run = aegis_run(2, "--heartbeat-timeout", str(timeout), env={"HOLD_FILE": str(hold)})
    state = run.state
    frozen: int | None = None
    try:
        wait_for(lambda: phase_is(state, "RunCommand", 0), 90, "the first RunCommand")
        frozen = wait_for(lambda: agent_pid(run.pid, "local-worker-1"), 10, "agent 1's pid")
        assert frozen is not None
        freeze(frozen)  # the launcher sees no exit: only heartbeats tell
        t0 = time.monotonic()
        (step,) = wait_for(lambda: lost_steps(state), timeout + 1.0, "envPodRestart", poll_s=0.02)
        assert time.monotonic() - t0 <= timeout + 1.0
        assert step["choices"] == [["w", {"mv": "local-worker-1"}]]
        # the step is logged as it is taken; the status is saved after the controller settles
        s = wait_for(lambda: lost_counted(state), 5, "the loss counted in the saved status")
        assert s["runtime"]["counters"]["heartbeat_lost"] == 1
        os.kill(frozen, signal.SIGCONT)  # it hears it was evicted, exits, is replaced
        frozen = None
        wait_for(lambda: phase_is(state, "RunCommand", 1), 90, "the second attempt")
        hold.touch()
        code = run.finish(90)
    finally:
        if frozen is not None:
            os.kill(frozen, signal.SIGCONT)
    assert code == 0, run.stderr[-3000:]
    assert "declared this incarnation lost" in run.stdout
    s = json.loads((state / "status.json").read_text())
    assert s["history"][-1] == {"phase": "Succeed", "retries": [1, 1], "recoverCount": 1}
    assert s["errorNodes"] == []
    pods = ["local-worker-0", "local-worker-1"]
    assert check_steplog(state / "steps.jsonl", runtime_constants(pods, 3)) > 0
