"""The state codec: its fast path for functions over model values writes what the general
path writes, and everything decodes back to the value."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from aegis.protocol.state_codec import decode, encode
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
