"""A controller killed anywhere resumes with its counts intact (issue 12).

A seeded script of events (joins, reports, errors, pods lost, heartbeats missed, taints) is run
once on a reference core (memory only): `views[i]` is what must be durable after event i.
Then the same script runs on a core persisting to a state dir (status snapshot + WAL), which
dies at a chosen I/O point (in-process: before/inside/after a WAL append, a snapshot, a WAL
reset) or is SIGKILLed at a random moment (a real process). The core resumed from the dir must
be at views[a] or views[a+1], a being the events acknowledged (returned) before the death, and
a torn append must lose exactly its own event; the rest of the script then runs to the same
end as the reference, and the step log still validates.
"""

from __future__ import annotations

import functools
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.runtime.controller.core import ControllerCore, JobConfig
from aegis.runtime.controller.store import FileStatusStore, Status
from aegis.runtime.controller.wal import WriteAheadLog, encode_line
from aegis.runtime.steplog import StepLog
from aegis.runtime.trace_check import check_steplog

from ..support import MemoryStore

PODS = tuple(f"job-worker-{i}" for i in range(4))
JOB = JobConfig("job", "default", PODS, 8, heartbeat_timeout=0)
DURABLE_COUNTERS = ("node_faults", "heartbeat_lost", "inferred_restart", "evicted_slow")
Event = list[Any]


def _message(pod: str, kind: MessageType, seq: int, inc: str) -> Message:
    data = {"incarnation": inc, "node": "node-1"}
    return Message("job", "default", pod, kind, MessagePhase.COMMAND, data, time.time(), seq)


def apply_event(core: ControllerCore, ev: Event) -> None:
    """Hand one scripted event to the core (as the service or the launcher would)."""
    kind = ev[0]
    if kind == "ack":
        core.on_ack(_message(ev[1], MessageType.ACK, 0, ev[2]))
    elif kind == "report":
        core.on_report(_message(ev[1], MessageType(ev[2]), ev[3], ev[4]))
    elif kind == "lost":
        core.on_pod_lost(ev[1], ev[2], ev[3], "node-1")
    elif kind == "hb_lost":
        core.on_heartbeat_lost(ev[1])
    else:
        core.taint(ev[1], "bad disk")


def view(core: ControllerCore) -> dict[str, Any]:
    """What must survive a crash: the spec state, the step number, the bookkeeping."""
    ex = core.extras
    return {
        "state": core.state,
        "stepNo": core.engine.seq_no,
        "incarnations": dict(ex.incarnations),
        "evicted": dict(ex.evicted),
        "commandOrders": ex.command_orders,
        "reasons": dict(ex.reasons),
        "counters": {k: ex.counters[k] for k in DURABLE_COUNTERS},
        "errorNodes": [e.node for e in core.status.error_nodes],
    }


def script(seed: int, length: int) -> tuple[list[Event], list[dict[str, Any]]]:
    """`length` events drawn with `seed` against a reference core, and the view after each
    (views[0]: before any)."""
    rng = random.Random(seed)
    core = ControllerCore(JOB, MemoryStore())
    events: list[Event] = []
    views = [view(core)]
    fresh = 0
    while len(events) < length and core.terminal is None:
        pod = rng.choice(PODS)
        inc = core.extras.incarnations.get(pod)
        roll = rng.random()
        if inc is None:
            fresh += 1
            ev: Event = ["ack", pod, f"i{fresh}"]
        elif roll < 0.05:
            ev = ["lost", pod, inc, rng.choice([0, 1])]
        elif roll < 0.08:
            ev = ["hb_lost", pod]
        elif roll < 0.10:
            ev = ["taint", f"node-{rng.randrange(3)}"]
        else:
            kind = "Error" if roll < 0.16 else "Finish"
            ev = ["report", pod, kind, int(core.state.masterSeq), inc]
        apply_event(core, ev)
        events.append(ev)
        views.append(view(core))
    return events, views


def open_core(state: Path, *, wal: WriteAheadLog | None = None) -> ControllerCore:
    """A core persisting to `state` (status.json + wal.jsonl), logging steps.jsonl."""
    return ControllerCore(
        JOB,
        FileStatusStore(state / "status.json"),
        StepLog(state / "steps.jsonl"),
        wal=wal or WriteAheadLog(state / "wal.jsonl"),
    )


def close(core: ControllerCore) -> None:
    assert core.steplog is not None and core.journal.wal is not None
    core.steplog.close()
    core.journal.wal.close()


def resumed_at(state: Path, views: list[dict[str, Any]], acked: int) -> tuple[int, ControllerCore]:
    """Resume from `state`: the core and the number of events it holds (acked or acked + 1)."""
    core = open_core(state)
    got = view(core)
    for n in (acked, acked + 1):
        if n < len(views) and got == views[n]:
            return n, core
    for name in views[acked]:  # say which part went wrong
        assert got[name] == views[acked][name], (name, acked)
    raise AssertionError(f"resumed state is neither after event {acked} nor {acked + 1}")


# ---------------- in-process deaths at each I/O point ----------------


class Crash(BaseException):
    """The process dies here (nothing after this runs; memory is lost)."""


class Countdown:
    """Raises Crash at the `at`-th I/O point (counted from 1); `torn` is how much of an
    append reaches the disk when the death falls inside it."""

    def __init__(self, at: int, torn: float) -> None:
        self.at, self.torn, self.seen, self.where = at, torn, 0, ""

    def point(self, where: str) -> bool:
        self.seen += 1
        if self.seen == self.at:
            self.where = where
            return True
        return False


