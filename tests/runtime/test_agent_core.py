"""AgentCore without a network: real ControllerCore orders in, the reports the spec allows out.

Every order an AgentCore sees here was made by a real ControllerCore, and every report it
returns is fed back into that controller, so the two sides of the protocol are tested
together, event by event, in milliseconds.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aegis.checks.result import CheckType, failed, not_applicable, passed
from aegis.generated.aegis_phase import agent_view
from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.protocol.exitcodes import AgentExit
from aegis.protocol.payloads import Receipt, ReceiptResult, Report, Sender
from aegis.runtime.agent.core import (
    MAX_CONTAINER_RESTARTS,
    RESTART,
    AgentCore,
    Evict,
    Ignore,
    Leave,
    Work,
    round_outcome,
)
from aegis.runtime.controller.core import ControllerCore, JobConfig
from aegis.runtime.controller.store import FileStatusStore
from aegis.values import Fn, ModelValue

PODS = ("job-worker-0", "job-worker-1")


class Job:
    """A ControllerCore and one AgentCore per pod, wired by direct calls."""

    def __init__(self, tmp: Path, max_retry: int = 2) -> None:
        store = FileStatusStore(tmp / "status.json")
        self.controller = ControllerCore(JobConfig("job", "default", PODS, max_retry), store)
        self.agents = {
            p: AgentCore("job", "default", p, Sender(f"inc-{p}", f"node-{p}")) for p in PODS
        }

    def join(self) -> dict[str, object]:
        """Every agent ACKs; each takes the order the controller replies with."""
        out: dict[str, object] = {}
        for pod, agent in self.agents.items():
            reply = self.controller.on_ack(agent.ack()).reply
            assert reply is not None
            out[pod] = agent.on_order(reply, working=False)
        return out

    def broadcast(self, working: bool = False) -> dict[str, object]:
        """What the service publishes: the per-pod orders, then the broadcast; each agent's
        decision on the last of them that it takes."""
        out: dict[str, object] = {}
        for msg in self.publish():
            for p, a in self.agents.items():
                if msg.pod_name in ("master", p):
                    out[p] = a.on_order(msg, working=working or isinstance(out.get(p), Work))
        return out

    def run_command(self) -> dict[str, object]:
        """Every agent joins and passes the bootcheck; each one's decision on the RunCommand
        order."""
        self.join()
        for pod, d in self.broadcast().items():
            self.finish(pod, d)
        return self.broadcast()

    def publish(self) -> list[Message]:
        """The orders the service publishes now, in order (as ControllerService._publish)."""
        msgs = [*self.controller.orders.pod_orders(), self.controller.orders.order_for()]
        self.controller.orders.mark_published()
        return msgs

    def finish(self, pod: str, decision: object, outcome: str = "Finish") -> str:
        """The agent ends the work `decision` with `outcome`; the controller's receipt."""
        assert isinstance(decision, Work), decision
        agent = self.agents[pod]
        msg = agent.finish_work(
            decision.seq, decision.order.spec_phase, outcome, Report(agent.sender)
        )
        assert msg is not None
        reply = self.controller.on_report(msg).reply
        assert reply is not None
        return Receipt.from_data(reply.data).result


def test_a_healthy_job_runs_from_join_to_the_final_order(tmp_path: Path) -> None:
    job = Job(tmp_path)
    joined = job.join()
    # the second ACK completes the set: the first agent's reply predates the bootcheck order
    boot = job.broadcast()
    for pod in PODS:
        work = boot[pod]
        assert isinstance(work, Work) and work.order.spec_phase == "BootChecking", joined
        assert job.finish(pod, work) is ReceiptResult.APPLIED
    run = job.broadcast()
    assert all(isinstance(d, Work) and d.order.spec_phase == "RunCommand" for d in run.values())
    for pod in PODS:
        assert job.finish(pod, run[pod]) is ReceiptResult.APPLIED
    assert job.controller.terminal == "Succeed"
    final = job.broadcast()
    assert final == {p: Leave(AgentExit.LEFT, "the job ended: Succeed") for p in PODS}


def test_an_order_is_worked_on_once_and_older_orders_are_ignored(tmp_path: Path) -> None:
    job = Job(tmp_path)
    job.join()
    order = job.controller.orders.order_for()
    agent = job.agents[PODS[0]]
    first = agent.on_order(order, working=False)
    assert isinstance(first, Work)
    # the same order again while working on it: no second piece of work
    assert isinstance(agent.on_order(order, working=True), Ignore)
    job.finish(PODS[0], first)
    # after the report, that order (and any older one) is ignored even when not working
    assert isinstance(agent.on_order(order, working=False), Ignore)


