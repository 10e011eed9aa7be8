"""The state codec: its fast path for functions over model values writes what the general
path writes, and everything decodes back to the value."""

from __future__ import annotations

import json
import random
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from aegis.generated.aegis_phase import CFG_CONSTANTS, VARIABLES, next_states
from aegis.protocol.state_codec import StateEncoder, _encode_from, decode, encode, encode_state
from aegis.runtime.engine import initial_state
from aegis.values import Fn, ModelValue, sorted_values

NAMES = st.text("abcxyz-0123456789", min_size=1, max_size=8)
PLAIN = st.one_of(st.booleans(), st.integers(-5, 5), st.sampled_from(["", "Idle", "Exited"]))
VALUES = st.recursive(
    st.one_of(PLAIN, NAMES.map(ModelValue)),
    lambda inner: st.one_of(
        st.frozensets(inner, max_size=3),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.one_of(PLAIN, NAMES.map(ModelValue)), inner, max_size=3).map(Fn),
    ),
    max_leaves=12,
)


def general(v: Any) -> Any:
    """The codec's general rule, written out once more: keys in `sorted_values` order."""
    if isinstance(v, Fn):
        return {"fn": [[general(k), general(v[k])] for k in sorted_values(v)]}
    if isinstance(v, frozenset):
        return {"set": [general(x) for x in sorted_values(v)]}
    if isinstance(v, tuple):
        return {"seq": [general(x) for x in v]}
    return {"mv": v.name} if isinstance(v, ModelValue) else v


@settings(max_examples=300, deadline=None)
@given(
    per_worker=st.dictionaries(NAMES.map(ModelValue), VALUES, max_size=20).map(Fn),
    any_value=VALUES,
)
def test_the_fast_path_writes_what_the_general_rule_writes(per_worker: Fn, any_value: Any) -> None:
    for v in (per_worker, any_value):
        assert encode(v) == general(v)
        assert decode(encode(v)) == v


def test_model_values_sort_by_name_whatever_the_insertion_order() -> None:
    names = ["w10", "w2", "w1", "a", "w02"]
    f = Fn({ModelValue(n): i for i, n in enumerate(names)})
    g = Fn({ModelValue(n): i for i, n in reversed(list(enumerate(names)))})
    want = [[{"mv": n}, names.index(n)] for n in sorted(names)]
    assert encode(f) == encode(g) == {"fn": want}


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_the_state_encoder_writes_what_encode_state_writes_and_reuses_what_did_not_change(
    seed: int,
) -> None:
    """Along a random walk of the spec (with a state visited again), each encoding equals a
    fresh one, and a variable whose value is the same object is not encoded again."""
    c = CFG_CONSTANTS
    assert c is not None
    rng = random.Random(seed)
    encoder = StateEncoder()
    state = initial_state(c)
    last = encoder(state)
    reused = 0
    for _ in range(40):
        succ = list(next_states(c, state))
        if not succ:
            break
        nxt = rng.choice(succ)[2].state if rng.random() < 0.9 else state  # sometimes the same state
        out = encoder(nxt)
        assert out == encode_state(nxt)
        for name in VARIABLES:
            if getattr(nxt, name) is getattr(state, name):
                assert out[name] is last[name]  # not encoded again
                reused += isinstance(out[name], dict)
        state, last = nxt, out
    assert reused > 0


PER_WORKER = st.dictionaries(NAMES.map(ModelValue), VALUES, min_size=1, max_size=6)


@settings(max_examples=300, deadline=None)
@given(
    PER_WORKER,
    st.lists(st.tuples(st.integers(0, 5), VALUES), max_size=4),
    st.sampled_from(["same keys", "a key added", "a key removed"]),
)
@example({ModelValue("a"): 1, ModelValue("b"): 0}, [(0, True), (1, False)], "same keys")
def test_an_encoding_made_from_the_last_one_is_the_encoding(
    start: dict[ModelValue, Any], edits: list[tuple[int, Any]], domain: str
) -> None:
    """A function's encoding patched from its previous one (the entries that differ, TRUE
    beside 1 included) equals its encoding from scratch; keys added or removed start afresh."""
    keys = sorted(start, key=lambda k: k.name)
    items = dict(start)
    for i, v in edits:
        items[keys[i % len(keys)]] = v
    if domain == "a key added":
        items[ModelValue("~new")] = 1
    elif domain == "a key removed" and len(items) > 1:
        del items[keys[0]]
    old, new = Fn(start), Fn(items)
    text = json.dumps  # compared as JSON text: TRUE == 1 in Python, not in the encoding
    seen = _encode_from(None, old)
    assert text(seen[1]) == text(encode(old))
    again = _encode_from(seen, new)
    assert again[0] is new and text(again[1]) == text(encode(new)) == text(general(new))
    assert text(_encode_from(again, Fn(start))[1]) == text(encode(old))  # and back
