"""The controller on a real nats-server: forged messages and old incarnations are dropped; a
pod whose heartbeat shows it missed an order is sent it in its own inbox."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.protocol.faults import FaultKind
from aegis.protocol.payloads import (
    Eviction,
    Heartbeat,
    Order,
    Receipt,
    ReceiptResult,
    Sender,
    parse_order,
)
from aegis.protocol.subjects import JobSubjects
from aegis.runtime.controller.core import ControllerCore, Outcome
from aegis.runtime.errors import BusError
from aegis.runtime.transport.auth import JobAccount, Permissions
from aegis.runtime.transport.bus import Bus
from aegis.runtime.transport.nats_server import NatsServer
from aegis.values import ModelValue

from ..support import RunningController, first_request, running_controller, wait_for_async
from .conftest import NAMESPACE, PODS_A

pytestmark = pytest.mark.asyncio(loop_scope="module")
PODS = PODS_A
PODS_MV = tuple(ModelValue(p) for p in PODS)


def msg(job: str, pod: str, kind: MessageType, inc: str, seq: int = 0) -> Message:
    return Message(
        job, NAMESPACE, pod, kind, MessagePhase.BOOTCHECK, {"incarnation": inc}, time.time(), seq
    )


async def connect_as(nats_server: NatsServer, job: JobAccount, pod: str) -> Bus:
    """A worker bus with the credential of `pod`'s incarnations i1 and i2 (their subjects
    only): a pod and its replacement, in one test client."""
    one, two = (job.worker_permissions(pod, inc) for inc in ("i1", "i2"))
    perms = Permissions((*one.pub, *two.pub), one.sub, respond=True)
    creds = job.account.new_user(pod, perms)
    return await Bus.connect(nats_server.url, creds, inbox_prefix=job.subjects.inbox_prefix(pod))


@asynccontextmanager
async def workers(nats_server: NatsServer, job: JobAccount) -> AsyncIterator[tuple[Bus, Bus]]:
    """Both pods' worker buses, each with its own credential; closed when the block ends."""
    w0, w1 = [await connect_as(nats_server, job, p) for p in PODS]
    try:
        yield w0, w1
    finally:
        await w0.close()
        await w1.close()


async def test_forged_and_old_incarnation(
    nats_server: NatsServer, job_a: JobAccount, controller: RunningController
) -> None:
    core = controller.core
    s = job_a.subjects
    async with workers(nats_server, job_a) as (w0, w1):
        await first_request(
            w0, s.join(PODS[0], "i1"), msg("train-a", PODS[0], MessageType.ACK, "i1")
        )
        for w, p in ((w0, PODS[0]), (w1, PODS[1])):  # join both: BootChecking (order 1)
            reply = await w.request(s.join(p, "i1"), msg("train-a", p, MessageType.ACK, "i1"), 5)
            assert reply.type is MessageType.ORDER
        assert core.state.phase == "BootChecking"
        # a message claiming another job: counted as forged, ignored
        await w0.request(
            s.report(PODS[0], "i1"), msg("train-b", PODS[0], MessageType.FINISH, "i1", 1), 5
        )
        assert core.extras.counters["forged"] == 1
        # a message on pod 0's own subject that claims to be pod 1 (or nobody): dropped
        before = core.state
        for claimed in (PODS[1], "nobody"):
            forged = msg("train-a", claimed, MessageType.FINISH, "i1", 1)
            reply = await w0.request(s.report(PODS[0], "i1"), forged, 5)
            assert reply.data["result"] == "forged" and core.state == before
        assert core.extras.counters["impersonation"] == 2
        # a message on pod 0's incarnation's subject naming another incarnation: dropped too
        forged = msg("train-a", PODS[0], MessageType.FINISH, "i2", 1)
        reply = await w0.request(s.report(PODS[0], "i1"), forged, 5)
        assert reply.data["result"] == "forged" and core.extras.counters["impersonation"] == 3
        # pod 1 restarts (new incarnation); a report of its old incarnation is refused, and
        # the old one is told to leave
        await w1.request(s.join(PODS[1], "i2"), msg("train-a", PODS[1], MessageType.ACK, "i2"), 5)
        before = core.state
        finish = msg("train-a", PODS[1], MessageType.FINISH, "i1", 1)
        reply = await w1.request(s.report(PODS[1], "i1"), finish, 5)
        assert Receipt.from_data(reply.data).result is ReceiptResult.EVICTED
        assert core.extras.counters["old_incarnation"] == 1 and core.state == before
        assert core.extras.counters["inferred_restart"] == 1
        # its ACK again (a credential someone kept): an eviction, never a second restart
        reply = await w1.request(
            s.join(PODS[1], "i1"), msg("train-a", PODS[1], MessageType.ACK, "i1"), 5
        )
        assert parse_order(reply.data) == Eviction("i1") and core.state == before
        assert core.extras.counters["retired_incarnation"] == 1
        assert core.extras.counters["inferred_restart"] == 1
        # the fault log has it, although the launcher never said the pod was lost
        assert core.faults.last[PODS[1]].kind is FaultKind.POD_LOST  # replaced
        # the new incarnation's Finish is taken
        await w1.request(
            s.report(PODS[1], "i2"), msg("train-a", PODS[1], MessageType.FINISH, "i2", 1), 5
        )
        assert core.state.finished[PODS_MV[1]], (core.extras.counters, core.state)


