"""Mutants are anchored to the spec's structure: nearby edits and re-wrapping do not move them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aegis.errors import SpecError
from tools.tlc.anchor import expression_pattern, locate, source_part, unit_span

ROOT = Path(__file__).resolve().parents[2]
SPEC_TEXT = (ROOT / "spec" / "AegisPhase.tla").read_text(encoding="utf-8")

TOY = r"""---- MODULE Toy ----
(* --algorithm Toy {
variables x = 0, y = 0;
define {
    Small == x < 3
    \* a comment that mentions x < 3
    Big == x < 3 /\ y > 1
}
macro bump(v) {
    v := v + 1;
}
process (p = "p") {
Step:
    while (TRUE) {
        await Small;
        bump(x);
    }
}
process (q = "q") {
Other:
    while (TRUE) {
        bump(y);
    }
}
} *)
\* BEGIN TRANSLATION
Small == x < 3
\* END TRANSLATION
====
"""


def _text(span_owner: str, anchor: str) -> str:
    s = unit_span(source_part(span_owner), anchor)
    return span_owner[s.start : s.end]


def test_units_are_labels_macros_and_operators() -> None:
    assert _text(TOY, "Small").strip() == "Small == x < 3"  # not the comment after it
    assert "y > 1" in _text(TOY, "Big")
    assert _text(TOY, "bump").startswith("macro bump(v) {") and "v := v + 1" in _text(TOY, "bump")
    step = _text(TOY, "Step")
    assert "await Small" in step and "bump(y)" not in step  # ends with its process


def test_the_expression_is_found_only_inside_its_anchor() -> None:
    small = locate(TOY, "Small", "x < 3")
    big = locate(TOY, "Big", "x < 3")
    assert small != big
    assert small.start < TOY.index("\\* a comment") < big.start
    with pytest.raises(SpecError, match=r"anchor Other: 'await Small' occurs 0 times"):
        locate(TOY, "Other", "await Small")


def test_the_translation_is_never_searched() -> None:
    assert locate(TOY, "Small", "x < 3").start < TOY.index("BEGIN TRANSLATION")


def test_an_unknown_or_ambiguous_anchor_is_an_error() -> None:
    with pytest.raises(SpecError, match="anchor Nowhere: 0 labels, macros or operators"):
        locate(TOY, "Nowhere", "x")
    twice = TOY.replace("Big ==", "Small ==")
    with pytest.raises(SpecError, match="anchor Small: 2 labels"):
        locate(twice, "Small", "x < 3")


def test_an_expression_twice_in_its_anchor_is_an_error() -> None:
    with pytest.raises(SpecError, match="occurs 2 times"):
        locate(SPEC_TEXT, "forget_incarnation", "[w] := FALSE;")


def test_names_match_whole_words_only() -> None:
    assert expression_pattern("x < 3").search("xx < 3") is None
    assert expression_pattern("x < 3").search("(x<3)") is not None


# Tokens of real mutants' expressions, re-spaced: any whitespace, a line break with
# indentation, or a line comment between two tokens must not move the match.
GAPS = st.sampled_from([" ", "  ", "\n        ", " \\* a note\n    ", "\t"])


@settings(max_examples=60, deadline=None)
@given(gaps=st.lists(GAPS, min_size=12, max_size=12), which=st.integers(0, 2))
def test_re_wrapping_an_expression_does_not_move_the_anchor(gaps: list[str], which: int) -> None:
    anchor, expr = [
        ("FreshFinish", "m.seq = masterSeq /\\ m.seq > lastFinishSeq[m.from]"),
        ("CanHangWithQuit", "recoverCount + Cardinality(Evicting) < MaxRetry"),
        ("Receive", "m.seq = masterSeq /\\ Evicting # {}"),
    ][which]
    span = locate(SPEC_TEXT, anchor, expr)
    original = SPEC_TEXT[span.start : span.end]
    pieces = original.split(" ")
    rewrapped = pieces[0] + "".join(gaps[i % len(gaps)] + p for i, p in enumerate(pieces[1:]))
    edited = SPEC_TEXT[: span.start] + rewrapped + SPEC_TEXT[span.end :]
    moved = locate(edited, anchor, expr)
    assert edited[moved.start : moved.end] == rewrapped


def test_edits_elsewhere_do_not_break_an_anchor() -> None:
    # a new definition before the anchor, a comment inside it, and a reformatted neighbour
    spare = "    Spare == TRUE\n\n    \\* exhausted: over MaxRetry\n    Exhausted =="
    edited = SPEC_TEXT.replace("    Exhausted ==", spare)
    edited = re.sub(r"AllReady == ", "AllReady ==\n        ", edited, count=1)
    span = locate(edited, "Exhausted", "retries[w] > MaxRetry")
    assert edited[span.start : span.end] == "retries[w] > MaxRetry"
