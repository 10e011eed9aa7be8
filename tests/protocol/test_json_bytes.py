"""aegis.protocol.json_bytes: orjson's encoding with the standard library's answers."""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
import tracemalloc
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aegis.protocol.json_bytes import dumps

scalars = (
    st.none()
    | st.booleans()
    | st.integers()  # past 64 bits too: orjson refuses those, the standard library writes them
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
keys = st.text()
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=20,
)


def stdlib(obj: Any, sort_keys: bool = False) -> bytes:
    text = json.dumps(
        obj, sort_keys=sort_keys, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return text.encode("utf-8")


def floats_in(obj: Any) -> bool:
    if isinstance(obj, float):
        return True
    if isinstance(obj, dict):
        return any(floats_in(v) for v in obj.values())
    return isinstance(obj, list) and any(floats_in(v) for v in obj)


@given(values, st.booleans())
def test_the_standard_librarys_json(obj: Any, sort_keys: bool) -> None:
    try:
        out = dumps(obj, sort_keys=sort_keys)
    except ValueError:  # a lone surrogate in a string: not UTF-8, refused by both
        with pytest.raises(ValueError):
            stdlib(obj, sort_keys)
        return
    assert json.loads(out) == obj
    if not floats_in(obj):  # a float's exponent may be written "1e16" or "1e+16"
        assert out == stdlib(obj, sort_keys)
    if sort_keys and isinstance(obj, dict):
        assert list(json.loads(out)) == sorted(obj)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("where", ["top", "list", "dict", "deep"])
def test_nan_and_the_infinities_are_refused_not_written_as_null(bad: float, where: str) -> None:
    obj = {
        "top": bad,
        "list": [1, bad],
        "dict": {"a": "x", "b": bad},
        "deep": {"a": [{"b": [bad]}]},
    }[where]
    with pytest.raises(ValueError, match="JSON compliant"):
        dumps(obj)
    with pytest.raises(ValueError):
        dumps(obj, sort_keys=True)


def test_what_orjson_refuses_is_written_as_the_standard_library_writes_it() -> None:
    obj = {"big": 1 << 70, 3: "int key", "s": "é"}
    assert dumps(obj) == stdlib(obj)
    deep: Any = []
    for _ in range(300):  # past orjson's nesting limit
        deep = [deep]
    assert dumps(deep) == stdlib(deep)


def test_what_the_standard_library_refuses_is_refused() -> None:
    @dataclasses.dataclass
    class Point:
        x: int

    for obj in ({"p": Point(1)}, [datetime.datetime(2026, 12, 2)], {"s": {1, 2}}, object()):
        with pytest.raises(TypeError):
            dumps(obj)
    with pytest.raises(ValueError):
        dumps({"s": "\ud800"})  # a lone surrogate is not UTF-8


def test_the_bytes_returned_hold_no_more_memory_than_their_size() -> None:
    # orjson's own bytes keep the buffer they were written in (32 KB for 881 bytes); the
    # controller keeps 32,768 replies, so that cost 84 MB of RSS at 12,500 pods
    obj = {f"k{i}": i for i in range(100)}
    dumps(obj)  # anything made once (imports, caches) before measuring
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        out = dumps(obj)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(out) == 881 and held < 2 * len(out), held