def heartbeat(pod: str, holds: int) -> Message:
    """`pod`'s heartbeat (incarnation i1) saying it holds order version `holds`."""
    data = Heartbeat(Sender("i1"), holds, holds).to_data()
    return Message("train-a", NAMESPACE, pod, MessageType.HEARTBEAT, MessagePhase.BOOTCHECK,
                   data, time.time(), 0)  # fmt: skip


async def beat_handled(core: ControllerCore, w: Bus, subjects: JobSubjects, pod: str,
                       holds: int) -> None:  # fmt: skip
    """Send `pod`'s heartbeat and wait until the controller has handled it."""
    before = core.last_seen[pod]
    await w.publish(subjects.heartbeat(pod, "i1"), heartbeat(pod, holds))
    await wait_for_async(lambda: core.last_seen[pod] > before, 5, f"{pod}'s heartbeat")


async def join_both(core: ControllerCore, subjects: JobSubjects, w0: Bus, w1: Bus) -> None:
    """Both pods join (incarnation i1); return once the BootChecking order is out."""
    ack = msg("train-a", PODS[0], MessageType.ACK, "i1")
    await first_request(w0, subjects.join(PODS[0], "i1"), ack)
    await w1.request(
        subjects.join(PODS[1], "i1"), msg("train-a", PODS[1], MessageType.ACK, "i1"), 5
    )
    await wait_for_async(lambda: not core.orders.needs_publish, 5, "the BootChecking order out")


async def order_inbox(w: Bus, subjects: JobSubjects, pod: str) -> asyncio.Queue[Message]:
    """What arrives in `pod`'s order inbox, subscribed to on `w`."""
    got: asyncio.Queue[Message] = asyncio.Queue()

    async def take(m: Message) -> None:
        await got.put(m)

    await w.subscribe(subjects.order_inbox(pod), take)
    return got


async def test_a_pod_behind_is_sent_its_order_in_its_own_inbox(
    nats_server: NatsServer, job_a: JobAccount, controller: RunningController
) -> None:
    core = controller.core
    core.orders.versions.grace_s = 0.0  # any order published is due at once
    s = job_a.subjects
    async with workers(nats_server, job_a) as (w0, w1):
        resent = await order_inbox(w0, s, PODS[0])
        await order_inbox(w1, s, PODS[0])  # another pod cannot listen in on it
        assert "permissions violation" in (await w1.wait_permission_denied(5)).lower()
        await join_both(core, s, w0, w1)
        version = core.orders.versions.required(time.monotonic())
        assert version > 0 and core.state.phase == "BootChecking"
        await beat_handled(core, w0, s, PODS[0], version)  # it holds the order: nothing sent
        assert core.extras.counters["order_resent"] == 0 and resent.empty()
        await w0.publish(
            s.heartbeat(PODS[0], "i1"), heartbeat(PODS[0], version - 1)
        )  # it missed it
        order = await asyncio.wait_for(resent.get(), 5)
        assert order.pod_name == PODS[0] and order.type is MessageType.ORDER
        got = Order.from_data(order.data)
        assert got.version == version and got.spec_phase == "BootChecking" and got.pod
        assert core.extras.counters["order_resent"] == 1


