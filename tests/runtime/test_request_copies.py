"""Copies of one request are handled once: the bookkeeping on random arrival orders."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from aegis.runtime.transport.request_copies import Copy, RequestCopies

SUBJECT = "aegis.ns.a.report.a-worker-0"
KEYS = [RequestCopies.key(SUBJECT, f"_INBOX.a.{i}", b"report") for i in range(4)]
# each step: a copy of request i arrives, or the running request i ends with reply r (None:
# not answered)
steps = st.lists(
    st.tuples(
        st.integers(0, 3), st.one_of(st.just("arrive"), st.sampled_from([b"r1", b"r2", None]))
    ),
    max_size=60,
)


@settings(max_examples=300)
@given(steps, st.integers(0, 3))
# keep 1: the second answer pushes the first out, and its next copy is handled afresh
@example([(0, "arrive"), (0, b"r1"), (1, "arrive"), (1, b"r2"), (0, "arrive")], 1)
def test_one_copy_runs_and_an_answer_is_repeated_until_it_is_forgotten(
    ops: list[tuple[int, object]], keep: int
) -> None:
    told: list[str] = []
    copies = RequestCopies(keep, on_copy=told.append)
    running: set[int] = set()
    expected_told: list[str] = []  # what each copy not handled again should be counted as
    answers: list[tuple[int, bytes]] = []  # (key, reply), oldest first, as answered
    for i, op in ops:
        key = KEYS[i]
        if op == "arrive":
            got = copies.arrived(key)
            kept = [r for k, r in answers[-keep:] if k == i] if keep else []
            if kept:  # answered within the last `keep` answers: that reply, not a handling
                assert got == kept[-1]
                expected_told.append("answered")
            elif i in running:
                assert got is Copy.RUNNING  # never two handlings of one request at once
                expected_told.append("dropped")
            else:
                assert got is Copy.NEW
                running.add(i)
        elif i in running:
            assert isinstance(op, bytes | type(None))
            copies.ended(key, op)
            running.discard(i)
            if op is not None:
                answers = [(k, r) for k, r in answers if k != i] + [(i, op)]
        assert copies.running == len(running)
    assert told == expected_told


def test_other_bytes_or_another_sender_on_the_same_reply_subject_are_another_request() -> None:
    copies = RequestCopies()
    first = RequestCopies.key(SUBJECT, "_INBOX.a.1", b'{"Seq": 1}')
    assert copies.arrived(first) is Copy.NEW
    copies.ended(first, b"receipt 1")
    assert copies.arrived(first) == b"receipt 1"
    assert copies.arrived(RequestCopies.key(SUBJECT, "_INBOX.a.1", b'{"Seq": 2}')) is Copy.NEW
    # the same bytes and reply subject, sent on another pod's subject: not a copy
    other = RequestCopies.key("aegis.ns.a.report.a-worker-1", "_INBOX.a.1", b'{"Seq": 1}')
    assert copies.arrived(other) is Copy.NEW
    assert (copies.answered, copies.dropped) == (1, 0)


def test_keep_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="keep"):
        RequestCopies(-1)
