"""Timeline markers read the fault log's fields; an untyped record (written before faults were
typed) is shown as `other`; the kind of an agent's exit is one rule (aegis.protocol.faults)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from aegis.protocol.exitcodes import AgentExit
from aegis.protocol.faults import FaultKind, FaultRecord, RecoveryLevel, exit_kind
from aegis.timeline.events import fault_markers


def test_a_marker_takes_kind_level_and_node_from_the_record() -> None:
    record = FaultRecord(
        "w-1", "", "gpu-7", "", "RunCommand", "agent exited 1",
        time=5.0, kind=FaultKind.RESCHEDULE, level=RecoveryLevel.NODE, exit_code=1,
    )  # fmt: skip
    (m,), _ = fault_markers([json.loads(record.to_json())], ["w-1"])
    assert (m.pod, m.kind, m.level, m.node, m.label) == (
        "w-1", "reschedule", "3", "gpu-7", "Level 3: left gpu-7",
    )  # fmt: skip


def test_the_message_text_never_decides_the_kind() -> None:
    # an old line (no kind) whose message reads like a node fault, and a typed line whose
    # message reads like an error: each is what its fields say
    old = {"pod": "w-0", "message": "agent exited 1", "node": "n", "time": 1.0}
    typed = {"pod": "w-0", "message": "error: x", "kind": "hang", "level": None, "time": 2.0}
    markers, _ = fault_markers([typed, old], [])
    assert [(m.kind, m.level) for m in markers] == [
        ("other", None),
        ("hang", None),
    ]


@given(st.dictionaries(st.sampled_from(["pod", "kind", "level", "time", "rank"]), st.none()
                       | st.integers() | st.text(max_size=8) | st.booleans()))  # fmt: skip
def test_any_line_reads_as_a_record_without_raising(obj: dict[str, object]) -> None:
    r = FaultRecord.from_obj(obj)
    assert isinstance(r.kind, FaultKind) and (r.level is None or isinstance(r.level, RecoveryLevel))


def test_the_kind_of_an_agents_exit() -> None:
    assert exit_kind(AgentExit.NODE_FAULT, evicted=False) is FaultKind.RESCHEDULE
    assert exit_kind(AgentExit.NODE_FAULT, evicted=True) is FaultKind.EVICTED_EXIT
    assert exit_kind(AgentExit.RESTART_CONTAINER, evicted=False) is FaultKind.CONTAINER_RESTART
    assert exit_kind(AgentExit.RESTART_CONTAINER, evicted=True) is FaultKind.CONTAINER_RESTART
    assert exit_kind(-9, evicted=False) is FaultKind.POD_LOST