async def test_a_heartbeat_waiting_for_a_commit_holds_up_no_other_heartbeat(
    nats_server: NatsServer, job_a: JobAccount, controller: RunningController
) -> None:
    """The order sent again waits for the commit of what it shows; heartbeats are handled one
    at a time, so that wait must not be theirs (it was: at 12,500 pods a slow commit held up
    every heartbeat behind a resend, and agents were declared lost)."""
    core, service = controller.core, controller.service
    core.orders.versions.grace_s = 0.0
    s = job_a.subjects
    async with workers(nats_server, job_a) as (w0, w1):
        resent = await order_inbox(w0, s, PODS[0])
        await join_both(core, s, w0, w1)
        disk = asyncio.Event()  # a commit that takes as long as the test says
        durable = service.commits.durable

        async def slow_durable() -> None:
            await disk.wait()
            await durable()

        service.commits.durable = slow_durable  # type: ignore[method-assign]
        await beat_handled(core, w0, s, PODS[0], -1)  # pod 0 is behind: its order waits
        await beat_handled(core, w1, s, PODS[1], 10**6)  # and pod 1's heartbeat is handled
        assert core.extras.counters["order_resent"] == 1 and resent.empty()  # not yet on disk
        disk.set()
        order = await asyncio.wait_for(resent.get(), 5)
        assert order.pod_name == PODS[0] and order.type is MessageType.ORDER


REPORTS_WAITING = 20


async def in_run(core: ControllerCore, subjects: JobSubjects, w0: Bus, w1: Bus) -> None:
    """Both pods join and pass the check; return once the RunCommand order is out."""
    await join_both(core, subjects, w0, w1)
    for w, p in ((w0, PODS[0]), (w1, PODS[1])):
        done = msg("train-a", p, MessageType.FINISH, "i1", core.state.masterSeq)
        await w.request(subjects.report(p, "i1"), done, 5)
    await wait_for_async(lambda: not core.orders.needs_publish, 5, "the RunCommand order out")
    assert core.state.phase == "RunCommand"


def handled_in_order(core: ControllerCore) -> list[str]:
    """What the core handles from now on, in order: "ack", "report", "order" (published)."""
    handled: list[str] = []
    on_ack, on_report, published = core.on_ack, core.on_report, core.orders.mark_published

    def ack(m: Message) -> Outcome:
        handled.append("ack")
        return on_ack(m)

    def report(m: Message) -> Outcome:
        handled.append("report")
        return on_report(m)

    def mark() -> None:
        handled.append("order")
        published()

    core.on_ack, core.on_report = ack, report  # type: ignore[method-assign, assignment]
    core.orders.mark_published = mark  # type: ignore[method-assign]
    return handled


async def rejoin_behind_reports(
    controller: RunningController, subjects: JobSubjects, w0: Bus, w1: Bus, waiting: int
) -> Message:
    """While the controller is busy: pod 0 sends REPORTS_WAITING reports, then pod 1's
    replacement (incarnation i2) its ACK; once `waiting` report handlers and the ACK's wait
    for the lock, the controller goes on. The ACK's reply."""
    lock = controller.service.lock
    async with lock:
        for seq in range(REPORTS_WAITING):
            finish = msg("train-a", PODS[0], MessageType.FINISH, "i1", seq)
            await w0.publish(subjects.report(PODS[0], "i1"), finish)
        await w0.flush()  # the server has them all: the ACK comes after them
        rejoin = msg("train-a", PODS[1], MessageType.ACK, "i2")
        reply = asyncio.create_task(w1.request(subjects.join(PODS[1], "i2"), rejoin, 5))
        await wait_for_async(
            lambda: lock.waiting[0] == 1 and lock.waiting[1] >= waiting,
            5,
            "the reports and the ACK waiting for the lock",
        )
    return await reply