def test_a_crash_in_run_command_leads_to_a_troubleshoot_order(tmp_path: Path) -> None:
    job = Job(tmp_path)
    run = job.run_command()
    assert job.finish(PODS[1], run[PODS[1]], "Error") is ReceiptResult.APPLIED
    trouble = job.broadcast()
    assert all(isinstance(d, Work) for d in trouble.values())
    assert {d.order.spec_phase for d in trouble.values() if isinstance(d, Work)} == {
        "Troubleshooting"
    }
    # the worker still running the old command order stops it: the new order is newer
    assert job.controller.state.recoverCount == 1


def test_an_error_outside_run_command_makes_the_agent_exit(tmp_path: Path) -> None:
    job = Job(tmp_path)
    job.join()
    boot = job.broadcast()
    agent = job.agents[PODS[0]]
    assert not agent.exited
    job.finish(PODS[0], boot[PODS[0]], "Error")
    assert agent.exited  # Level 3: exit NODE_FAULT, the node is blacklisted


def test_evictions_and_receipts(tmp_path: Path) -> None:
    job = Job(tmp_path)
    job.join()
    agent = job.agents[PODS[0]]
    mine = job.controller.orders.eviction(PODS[0], agent.sender.incarnation)
    other = job.controller.orders.eviction(PODS[0], "an-older-incarnation")
    assert isinstance(agent.on_order(other, working=True), Ignore)
    assert agent.on_order(mine, working=True).code == AgentExit.EVICTED  # type: ignore[union-attr]
    evicted = _receipt(agent, ReceiptResult.EVICTED)
    assert isinstance(agent.on_receipt(evicted), Leave)
    assert agent.on_receipt(_receipt(agent, ReceiptResult.APPLIED)) is None
    assert agent.on_receipt(_with_data(evicted, {"result": "bogus"})) is None


def test_malformed_and_foreign_orders_are_ignored(tmp_path: Path) -> None:
    job = Job(tmp_path)
    job.join()
    agent = job.agents[PODS[0]]
    order = job.controller.orders.order_for()
    view = order.data["view"]
    bad_view = {**view, "globals": {**view["globals"], "masterSeq": "one"}}
    cases: tuple[dict[str, Any], ...] = (
        {},
        {"state": {}},
        {**order.data, "view": {}},
        {**order.data, "masterPort": 0},
        {**order.data, "pod": {"slow": True}},
        {**order.data, "view": bad_view},
        {**order.data, "pod": {"slow": 1, "evict": False}},  # not kept: the next one works
    )
    for data in cases:
        assert isinstance(agent.on_order(_with_data(order, data), working=False), Ignore)
    assert agent.malformed == len(cases)  # each dropped with a log line, and counted
    to_other = job.controller.orders.order_for(PODS[1])
    assert isinstance(agent.on_order(to_other, working=False), Ignore)
    assert isinstance(agent.on_order(order, working=False), Work)  # the real one still works


def test_the_view_takes_each_orders_max_retry(tmp_path: Path) -> None:
    """The view's constants are made once per pod and MaxRetry (not per order); an order
    with another MaxRetry (a controller restarted with another setting) gets its own."""
    agent = AgentCore("job", "default", PODS[0], Sender("inc-0"))
    for i, max_retry in enumerate((2, 2, 5, 2)):
        (tmp_path / str(i)).mkdir()
        job = Job(tmp_path / str(i), max_retry=max_retry)
        job.controller.on_ack(job.agents[PODS[1]].ack())
        reply = job.controller.on_ack(agent.ack()).reply
        assert reply is not None
        agent.work_seq = -1  # each job's orders start again from its own seq
        agent.on_order(reply, working=False)
        assert agent.view is not None and agent.view.constants.MaxRetry == max_retry
        assert agent.view.constants.Workers == {ModelValue(PODS[0])}


def test_the_slow_node_path_reports_only_what_the_spec_enables(tmp_path: Path) -> None:
    job = Job(tmp_path)
    job.run_command()
    slow, peer = (job.agents[p] for p in PODS)
    assert peer.checkpoint(10) is None  # no eviction waits for a checkpoint yet
    hang = slow.hang("no progress for 3 s")
    assert hang is not None and hang.type is MessageType.HANG
    assert _receipt_of(job, hang) is ReceiptResult.APPLIED
    # hangWithQuit was decided: the slow pod gets its own order (slow and evict marked), and
    # the re-published broadcast lets a checkpoint through
    assert job.controller.orders.needs_publish
    orders = job.publish()
    assert [m.pod_name for m in orders] == [PODS[0], "master"]
    for msg in orders:
        for a in (slow, peer):
            if msg.pod_name in ("master", a.pod):
                assert isinstance(a.on_order(msg, working=True), Ignore)
    assert slow.hang("again") is None  # marked: no second Hang within the order
    ckpt = peer.checkpoint(11)
    assert ckpt is not None and _receipt_of(job, ckpt) is ReceiptResult.APPLIED
    assert job.controller.orders.needs_publish
    assert [slow.on_order(m, working=True) for m in job.publish()] == [Evict()]
    evicted = slow.evict()
    assert evicted is not None and evicted.type is MessageType.EVICTED
    assert Report.from_data(evicted.data).reason == "no progress for 3 s"
    assert _receipt_of(job, evicted) is ReceiptResult.APPLIED
    assert slow.evict() is None


