"""The message schema: round trip, strict decoding, fuzzing (only MalformedMessage escapes)."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aegis.protocol.envelope import (
    MAX_MESSAGE_BYTES,
    Message,
    MessagePhase,
    MessageType,
)
from aegis.protocol.errors import MalformedMessage

labels = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?", fullmatch=True)
pods = st.one_of(
    st.just("master"), st.from_regex(r"[a-z0-9]([-a-z0-9.]{0,30}[a-z0-9])?", fullmatch=True)
)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=8,
)
messages = st.builds(
    Message,
    aegis_name=labels,
    aegis_namespace=labels,
    pod_name=pods,
    type=st.sampled_from(MessageType),
    phase=st.sampled_from(MessagePhase),
    data=st.dictionaries(st.text(), json_values, max_size=5),
    timestamp=st.floats(allow_nan=False, allow_infinity=False),
    seq=st.integers(min_value=0, max_value=2**63 - 1),
)


def wire(**overrides: Any) -> dict[str, Any]:
    base = {
        "AegisName": "train-a",
        "AegisNamespace": "team",
        "PodName": "train-a-worker-0",
        "Type": "Finish",
        "Phase": "command",
        "Data": {"exit": 0},
        "TimeStamp": 1700000000.5,
        "Seq": 3,
    }
    base.update(overrides)
    return base


@given(messages)
def test_round_trip(msg: Message) -> None:
    assert Message.decode(msg.encode()) == msg


@settings(max_examples=300)
@given(st.binary(max_size=512))
def test_arbitrary_bytes_raise_only_malformed(payload: bytes) -> None:
    with contextlib.suppress(MalformedMessage):
        Message.decode(payload)


small_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)
valid_fields = {
    "AegisName": labels,
    "AegisNamespace": labels,
    "PodName": pods,
    "Type": st.sampled_from([t.value for t in MessageType]),
    "Phase": st.sampled_from([p.value for p in MessagePhase]),
    "Data": st.dictionaries(st.text(max_size=3), small_json, max_size=3),
    "TimeStamp": st.floats(allow_nan=False, allow_infinity=False),
    "Seq": st.integers(min_value=0, max_value=2**63 - 1),
}
near_valid = st.fixed_dictionaries(
    {},
    optional={k: st.one_of(v, small_json) for k, v in valid_fields.items()} | {"Extra": small_json},
)


@settings(max_examples=200)
@given(near_valid)
def test_near_valid_objects_raise_only_malformed(obj: dict[str, Any]) -> None:
    try:
        msg = Message.decode(json.dumps(obj).encode())
    except MalformedMessage:
        return
    assert Message.decode(msg.encode()) == msg


def test_decodes_the_design_shape() -> None:
    msg = Message.decode(json.dumps(wire()).encode())
    assert msg.type is MessageType.FINISH and msg.phase is MessagePhase.COMMAND
    assert (msg.seq, msg.timestamp, dict(msg.data)) == (3, 1700000000.5, {"exit": 0})
    assert not msg.is_broadcast
    assert Message.decode(json.dumps(wire(PodName="master")).encode()).is_broadcast


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (json.dumps({k: v for k, v in wire().items() if k != "Seq"}), "missing key(s): Seq"),
        (json.dumps(wire(Extra=1)), "unknown key(s): Extra"),
        (json.dumps(wire(Type="Reboot")), "Type must be one of"),
        (json.dumps(wire(Phase="Command")), "Phase must be one of"),
        (json.dumps(wire(Seq=-1)), "Seq must be in"),
        (json.dumps(wire(Seq=True)), "Seq must be an integer"),
        (json.dumps(wire(Seq=1.0)), "Seq must be an integer"),
        (json.dumps(wire(TimeStamp="now")), "TimeStamp must be a finite number"),
        (json.dumps(wire(Data=[1])), "Data must be a JSON object"),
        (json.dumps(wire(AegisName="a.b")), "not a DNS-1123 label"),
        (json.dumps(wire(AegisNamespace="*")), "not a DNS-1123 label"),
        (json.dumps(wire(PodName="")), "pod name must be a non-empty"),
        (json.dumps(wire(AegisName=5)), "AegisName must be a string"),
        ('{"Seq": 1, "Seq": 2}', "duplicate key"),
        (json.dumps(wire(TimeStamp=float("nan"))), "NaN is not valid JSON"),
        (json.dumps(wire()).replace("1700000000.5", "1e999"), "out of range"),
        ("[1, 2]", "top level must be a JSON object"),
        ("{", "not UTF-8 JSON"),
        (b"\xff\xfe", "not UTF-8 JSON"),
        ("[" * 100_000, "not UTF-8 JSON"),
    ],
)
def test_rejections_say_why(payload: str | bytes, reason: str) -> None:
    raw = payload if isinstance(payload, bytes) else payload.encode()
    with pytest.raises(MalformedMessage, match=None) as info:
        Message.decode(raw)
    assert reason in info.value.reason


def test_size_limit_on_both_sides() -> None:
    with pytest.raises(MalformedMessage, match="exceeds"):
        Message.decode(b" " * (MAX_MESSAGE_BYTES + 1))
    big = Message(
        "a", "b", "c", MessageType.ERROR, MessagePhase.COMMAND, {"x": "y" * MAX_MESSAGE_BYTES}
    )
    with pytest.raises(MalformedMessage, match="exceeds"):
        big.encode()


def test_construction_validates_and_freezes() -> None:
    with pytest.raises(MalformedMessage, match="Seq"):
        Message("a", "b", "c", MessageType.ACK, MessagePhase.BOOTCHECK, seq=-3)
    with pytest.raises(MalformedMessage, match="not encodable"):
        Message("a", "b", "c", MessageType.ACK, MessagePhase.BOOTCHECK, {"x": object()}).encode()
    data = {"k": 1}
    msg = Message("a", "b", "c", "ACK", "bootcheck", data)  # type: ignore[arg-type]
    data["k"] = 2
    assert msg.data["k"] == 1 and msg.type is MessageType.ACK
    with pytest.raises(TypeError):
        msg.data["k"] = 3  # type: ignore[index]


# text as Python holds it, lone surrogates included (hypothesis's text() leaves them out)
texts_with_surrogates = st.lists(
    st.one_of(st.characters(), st.integers(0xD800, 0xDFFF).map(chr)), max_size=12
).map("".join)


def _wire(data: dict[str, Any]) -> bytes:
    """A message's wire form with `data` written by json.dumps: a surrogate as its escape."""
    good = Message("j", "ns", "j-worker-0", MessageType.ERROR, MessagePhase.COMMAND, {}, 1.0, 1)
    obj = {**json.loads(good.encode()), "Data": data}
    return json.dumps(obj).encode()


