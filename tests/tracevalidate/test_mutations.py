"""Three controller bugs the generated tables cannot see by themselves, each injected into the
runtime of a real event sequence: `validate-log` (TLC) rejects the log at the step where
the bug acted, and names the variable it corrupted.

The runtime executes the tables, so every successor it applies is one the tables computed;
these bugs are in what the runtime does around them (which successor it keeps, what it
restores, what it publishes), which is exactly what only an independent check of the log
can catch.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aegis.generated.aegis_phase import Successor
from aegis.runtime.controller import journal
from aegis.runtime.controller.orders import OrderBook
from aegis.runtime.engine import Engine
from aegis.runtime.steplog import read_steplog
from aegis.testing.scripted_job import Job, crash_once, pods
from aegis.tracevalidate import render_mismatch, validate_log
from aegis.values import Fn, ModelValue, Value

from ..support import Launch


def test_a_decision_applied_out_of_decision_order_is_rejected_at_that_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bug: the engine folds alignRetries (later in DECISION_ORDER) into the advance that
    re-issues the command, so the advance step also aligns the retries."""
    acted: dict[str, int] = {}
    apply = Engine._apply

    def folded(self: Engine, label: str, pid: Value, succ: Successor) -> Any:
        s = succ.state
        if label == "advance" and s.phase == "RunCommand":
            aligned = Fn((w, s.recoverCount) for w in s.retries)
            if aligned != s.retries:
                acted.setdefault("seq_no", self.seq_no + 1)
                succ = Successor(dataclasses.replace(s, retries=aligned), succ.choices)
        return apply(self, label, pid, succ)

    monkeypatch.setattr(Engine, "_apply", folded)
    job = crash_once(tmp_path)
    assert acted, "the bug never acted"
    v = validate_log(job.steplog)
    assert not v.matched and v.first_mismatch is not None
    m = v.first_mismatch
    assert (m.seq_no, m.action) == (acted["seq_no"], "advance"), render_mismatch(m)
    assert set(m.diff) == {"retries"}
    assert m.diff["retries"] == {"logged": {"tv-worker-0": 1}, "spec": {"tv-worker-0": 0}}


def test_a_retry_persisted_twice_across_a_resume_is_rejected_at_the_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bug: the resumed controller counts the victim's last failure again when it loads."""
    job = Job(tmp_path, pods(2))
    job.all_join()
    job.all_finish()
    victim = job.pods[1]
    job.crash(victim)
    restore = journal.restore

    def twice(*args: Any) -> Any:
        r = restore(*args)
        assert r is not None
        s, w = r.state, ModelValue(victim)
        return dataclasses.replace(
            r, state=dataclasses.replace(s, retries=Fn({**s.retries, w: s.retries[w] + 1}))
        )

    monkeypatch.setattr(journal, "restore", twice)
    job.restart_controller()
    resume_line = max(r["_line"] for r in read_steplog(job.steplog))
    job.join(victim)
    job.all_finish()
    job.all_finish()
    assert job.core.state.phase == "Succeed"  # the job itself goes on: nobody else notices
    job.close()
    v = validate_log(job.steplog)
    assert not v.matched and v.first_mismatch is not None
    m = v.first_mismatch
    assert (m.line, m.action) == (resume_line, "(resume)"), render_mismatch(m)
    assert m.diff == {"retries": {"logged": {victim: 2}, "spec": {victim: 1}}}


def test_an_order_published_for_a_state_never_reached_is_rejected_at_the_next_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bug: when it publishes the command order, the controller bumps the sequence number
    itself (a fresh rendezvous per attempt) instead of through a spec step; the agents then
    work on an order of a state the spec never reached."""
    acted: dict[str, int] = {}
    order_for = OrderBook.order_for

    def bumped(self: OrderBook, pod: str = "master") -> Any:
        s = self.engine.state
        if pod == "master" and s.phase == "RunCommand" and not acted:
            acted["lines"] = len(list(read_steplog(job.steplog)))
            self.engine.state = dataclasses.replace(
                s, masterSeq=s.masterSeq + 1, prevMasterSeq=s.masterSeq
            )
        return order_for(self, pod)

    monkeypatch.setattr(OrderBook, "order_for", bumped)
    job = Job(tmp_path, pods(2))
    job.all_join()
    job.all_finish()
    job.all_finish()
    assert job.core.state.phase == "Succeed"
    job.close()
    assert acted, "the bug never acted"
    first_after = next(
        r for r in read_steplog(job.steplog) if r["_line"] > acted["lines"] and "changed" in r
    )
    v = validate_log(job.steplog)
    assert not v.matched and v.first_mismatch is not None
    m = v.first_mismatch
    assert (m.line, m.action) == (first_after["_line"], "agentWork"), render_mismatch(m)
    assert m.diff["agentSeq"] == {"logged": {"tv-worker-0": 3}, "spec": {"tv-worker-0": 2}}
    # the command line says the same, with exit status 1
    r = subprocess.run(
        [sys.executable, "-m", "aegis.cli", "spec", "validate-log", "--json", str(job.steplog)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 1, r.stderr
    out = json.loads(r.stdout)
    assert out["matched"] is False and out["first_mismatch"]["line"] == first_after["_line"]
    assert {"steps", "pods", "matched", "first_mismatch", "seconds"} <= set(out)


# The same bug as the first test, in the controller process of a real `aegis run` (real
# agents, NATS, gloo DDP): sitecustomize patches the engine in the process whose command
# line says `controller`, and marks the step it corrupted.
FOLD_ALIGN_INTO_ADVANCE = """
import os
if b"controller" in open("/proc/self/cmdline", "rb").read().split(b"\\0"):
    import dataclasses
    from aegis.generated.aegis_phase import Successor
    from aegis.runtime.engine import Engine
    from aegis.values import Fn
    _apply = Engine._apply
    def _folded(self, label, pid, succ):
        s = succ.state
        if label == "advance" and s.phase == "RunCommand":
            aligned = Fn((w, s.recoverCount) for w in s.retries)
            if aligned != s.retries:
                succ = Successor(dataclasses.replace(s, retries=aligned), succ.choices)
                with open(os.environ["AEGIS_BUG_MARK"], "a") as f:
                    f.write(f"{self.seq_no + 1}\\n")
        return _apply(self, label, pid, succ)
    Engine._apply = _folded
"""


def test_a_real_job_whose_controller_folds_a_decision_is_rejected_at_that_step(
    tmp_path: Path, aegis_run: Launch
) -> None:
    bug = tmp_path / "bug"
    bug.mkdir()
    (bug / "sitecustomize.py").write_text(FOLD_ALIGN_INTO_ADVANCE)
    mark = tmp_path / "bug-acted"
    env = {
        "CRASH_ONCE_RANK": "1",
        "CRASH_DIR": str(tmp_path / "crash"),
        "PYTHONPATH": os.pathsep.join([str(bug), os.environ.get("PYTHONPATH", "")]),
        "AEGIS_BUG_MARK": str(mark),
    }
    r = aegis_run(2, env=env)
    assert r.finish(150) == 0, r.stderr[-3000:]  # the job itself succeeds: nobody notices
    acted = [int(x) for x in mark.read_text().split()]
    assert acted, "the bug never acted"
    v = validate_log(r.state / "steps.jsonl")
    assert not v.matched and v.first_mismatch is not None
    m = v.first_mismatch
    assert (m.seq_no, m.action) == (acted[0], "advance"), render_mismatch(m)
    assert set(m.diff) == {"retries"}