def test_a_per_pod_order_goes_out_again_until_it_was_published(tmp_path: Path) -> None:
    job = Job(tmp_path)
    job.run_command()
    hang = job.agents[PODS[0]].hang("no progress")
    assert hang is not None and _receipt_of(job, hang) is ReceiptResult.APPLIED
    core = job.controller
    assert [m.pod_name for m in core.orders.pod_orders()] == [PODS[0]]
    # the publish failed (no mark_published): the next publish carries it again
    again = core.orders.pod_orders()
    assert [m.pod_name for m in again] == [PODS[0]] and again[0].data["pod"]["slow"] is True
    core.orders.mark_published()
    assert core.orders.pod_orders() == []


def test_per_pod_parts_rebuilt_with_the_same_values_send_no_pod_order(tmp_path: Path) -> None:
    job = Job(tmp_path)
    run = job.run_command()
    before = tuple(getattr(job.controller.state, n) for n in agent_view.PER_POD)
    assert job.finish(PODS[1], run[PODS[1]], "Error") is ReceiptResult.APPLIED
    after = tuple(getattr(job.controller.state, n) for n in agent_view.PER_POD)
    assert after == before  # the restart reset the per-pod functions to the values they had
    assert [m.pod_name for m in job.publish()] == ["master"]  # no pod order: nothing changed
    # the same values in new objects (a comprehension's reset, a state read back from disk)
    engine = job.controller.engine
    copies = {n: Fn(getattr(engine.state, n).pairs()) for n in agent_view.PER_POD}
    engine.state = dataclasses.replace(engine.state, **copies)
    assert not any(copies[n] is f for n, f in zip(agent_view.PER_POD, after, strict=True))
    assert job.controller.orders.pod_orders() == []
    trouble = job.broadcast()
    for pod, d in trouble.items():
        job.finish(pod, d)
    job.broadcast()
    hang = job.agents[PODS[0]].hang("no progress")
    assert hang is not None and _receipt_of(job, hang) is ReceiptResult.APPLIED
    assert [m.pod_name for m in job.controller.orders.pod_orders()] == [PODS[0]]  # a real change


def _receipt_of(job: Job, msg: Message) -> ReceiptResult:
    reply = job.controller.on_report(msg).reply
    assert reply is not None
    return Receipt.from_data(reply.data).result


def _receipt(agent: AgentCore, result: ReceiptResult) -> Message:
    return Message(
        "job", "default", agent.pod, MessageType.ACK, MessagePhase.COMMAND,
        Receipt(result).to_data(), time.time(), 0,
    )  # fmt: skip


def _with_data(msg: Message, data: object) -> Message:
    return Message(
        msg.aegis_name, msg.aegis_namespace, msg.pod_name, msg.type, msg.phase,
        data,  # type: ignore[arg-type]
        msg.timestamp, msg.seq,
    )  # fmt: skip


# ---------------- check rounds: the level and Level 2 -> 3 escalation ----------------

T0 = 0.0
HEALTHY = [passed(str(c), "ok", T0) for c in (CheckType.IO, CheckType.RUNTIME, CheckType.GPU)]


def test_a_healthy_round_finishes() -> None:
    out = round_outcome("Troubleshooting", HEALTHY, 0)
    assert out.outcome == "Finish" and out.slow_note == ""


def test_a_hardware_fault_is_an_error_report() -> None:
    results = [*HEALTHY[:2], failed(str(CheckType.GPU), "ECC errors", T0)]
    out = round_outcome("Troubleshooting", results, 0)
    assert out.outcome == "Error" and "ECC errors" in out.reason


@pytest.mark.parametrize("restarts", range(MAX_CONTAINER_RESTARTS + 2))
def test_level_2_restarts_the_container_then_escalates(restarts: int) -> None:
    results = [failed(str(CheckType.RUNTIME), "CUDA runtime unusable", T0), *HEALTHY[::2]]
    out = round_outcome("Troubleshooting", results, restarts)
    if restarts < MAX_CONTAINER_RESTARTS:
        assert out.outcome == RESTART
    else:
        assert out.outcome == "Error" and f"after {restarts} container restarts" in out.reason