@given(texts_with_surrogates, texts_with_surrogates)
def test_text_with_lone_surrogates_decodes_to_text_utf8_can_hold(key: str, value: str) -> None:
    """Whatever strings a peer's JSON escapes make, the decoded message holds only text that
    UTF-8 can encode (the controller writes it to its status, WAL and step log), and text
    without surrogates is read as it was sent."""
    try:
        msg = Message.decode(_wire({"x" + key: value, "reason": [value]}))
    except MalformedMessage as exc:  # cannot be: the two keys differ outside surrogates
        raise AssertionError(exc) from None
    ((k, v),) = [(k, v) for k, v in msg.data.items() if k != "reason"]
    for text in (k, v, msg.data["reason"][0]):
        text.encode("utf-8")
    if not any(0xD800 <= ord(c) <= 0xDFFF for c in key + value):
        assert (k, v) == ("x" + key, value)
    assert Message.decode(msg.encode()) == msg


def test_keys_that_differ_only_in_their_lone_surrogates_are_duplicates() -> None:
    with pytest.raises(MalformedMessage, match="duplicate key"):
        Message.decode(_wire({"a" + chr(0xD800): 1, "a" + chr(0xDC00): 2}))


@given(texts_with_surrogates)
def test_a_message_whose_text_holds_a_lone_surrogate_encodes_it_as_u_fffd(reason: str) -> None:
    """An agent's reason with a lone surrogate (from an exception's text) is sent, the
    surrogate as U+FFFD; other text as it is."""
    data = {"reason": reason}
    msg = Message("j", "ns", "j-worker-0", MessageType.ERROR, MessagePhase.COMMAND, data, 1.0, 1)
    sent = Message.decode(msg.encode())
    expected = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in reason)
    assert sent.data["reason"] == expected
