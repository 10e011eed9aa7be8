"""The bus against a real nats-server, with worker credentials handed out over real gRPC."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable

import nats
import pytest
import pytest_asyncio
from nats.aio.client import RawCredentials

from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.runtime.errors import BusError
from aegis.runtime.transport.auth import JobAccount, Operator
from aegis.runtime.transport.bus import Bus
from aegis.runtime.transport.grpc_credentials import (
    CredentialServer,
    CredentialService,
    IssuedCredentials,
    request_credentials,
)
from aegis.runtime.transport.nats_server import NatsServer
from aegis.runtime.transport.request_copies import RequestCopies

pytestmark = pytest.mark.asyncio(loop_scope="module")
TIMEOUT = 5.0
POD = "train-a-worker-0"
INC = os.urandom(4).hex()  # worker A's incarnation
ISSUED: dict[str, IssuedCredentials] = {}


def msg(job: JobAccount, type_: MessageType, pod: str = "master", seq: int = 1) -> Message:
    ns, name = job.key
    return Message(name, ns, pod, type_, MessagePhase.COMMAND, {"n": seq}, 1.0, seq)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cred_server(
    nats_server: NatsServer, job_a: JobAccount, job_b: JobAccount
) -> AsyncIterator[CredentialServer]:
    async with CredentialServer(CredentialService(nats_server.url, [job_a, job_b])) as server:
        yield server


@pytest_asyncio.fixture(loop_scope="module")
async def worker_a(cred_server: CredentialServer, job_a: JobAccount) -> AsyncIterator[Bus]:
    """A worker of job A (incarnation INC), with its credential obtained over gRPC (once per
    module: one credential per incarnation)."""
    if "a" not in ISSUED:
        ISSUED["a"] = await request_credentials(
            cred_server.address,
            namespace="team",
            job="train-a",
            pod_name=POD,
            proof=job_a.bootstrap_token,
            incarnation=INC,
        )
    issued = ISSUED["a"]
    bus = await Bus.connect(
        issued.nats_url,
        issued.credentials,
        name=POD,
        inbox_prefix=job_a.subjects.inbox_prefix(POD),
    )
    yield bus
    await bus.close()


@pytest_asyncio.fixture(loop_scope="module")
async def master_a(nats_server: NatsServer, job_a: JobAccount) -> AsyncIterator[Bus]:
    bus = await Bus.connect(nats_server.url, job_a.controller_credentials(), name="master-a")
    yield bus
    await bus.close()


def collector() -> tuple[asyncio.Queue[Message], object]:
    queue: asyncio.Queue[Message] = asyncio.Queue()

    async def handler(m: Message) -> None:
        queue.put_nowait(m)

    return queue, handler


async def test_worker_cannot_subscribe_to_another_jobs_subjects(
    worker_a: Bus, job_b: JobAccount
) -> None:
    _, handler = collector()
    await worker_a.subscribe(job_b.subjects.master, handler)  # type: ignore[arg-type]
    refusal = await worker_a.wait_permission_denied(TIMEOUT)
    assert "subscription" in refusal and job_b.subjects.master in refusal
    assert worker_a.stats.permission_errors == 1


@pytest.mark.parametrize(
    "subject",
    [
        "aegis.team.train-b.report.train-a-worker-0",  # another job
        "aegis.other.train-a.report.train-a-worker-0",
        "x",
        "aegis.team.train-a.report.train-a-worker-1",  # another pod of its own job
        "aegis.team.train-a.heartbeat.train-a-worker-1",
        "aegis.team.train-a.master",  # orders: the controller's only
        "aegis.team.train-a.ctl.controller",  # ctl requests: the operator's only
    ],
)
async def test_worker_cannot_publish_outside_its_job(
    worker_a: Bus, job_a: JobAccount, subject: str
) -> None:
    await worker_a.publish(subject, msg(job_a, MessageType.ACK))
    refusal = await worker_a.wait_permission_denied(TIMEOUT)
    assert "publish" in refusal and subject in refusal


async def test_worker_and_master_talk_on_their_job(
    worker_a: Bus, master_a: Bus, job_a: JobAccount
) -> None:
    reports, on_report = collector()
    orders, on_order = collector()
    await master_a.subscribe(job_a.subjects.reports, on_report)  # type: ignore[arg-type]
    await worker_a.subscribe(job_a.subjects.master, on_order)  # type: ignore[arg-type]
    await master_a.flush()
    await worker_a.flush()
    order = msg(job_a, MessageType.ORDER)
    await master_a.publish(job_a.subjects.master, order)
    assert await asyncio.wait_for(orders.get(), TIMEOUT) == order
    report = msg(job_a, MessageType.FINISH, pod=POD, seq=2)
    await worker_a.publish(job_a.subjects.report(POD, INC), report)
    assert await asyncio.wait_for(reports.get(), TIMEOUT) == report
    await worker_a.flush()
    assert worker_a.stats.permission_errors == 0 and not worker_a.permission_denied.is_set()


async def test_request_reply_both_ways(worker_a: Bus, master_a: Bus, job_a: JobAccount) -> None:
    async def ack(m: Message) -> Message:
        return msg(job_a, MessageType.ACK, pod=m.pod_name, seq=m.seq)

    await master_a.subscribe(job_a.subjects.reports, ack)
    await worker_a.subscribe(job_a.subjects.master, ack)
    await master_a.flush()
    await worker_a.flush()
    # the worker's reply inbox is its own; the master's request is answered through the
    # worker's response permission (it may publish nowhere else)
    got = await worker_a.request(
        job_a.subjects.report(POD, INC), msg(job_a, MessageType.HEARTBEAT, "p", 7)
    )
    assert (got.type, got.pod_name, got.seq) == (MessageType.ACK, "p", 7)
    got = await master_a.request(job_a.subjects.master, msg(job_a, MessageType.ORDER, seq=8))
    assert (got.type, got.seq) == (MessageType.ACK, 8)
    assert worker_a.stats.permission_errors == 0


async def test_malformed_payloads_and_failing_handlers_do_not_stop_the_loop(
    worker_a: Bus, nats_server: NatsServer, job_a: JobAccount
) -> None:
    seen: asyncio.Queue[Message] = asyncio.Queue()

    async def handler(m: Message) -> None:
        if m.seq == 1:
            raise RuntimeError("handler bug")
        seen.put_nowait(m)

    await worker_a.subscribe(job_a.subjects.master, handler)
    await worker_a.flush()
    raw = await nats.connect(
        nats_server.url,
        user_credentials=RawCredentials(job_a.controller_credentials().creds_text()),
    )
    try:
        for payload in (b"{not json", b"\xff", msg(job_a, MessageType.ORDER, seq=1).encode()):
            await raw.publish(job_a.subjects.master, payload)
        await raw.publish(job_a.subjects.master, msg(job_a, MessageType.ORDER, seq=2).encode())
        await raw.flush()
        assert (await asyncio.wait_for(seen.get(), TIMEOUT)).seq == 2
    finally:
        await raw.close()
    assert (worker_a.stats.malformed, worker_a.stats.handler_errors) == (2, 1)


async def test_untrusted_credentials_are_a_bus_error(nats_server: NatsServer) -> None:
    stranger = Operator().create_job_account("team", "train-a").controller_credentials()
    with pytest.raises(BusError, match=r"cannot connect.*Authorization Violation"):
        await Bus.connect(nats_server.url, stranger, timeout=3.0, reconnect_attempts=1)


async def test_a_late_reply_to_the_first_copy_ends_a_patient_request(
    worker_a: Bus, master_a: Bus, job_a: JobAccount
) -> None:
    """The controller answers the first copy only after two more came (it was behind): the
    reply still ends the wait, and no fourth copy goes out. A plain `request` per copy would
    have dropped that reply (its inbox timed out) and sent copies until one was answered
    within a single wait."""
    copies: list[str] = []
    third = asyncio.Event()

    async def behind(subject: str, m: Message) -> Message | None:
        copies.append(subject)
        if len(copies) == 3:
            third.set()
        if len(copies) > 1:
            return None  # the later copies find the report handled: no second receipt here
        await third.wait()
        return msg(job_a, MessageType.ACK, pod=m.pod_name, seq=m.seq)

    await master_a.subscribe_each(job_a.subjects.reports, behind, concurrent=True)
    await master_a.flush()
    report = msg(job_a, MessageType.FINISH, POD, seq=9)
    waits = (0.2, 0.2, TIMEOUT, TIMEOUT)
    got = await worker_a.request_patiently(job_a.subjects.report(POD, INC), report, waits)
    assert (got.type, got.seq) == (MessageType.ACK, 9)
    assert copies == [job_a.subjects.report(POD, INC)] * 3
    with pytest.raises(BusError, match="no reply to any copy"):
        await worker_a.request_patiently(job_a.subjects.report(POD, INC), report, (0.2, 0.2))
    assert len(copies) == 5 and worker_a.stats.permission_errors == 0


async def test_concurrent_handlers_are_bounded_and_the_rest_wait_their_turn(
    worker_a: Bus, master_a: Bus, job_a: JobAccount
) -> None:
    """At most `max_running` handlers of a subscription run at once; the messages past them
    wait (undecoded, in the client's queue) and are all handled once the first ones end."""
    started: list[int] = []
    full, release, every = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def slow(_subject: str, m: Message) -> None:
        started.append(m.seq)
        if len(started) == 3:
            full.set()
        if len(started) == 7:
            every.set()
        await release.wait()

    await master_a.subscribe_each(job_a.subjects.reports, slow, concurrent=True, max_running=3)
    await master_a.flush()
    for seq in range(1, 8):
        await worker_a.publish(
            job_a.subjects.report(POD, INC), msg(job_a, MessageType.FINISH, POD, seq)
        )
    await worker_a.flush()
    await asyncio.wait_for(full.wait(), TIMEOUT)
    await master_a.flush()  # every message has reached the controller's client by now
    for _ in range(20):  # loop turns in which an unbounded subscription would start them all
        await asyncio.sleep(0)
    assert started == [1, 2, 3]
    release.set()
    await asyncio.wait_for(every.wait(), TIMEOUT)
    assert started == [1, 2, 3, 4, 5, 6, 7]


async def test_a_patient_request_nobody_receives_is_a_bus_error(
    worker_a: Bus, job_a: JobAccount
) -> None:
    report = msg(job_a, MessageType.FINISH, POD, seq=3)
    with pytest.raises(BusError, match="nobody is subscribed"):
        await worker_a.request_patiently(job_a.subjects.report(POD, INC), report, (TIMEOUT,) * 10)


async def _until(condition: Callable[[], bool]) -> None:
    """Wait (bounded) until `condition` holds: each check after a turn of the loop."""
    async with asyncio.timeout(TIMEOUT):
        while not condition():
            await asyncio.sleep(0.01)


async def test_copies_of_a_request_are_handled_once_and_answered_alike(
    worker_a: Bus, master_a: Bus, job_a: JobAccount
) -> None:
    """A patient request's copies (same bytes, same reply subject): the ones that come while
    the first is handled are dropped, its reply ends the request; a copy after that gets the
    same reply bytes without a second handling; another message on that reply subject is
    handled."""
    calls: list[int] = []
    release = asyncio.Event()

    async def handler(_subject: str, m: Message) -> Message:
        calls.append(m.seq)
        await release.wait()
        return msg(job_a, MessageType.ACK, POD, 100 + m.seq)

    copies = RequestCopies()
    await master_a.subscribe_each(job_a.subjects.reports, handler, concurrent=True, copies=copies)
    await master_a.flush()
    subject = job_a.subjects.report(POD, INC)
    report = msg(job_a, MessageType.FINISH, POD, seq=5)
    request = asyncio.create_task(worker_a.request_patiently(subject, report, (0.05,) * 200))
    await _until(lambda: copies.dropped >= 3)
    release.set()
    reply = await asyncio.wait_for(request, TIMEOUT)
    assert reply.seq == 105 and calls == [5]

    # a copy that comes after the answer (as when the first reply was lost on the way)
    nc = worker_a._nc
    inbox = f"{job_a.subjects.inbox_prefix(POD)}.copies"
    replies = await nc.subscribe(inbox)
    data = msg(job_a, MessageType.FINISH, POD, seq=6).encode()
    for _ in range(2):
        await nc.publish(subject, data, reply=inbox)
        first = await replies.next_msg(timeout=TIMEOUT)
        assert Message.decode(first.data).seq == 106
    assert calls == [5, 6] and copies.answered == 1
    # the same reply subject with other bytes is another request
    await nc.publish(subject, msg(job_a, MessageType.FINISH, POD, seq=7).encode(), reply=inbox)
    assert Message.decode((await replies.next_msg(timeout=TIMEOUT)).data).seq == 107
    assert calls == [5, 6, 7]
    # and so are the same bytes and reply subject on another pod's subject (its sender)
    other = job_a.subjects.report("train-a-worker-1", INC)
    await master_a._nc.publish(other, data, reply=inbox)
    assert Message.decode((await replies.next_msg(timeout=TIMEOUT)).data).seq == 106
    assert calls == [5, 6, 7, 6] and copies.answered == 1
    await replies.unsubscribe()


async def test_a_copy_of_a_request_that_got_no_reply_is_handled_afresh(
    worker_a: Bus, master_a: Bus, job_a: JobAccount
) -> None:
    """The first copy was not answered (a rolled-back commit: the sender is to try again): the
    next copy is handled, and its reply ends the request."""
    calls: list[int] = []

    async def handler(_subject: str, m: Message) -> Message | None:
        calls.append(m.seq)
        return None if len(calls) == 1 else msg(job_a, MessageType.ACK, POD, 100 + m.seq)

    await master_a.subscribe_each(
        job_a.subjects.reports, handler, concurrent=True, copies=RequestCopies()
    )
    await master_a.flush()
    report = msg(job_a, MessageType.FINISH, POD, seq=8)
    waits = (0.2,) * 50
    reply = await worker_a.request_patiently(job_a.subjects.report(POD, INC), report, waits)
    assert reply.seq == 108 and calls == [8, 8]
