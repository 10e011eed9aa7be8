"""The launcher's events on the controller's stdin are typed (aegis.protocol.launcher_events):
a line that is not one is refused with a log line, and the controller goes on reading (a
JSON line without a key used to end the controller's event task, and the controller)."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.protocol.errors import MalformedMessage
from aegis.protocol.launcher_events import PodLost, Quit, parse_event
from aegis.runtime.controller.core import ControllerCore, JobConfig
from aegis.runtime.controller.service import ControllerService
from aegis.runtime.controller.store import FileStatusStore

PODS = ("job-worker-0", "job-worker-1")


class NoBus:
    """The service's bus where nothing is published (the job stays in Pending)."""

    async def publish(self, subject: str, message: Message) -> None:
        raise AssertionError(f"nothing is published in Pending: {subject}")


@given(
    st.builds(
        PodLost, st.text(max_size=20), st.text(max_size=20), st.integers(-255, 255), st.text()
    )
)
def test_an_event_reads_back_as_it_was_written(event: PodLost) -> None:
    assert parse_event(event.to_line()) == event
    assert parse_event(Quit().to_line()) == Quit()


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (b'{"event": "lost"}\n', "lacks 'pod'"),
        (b'{"event": "lost", "pod": "p", "incarnation": "i", "exitCode": "1"}\n', "int"),
        (b'{"event": "lost", "pod": "p", "incarnation": "i", "exitCode": true}\n', "int"),
        (b'{"event": "restart"}\n', "unknown launcher event"),
        (b"[1, 2]\n", "not a JSON object"),
        (b"lost p i 1\n", "not JSON"),
    ],
)
def test_a_line_that_is_not_an_event_is_refused_saying_why(line: bytes, says: str) -> None:
    with pytest.raises(MalformedMessage, match=says):
        parse_event(line)


async def test_the_controller_refuses_bad_lines_and_handles_the_next_event(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    core = ControllerCore(JobConfig("job", "default", PODS, 2), FileStatusStore(tmp_path / "s"))
    bus: Any = NoBus()
    service = ControllerService(core, bus)
    ack = Message(
        "job", "default", PODS[0], MessageType.ACK, MessagePhase.BOOTCHECK,
        {"incarnation": "i1"}, time.time(), 0,
    )  # fmt: skip
    core.on_ack(ack)
    await service.commits.commit_locked()
    assert core.extras.incarnations == {PODS[0]: "i1"}
    reader = asyncio.StreamReader(limit=1024)
    for line in (
        b'{"event": "lost"}\n',  # no pod: this one used to stop the controller
        b"not json\n",
        b'{"event": "lost", "pod": "' + b"x" * 2000 + b'"}\n',  # past the reader's limit
        PodLost(PODS[0], "i1", 137, "node-1").to_line(),
    ):
        reader.feed_data(line)
    reader.feed_eof()
    with caplog.at_level(logging.WARNING):
        await asyncio.wait_for(service._read_events(reader), 10)
    assert service.refused_events == 3
    assert sum("launcher event refused" in r.getMessage() for r in caplog.records) == 3
    assert core.extras.incarnations[PODS[0]] is None  # the pod loss after them was handled
    assert core.faults.last[PODS[0]].exit_code == 137
    await service.close()
