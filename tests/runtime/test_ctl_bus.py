"""Control requests to a controller on a real nats-server, as the job's ctl user: answers,
error replies to bad requests (the controller keeps serving), and the ctl user's limits."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import nats
import pytest
from nats.aio.client import RawCredentials

from aegis.protocol.control import make_request, reply_result
from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.runtime.errors import BusError
from aegis.runtime.transport.auth import JobAccount
from aegis.runtime.transport.bus import Bus
from aegis.runtime.transport.nats_server import NatsServer

from ..support import RunningController, first_request, running_controller
from .conftest import NAMESPACE, PODS_A

pytestmark = pytest.mark.asyncio(loop_scope="module")
PODS = PODS_A


def ctl_msg(data: dict[str, object], job: str = "train-a") -> Message:
    return Message(job, NAMESPACE, "ctl", MessageType.CONTROL, MessagePhase.COMMAND, data, 1.0)


async def test_ctl_against_a_controller(
    nats_server: NatsServer, job_a: JobAccount, tmp_path: Path, controller: RunningController
) -> None:
    service, task, master = controller.service, controller.task, controller.bus
    ctl = await Bus.connect(
        nats_server.url, job_a.ctl_credentials(), inbox_prefix=job_a.subjects.ctl_inbox_prefix
    )
    subject = job_a.subjects.ctl_controller
    try:
        status = reply_result(
            await first_request(ctl, subject, make_request(NAMESPACE, "train-a", "status"))
        )
        assert status["phase"] == "Pending" and sorted(status["pods"]) == list(PODS)

        taint = make_request(
            NAMESPACE, "train-a", "taint", node="node-9", reason="bad fan", force=True
        )
        assert reply_result(await ctl.request(subject, taint, 5)) == {
            "node": "node-9",
            "changed": True,
        }
        saved = json.loads((tmp_path / "status.json").read_text())
        assert [e["node"] for e in saved["errorNodes"]] == ["node-9"]

        # bad requests: each gets an error reply and changes nothing
        bad: list[tuple[dict[str, object], str]] = [
            ({"command": "reboot"}, "unknown command"),
            ({"command": "taint", "node": ["node-1"]}, "node must be a non-empty string"),
            ({"command": "status", "extra": 1}, "unknown argument"),
            ({"command": "hang"}, "command for an agent"),
            ({"nocommand": 1}, "no 'command'"),
        ]
        for data, error in bad:
            reply = await ctl.request(subject, ctl_msg(data), 5)
            assert reply.data["ok"] is False and error in reply.data["error"], reply.data
        reply = await ctl.request(subject, ctl_msg({"command": "status"}, job="train-b"), 5)
        assert "request for job team/train-b" in reply.data["error"]
        assert service.control.refused == len(bad) + 1
        # bytes that are no message at all are dropped by the bus (no reply), counted
        raw = await nats.connect(
            nats_server.url,
            user_credentials=RawCredentials(job_a.ctl_credentials().creds_text()),
            inbox_prefix=job_a.subjects.ctl_inbox_prefix,
        )
        try:
            with pytest.raises(nats.errors.TimeoutError):
                await raw.request(subject, b"\xff not json", timeout=0.5)
        finally:
            await raw.close()
        assert master.stats.malformed == 1
        # ... and the controller keeps serving
        untaint = make_request(NAMESPACE, "train-a", "untaint", node="node-9")
        assert reply_result(await ctl.request(subject, untaint, 5))["changed"] is True
        assert json.loads((tmp_path / "status.json").read_text())["errorNodes"] == []

        # an agent command to a pod whose agent is not there: nobody answers
        with pytest.raises(BusError, match="nobody is subscribed"):
            await ctl.request(
                job_a.subjects.ctl_agent(PODS[0]), make_request(NAMESPACE, "train-a", "hang"), 2
            )

        stop = reply_result(
            await ctl.request(subject, make_request(NAMESPACE, "train-a", "stop"), 5)
        )
        assert stop["accepted"] is True and stop["shouldQuit"] is True
        assert await asyncio.wait_for(task, 10) == 3  # the job ends Failed
        assert json.loads((tmp_path / "status.json").read_text())["phase"] == "Failed"
    finally:
        await ctl.close()


async def test_ctl_user_cannot_touch_orders_or_reports(
    nats_server: NatsServer, job_a: JobAccount
) -> None:
    for action, subject in (
        ("publish", job_a.subjects.report(PODS[0], "x")),
        ("subscription", job_a.subjects.master),
    ):
        ctl = await Bus.connect(nats_server.url, job_a.ctl_credentials())
        try:
            forged = Message(
                "train-a",
                NAMESPACE,
                PODS[0],
                MessageType.FINISH,
                MessagePhase.COMMAND,
                {"incarnation": "x"},
                1.0,
                1,
            )
            if action == "publish":
                await ctl.publish(subject, forged)
            else:
                await ctl.subscribe(subject, lambda m: asyncio.sleep(0))
            await ctl.flush()
            text = await ctl.wait_permission_denied(5)
            assert f'for {action} to "{subject}"' in text, text
        finally:
            await ctl.close()


async def test_a_worker_cannot_send_control_requests(
    nats_server: NatsServer, job_a: JobAccount
) -> None:
    from aegis.runtime.transport.auth import UserCredentials, new_user_keypair

    kp = new_user_keypair()
    jwt = job_a.worker_jwt(kp.public_key.decode(), PODS[0], "x")
    creds = UserCredentials(jwt, bytes(kp.seed))
    worker = await Bus.connect(nats_server.url, creds)
    try:
        subject = job_a.subjects.ctl_controller
        await worker.publish(subject, ctl_msg({"command": "stop"}))
        await worker.flush()
        text = await worker.wait_permission_denied(5)
        assert f'for publish to "{subject}"' in text, text
    finally:
        await worker.close()


async def test_a_taint_is_in_status_json_when_it_is_answered(
    nats_server: NatsServer, job_a: JobAccount, tmp_path: Path
) -> None:
    """With a write-ahead log, as `aegis controller` runs, a snapshot waits for the commits
    to pause; an operator's request does not: what it changed is in status.json before the
    answer (it was not, now and then, in the full suite)."""
    state = tmp_path / "state"
    state.mkdir()
    async with running_controller(
        nats_server.url, job_a, state / "status.json", PODS, wal=state / "wal.jsonl"
    ):
        ctl = await Bus.connect(
            nats_server.url, job_a.ctl_credentials(), inbox_prefix=job_a.subjects.ctl_inbox_prefix
        )
        subject = job_a.subjects.ctl_controller
        try:
            await first_request(ctl, subject, make_request(NAMESPACE, "train-a", "status"))
            for node in ("node-7", "node-8"):
                taint = make_request(
                    NAMESPACE, "train-a", "taint", node=node, reason="fan", force=True
                )
                assert reply_result(await ctl.request(subject, taint, 5))["changed"] is True
                saved = json.loads((state / "status.json").read_text())
                assert node in [e["node"] for e in saved["errorNodes"]]
        finally:
            await ctl.close()
