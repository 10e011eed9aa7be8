"""Typed payloads: from_data inverts to_data, and anything else is MalformedMessage."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aegis.generated.aegis_phase.agent_view import DERIVED, GLOBALS, PER_POD
from aegis.protocol.errors import MalformedMessage
from aegis.protocol.payloads import (
    MAX_REASON,
    Eviction,
    Heartbeat,
    Order,
    Receipt,
    ReceiptResult,
    Report,
    Sender,
    parse_order,
)
from aegis.values import ModelValue

TEXT = st.text(max_size=30)
PORTS = st.integers(min_value=1, max_value=65535)
SPEC_VALUES = st.recursive(
    st.booleans() | st.integers(-(10**9), 10**9) | TEXT | st.builds(ModelValue, TEXT),
    lambda inner: st.frozensets(inner, max_size=3) | st.lists(inner, max_size=3).map(tuple),
    max_leaves=6,
)
orders = st.builds(
    Order,
    spec_phase=st.sampled_from(["BootChecking", "RunCommand", "Troubleshooting"]),
    final=st.sampled_from([None, "Succeed", "Failed"]),
    retry=st.integers(0, 10),
    max_retry=st.integers(0, 10),
    master_addr=TEXT,
    master_port=PORTS,
    check_port=PORTS,
    globals=st.fixed_dictionaries({n: SPEC_VALUES for n in GLOBALS}),
    derived=st.fixed_dictionaries({n: SPEC_VALUES for n in DERIVED}),
    pod=st.none() | st.fixed_dictionaries({n: st.booleans() for n in PER_POD}),
    finished=st.integers(0, 10**5),
    version=st.integers(0, 2**53),
)
senders = st.builds(Sender, incarnation=st.text(min_size=1, max_size=20), node=TEXT)
VERSIONS = st.none() | st.integers(-1, 2**53)
heartbeats = st.builds(Heartbeat, sender=senders, holds=VERSIONS, holds_pod=VERSIONS)
reports = st.builds(
    Report,
    sender=senders,
    reason=st.text(max_size=MAX_REASON),
    step=st.none() | st.integers(0, 10**9),
    round_seconds=st.none() | st.floats(0, 1e4, allow_nan=False),
    gpu_type=st.none() | st.text(max_size=20),
)


@given(orders)
def test_an_order_round_trips(order: Order) -> None:
    assert parse_order(order.to_data()) == order


@given(heartbeats)
def test_a_heartbeat_round_trips(beat: Heartbeat) -> None:
    assert Heartbeat.from_data(beat.to_data()) == beat


@given(reports)
def test_a_report_round_trips(report: Report) -> None:
    assert Report.from_data(report.to_data()) == report


def test_an_eviction_and_a_receipt_round_trip() -> None:
    assert parse_order(Eviction("abc").to_data()) == Eviction("abc")
    for result in ReceiptResult:
        assert Receipt.from_data(Receipt(result).to_data()) == Receipt(result)


GOOD_ORDER = Order(
    "RunCommand", None, 0, 2, "127.0.0.1", 29500, 29502,
    globals=dict.fromkeys(GLOBALS, 0), derived=dict.fromkeys(DERIVED, True),
    pod=dict.fromkeys(PER_POD, False),
).to_data()  # fmt: skip
VIEW = GOOD_ORDER["view"]
GOOD_REPORT = Report(Sender("inc")).to_data()


@pytest.mark.parametrize(
    "data",
    [
        {},
        {**GOOD_ORDER, "view": []},
        {**GOOD_ORDER, "view": {"globals": VIEW["globals"]}},
        {**GOOD_ORDER, "view": {**VIEW, "globals": {**VIEW["globals"], "innerPhase": 1}}},
        {**GOOD_ORDER, "view": {**VIEW, "globals": {"phase": "RunCommand"}}},
        {**GOOD_ORDER, "view": {**VIEW, "derived": {**VIEW["derived"], "Quiescent": {"x": 1}}}},
        {**GOOD_ORDER, "pod": {"slow": False}},
        {**GOOD_ORDER, "pod": []},
        {**GOOD_ORDER, "finished": -1},
        {**GOOD_ORDER, "finished": None},
        {**GOOD_ORDER, "version": -1},
        {**GOOD_ORDER, "version": "3"},
        {k: v for k, v in GOOD_ORDER.items() if k != "version"},
        {k: v for k, v in GOOD_ORDER.items() if k != "beatS"},
        {**GOOD_ORDER, "beatS": -1},
        {**GOOD_ORDER, "beatS": 61},
        {**GOOD_ORDER, "beatS": float("nan")},
        {**GOOD_ORDER, "beatS": True},
        {**GOOD_ORDER, "beatS": "5"},
        {**GOOD_ORDER, "masterPort": 70000},
        {**GOOD_ORDER, "masterPort": True},
        {**GOOD_ORDER, "retry": "1"},
        {**GOOD_ORDER, "final": 3},
        {"evicted": 5},
    ],
)
def test_a_bad_order_is_malformed(data: dict[str, Any]) -> None:
    with pytest.raises(MalformedMessage):
        parse_order(data)


@pytest.mark.parametrize(
    "data",
    [
        {},
        {**GOOD_REPORT, "incarnation": ""},
        {**GOOD_REPORT, "incarnation": 7},
        {**GOOD_REPORT, "reason": ["x"]},
        {**GOOD_REPORT, "step": 1.5},
        {**GOOD_REPORT, "checks": ["x"]},
        {**GOOD_REPORT, "roundSeconds": -1},
    ],
)
def test_a_bad_report_is_malformed(data: dict[str, Any]) -> None:
    with pytest.raises(MalformedMessage):
        Report.from_data(data)


def test_long_texts_are_cut_not_refused() -> None:
    data = {**GOOD_REPORT, "reason": "x" * 10_000, "node": "n" * 1000}
    report = Report.from_data(data)
    assert len(report.reason) == MAX_REASON and len(report.sender.node) == 253


def test_an_unknown_receipt_result_is_malformed() -> None:
    with pytest.raises(MalformedMessage, match="bogus"):
        Receipt.from_data({"result": "bogus"})


GOOD_BEAT = Heartbeat(Sender("inc"), 3, 2).to_data()


@pytest.mark.parametrize(
    "data",
    [
        {},
        {**GOOD_BEAT, "incarnation": ""},
        {**GOOD_BEAT, "holds": -2},
        {**GOOD_BEAT, "holds": "3"},
        {**GOOD_BEAT, "holds": True},
        {**GOOD_BEAT, "holdsPod": 1.0},
        {**GOOD_BEAT, "holdsPod": None},
    ],
)
def test_a_bad_heartbeat_is_malformed(data: dict[str, Any]) -> None:
    with pytest.raises(MalformedMessage):
        Heartbeat.from_data(data)
