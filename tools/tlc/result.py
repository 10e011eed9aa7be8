"""The outcome of a TLC run, and its JSON-friendly form."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from aegis.values import Fn, ModelValue, Value, render, sorted_values

ViolationKind = Literal["invariant", "property", "deadlock", "assumption", "error"]


@dataclass(frozen=True)
class TraceStep:
    """One state of a counterexample and the action that led to it."""

    action: str
    state: dict[str, Value]
    location: str = ""  # e.g. "line 7, col 8 to line 7, col 74 of module Counter"


@dataclass(frozen=True)
class Violation:
    """What TLC found wrong; `loop` is the 1-based step a lasso (liveness) trace returns to."""

    kind: ViolationKind
    name: str | None
    trace: list[TraceStep] = field(default_factory=list)
    message: str = ""
    loop: int | None = None


@dataclass(frozen=True)
class Progress:
    """A progress report while TLC runs."""

    states_generated: int
    distinct_states: int
    queue: int
    depth: int | None = None


@dataclass(frozen=True)
class TlcResult:
    """Everything `aegis spec check` reports about one TLC run."""

    # nothing violated, no error; a run stopped by its timeout (e.g. `-simulate`, which never
    # ends by itself in this TLC build) is ok if it found nothing
    ok: bool
    exit_code: int
    distinct_states: int | None
    states_generated: int | None
    depth: int | None
    seconds: float
    invariants: tuple[str, ...]
    properties: tuple[str, ...]
    violation: Violation | None
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    timed_out: bool = False


def jsonable(v: Value) -> Any:
    """A TLA+ value as JSON: sets become sorted lists, functions objects, model values names."""
    if isinstance(v, bool | int | str):
        return v
    if isinstance(v, ModelValue):
        return v.name
    if isinstance(v, frozenset):
        return [jsonable(x) for x in sorted_values(v)]
    if isinstance(v, tuple):
        return [jsonable(x) for x in v]
    if isinstance(v, Fn):
        return {_key(k): jsonable(v[k]) for k in sorted_values(v)}
    raise TypeError(f"not a TLA+ value: {v!r}")


def _key(k: Value) -> str:
    return k if isinstance(k, str) else render(k)


def result_json(r: TlcResult) -> dict[str, Any]:
    """The `aegis spec check --json` object for a result."""
    return {
        "distinct_states": r.distinct_states,
        "states_generated": r.states_generated,
        "depth": r.depth,
        "seconds": r.seconds,
        "invariants": list(r.invariants),
        "properties": list(r.properties),
        "violation": None if r.violation is None else violation_json(r.violation),
    }


def violation_json(v: Violation) -> dict[str, Any]:
    """A violation as JSON."""
    return {
        "kind": v.kind,
        "name": v.name,
        "trace": [
            {"action": s.action, "state": {k: jsonable(x) for k, x in s.state.items()}}
            for s in v.trace
        ],
    }
