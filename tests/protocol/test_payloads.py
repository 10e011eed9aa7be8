"""Typed payloads: from_data inverts to_data, and anything else is MalformedMessage."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aegis.protocol.errors import MalformedMessage
from aegis.protocol.payloads import (
    MAX_REASON,
    Eviction,
    Order,
    Receipt,
    ReceiptResult,
    Report,
    Sender,
    parse_order,
)

TEXT = st.text(max_size=30)
PORTS = st.integers(min_value=1, max_value=65535)
orders = st.builds(
    Order,
    spec_phase=st.sampled_from(["BootChecking", "RunCommand", "Troubleshooting"]),
    final=st.sampled_from([None, "Succeed", "Failed"]),
    state=st.fixed_dictionaries({"phase": st.just("RunCommand")}),
    retry=st.integers(0, 10),
    max_retry=st.integers(0, 10),
    master_addr=TEXT,
    master_port=PORTS,
    check_port=PORTS,
    world=st.lists(TEXT, min_size=1, max_size=5).map(tuple),
)
senders = st.builds(Sender, incarnation=st.text(min_size=1, max_size=20), node=TEXT)
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


@given(reports)
def test_a_report_round_trips(report: Report) -> None:
    assert Report.from_data(report.to_data()) == report


def test_an_eviction_and_a_receipt_round_trip() -> None:
    assert parse_order(Eviction("abc").to_data()) == Eviction("abc")
    for result in ReceiptResult:
        assert Receipt.from_data(Receipt(result).to_data()) == Receipt(result)


GOOD_ORDER = Order("RunCommand", None, {}, 0, 2, "127.0.0.1", 29500, 29502, ("a",)).to_data()
GOOD_REPORT = Report(Sender("inc")).to_data()


@pytest.mark.parametrize(
    "data",
    [
        {},
        {**GOOD_ORDER, "world": []},
        {**GOOD_ORDER, "world": [1]},
        {**GOOD_ORDER, "masterPort": 70000},
        {**GOOD_ORDER, "masterPort": True},
        {**GOOD_ORDER, "retry": "1"},
        {**GOOD_ORDER, "final": 3},
        {**GOOD_ORDER, "state": []},
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