async def test_a_join_goes_before_the_reports_waiting_and_its_order_out_at_once(
    nats_server: NatsServer, job_a: JobAccount, controller: RunningController
) -> None:
    """A crashed pod's replacement joins while reports queue for the controller: its ACK is
    handled before them, and the order it leads to is published before they are handled.
    With a FIFO lock, and the order left to its batch's flush, both came after every report
    (at 1,000 pods a restart order waited ~170 ms behind a burst of reports)."""
    core = controller.core
    s = job_a.subjects
    async with workers(nats_server, job_a) as (w0, w1):
        await in_run(core, s, w0, w1)
        handled = handled_in_order(core)
        reply = await rejoin_behind_reports(controller, s, w0, w1, REPORTS_WAITING)
        assert reply.type is MessageType.ORDER
        await wait_for_async(
            lambda: handled.count("report") == REPORTS_WAITING, 5, "every report handled"
        )
        assert handled[:2] == ["ack", "order"], handled
        assert core.extras.counters["inferred_restart"] == 1
        assert core.state.phase == "Troubleshooting"  # the restart's order


async def test_a_join_is_read_past_the_reports_the_bus_holds_back(
    nats_server: NatsServer, job_a: JobAccount, tmp_path: Path
) -> None:
    """Past `max_running` report handlers the reports wait unread in the bus client's queue
    (at 12,500 pods ~11,000 of them); a join has a subject and subscription of its own, so it
    is not read after them (it was: 7 s from the replacement's ACK to its join)."""
    s = job_a.subjects
    async with running_controller(
        nats_server.url, job_a, tmp_path / "status.json", PODS, max_running=4
    ) as controller:
        core = controller.core
        async with workers(nats_server, job_a) as (w0, w1):
            await in_run(core, s, w0, w1)
            handled = handled_in_order(core)
            await rejoin_behind_reports(controller, s, w0, w1, 4)  # 16 reports unread
            await wait_for_async(
                lambda: handled.count("report") == REPORTS_WAITING, 5, "every report handled"
            )
            assert handled[:2] == ["ack", "order"], handled


async def test_a_message_on_a_subject_that_does_not_carry_its_type_is_dropped(
    nats_server: NatsServer, job_a: JobAccount, controller: RunningController
) -> None:
    """An ACK among the reports, a report among the joins: counted, answered as unexpected,
    and nothing changes (each subject carries its own types: joins are read apart)."""
    core = controller.core
    s = job_a.subjects
    async with workers(nats_server, job_a) as (w0, w1):
        await join_both(core, s, w0, w1)
        before = core.state
        misrouted = (
            (s.report(PODS[0], "i2"), msg("train-a", PODS[0], MessageType.ACK, "i2")),
            (s.join(PODS[0], "i1"), msg("train-a", PODS[0], MessageType.FINISH, "i1", 1)),
        )
        for subject, m in misrouted:
            receipt = await w0.request(subject, m, 5)
            assert Receipt.from_data(receipt.data).result is ReceiptResult.UNEXPECTED_TYPE
        assert core.extras.counters["unexpected_type"] == 2 and core.state == before
        assert core.extras.counters["inferred_restart"] == 0


async def test_joins_before_the_first_order_share_one_commit(
    nats_server: NatsServer, job_a: JobAccount, controller: RunningController
) -> None:
    """Only an event that leads to an order commits at once: the first join (Pending, no
    order yet) waits for its batch, and the last one, which leads to BootChecking, commits
    both (a commit per join would cost a 12,500-pod start an fsync per pod)."""
    core, service = controller.core, controller.service
    s = job_a.subjects
    async with workers(nats_server, job_a) as (w0, w1):
        commits = service.commits.commits
        async with service.lock:
            replies = [
                asyncio.create_task(
                    w.request(s.join(p, "i1"), msg("train-a", p, MessageType.ACK, "i1"), 5)
                )
                for w, p in ((w0, PODS[0]), (w1, PODS[1]))
            ]
            await wait_for_async(lambda: service.lock.waiting[0] == 2, 5, "both ACKs waiting")
        for reply in replies:
            assert (await reply).type is MessageType.ORDER
        assert core.state.phase == "BootChecking"
        assert service.commits.commits == commits + 1