def test_a_slow_node_finishes_and_carries_its_note() -> None:
    results = [*HEALTHY, failed(str(CheckType.ALLREDUCE_PERFORMANCE), "0.1 GB/s vs 5 GB/s", T0)]
    out = round_outcome("Troubleshooting", results, 0)
    assert out.outcome == "Finish" and "0.1 GB/s" in out.slow_note


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(list(CheckType)), st.sampled_from(["pass", "fail", "n/a"])),
        max_size=9,
    ),
    st.integers(min_value=0, max_value=5),
)
def test_a_round_outcome_is_always_one_of_three(
    checks: list[tuple[CheckType, str]], restarts: int
) -> None:
    make = {"pass": passed, "fail": failed, "n/a": not_applicable}
    results = [make[how](str(c), how, T0) for c, how in checks]
    out = round_outcome("Troubleshooting", results, restarts)
    assert out.outcome in ("Finish", "Error", RESTART)
    if out.outcome == "Finish":
        slow_path = (CheckType.ALLREDUCE_PERFORMANCE, CheckType.HANG)  # marked, no level
        assert all(not r.failed or r.check_type in slow_path for r in results)
    if out.outcome == RESTART:
        assert restarts < MAX_CONTAINER_RESTARTS


# ---------------- a missed order, sent again on the heartbeat ----------------


def _beat(job: Job, pod: str) -> Message | None:
    """Agent `pod`'s heartbeat through the controller: the order it is sent again, if any."""
    return job.controller.on_heartbeat(job.agents[pod].heartbeat()).resend


def test_an_agent_that_missed_an_order_is_sent_it_on_its_next_heartbeat(tmp_path: Path) -> None:
    job = Job(tmp_path)
    job.join()
    lost, heard = PODS
    boot = job.publish()  # the BootChecking order: pod `lost` misses it
    assert [m.pod_name for m in boot] == ["master"]
    heard_work = job.agents[heard].on_order(boot[0], working=False)
    assert isinstance(heard_work, Work)
    # within the grace nothing is sent: the order may still be on its way
    assert _beat(job, lost) is None
    job.controller.orders.versions.grace_s = 0.0  # the grace has passed
    assert _beat(job, heard) is None  # it holds the order
    again = _beat(job, lost)
    assert again is not None and again.pod_name == lost and again.data["pod"] is not None
    work = job.agents[lost].on_order(again, working=False)
    assert isinstance(work, Work) and work.order.spec_phase == "BootChecking"
    assert _beat(job, lost) is None  # it holds it now
    assert job.controller.extras.counters["order_resent"] == 1
    # the job goes on from there
    assert job.finish(lost, work) is ReceiptResult.APPLIED
    assert job.finish(heard, heard_work) is ReceiptResult.APPLIED
    assert job.controller.state.phase == "RunCommand"


def test_a_missed_pod_order_is_sent_again_though_the_broadcast_came(tmp_path: Path) -> None:
    job = Job(tmp_path)
    job.run_command()
    slow = PODS[0]
    hang = job.agents[slow].hang("no progress")
    assert hang is not None and _receipt_of(job, hang) is ReceiptResult.APPLIED
    msgs = job.publish()  # the pod's own order (lost), then the broadcast (heard by all)
    assert [m.pod_name for m in msgs] == [slow, "master"]
    for agent in job.agents.values():
        agent.on_order(msgs[-1], working=True)
    job.controller.orders.versions.grace_s = 0.0
    assert _beat(job, PODS[1]) is None
    again = _beat(job, slow)
    assert again is not None and again.data["pod"]["slow"] is True
    job.agents[slow].on_order(again, working=True)
    assert _beat(job, slow) is None


def test_a_heartbeat_with_a_bad_version_is_counted_not_answered(tmp_path: Path) -> None:
    job = Job(tmp_path)
    job.join()
    job.publish()
    job.controller.orders.versions.grace_s = 0.0
    beat = job.agents[PODS[0]].heartbeat()
    for bad in ("7", -2, True, 1.5):
        out = job.controller.on_heartbeat(_with_data(beat, {**beat.data, "holds": bad}))
        assert out.resend is None and out.reply is None
    assert job.controller.extras.counters["malformed"] == 4
    # a heartbeat that does not say what it holds is never sent an order
    plain = {k: v for k, v in beat.data.items() if k not in ("holds", "holdsPod")}
    assert job.controller.on_heartbeat(_with_data(beat, plain)).resend is None
