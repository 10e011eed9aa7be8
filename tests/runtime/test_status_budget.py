"""A reason clipped to a byte budget, measured as the API server stores it."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from aegis.protocol.payloads import MAX_REASON
from aegis.runtime.controller.status_budget import (
    ELLIPSIS,
    StatusBudget,
    clip_to_bytes,
    stored_json_bytes,
)

# text with what costs most in a stored JSON string: escapes, HTML characters, astral planes
texts = st.text(
    st.one_of(
        st.sampled_from('"\\<>&\n\t\x00\x7f\u2028é€😀'),
        st.characters(exclude_categories=["Cs"]),
    ),
    max_size=80,
)


def go_json_bytes(text: str) -> int:
    """What Go's encoding/json writes for `text` (the API server's form): the standard
    library's JSON with HTML-escaped <, >, & and escaped U+2028/U+2029, in UTF-8."""
    out = json.dumps(text, ensure_ascii=False)
    for c, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        out = out.replace(c, esc)
    out = out.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return len(out.encode("utf-8"))


@given(texts)
def test_stored_bytes_are_what_go_writes_or_an_upper_bound(text: str) -> None:
    """Equal, except that the standard library writes \\b and \\f in 2 bytes where the
    budget counts 6 (an upper bound; older Go writes \\u0008)."""
    exact = go_json_bytes(text)
    counted = stored_json_bytes(text)
    assert counted == exact + 4 * sum(c in "\b\f" for c in text)


@given(texts, st.integers(0, 200))
def test_a_clipped_text_fits_and_keeps_what_fits(text: str, limit: int) -> None:
    clipped = clip_to_bytes(text, limit)
    if stored_json_bytes(text) <= limit:
        assert clipped == text
        return
    if limit < stored_json_bytes(ELLIPSIS):  # not even the ellipsis fits
        assert clipped == ""
        return
    assert stored_json_bytes(clipped) <= limit
    kept = clipped.removesuffix(ELLIPSIS)
    assert clipped.endswith(ELLIPSIS) and text.startswith(kept)
    # one character more would not have fitted
    assert stored_json_bytes(text[: len(kept) + 1] + ELLIPSIS) > limit


def test_the_budget_keeps_a_reasons_characters_and_then_its_bytes() -> None:
    assert StatusBudget().reason("x" * 900) == "x" * MAX_REASON  # no byte limit: characters
    clipped = StatusBudget(reason_bytes=100).reason("<" * 900)
    assert stored_json_bytes(clipped) <= 100 and clipped == "<" * 15 + ELLIPSIS
    assert StatusBudget(reason_bytes=100).reason("short") == "short"