async def test_a_failed_commit_of_a_join_that_leads_to_an_order_answers_and_publishes_nothing(
    nats_server: NatsServer, job_a: JobAccount, tmp_path: Path
) -> None:
    """The join that completes the job's start commits at once (its order is due); when that
    commit fails (the WAL's disk, after its retries) the join is rolled back: no reply, no
    order, the job still Pending; the ACK sent again once the disk is back is applied."""
    s = job_a.subjects
    async with running_controller(
        nats_server.url, job_a, tmp_path / "status.json", PODS, wal=tmp_path / "wal.jsonl"
    ) as controller:
        core = controller.core
        wal = core.journal.wal
        assert wal is not None
        async with workers(nats_server, job_a) as (w0, w1):
            broadcast: list[Message] = []

            async def heard(m: Message) -> None:
                broadcast.append(m)

            await w0.subscribe(s.master, heard)
            await first_request(
                w0, s.join(PODS[0], "i1"), msg("train-a", PODS[0], MessageType.ACK, "i1")
            )
            append = wal.append

            def broken(number: int, body: Any) -> None:
                raise OSError(5, "Input/output error")

            wal.append = broken  # type: ignore[method-assign]
            ack = msg("train-a", PODS[1], MessageType.ACK, "i1")
            with pytest.raises(BusError):  # never answered: rolled back
                await w1.request(s.join(PODS[1], "i1"), ack, 3)
            assert core.state.phase == "Pending" and PODS[1] not in core.extras.incarnations
            wal.append = append  # type: ignore[method-assign]
            reply = await w1.request(s.join(PODS[1], "i1"), ack, 5)
            assert Order.from_data(reply.data).spec_phase == "BootChecking"
            await wait_for_async(lambda: broadcast, 5, "the BootChecking order")
            assert [Order.from_data(m.data).spec_phase for m in broadcast] == ["BootChecking"]


async def test_a_report_whose_text_holds_a_lone_surrogate_is_applied_and_committed(
    nats_server: NatsServer, job_a: JobAccount, tmp_path: Path
) -> None:
    """JSON's `\\ud800` escape parses to a lone surrogate, which UTF-8 cannot hold: such a
    reason (an exception about a file name that is not UTF-8 has one) was applied in memory,
    and its handler then failed writing it (UnicodeEncodeError): no answer, nothing durable.
    It is read as U+FFFD: the report is applied, committed, and the job goes on."""
    s = job_a.subjects
    async with running_controller(
        nats_server.url, job_a, tmp_path / "status.json", PODS, wal=tmp_path / "wal.jsonl"
    ) as controller:
        core = controller.core
        async with workers(nats_server, job_a) as (w0, w1):
            await first_request(
                w0, s.join(PODS[0], "i1"), msg("train-a", PODS[0], MessageType.ACK, "i1")
            )
            await w1.request(
                s.join(PODS[1], "i1"), msg("train-a", PODS[1], MessageType.ACK, "i1"), 5
            )
            assert core.state.phase == "BootChecking"
            error = msg("train-a", PODS[0], MessageType.ERROR, "i1", 1)
            wire = dataclasses.replace(error, data={**error.data, "reason": "@"}).encode()
            wire = wire.replace(b'"reason":"@"', b'"reason":"open(\'/data/\\udcff\'): gone"')
            raw = await w0._nc.request(s.report(PODS[0], "i1"), wire, timeout=5)
            reply = Message.decode(raw.data)
            assert Receipt.from_data(reply.data).result is ReceiptResult.APPLIED, reply
            assert core.extras.reasons[PODS[0]] == "open('/data/\ufffd'): gone"
            # committed: the next event is handled and answered (a failed commit answers none)
            fin = msg("train-a", PODS[1], MessageType.FINISH, "i1", 1)
            reply = await w1.request(s.report(PODS[1], "i1"), fin, 5)
            assert Receipt.from_data(reply.data).result is not None
            assert not controller.task.done()
    saved = json.loads((tmp_path / "status.json").read_text(encoding="utf-8"))
    assert saved["podInfos"][PODS[0]]["lastFailedReason"] == "open('/data/\ufffd'): gone"
