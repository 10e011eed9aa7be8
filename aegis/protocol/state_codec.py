"""Spec values and states <-> JSON (tagged, lossless), for the store, the step log and orders.

bool, int and str are themselves; a model value is {"mv": name}, a set {"set": [...]}
(sorted), a sequence {"seq": [...]}, a function or record {"fn": [[key, value], ...]}.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from aegis.generated.aegis_phase import VARIABLES, State
from aegis.values import Fn, ModelValue, Value, sorted_values


class CodecError(ValueError):
    """A JSON value that is not the encoding of a spec value."""


_PLAIN = (bool, int, str)


def encode(v: Value) -> Any:
    """The JSON form of a spec value."""
    if isinstance(v, bool | int | str):
        return v
    if isinstance(v, ModelValue):
        return {"mv": v.name}
    if isinstance(v, frozenset):
        return {"set": [encode(x) for x in sorted_values(v)]}
    if isinstance(v, tuple):
        return {"seq": [encode(x) for x in v]}
    if isinstance(v, Fn):
        return {"fn": _encode_fn(v)}
    raise CodecError(f"not a spec value: {v!r}")


def _encode_fn(f: Fn) -> list[list[Any]]:
    """[[key, value], ...] in `sorted_values` order. A function over model values (every
    per-worker variable, O(pods) in a snapshot) takes a faster path than the general one:
    model values sort by name there, and a plain value is its own encoding."""
    items = list(f.pairs())
    if all(type(k) is ModelValue for k, _ in items):
        items.sort(key=lambda kv: kv[0].name)
        return [[{"mv": k.name}, x if type(x) in _PLAIN else encode(x)] for k, x in items]
    return [[encode(k), encode(f[k])] for k in sorted_values(f)]


def decode(o: Any) -> Value:
    """The spec value of a JSON form made by `encode`."""
    if isinstance(o, bool | int | str):
        return o
    if isinstance(o, dict) and len(o) == 1:
        ((tag, body),) = o.items()
        form = _TAGGED.get(tag)
        if form is not None and isinstance(body, form[0]):
            return form[1](body)
    raise CodecError(f"not an encoded spec value: {o!r:.80}")


def _decode_set(body: list[Any]) -> Value:
    return frozenset(decode(x) for x in body)


def _decode_seq(body: list[Any]) -> Value:
    return tuple(decode(x) for x in body)


def _decode_fn(body: list[Any]) -> Value:
    return Fn((decode(k), decode(v)) for k, v in body)


# tag -> (the type its body must have, its decoder)
_TAGGED: dict[str, tuple[type, Callable[[Any], Value]]] = {
    "mv": (str, ModelValue),
    "set": (list, _decode_set),
    "seq": (list, _decode_seq),
    "fn": (list, _decode_fn),
}


def encode_state(s: State) -> dict[str, Any]:
    """{variable: encoded value}."""
    return {name: encode(getattr(s, name)) for name in VARIABLES}


class StateEncoder:
    """`encode_state` that encodes again only what changed since the state it encoded last
    (spec values are immutable): a variable whose value is the very object of last time keeps
    its encoding, and a function over model values with the same domain gets a copy of its
    last encoding with only the entries that differ encoded again (one scan of its pairs, no
    sort). A snapshot of a 12,500-pod job after a commit that changed a few pods then costs a
    scan per changed function, not an encoding of every one. The encodings are shared between
    the states it returns (unchanged entries too): do not change them."""

    def __init__(self) -> None:
        # variable -> (value, its encoding, {model value name: position in the encoding})
        self._last: dict[str, tuple[Value, Any, dict[str, int] | None]] = {}

    def __call__(self, s: State) -> dict[str, Any]:
        out: dict[str, Any] = {}
        last = self._last
        for name in VARIABLES:
            value = getattr(s, name)
            seen = last.get(name)
            if seen is None or seen[0] is not value:
                seen = last[name] = _encode_from(seen, value)
            out[name] = seen[1]
        return out


_MISSING: Any = object()


def _encode_from(
    seen: tuple[Value, Any, dict[str, int] | None] | None, value: Value
) -> tuple[Value, Any, dict[str, int] | None]:
    """(value, encoding, positions) of `value`, from the last one's where both are functions
    over the same model values, else encoded afresh."""
    if seen is not None and isinstance(value, Fn) and isinstance(seen[0], Fn):
        patched = _patched(seen[0], seen[1], seen[2], value)
        if patched is not None:
            return patched
    return value, encode(value), None


def _patched(
    old: Fn, old_enc: Any, positions: dict[str, int] | None, value: Fn
) -> tuple[Value, Any, dict[str, int] | None] | None:
    """(value, encoding, positions) of `value` as the last encoding of `old` with the entries
    that differ encoded again; None when that encoding is not one of the fast path's over the
    same model values."""
    pairs = old_enc.get("fn") if isinstance(old_enc, dict) else None
    if not (pairs and len(old) == len(value) and isinstance(pairs[0][0], dict)):
        return None
    if positions is None:  # the fast path's encoding: [[{"mv": name}, v], ...]
        positions = {k["mv"]: i for i, (k, _) in enumerate(pairs)}
    changed = _changed_pairs(old, value)
    if not changed:
        return value, old_enc, positions
    out = _replaced_pairs(pairs, positions, changed)
    return None if out is None else (value, {"fn": out}, positions)


def _replaced_pairs(
    pairs: list[Any], positions: dict[str, int], changed: list[tuple[Any, Value]]
) -> list[Any] | None:
    """A copy of `pairs` with the changed entries encoded at their positions (None if a key
    is not a model value of the old domain)."""
    out = list(pairs)
    for k, v in changed:
        i = positions.get(k.name) if type(k) is ModelValue else None
        if i is None:
            return None
        out[i] = [{"mv": k.name}, v if type(v) in _PLAIN else encode(v)]
    return out


def _changed_pairs(old: Fn, new: Fn) -> list[tuple[Any, Value]]:
    """The (key, value) pairs of `new` that `old` does not hold (one scan, no sort)."""
    get = old.lookup()
    # a key outside the old domain reads as _MISSING: changed, and then not found
    return [
        (k, v)
        for k, v in new.pairs()
        if (was := get(k, _MISSING)) is not v and (type(was) is not type(v) or was != v)
    ]


def decode_state(o: Mapping[str, Any]) -> State:
    """The State of an `encode_state` object (CodecError if a variable is missing)."""
    missing = [n for n in VARIABLES if n not in o]
    if missing:
        raise CodecError(f"state lacks variable(s) {missing}")
    return State.from_dict({n: decode(o[n]) for n in VARIABLES})


def encode_choices(choices: tuple[tuple[str, Value], ...]) -> list[list[Any]]:
    """[[name, encoded value], ...] in path order."""
    return [[name, encode(v)] for name, v in choices]


def decode_choices(o: Any) -> tuple[tuple[str, Value], ...]:
    """The inverse of `encode_choices`."""
    if not isinstance(o, list):
        raise CodecError("choices must be a list")
    return tuple((str(name), decode(v)) for name, v in o)
