"""Whatever a peer sends, within what the wire decoder accepts, the controller answers or
drops it without raising, and what it then commits can be written and read back."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.protocol.errors import MalformedMessage
from aegis.runtime.controller.core import ControllerCore, JobConfig
from aegis.runtime.controller.store import FileStatusStore
from aegis.runtime.controller.wal import WriteAheadLog
from aegis.runtime.steplog import StepLog

PODS = ("job-worker-0", "job-worker-1")

# text that costs most to hold: escapes, lone surrogates, astral planes, long runs
texts = st.one_of(
    st.text(max_size=8),
    st.lists(st.one_of(st.characters(), st.integers(0xD800, 0xDFFF).map(chr)), max_size=8).map(
        "".join
    ),
    st.sampled_from(["", "<" * 600, "i1", "job-worker-0", "x" * 300]),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    texts,
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6,
)
KEYS = ["incarnation", "node", "podIP", "nodeIP", "reason", "step", "checks", "roundSeconds",
        "gpuType", "holds", "holdsPod", "beatS"]  # fmt: skip
# mostly what an agent of the job sends (valid, its text perhaps odd), sometimes anything
fields = st.fixed_dictionaries(
    {"incarnation": st.sampled_from(["i1", "i1", "i2"])},
    optional={
        "node": texts,
        "podIP": texts,
        "nodeIP": texts,
        "reason": texts,
        "step": st.integers(0, 2**63 - 1),
        "checks": st.lists(st.dictionaries(texts, values, max_size=3), max_size=2),
        "roundSeconds": st.floats(0, 1e9),
        "gpuType": texts,
    },
)
datas = st.one_of(
    fields,
    fields,
    st.dictionaries(st.one_of(st.sampled_from(KEYS), texts), values, max_size=6),
)
REPORTS = [MessageType.FINISH, MessageType.ERROR, MessageType.HANG, MessageType.CHECKPOINT,
           MessageType.EVICTED]  # fmt: skip
events = st.tuples(
    st.sampled_from([*PODS, *PODS, "job-worker-7"]),
    st.one_of(st.sampled_from(REPORTS), st.sampled_from(list(MessageType))),
    st.sampled_from(list(MessagePhase)),
    datas,
    st.one_of(st.integers(-1, 2), st.integers()),  # the job's masterSeq plus this, or any
)


def wire(pod: str, kind: MessageType, phase: MessagePhase, data: Any, seq: int) -> bytes:
    """The message as a peer's JSON library writes it (lone surrogates as escapes)."""
    obj = {"AegisName": "job", "AegisNamespace": "default", "PodName": pod, "Type": kind.value,
           "Phase": phase.value, "Data": data, "TimeStamp": time.time(), "Seq": seq}  # fmt: skip
    return json.dumps(obj).encode()


@settings(max_examples=150, deadline=None)
@given(st.lists(events, max_size=12))
def test_the_controller_never_raises_on_what_peers_send_and_commits_it(
    sent: list[tuple[str, MessageType, MessagePhase, Any, int]],
) -> None:
    """Mostly what the job's agents send, in the current order (seq), with any field odd, and
    now and then anything: each is handled without raising; the state it leads to commits,
    snapshots, and a controller resumed from the files has it."""
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        config = JobConfig("job", "default", PODS, 2)
        steplog = StepLog(tmp / "steps.jsonl")
        wal = WriteAheadLog(tmp / "wal.jsonl")
        core = ControllerCore(config, FileStatusStore(tmp / "status.json"), steplog, wal=wal)
        for pod in PODS:  # both joined: BootChecking
            ack = Message("job", "default", pod, MessageType.ACK, MessagePhase.BOOTCHECK,
                          {"incarnation": "i1"}, time.time(), 0)  # fmt: skip
            core.on_ack(ack)
        for pod, kind, phase, data, offset in sent:
            seq = int(core.state.masterSeq) + offset if -1 <= offset <= 2 else offset
            try:
                msg = Message.decode(wire(pod, kind, phase, data, seq))
            except MalformedMessage:
                continue
            if msg.type is MessageType.ACK:
                core.on_ack(msg)
            elif msg.type is MessageType.HEARTBEAT:
                core.on_heartbeat(msg)
            elif msg.type in (MessageType.ORDER, MessageType.CONTROL):
                continue  # the controller takes neither from a worker's subjects
            else:
                core.on_report(msg)
        core.journal.commit()
        core.journal.compact()
        steplog.close()
        wal.close()
        resumed = ControllerCore(config, FileStatusStore(tmp / "status.json"),
                                 wal=WriteAheadLog(tmp / "wal.jsonl"))  # fmt: skip
        assert resumed.state == core.state
        assert resumed.extras.reasons == core.extras.reasons
