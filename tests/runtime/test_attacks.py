"""A worker can speak only for itself (issue 13): the attack suite on a real nats-server and a
real gRPC credential service, against a real controller serving two honest agents.

The attacker holds pod 0's credential (a compromised agent, or a training process that got
hold of it) and the job's bootstrap token. Every attack below is tried while the job runs;
each must be refused (by nats-server's permissions, the credential service, or the
controller), and the job must end exactly as it does without the attacker: Succeed, no retry
counted, one command order.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest
import pytest_asyncio

from aegis.protocol.control import make_request
from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.protocol.payloads import Eviction, Receipt, ReceiptResult, Report, Sender
from aegis.protocol.subjects import JobSubjects
from aegis.runtime.agent.core import AgentCore, Leave, Work
from aegis.runtime.errors import BusError, CredentialsRejected
from aegis.runtime.transport.auth import JobAccount
from aegis.runtime.transport.bus import Bus
from aegis.runtime.transport.grpc_credentials import (
    CredentialServer,
    CredentialService,
    IssuedCredentials,
    request_credentials,
)
from aegis.runtime.transport.nats_server import NatsServer

from ..support import RunningController, running_controller, wait_for_async
from .conftest import NAMESPACE, PODS_A

pytestmark = pytest.mark.asyncio(loop_scope="module")
JOB = "train-a"
S = JobSubjects(NAMESPACE, JOB)
VICTIM = PODS_A[1]


@dataclass
class Honest:
    """A well-behaved agent: its own credential, its own subjects, AgentCore decisions."""

    pod: str
    bus: Bus
    core: AgentCore
    orders: asyncio.Queue[Message] = field(default_factory=asyncio.Queue)

    @property
    def inc(self) -> str:
        return self.core.sender.incarnation

    async def start(self) -> None:
        await self.bus.subscribe(S.master, self._order)
        reply = await self.bus.request(S.join(self.pod, self.inc), self.core.ack(), 5)
        await self.orders.put(reply)

    async def _order(self, msg: Message) -> None:
        await self.orders.put(msg)

    async def work(self, phase: str) -> None:
        """Finish the next order of `phase` (skipping older ones)."""
        while True:
            decision = self.core.on_order(
                await asyncio.wait_for(self.orders.get(), 10), working=False
            )
            if isinstance(decision, Work) and decision.order.spec_phase == phase:
                break
        msg = self.core.finish_work(decision.seq, phase, "Finish", Report(self.core.sender))
        assert msg is not None
        receipt = await self.bus.request(S.report(self.pod, self.inc), msg, 5)
        assert Receipt.from_data(receipt.data).result is ReceiptResult.APPLIED

    async def final(self) -> Leave:
        while True:
            decision = self.core.on_order(
                await asyncio.wait_for(self.orders.get(), 10), working=False
            )
            if isinstance(decision, Leave):
                return decision


@dataclass
class Tally:
    """Attacks tried and refused, by name (the closing note counts them)."""

    tried: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

    async def attack(self, name: str, attempt: Callable[[], Awaitable[bool]]) -> None:
        self.tried.append(name)
        if await attempt():
            self.refused.append(name)


class Registry:
    """The incarnations the launcher started (what the credential service accepts)."""

    def __init__(self) -> None:
        self.expected: dict[str, str] = {}

    def expects(self, pod: str, incarnation: str) -> bool:
        return self.expected.get(pod) == incarnation


@pytest_asyncio.fixture(loop_scope="module")
async def setting(
    nats_server: NatsServer, job_a: JobAccount, tmp_path: Path
) -> AsyncIterator[tuple[CredentialServer, Registry, RunningController]]:
    registry = Registry()
    service = CredentialService(nats_server.url)
    service.add_job(job_a, expects=registry.expects)
    async with (
        CredentialServer(service) as grpc_server,
        running_controller(nats_server.url, job_a, tmp_path / "status.json", PODS_A) as controller,
    ):
        yield grpc_server, registry, controller


async def credentials(
    server: CredentialServer, registry: Registry, job: JobAccount, pod: str
) -> tuple[IssuedCredentials, str]:
    inc = os.urandom(4).hex()
    registry.expected[pod] = inc
    issued = await request_credentials(
        server.address,
        namespace=NAMESPACE,
        job=JOB,
        pod_name=pod,
        proof=job.bootstrap_token,
        incarnation=inc,
    )
    return issued, inc


async def join(server: CredentialServer, registry: Registry, job: JobAccount, pod: str) -> Honest:
    issued, inc = await credentials(server, registry, job, pod)
    bus = await Bus.connect(
        issued.nats_url, issued.credentials, name=pod, inbox_prefix=S.inbox_prefix(pod)
    )
    return Honest(pod, bus, AgentCore(JOB, NAMESPACE, pod, Sender(inc, f"node-{pod[-1]}")))


def forged(kind: MessageType, pod: str, inc: str, seq: int, **data: object) -> Message:
    body = {"incarnation": inc, "reason": "forged", **data}
    return Message(JOB, NAMESPACE, pod, kind, MessagePhase.COMMAND, body, time.time(), seq)


async def denied(bus: Bus, subject: str, msg: Message, what: str = "publish") -> bool:
    """Whether nats-server refuses `bus` publishing `msg` on `subject` (or subscribing)."""
    before = bus.stats.permission_errors
    if what == "publish":
        await bus.publish(subject, msg)
    else:
        await bus.subscribe(subject, lambda m: asyncio.sleep(0))
    await bus.flush()
    await wait_for_async(lambda: bus.stats.permission_errors > before, 5, f"a refused {what}")
    text = bus.stats.permission_messages[-1]
    return f'{what} to "{subject}"'.lower() in text.lower()  # the server lower-cases it


async def test_a_worker_can_speak_only_for_itself(
    setting: tuple[CredentialServer, Registry, RunningController], job_a: JobAccount
) -> None:
    grpc_server, registry, controller = setting
    core = controller.core
    a, b = [await join(grpc_server, registry, job_a, p) for p in PODS_A]
    attacker = a.bus
    tally = Tally()
    try:
        for agent in (a, b):
            await agent.start()
        for agent in (a, b):
            await agent.work("BootChecking")
        seq = await wait_for_async(
            lambda: core.state.phase == "RunCommand" and int(core.state.masterSeq), 10, "the run"
        )
        victim_inc = b.core.sender.incarnation

        async def finish_for_victim_on_its_subject() -> bool:
            msg = forged(MessageType.FINISH, VICTIM, victim_inc, int(seq))
            return await denied(attacker, S.report(VICTIM, victim_inc), msg)

        async def finish_for_victim_on_own_subject() -> bool:
            msg = forged(MessageType.FINISH, VICTIM, victim_inc, int(seq))
            reply = await attacker.request(S.report(a.pod, a.inc), msg, 5)
            return Receipt.from_data(reply.data).result is ReceiptResult.FORGED

        async def ack_posing_as_victim() -> bool:
            msg = forged(MessageType.ACK, VICTIM, "new-incarnation", 0)
            reply = await attacker.request(S.join(a.pod, a.inc), msg, 5)
            return Receipt.from_data(reply.data).result is ReceiptResult.FORGED

        async def ack_for_victim_on_its_subject() -> bool:
            msg = forged(MessageType.ACK, VICTIM, "new-incarnation", 0)
            return await denied(attacker, S.join(VICTIM, "new-incarnation"), msg)

        async def ack_for_a_new_incarnation_of_my_pod() -> bool:
            msg = forged(MessageType.ACK, a.pod, "made-up", 0)
            return await denied(attacker, S.join(a.pod, "made-up"), msg)

        async def ack_naming_a_new_incarnation_on_my_subject() -> bool:
            msg = forged(MessageType.ACK, a.pod, "made-up", 0)
            reply = await attacker.request(S.join(a.pod, a.inc), msg, 5)
            return Receipt.from_data(reply.data).result is ReceiptResult.FORGED

        async def final_order() -> bool:
            order = core.orders.order_for()
            fake = Message(
                JOB, NAMESPACE, "master", MessageType.ORDER, order.phase,
                {**order.data, "final": "Succeed"}, time.time(), order.seq,
            )  # fmt: skip
            return await denied(attacker, S.master, fake)

        async def eviction_of_victim() -> bool:
            msg = core.orders.message(VICTIM, Eviction(victim_inc).to_data())
            return await denied(attacker, S.master, msg)

        async def heartbeat_for_victim() -> bool:
            msg = forged(MessageType.HEARTBEAT, VICTIM, victim_inc, 0)
            return await denied(attacker, S.heartbeat(VICTIM, victim_inc), msg)

        async def stop_the_job() -> bool:
            return await denied(attacker, S.ctl_controller, make_request(NAMESPACE, JOB, "stop"))

        async def read_ctl_replies() -> bool:
            return await denied(
                attacker, f"{S.ctl_inbox_prefix}.>", core.orders.order_for(), "subscription"
            )

        async def spoof_a_ctl_reply() -> bool:
            reply = core.orders.order_for()
            return await denied(attacker, f"{S.ctl_inbox_prefix}.abc.1", reply)

        async def read_victims_inbox() -> bool:
            return await denied(
                attacker, f"{S.inbox_prefix(VICTIM)}.>", core.orders.order_for(), "subscription"
            )

        async def read_all_reports() -> bool:
            return await denied(attacker, S.reports, core.orders.order_for(), "subscription")

        async def read_all_joins() -> bool:
            return await denied(attacker, S.joins, core.orders.order_for(), "subscription")

        async def report_naming_another_incarnation_of_my_pod() -> bool:
            before = core.extras.counters["impersonation"]
            msg = forged(MessageType.ERROR, a.pod, "an-older-incarnation", int(seq))
            reply = await attacker.request(S.report(a.pod, a.inc), msg, 5)
            forged_reply = Receipt.from_data(reply.data).result is ReceiptResult.FORGED
            return forged_reply and core.extras.counters["impersonation"] == before + 1

        async def report_on_another_incarnations_subject() -> bool:
            msg = forged(MessageType.ERROR, a.pod, "an-older-incarnation", int(seq))
            return await denied(attacker, S.report(a.pod, "an-older-incarnation"), msg)

        async def credential_for_victim() -> bool:
            try:
                await request_credentials(
                    grpc_server.address, namespace=NAMESPACE, job=JOB, pod_name=VICTIM,
                    proof=job_a.bootstrap_token, incarnation="made-up", attempts=1,
                )  # fmt: skip
            except CredentialsRejected as exc:
                return exc.code == grpc.StatusCode.PERMISSION_DENIED.name
            return False

        async def second_credential_for_victims_incarnation() -> bool:
            try:
                await request_credentials(
                    grpc_server.address, namespace=NAMESPACE, job=JOB, pod_name=VICTIM,
                    proof=job_a.bootstrap_token, incarnation=victim_inc, attempts=1,
                )  # fmt: skip
            except CredentialsRejected as exc:
                return "already holds a credential" in str(exc)
            return False

        attacks = {
            "Finish for another pod on its subject": finish_for_victim_on_its_subject,
            "Finish for another pod on my subject": finish_for_victim_on_own_subject,
            "ACK posing as another pod": ack_posing_as_victim,
            "ACK for another pod on its subject": ack_for_victim_on_its_subject,
            "ACK for a new incarnation of my pod on its subject": (
                ack_for_a_new_incarnation_of_my_pod
            ),
            "ACK naming a new incarnation on my subject": (
                ack_naming_a_new_incarnation_on_my_subject
            ),
            "final order on the order subject": final_order,
            "eviction order for another pod": eviction_of_victim,
            "heartbeat for another pod": heartbeat_for_victim,
            "ctl stop from a worker": stop_the_job,
            "reading ctl replies": read_ctl_replies,
            "inbox spoof against aegis ctl": spoof_a_ctl_reply,
            "reading another pod's inbox": read_victims_inbox,
            "reading every pod's reports": read_all_reports,
            "reading every pod's joins": read_all_joins,
            "report naming another incarnation of my pod": (
                report_naming_another_incarnation_of_my_pod
            ),
            "report on another incarnation's subject": report_on_another_incarnations_subject,
            "credential for another pod (token stolen)": credential_for_victim,
            "second credential for a live incarnation": second_credential_for_victims_incarnation,
        }
        before = core.state
        for name, attempt in attacks.items():
            await tally.attack(name, attempt)
        assert tally.refused == tally.tried, set(tally.tried) - set(tally.refused)
        assert core.state == before  # nothing the attacker sent changed the job
        print(f"attacks tried {len(tally.tried)}, refused {len(tally.refused)}")

        # the job then ends as it would have without the attacker
        for agent in (a, b):
            await agent.work("RunCommand")
        for agent in (a, b):
            assert (await agent.final()).code == 0
        assert await asyncio.wait_for(controller.task, 10) == 0
        assert core.terminal == "Succeed" and core.state.recoverCount == 0
        assert core.extras.command_orders == 1
        assert core.extras.counters["impersonation"] == 4
    finally:
        for agent in (a, b):
            await agent.bus.close()


async def test_a_worker_credential_cannot_reach_another_job(
    nats_server: NatsServer, job_a: JobAccount, job_b: JobAccount
) -> None:
    creds = job_a.account.new_user(PODS_A[0], job_a.worker_permissions(PODS_A[0], "i1"))
    bus = await Bus.connect(nats_server.url, creds)
    try:
        other = job_b.subjects
        msg = forged(MessageType.FINISH, PODS_A[0], "i", 1)
        assert await denied(bus, other.report(PODS_A[0], "i1"), msg)
        assert await denied(bus, other.master, msg, "subscription")
        with pytest.raises(BusError):
            await bus.request(other.report(PODS_A[0], "i1"), msg, 1)
    finally:
        await bus.close()
