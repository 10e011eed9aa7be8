"""Spec behaviours replayed through the controller's own entry points (what NATS handlers call).

Each observation of a behaviour becomes the event the controller would see: agentJoin an
agent's ACK (`on_ack`), receive the delivery of a report (`on_report`, which applies the
agent's agentWork and then receive), envPodRestart a missed heartbeat (`on_heartbeat_lost`)
or, for an agent that never joined, the launcher's exit event (`on_pod_lost`), reschedule an
exit 1 (`on_pod_lost`), envQuit the operator's quit (`on_quit`), agentEvict the evicted
agent's report (`on_report`, no message in the spec). agentWork, agentHang, agentCheckpoint
and envDuplicate only put a message on the wire: the controller sees them when that message is
received.
Decisions are the controller's own (`settle` inside every entry point): after an
observation, its state is compared with the behaviour's state after the last consecutive
decision step, and must be equal. The engine takes decisions in a fixed order, DECISION_ORDER,
and the first successor (docs/design.md, "How the runtime executes the model"); the TLC
behaviours' other orders all commute with it, and the random walks follow it (a walk that
decided otherwise, e.g. restartOutsideRun before failedWrapUp after a quit in Pending, would end
in a state the controller never reaches).

What the controller cannot know is left out of the comparison, and nothing else: messages
in flight (the controller's msgs is always empty between events), the agent-side variables
(agentSeq, agentState) of an agent whose latest step the controller has not applied (its
report is in flight or was dropped as stale), and the faults such steps spent (compared
with that offset).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from aegis.generated.aegis_phase import CFG_CONSTANTS, VARIABLES, Constants, State, next_states
from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.protocol.state_codec import decode, decode_state, encode, encode_state
from aegis.runtime.controller.core import ControllerCore, JobConfig
from aegis.runtime.controller.store import FileStatusStore
from aegis.runtime.engine import DECISION_ORDER, StepResult, candidates, initial_state
from aegis.runtime.engine import report as spec_report
from aegis.values import ModelValue, Value, apply

ROOT = Path(__file__).resolve().parents[2]
BEHAVIOURS = ROOT / "tests" / "conformance" / "behaviours" / "AegisPhase.ndjson"
CONTROLLER_VARS = (
    "phase",
    "shouldQuit",
    "recoverCount",
    "innerPhase",
    "finished",
    "retries",
    "podRestarted",
    "masterSeq",
    "lastFinishSeq",
    "prevMasterSeq",
    "finishCount",
    "countedFailures",
    "slow",
    "evict",
    "checkpointed",
)
JOB, NS = "replay", "default"


@dataclass(frozen=True)
class Row:
    """One behaviour step: action, choices, and the state after it."""

    action: str
    choices: dict[str, Value]
    state: State


def rows_of(records: Sequence[dict[str, Any]]) -> list[list[Row]]:
    """Group NDJSON records (behaviour, step, action, process, choices, state) by behaviour."""
    out: dict[int, list[Row]] = {}
    for r in records:
        state = r["state"]
        if isinstance(state, str):  # the brief allows a JSON-encoded string
            state = json.loads(state)
        choices = {k: decode(v) for k, v in (r.get("choices") or {}).items()}
        out.setdefault(int(r["behaviour"]), []).append(
            Row(str(r["action"]), choices, decode_state(state))
        )
    return [out[k] for k in sorted(out)]


def quiescent(c: Constants, s: State) -> bool:
    return not any(candidates(c, s, label, {}) for label in DECISION_ORDER)


@dataclass
class Replay:
    """Drives one ControllerCore through one behaviour and compares after every observation."""

    c: Constants
    core: ControllerCore
    gen: dict[str, int] = field(default_factory=dict)
    pending: dict[Value, tuple[str, str]] = field(default_factory=dict)  # msg -> (inc, type)
    dirty: set[str] = field(default_factory=set)  # agents whose last step is not applied
    unapplied_faults: int = 0
    compared: int = 0
    decided: list[str] = field(default_factory=list)  # the controller's decisions this event

    def __post_init__(self) -> None:
        logged = self.core.engine.on_step

        def on_step(step: StepResult) -> None:
            if step.applied and step.action in DECISION_ORDER:
                self.decided.append(str(step.action))
            if logged is not None:
                logged(step)

        self.core.engine.on_step = on_step

    def inc(self, pod: str) -> str:
        return f"{pod}-{self.gen.get(pod, 0)}"

    def restarted(self, pod: str) -> None:
        self.gen[pod] = self.gen.get(pod, 0) + 1
        self.dirty.discard(pod)

    def message(self, pod: str, kind: str, inc: str, seq: int) -> Message:
        data = {"incarnation": inc}
        mtype = MessageType(kind)
        return Message(JOB, NS, pod, mtype, MessagePhase.COMMAND, data, 0.0, seq)

    def observe(self, before: State, row: Row) -> None:
        """Turn the behaviour's observation into the controller's event."""
        a, ch, core = row.action, row.choices, self.core
        if a == "agentJoin":
            pod = name(ch["w"])
            core.on_ack(self.message(pod, "ACK", self.inc(pod), 0))
        elif a == "agentWork":
            pod, outcome = name(ch["w"]), str(ch["outcome"])
            m = spec_report(ch["w"], outcome, before.masterSeq)
            self.pending[m] = (self.inc(pod), outcome)
            self.dirty.add(pod)
            self.unapplied_faults += outcome == "Error"
        elif a in ("agentHang", "agentCheckpoint"):
            pod, kind = name(ch["w"]), "Hang" if a == "agentHang" else "Checkpoint"
            m = spec_report(ch["w"], kind, before.masterSeq)
            self.pending[m] = (self.inc(pod), kind)
            self.unapplied_faults += kind == "Hang"
        elif a == "agentEvict":
            # no message in the spec: the agent's Evicted report is this step, applied at once
            pod = name(ch["w"])
            core.on_report(self.message(pod, "Evicted", self.inc(pod), int(before.masterSeq)))
        elif a == "envDuplicate":
            w = ch["w"]
            m = spec_report(w, "Finish", apply(before.lastFinishSeq, w))
            self.pending[m] = (self.inc(name(w)), "dup")
            self.unapplied_faults += 1  # a duplicate never spends the controller's budget
        elif a == "receive":
            m = ch["m"]
            inc, kind = self.pending.pop(m)
            pod, seq = name(apply(m, "from")), int(apply(m, "seq"))
            report = self.message(pod, "Finish" if kind == "dup" else kind, inc, seq)
            out = core.on_report(report)
            applied = out.reply is not None and out.reply.data.get("result") == "applied"
            if applied and kind not in ("Hang", "Checkpoint"):
                self.dirty.discard(pod)
            if applied:
                self.unapplied_faults -= kind in ("Error", "Hang")
        elif a == "envPodRestart":
            pod = name(ch["w"])
            if core.extras.incarnations.get(pod) is not None:
                core.on_heartbeat_lost(pod)
            else:  # never joined: only the launcher / Job Controller sees it go
                core.on_pod_lost(pod, self.inc(pod), 137, f"node-{pod}")
            self.restarted(pod)
        elif a == "reschedule":
            pod = name(ch["w"])
            if apply(core.state.agentState, ch["w"]) != "Exited":
                # its Error report is still in flight (the real agent waits for the receipt
                # before it exits 1): the controller sees a plain restart, envPodRestart,
                # which spends the fault unit the Error spent in the behaviour
                self.unapplied_faults -= 1
            core.on_pod_lost(pod, self.inc(pod), 1, f"node-{pod}")
            self.restarted(pod)
        elif a == "envQuit":
            core.on_quit()
        elif a != "jobDone":
            raise AssertionError(f"unknown observation {a}")

    def check(self, where: str, want: State) -> None:
        got = self.core.state
        diff = [v for v in CONTROLLER_VARS if getattr(got, v) != getattr(want, v)]
        if got.msgs:
            diff.append("msgs (the controller holds messages)")
        if got.faults != want.faults + self.unapplied_faults:
            diff.append(f"faults {got.faults} != {want.faults} + {self.unapplied_faults}")
        for w in sorted(self.c.Workers, key=repr):
            if name(w) in self.dirty:
                continue
            for v in ("agentSeq", "agentState"):
                if apply(getattr(got, v), w) != apply(getattr(want, v), w):
                    diff.append(f"{v}[{name(w)}]")
        if diff:
            detail = {v: (encode(getattr(got, v)), encode(getattr(want, v))) for v in VARIABLES}
            raise AssertionError(f"{where}: differs in {diff}\n(got, want): {detail}")
        self.compared += 1

    def run(self, behaviour: Sequence[Row], label: str) -> None:
        """Replay, comparing after every observation that the behaviour settled."""
        prev = initial_state(self.c)
        self.check(f"{label} init", prev)
        i = 0
        while i < len(behaviour):
            row = behaviour[i]
            if row.action in DECISION_ORDER:
                raise AssertionError(f"{label} step {i}: decision {row.action} after a settle")
            end = i
            while end + 1 < len(behaviour) and behaviour[end + 1].action in DECISION_ORDER:
                end += 1
            self.decided = []
            self.observe(prev, row)
            target = behaviour[end].state
            self.pending = {m: v for m, v in self.pending.items() if m in target.msgs}
            if quiescent(self.c, target):  # not a behaviour cut in the middle of decisions
                theirs = [r.action for r in behaviour[i + 1 : end + 1]]
                where = f"{label} step {i} ({row.action} {row.choices}; decided {theirs})"
                self.check(f"{where}, the controller {self.decided}", target)
            prev, i = target, end + 1


def name(w: Value) -> str:
    assert isinstance(w, ModelValue)
    return w.name


def replay_all(behaviours: Sequence[Sequence[Row]], tmp: Path) -> int:
    """The number of states compared (an AssertionError at the first that differs)."""
    c = CFG_CONSTANTS
    assert c is not None
    pods = tuple(sorted(w.name for w in c.Workers))
    job = JobConfig(JOB, NS, pods, c.MaxRetry)
    compared = 0
    for i, behaviour in enumerate(behaviours):
        store = FileStatusStore(tmp / f"status-{i}.json")
        replay = Replay(c, ControllerCore(job, store, constants=c))
        replay.run(behaviour, f"behaviour {i}")
        restored = ControllerCore(job, FileStatusStore(store.path), constants=c)
        assert restored.state == replay.core.state, f"behaviour {i}: store round trip"
        assert replay.compared > 1, f"behaviour {i}: compared only its initial state"
        compared += replay.compared
    return compared


def random_walks(seeds: range, length: int) -> Iterator[list[dict[str, Any]]]:
    """Random behaviours in the NDJSON record shape (generated next_states, cfg constants).

    Observations are random; decisions follow the controller's fixed order (DECISION_ORDER): while
    one is enabled, the walk takes a successor of the first enabled label in DECISION_ORDER
    (any of its successors), as a controller settles before it sees the next event."""
    c = CFG_CONSTANTS
    assert c is not None
    for b in seeds:
        rng, s, recs = random.Random(b), initial_state(c), []
        for k in range(length):
            succ = list(next_states(c, s))
            decisions = [x for x in succ if x[0] in DECISION_ORDER]
            if decisions:
                first = min(DECISION_ORDER.index(x[0]) for x in decisions)
                succ = [x for x in decisions if DECISION_ORDER.index(x[0]) == first]
            if not succ:
                break
            label, pid, nxt = rng.choice(succ)
            recs.append(
                {
                    "behaviour": b,
                    "step": k,
                    "action": label,
                    "process": encode(pid) if pid is not None else None,
                    "choices": {n: encode(v) for n, v in nxt.choices},
                    "state": json.dumps(encode_state(nxt.state)),
                }
            )
            s = nxt.state
        yield recs


def test_replay_random_walks_through_the_controller(tmp_path: Path) -> None:
    records = [r for walk in random_walks(range(40), 80) for r in walk]
    assert replay_all(rows_of(records), tmp_path) > 40 * 10


def test_replay_tlc_behaviours_through_the_controller(tmp_path: Path) -> None:
    if not BEHAVIOURS.exists():
        pytest.skip(f"{BEHAVIOURS.relative_to(ROOT)} does not exist yet (conformance suite)")
    with BEHAVIOURS.open(encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    behaviours = rows_of(records)
    assert len(behaviours) > 50 and replay_all(behaviours, tmp_path) > len(behaviours) * 5