class DyingWal(WriteAheadLog):
    """A WAL whose append or reset dies at the countdown's point."""

    countdown: Countdown

    def append(self, number: int, body: Any) -> None:
        if self.countdown.point("before append"):
            raise Crash
        if self.countdown.point("inside append"):
            line = encode_line(number, body)
            with open(self.path, "ab") as f:  # part of the line, never fsynced
                f.write(line[: int(len(line) * self.countdown.torn)])
            raise Crash
        super().append(number, body)
        if self.countdown.point("after append"):
            raise Crash

    def reset(self) -> None:
        if self.countdown.point("before reset"):
            raise Crash
        super().reset()


class DyingStore(FileStatusStore):
    """A status store whose save dies before or after the atomic replace."""

    countdown: Countdown

    def save(self, status: Status) -> None:
        if self.countdown.point("before snapshot"):
            raise Crash
        super().save(status)
        if self.countdown.point("after snapshot"):
            raise Crash


SEEDS = (7, 10, 14)  # scripts with retries, node faults, lost pods, taints (checked below)


@functools.cache
def cached_script(seed: int) -> tuple[list[Event], list[dict[str, Any]]]:
    return script(seed, 120)


@given(
    seed=st.sampled_from(SEEDS),
    at=st.integers(min_value=1, max_value=400),
    torn=st.floats(min_value=0.0, max_value=0.99),
)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_a_death_at_any_io_point_resumes_with_counts_intact(
    tmp_path_factory: pytest.TempPathFactory, seed: int, at: int, torn: float
) -> None:
    events, views = cached_script(seed)
    state = tmp_path_factory.mktemp("state")
    countdown = Countdown(at, torn)
    wal = DyingWal(state / "wal.jsonl")
    store = DyingStore(state / "status.json")
    wal.countdown = store.countdown = countdown
    acked = 0
    try:
        core = ControllerCore(JOB, store, StepLog(state / "steps.jsonl"), wal=wal)
        for ev in events:
            apply_event(core, ev)
            acked += 1
    except Crash:
        pass
    wal.close()
    n, core = resumed_at(state, views, acked)
    if countdown.where in ("before append", "inside append"):
        assert n == acked, f"died {countdown.where}: the event was not durable"
    for ev in events[n:]:
        apply_event(core, ev)
    assert view(core) == views[-1]
    close(core)
    assert check_steplog(state / "steps.jsonl", core.constants) > 0


# ---------------- a real controller process SIGKILLed ----------------

CHILD = """
import json, sys
from pathlib import Path
from tests.runtime.test_wal_crash import apply_event, open_core
state, start = Path(sys.argv[1]), int(sys.argv[2])
events = json.loads((state.parent / "events.json").read_text())
core = open_core(state)
print("ready", flush=True)
for ev in events[start:]:
    apply_event(core, ev)
    print("acked", flush=True)
print("done", flush=True)
"""


def _run_child(state: Path, start: int, kill_after: int | None) -> int:
    """Run the script from event `start` in a child; SIGKILL it after `kill_after` acks
    (None: let it finish). The number of events it acknowledged."""
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(state), str(start)],
        stdout=subprocess.PIPE,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n"
    acked = 0
    while kill_after is None or acked < kill_after:
        line = proc.stdout.readline()
        if line != b"acked\n":
            break
        acked += 1
    if kill_after is not None:
        os.kill(proc.pid, signal.SIGKILL)
    rest = proc.stdout.read()  # the acks it printed before it died
    proc.wait(timeout=30)
    return acked + rest.count(b"acked\n")


@pytest.mark.parametrize("seed", [pytest.param(4, marks=pytest.mark.slow), 19])
def test_a_sigkilled_controller_resumes_with_counts_intact(tmp_path: Path, seed: int) -> None:
    events, views = script(seed, 150)
    (tmp_path / "events.json").write_text(json.dumps(events))
    state = tmp_path / "state"
    state.mkdir()
    rng = random.Random(seed)
    done, kills = 0, 0
    while done < len(events) - 10:
        acked = _run_child(state, done, rng.randrange(1, 25))
        kills += 1
        n, core = resumed_at(state, views, done + acked)
        close(core)
        done = n
    assert _run_child(state, done, None) == len(events) - done
    n, core = resumed_at(state, views, len(events))
    assert n == len(events) and kills >= 3
    s = json.loads((state / "status.json").read_text())
    assert (s["phase"], s["recoverCount"]) == (str(core.state.phase), core.state.recoverCount)
    close(core)
    assert check_steplog(state / "steps.jsonl", core.constants) > 0


def test_the_scripts_exercise_what_must_survive() -> None:
    """Retries, node faults, lost pods, taints, failure reasons, several terminal phases:
    otherwise the tests above would prove little."""
    lasts = [cached_script(seed)[1][-1] for seed in SEEDS]
    assert {str(v["state"].phase) for v in lasts} >= {"Succeed", "Troubleshooting"}
    assert all(v["state"].recoverCount > 0 for v in lasts)
    for name in ("node_faults", "heartbeat_lost"):
        assert any(v["counters"][name] > 0 for v in lasts), name
    assert all(v["errorNodes"] and v["reasons"] and v["evicted"] for v in lasts)
