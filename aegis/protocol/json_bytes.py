"""Compact JSON as UTF-8 bytes: orjson's speed, the standard library's answers.

Every message, WAL record, step-log line and status file the controller writes is encoded
here. orjson encodes them several times faster than `json.dumps` (docs/scale.md,
"Decisions"), but it differs from `json.dumps(..., allow_nan=False)` at the edges:
it writes NaN and the infinities as null where the standard library refuses them, and it
refuses what the standard library writes (integer keys, integers past 64 bits, nesting past
254 levels). `dumps` therefore hands the standard library every object orjson refuses and
every object whose output holds `null` (NaN may have become one; of what we write, only
orders hold a real null, `"final":null`, and they cost what they did before): the result is
then exactly the standard library's, ValueError for NaN included. Dataclasses and datetimes,
which orjson would write and the standard library refuses, are passed through, so they are
refused too.

orjson's own bytes object is copied into one of its exact size (see `dumps`).

Both encoders write the same JSON values; their texts differ only in a float's exponent
("1e16" or "1e+16"), never in what a reader gets.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

_OPTIONS = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
_SORTED = _OPTIONS | orjson.OPT_SORT_KEYS


def dumps(obj: Any, *, sort_keys: bool = False) -> bytes:
    """`obj` as compact JSON in UTF-8 (no spaces, non-ASCII characters as they are).

    Raises what `json.dumps(obj, allow_nan=False)` raises: ValueError for NaN or an infinity
    (or a lone surrogate), TypeError for a value JSON cannot hold, RecursionError."""
    try:
        out = orjson.dumps(obj, option=_SORTED if sort_keys else _OPTIONS)
    except orjson.JSONEncodeError:
        out = b"null"  # refused: the standard library decides below
    if b"null" not in out:
        # a copy of exactly its size: the bytes orjson returns keep the buffer it wrote them
        # in (32 KB for a message of a few hundred bytes), and the controller keeps its last
        # 32,768 replies (docs/scale.md, "Decisions")
        return memoryview(out).tobytes()
    text = json.dumps(
        obj, sort_keys=sort_keys, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return text.encode("utf-8")
