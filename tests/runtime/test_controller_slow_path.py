"""ControllerCore on the slow-node path, event by event (no network): Hang marks, hangWithQuit
decides, a Checkpoint is the safe point, Evicted restarts the pod, its exit blacklists the node.
Stale, early and forged reports are dropped without a state change; the fault log gets one
record per fault."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from aegis.checks.faultlog import FaultRecord
from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.protocol.faults import FaultKind, RecoveryLevel
from aegis.runtime.controller.core import ControllerCore, JobConfig
from aegis.runtime.controller.store import FileStatusStore
from aegis.values import ModelValue, apply

from ..support import MemoryStore

PODS = ("job-worker-0", "job-worker-1")
W0, W1 = (ModelValue(p) for p in PODS)


def report(pod: str, kind: MessageType, seq: int, inc: str = "i1", **data: object) -> Message:
    payload = {"incarnation": inc, "node": f"node-{pod[-1]}", "podIP": "10.0.0.1", **data}
    return Message("job", "default", pod, kind, MessagePhase.COMMAND, payload, time.time(), seq)


def running_job(tmp: Path, faults: list[FaultRecord], max_retry: int = 2) -> ControllerCore:
    """Both agents joined and bootchecked: the job is in RunCommand."""
    store = FileStatusStore(tmp / "status.json")
    core = ControllerCore(
        JobConfig("job", "default", PODS, max_retry), store, on_fault=faults.append
    )
    for p in PODS:
        core.on_ack(report(p, MessageType.ACK, 0))
    boot = int(core.state.masterSeq)
    for p in PODS:
        assert core.on_report(report(p, MessageType.FINISH, boot)).reply is not None
    assert core.state.phase == "RunCommand"
    return core


def result(core: ControllerCore, m: Message) -> str:
    reply = core.on_report(m).reply
    assert reply is not None
    return str(reply.data["result"])


def test_mark_decide_checkpoint_evict_blacklist(tmp_path: Path) -> None:
    faults: list[FaultRecord] = []
    core = running_job(tmp_path, faults)
    seq = int(core.state.masterSeq)
    # a checkpoint before any eviction is decided is not a safe point for anything
    assert result(core, report(PODS[0], MessageType.CHECKPOINT, seq)) == "not enabled"
    assert not core.state.checkpointed

    assert result(core, report(PODS[1], MessageType.HANG, seq, reason="no progress")) == "applied"
    s = core.state
    assert apply(s.slow, W1) and apply(s.evict, W1)  # marked, and hangWithQuit decided
    assert s.phase == "RunCommand" and s.masterSeq == seq  # nothing restarted
    assert core.orders.needs_publish  # the decision goes out within the same order
    core.orders.mark_published()
    assert not core.orders.needs_publish
    # marked already: a second Hang is not enabled (agentHang needs ~slow)
    assert result(core, report(PODS[1], MessageType.HANG, seq)) == "not enabled"
    # the marked pod may not leave before a checkpoint
    assert result(core, report(PODS[1], MessageType.EVICTED, seq)) == "not enabled"
    assert core.state.phase == "RunCommand"

    assert result(core, report(PODS[0], MessageType.CHECKPOINT, seq, step=7)) == "applied"
    assert core.state.checkpointed and core.orders.needs_publish
    assert result(core, report(PODS[1], MessageType.EVICTED, seq, reason="slow")) == "applied"
    s = core.state
    assert s.phase == "Restarting" and s.recoverCount == 1
    assert not apply(s.evict, W1) and apply(s.innerPhase, W1) == "Restarting"
    # a peer's error caused by the evicted rank leaving is not a new failure
    assert result(core, report(PODS[0], MessageType.ERROR, seq)) == "not enabled"
    assert core.state.recoverCount == 1

    core.on_pod_lost(PODS[1], "i1", 1, "node-1")
    (entry,) = core.status.error_nodes
    assert entry.node == "node-1" and "slow node evicted" in entry.reason
    assert [(f.kind, f.level) for f in faults] == [
        (FaultKind.HANG, None),
        (FaultKind.HANG_QUIT, None),
        (FaultKind.EVICTED, RecoveryLevel.EVICT),
        (FaultKind.EVICTED_EXIT, None),  # its exit 1: the eviction's, not a node fault
    ]
    assert core.extras.counters["node_faults"] == 0 and faults[-1].exit_code == 1
    assert faults[0].pod == PODS[1] and faults[0].pod_ip == "10.0.0.1"
    view = core.status_view()
    assert view["phase"] == "Restarting" and view["errorNodes"][0]["node"] == "node-1"


def test_no_eviction_when_the_job_cannot_afford_it(tmp_path: Path) -> None:
    faults: list[FaultRecord] = []
    core = running_job(tmp_path, faults, max_retry=0)
    seq = int(core.state.masterSeq)
    assert result(core, report(PODS[1], MessageType.HANG, seq)) == "applied"
    assert apply(core.state.slow, W1) and not apply(core.state.evict, W1)  # slow beats failed
    assert [f.kind for f in faults] == [FaultKind.HANG]


def test_stale_and_forged_slow_path_reports_change_nothing(tmp_path: Path) -> None:
    core = running_job(tmp_path, [])
    seq = int(core.state.masterSeq)
    before = core.state
    assert result(core, report(PODS[1], MessageType.HANG, seq - 1)) == "stale"
    assert result(core, report(PODS[1], MessageType.HANG, seq, inc="someone-else")) == "forged"
    assert core.on_report(report("job-worker-9", MessageType.HANG, seq)).reply is not None
    assert core.state == before
    assert core.extras.counters["stale"] == 1


def test_taint_and_untaint_are_persisted_once(tmp_path: Path) -> None:
    core = running_job(tmp_path, [])
    assert core.taint("node-7", "operator") and not core.taint("node-7", "again")
    reloaded = ControllerCore(core.job, FileStatusStore(tmp_path / "status.json"))
    assert [e.node for e in reloaded.status.error_nodes] == [
        "node-7"
    ] and not reloaded.journal.fresh
    assert core.untaint("node-7") and not core.untaint("node-7")
    assert (
        ControllerCore(core.job, FileStatusStore(tmp_path / "status.json")).status.error_nodes == ()
    )


KINDS = st.sampled_from(
    [MessageType.HANG, MessageType.CHECKPOINT, MessageType.EVICTED, MessageType.FINISH]
)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(PODS), KINDS, st.integers(-3, 3), st.sampled_from(["i1", "x"])),
        max_size=12,
    )
)
def test_any_sequence_of_reports_keeps_the_spec_invariants(
    events: list[tuple[str, MessageType, int, str]],
) -> None:
    """Whatever arrives, in whatever order, the controller answers and the engine's invariant
    check (which stops the job on a violation) never fires."""
    with tempfile.TemporaryDirectory() as d:
        core = running_job(Path(d), [])
        for pod, kind, offset, inc in events:
            m = report(pod, kind, max(int(core.state.masterSeq) + offset, 0), inc=inc)
            assert core.on_report(m).reply is not None
        evicted = [w for w in (W0, W1) if apply(core.state.evict, w)]
        assert all(apply(core.state.slow, w) for w in evicted)


def test_the_status_view_of_a_large_job_fits_one_nats_message(tmp_path: Path) -> None:
    """At 12,500 pods the full view was 2.4 MB, past NATS's 1 MiB: `aegis ctl status` failed.
    Past STATUS_POD_LIMIT pods it lists those with something to see, and counts the rest."""
    from aegis.cli.ctl_config import CtlConfig
    from aegis.cli.ctl_status import render_status
    from aegis.protocol.envelope import MAX_MESSAGE_BYTES
    from aegis.runtime.controller.view import STATUS_POD_LIMIT

    n = STATUS_POD_LIMIT + 200
    pods = tuple(f"big-worker-{i}" for i in range(n))
    core = ControllerCore(JobConfig("big", "default", pods, 2), MemoryStore())
    core.autocommit = False  # memory is all the view reads: no O(pods) save per event
    for p in pods:
        core.on_ack(report(p, MessageType.ACK, 0).__class__(
            "big", "default", p, MessageType.ACK, MessagePhase.COMMAND,
            {"incarnation": "i1", "node": f"node-{p}"}, time.time(), 0,
        ))  # fmt: skip
    assert str(core.state.phase) == "BootChecking"
    seq = int(core.state.masterSeq)
    for p in pods[:-1]:
        core.on_report(
            Message("big", "default", p, MessageType.FINISH, MessagePhase.COMMAND,
                    {"incarnation": "i1", "node": f"node-{p}"}, time.time(), seq)
        )  # fmt: skip
    view = core.status_view()
    encoded = Message(
        "big", "default", "ctl", MessageType.ACK, MessagePhase.COMMAND, view, 0.0, 0
    ).encode()
    assert len(encoded) < MAX_MESSAGE_BYTES // 50  # counts, no pod by name
    summary = view["podSummary"]
    assert summary["total"] == n and sum(summary["byPhase"].values()) == n
    assert summary["byPhase"] == {"BootChecking": n}
    assert view["pods"] == {}  # every pod as the job is: nobody listed by name
    text = render_status(CtlConfig("nats://x", "j", "s", "default", "big", None), view)
    assert f"0 of {n} pods listed" in text
