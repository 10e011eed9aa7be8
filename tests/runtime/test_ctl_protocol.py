"""The ctl wire protocol and both handlers, without a network: strict validation, error
replies instead of exceptions, the ctl user's permissions and subjects."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from aegis.protocol.control import (
    AGENT_COMMANDS,
    CONTROLLER_COMMANDS,
    DEFAULT_BURN_S,
    DEFAULT_CTL_CHECKS,
    ControlError,
    make_reply,
    make_request,
    reply_result,
    validate,
)
from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.protocol.subjects import JobSubjects
from aegis.runtime.control import ControllerControl, handle_agent_request
from aegis.runtime.controller.core import ControllerCore, JobConfig, Outcome
from aegis.runtime.controller.store import FileStatusStore
from aegis.runtime.transport.auth import Operator

PODS = ("j-worker-0", "j-worker-1")


def raw(data: dict[str, Any], kind: MessageType = MessageType.CONTROL, job: str = "j") -> Message:
    return Message(job, "ns", "ctl", kind, MessagePhase.COMMAND, data, time.time())


def test_subjects_and_ctl_credentials() -> None:
    s = JobSubjects("ns", "j")
    assert s.ctl_controller == "aegis.ns.j.ctl.controller"
    assert s.ctl_agent("j-worker-0") == "aegis.ns.j.ctl.agent.j-worker-0"
    assert s.ctl_wildcard == "aegis.ns.j.ctl.>"
    with pytest.raises(ValueError):
        s.ctl_agent("a.>")
    job = Operator().create_job_account("ns", "j")
    body = job.ctl_credentials().user_jwt.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    # requests on the ctl subjects only; replies in ctl's own inbox, which no worker can read
    assert claims["nats"]["pub"] == {"allow": ["aegis.ns.j.ctl.>"]}
    assert claims["nats"]["sub"] == {"allow": ["_INBOX_ns_j__ctl.>"]}
    assert claims["name"] == "ctl" and claims["iss"] == job.account.public_key


def test_requests_are_validated_and_defaulted() -> None:
    req = validate("taint", {"node": "node-3"}, CONTROLLER_COMMANDS)
    assert req.args == {
        "node": "node-3",
        "reason": "tainted by the operator (aegis ctl)",
        "force": False,
    }
    assert validate("check", {}, AGENT_COMMANDS).args == {"checks": DEFAULT_CTL_CHECKS}
    assert validate("burn", {"seconds": 2}, AGENT_COMMANDS).args == {"seconds": 2.0}
    assert validate("burn", {}, AGENT_COMMANDS).args == {"seconds": DEFAULT_BURN_S}
    msg = make_request("ns", "j", "hang", reason="slow")
    assert (msg.type, msg.pod_name, dict(msg.data)) == (
        MessageType.CONTROL,
        "ctl",
        {"command": "hang", "reason": "slow"},
    )


@pytest.mark.parametrize(
    ("command", "args", "allowed", "error"),
    [
        ("reboot", {}, CONTROLLER_COMMANDS, "unknown command 'reboot'"),
        (3, {}, CONTROLLER_COMMANDS, "unknown command 3"),
        ("hang", {}, CONTROLLER_COMMANDS, "hang is a command for an agent"),
        ("status", {}, AGENT_COMMANDS, "status is a command for the controller"),
        ("status", {"verbose": True}, CONTROLLER_COMMANDS, "unknown argument"),
        ("taint", {}, CONTROLLER_COMMANDS, "missing argument 'node'"),
        ("taint", {"node": 7}, CONTROLLER_COMMANDS, "node must be a non-empty string"),
        ("taint", {"node": "Node_1"}, CONTROLLER_COMMANDS, "is not a DNS-1123 subdomain"),
        ("taint", {"node": "n", "reason": ["x"]}, CONTROLLER_COMMANDS, "reason must be a str"),
        ("taint", {"node": "n", "reason": "a\nb"}, CONTROLLER_COMMANDS, "control characters"),
        ("taint", {"node": "n", "reason": "x" * 501}, CONTROLLER_COMMANDS, "limit is 500"),
        ("burn", {"seconds": True}, AGENT_COMMANDS, "seconds must be a number"),
        ("burn", {"seconds": "5"}, AGENT_COMMANDS, "seconds must be a number"),
        ("burn", {"seconds": 0}, AGENT_COMMANDS, "must be > 0"),
        ("burn", {"seconds": 601}, AGENT_COMMANDS, "must be > 0 and <= 600"),
        ("check", {"checks": "io"}, AGENT_COMMANDS, "non-empty list"),
        ("check", {"checks": []}, AGENT_COMMANDS, "non-empty list"),
        ("check", {"checks": ["io", 1]}, AGENT_COMMANDS, "must be strings"),
        ("check", {"checks": ["collective"]}, AGENT_COMMANDS, "collective check"),
        ("check", {"checks": ["io", "io"]}, AGENT_COMMANDS, "twice"),
    ],
)
def test_bad_requests_say_what_is_wrong(
    command: object, args: dict[str, object], allowed: Sequence[str], error: str
) -> None:
    with pytest.raises(ControlError, match=error.replace("(", r"\(")):
        validate(command, args, allowed)


def test_replies() -> None:
    req = make_request("ns", "j", "status")
    assert reply_result(make_reply(req, ok=True, result={"phase": "x"})) == {"phase": "x"}
    with pytest.raises(ControlError, match="nope"):
        reply_result(make_reply(req, ok=False, error="nope"))
    with pytest.raises(ControlError, match="not a control reply"):
        reply_result(raw({"result": "applied"}, MessageType.ACK))
    # a result that cannot be sent (not JSON, or too big) becomes an error reply
    assert "cannot be sent" in make_reply(req, ok=True, result={1, 2}).data["error"]
    big = make_reply(req, ok=True, result="x" * (2 << 20))
    assert big.data["ok"] is False and "exceeds" in big.data["error"]


# ---------------- the controller's handler on a real core ----------------


def control(tmp: Path) -> tuple[ControllerControl, ControllerCore, list[str]]:
    core = ControllerCore(JobConfig("j", "ns", PODS, 2), FileStatusStore(tmp / "status.json"))
    applied: list[str] = []

    async def apply(handle: Callable[[], Outcome]) -> Message | None:
        applied.append(getattr(handle, "__name__", "?"))
        return handle().reply

    return ControllerControl(core, apply, "ns", "j"), core, applied


async def test_controller_commands(tmp_path: Path) -> None:
    ctl, core, applied = control(tmp_path)
    status = reply_result(await ctl.handle(make_request("ns", "j", "status")))
    assert status["phase"] == "Pending" and set(status["pods"]) == set(PODS)
    # a node none of the job's pods ran on: refused as a likely typo, unless forced
    with pytest.raises(ControlError, match="node node-7 is not a node of this job"):
        reply_result(await ctl.handle(make_request("ns", "j", "taint", node="node-7")))
    assert core.status.error_nodes == ()
    forced = make_request("ns", "j", "taint", node="node-7", reason="r", force=True)
    r = reply_result(await ctl.handle(forced))
    assert r == {"node": "node-7", "changed": True}
    saved = json.loads((tmp_path / "status.json").read_text())
    assert [(e["node"], e["reason"]) for e in saved["errorNodes"]] == [("node-7", "r")]
    # an error node is known: tainting it again needs no force, and changes nothing
    r = reply_result(await ctl.handle(make_request("ns", "j", "taint", node="node-7")))
    assert r["changed"] is False
    assert reply_result(await ctl.handle(make_request("ns", "j", "untaint", node="node-7")))[
        "changed"
    ]
    assert json.loads((tmp_path / "status.json").read_text())["errorNodes"] == []
    r = reply_result(await ctl.handle(make_request("ns", "j", "untaint", node="node-7")))
    assert r["changed"] is False
    r = reply_result(await ctl.handle(make_request("ns", "j", "stop")))
    assert applied == ["on_quit"] and r["accepted"] and r["shouldQuit"]
    assert ctl.refused == 1  # the unforced taint
    assert core.terminal == "Failed"
    r = reply_result(await ctl.handle(make_request("ns", "j", "stop")))
    assert r["accepted"] is False and ctl.refused == 1


@pytest.mark.parametrize(
    ("msg", "error"),
    [
        (raw({"command": "hang"}), "hang is a command for an agent"),
        (raw({}), "no 'command'"),
        (raw({"command": "status", "x": 1}), "unknown argument"),
        (raw({"command": "status"}, MessageType.ACK), "expected a Control message"),
        (raw({"command": "status"}, job="other"), "request for job ns/other"),
        (raw({"command": "taint", "node": ""}), "non-empty string"),
    ],
)
async def test_controller_refuses_bad_requests(tmp_path: Path, msg: Message, error: str) -> None:
    ctl, core, applied = control(tmp_path)
    before = core.state
    reply = await ctl.handle(msg)
    assert reply.type is MessageType.CONTROL and reply.data["ok"] is False
    assert error in reply.data["error"] and ctl.refused == 1
    assert core.state == before and applied == []


async def test_controller_survives_a_failing_core(tmp_path: Path) -> None:
    ctl, core, _ = control(tmp_path)

    def broken() -> dict[str, Any]:
        raise RuntimeError("boom")

    core.status_view = broken  # type: ignore[method-assign]
    reply = await ctl.handle(make_request("ns", "j", "status"))
    assert reply.data["ok"] is False and "boom" in reply.data["error"]


# ---------------- the agent's handler ----------------


class FakeAgent:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    async def ctl_hang(self, reason: str) -> dict[str, Any]:
        self.calls.append(("hang", reason))
        return {"marked": True}

    async def ctl_check(self, checks: Sequence[str]) -> list[dict[str, Any]]:
        self.calls.append(("check", list(checks)))
        return [{"check_type": c, "passed": True} for c in checks]

    async def ctl_burn(self, seconds: float) -> list[dict[str, Any]]:
        self.calls.append(("burn", seconds))
        if seconds > 100:
            raise RuntimeError("device lost")
        return [{"check_type": "burn", "passed": True, "seconds": seconds}]


async def test_agent_commands_and_errors() -> None:
    agent = FakeAgent()
    assert reply_result(
        await handle_agent_request(agent, make_request("ns", "j", "hang", reason="slow"))
    ) == {"marked": True}
    got = reply_result(await handle_agent_request(agent, make_request("ns", "j", "check")))
    assert [r["check_type"] for r in got] == list(DEFAULT_CTL_CHECKS)
    got = reply_result(await handle_agent_request(agent, make_request("ns", "j", "burn")))
    assert got[0]["seconds"] == DEFAULT_BURN_S
    assert agent.calls == [
        ("hang", "slow"),
        ("check", list(DEFAULT_CTL_CHECKS)),
        ("burn", DEFAULT_BURN_S),
    ]
    # refused before the agent is called; a failing agent becomes an error reply
    for bad, error in [
        (raw({"command": "stop"}), "command for the controller"),
        (raw({"command": "burn", "seconds": -1}), "must be > 0"),
        (raw({"command": "check", "checks": ["gpu", "nope"]}), "unknown or collective"),
    ]:
        reply = await handle_agent_request(agent, bad)
        assert reply.data["ok"] is False and error in reply.data["error"]
    reply = await handle_agent_request(agent, make_request("ns", "j", "burn", seconds=200))
    assert reply.data["ok"] is False and "device lost" in reply.data["error"]
    assert len(agent.calls) == 4
