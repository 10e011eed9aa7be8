"""A report's re-sends back off (the agent's waits for its receipt)."""

from __future__ import annotations

import itertools
import random

from hypothesis import given
from hypothesis import strategies as st

from aegis.runtime.agent.waits import REPORT_JITTER, join_waits, report_waits


@given(st.integers(min_value=0, max_value=2**32))
def test_report_waits_back_off_and_spread_the_fleet(seed: int) -> None:
    """The first two re-sends after 2 s (as before), then each wait at least the one before it
    less the jitter, never above 8 s plus the jitter; two agents do not wait in step."""
    waits = report_waits(random.Random(seed))
    assert all(2.0 <= w <= 2.0 * (1 + REPORT_JITTER) for w in waits[:2])
    assert all(w <= 8.0 * (1 + REPORT_JITTER) for w in waits)
    assert all(b >= a / (1 + REPORT_JITTER) for a, b in itertools.pairwise(waits))
    assert sum(waits) >= 50.0  # a series lasts long enough for a backlog of 12,500 reports
    assert waits != report_waits(random.Random(seed + 1))


@given(st.integers(min_value=0, max_value=2**32))
def test_an_ack_is_sent_again_after_1_s_then_backs_off_as_a_report(seed: int) -> None:
    """The join's ACK: the first copy again within 1.25 s (a controller that is up answers in
    ms), then the report's series; not a new ACK every second (issue 12: 12,500 agents
    behind a slow controller sent it 12,500 new requests a second)."""
    waits = join_waits(random.Random(seed))
    assert 1.0 <= waits[0] <= 1.0 * (1 + REPORT_JITTER)
    assert len(waits) == len(report_waits()) and sum(waits) >= 50.0
    assert all(b >= a / (1 + REPORT_JITTER) for a, b in itertools.pairwise(waits))
    assert all(w <= 8.0 * (1 + REPORT_JITTER) for w in waits)
