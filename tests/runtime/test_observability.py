"""JobObserver (reports -> CheckMetrics, never raising) and the asyncio /metrics endpoint."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from aegis.checks.faultlog import FaultRecord
from aegis.checks.result import passed
from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.runtime.controller import observability as observability
from aegis.runtime.controller.observability import (
    JobObserver,
    MetricsServer,
    observer_counts,
    write_textfile,
)


def report(phase: MessagePhase, **data: Any) -> Message:
    return Message("j", "ns", "j-worker-0", MessageType.FINISH, phase, data, time.time(), 1)


def checks(*names: str) -> list[dict[str, Any]]:
    return [passed(n, "ok", time.monotonic()).to_dict() for n in names]


def good(phase: MessagePhase = MessagePhase.BOOTCHECK, **over: Any) -> Message:
    data: dict[str, Any] = {
        "checks": checks("env", "collective"),
        "roundSeconds": 1.5,
        "gpuType": "cpu",
        "round": 1,
        **over,
    }
    return report(phase, **data)


def sample(obs: JobObserver, name: str, **labels: str) -> float | None:
    return obs.metrics.registry.get_sample_value(name, labels)


def test_rounds_and_jobs_are_counted() -> None:
    obs = JobObserver(2)
    obs.job_started(fresh=True)
    assert sample(obs, "aegis_jobs_total", event="created", gpu_type="cpu", worker_num="2") is None
    obs.on_report(good())
    obs.on_report(good(MessagePhase.TROUBLESHOOT, checks=checks("io"), round=4))
    obs.on_report(report(MessagePhase.COMMAND, reason="exit 0"))  # not a check round: ignored
    dims = {"gpu_type": "cpu", "worker_num": "2"}
    assert sample(obs, "aegis_bootcheck_duration_seconds_count", round="1", **dims) == 1
    assert sample(obs, "aegis_bootcheck_duration_seconds_sum", round="1", **dims) == 1.5
    assert sample(obs, "aegis_troubleshoot_duration_seconds_count", round="4", **dims) == 1
    for check, rnd in (("env", "1"), ("collective", "1"), ("io", "4")):
        got = sample(obs, "aegis_check_duration_seconds_count", check_type=check, round=rnd, **dims)
        assert got == 1
    assert sample(obs, "aegis_jobs_total", event="created", **dims) == 1
    obs.job_ended("Succeed")
    obs.job_ended("Succeed")  # once
    assert sample(obs, "aegis_jobs_total", event="succeeded", **dims) == 1
    assert observer_counts(obs) == {}


def test_a_resumed_job_is_not_created_again_and_unknown_gpu_is_said() -> None:
    obs = JobObserver(3)
    obs.job_started(fresh=False)
    obs.job_ended("Failed")
    dims = {"gpu_type": "unknown", "worker_num": "3"}
    assert sample(obs, "aegis_jobs_total", event="failed", **dims) == 1
    assert sample(obs, "aegis_jobs_total", event="created", **dims) is None
    fresh = JobObserver(3)
    fresh.job_started(fresh=True)
    fresh.job_ended(None)  # stopped by a signal: not an end of the job
    assert sample(fresh, "aegis_jobs_total", event="created", **dims) is None
    fresh.job_ended("Failed")
    assert sample(fresh, "aegis_jobs_total", event="created", **dims) == 1


@pytest.mark.parametrize(
    ("over", "reason"),
    [
        ({"checks": "env"}, "checks"),
        ({"checks": [1, 2]}, "checks"),
        ({"checks": [{"check_type": "env"}]}, "checks"),
        ({"checks": [{**checks("env")[0], "duration_s": -1}]}, "checks"),
        ({"roundSeconds": "1"}, "roundSeconds"),
        ({"roundSeconds": True}, "roundSeconds"),
        ({"roundSeconds": -2}, "roundSeconds"),
        ({"gpuType": 3}, "gpuType"),
        ({"gpuType": ""}, "gpuType"),
        ({"round": "1"}, "round"),
        ({"round": -1}, "round"),
    ],
)
def test_malformed_reports_are_counted_and_ignored(over: dict[str, Any], reason: str) -> None:
    obs = JobObserver(2)
    obs.job_started(fresh=True)
    obs.on_report(good(**over))
    assert observer_counts(obs) == {reason: 1}
    text = obs.exposition().decode()
    assert "aegis_bootcheck_duration_seconds_count" not in text
    assert f'aegis_observer_dropped_reports_total{{reason="{reason}"}} 1.0' in text


def test_textfile(tmp_path: Path) -> None:
    obs = JobObserver(1)
    obs.on_report(good())
    write_textfile(obs, tmp_path / "metrics.prom")
    assert "aegis_bootcheck_duration_seconds_count" in (tmp_path / "metrics.prom").read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.prom"]


async def http(port: int, request: bytes) -> tuple[str, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    data = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return head.decode().split("\r\n")[0], body


async def test_metrics_endpoint() -> None:
    obs = JobObserver(2)
    obs.on_report(good())
    server = MetricsServer(obs, "127.0.0.1", 0)
    await server.start()
    try:
        assert server.url == f"http://127.0.0.1:{server.port}/metrics"
        line, body = await http(server.port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        assert line == "HTTP/1.1 200 OK"
        assert b'aegis_check_duration_seconds_count{check_type="env"' in body
        line, body = await http(server.port, b"HEAD /metrics HTTP/1.0\r\n\r\n")
        assert line == "HTTP/1.1 200 OK" and body == b""
        assert (await http(server.port, b"GET / HTTP/1.1\r\n\r\n"))[0].endswith("404 Not Found")
        line, _ = await http(server.port, b"POST /metrics HTTP/1.1\r\n\r\n")
        assert line.endswith("405 Method Not Allowed")
        assert (await http(server.port, b"\x00garbage\r\n\r\n"))[0].endswith("400 Bad Request")
        # a client that says nothing and leaves does not disturb the next one
        _, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.close()
        assert (await http(server.port, b"GET /metrics HTTP/1.1\r\n\r\n"))[0].endswith("200 OK")
    finally:
        await server.close()


def test_a_fault_is_timed_until_the_next_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """From the first fault not yet followed by an order to the next order published; an
    order with no fault before it is not a sample."""
    clock = [100.0]
    monkeypatch.setattr(observability.time, "monotonic", lambda: clock[0])
    obs = JobObserver(2)

    def fault(pod: str) -> None:
        obs.on_fault(FaultRecord(pod, "", "node-1", "", "RunCommand", "agent exited 137"))

    obs.order_published()  # no fault yet
    assert sample(obs, "aegis_fault_to_order_seconds_count") == 0
    fault("w0")
    clock[0] += 0.03
    fault("w1")  # the clock already runs for w0's fault
    clock[0] += 0.04
    obs.order_published()
    obs.order_published()  # nothing new since
    assert sample(obs, "aegis_fault_to_order_seconds_count") == 1
    assert sample(obs, "aegis_fault_to_order_seconds_sum") == pytest.approx(0.07)
    assert sample(obs, "aegis_fault_to_order_seconds_bucket", le="0.07") == 0
    assert sample(obs, "aegis_fault_to_order_seconds_bucket", le="0.08") == 1


def test_report_copies_not_handled_again_are_counted_by_outcome() -> None:
    """What the controller's report subscription tells the observer (RequestCopies.on_copy)."""
    from aegis.runtime.transport.request_copies import Copy, RequestCopies

    obs = JobObserver(2)
    copies = RequestCopies(on_copy=obs.on_report_copy)
    key = RequestCopies.key("aegis.ns.j.report.j-worker-0", "_INBOX.j.1", b"report")
    assert copies.arrived(key) is Copy.NEW  # the first: handled, not counted
    assert copies.arrived(key) is Copy.RUNNING
    assert copies.arrived(key) is Copy.RUNNING
    copies.ended(key, b"receipt")
    assert copies.arrived(key) == b"receipt"
    assert sample(obs, "aegis_report_copies_total", outcome="dropped") == 2
    assert sample(obs, "aegis_report_copies_total", outcome="answered") == 1
