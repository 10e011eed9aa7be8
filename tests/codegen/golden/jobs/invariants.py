# Generated from tests/codegen/fixtures/Jobs.tla by codegen — do not edit.
"""Jobs: the invariants and state constraints named in the model config.

Config: tests/codegen/fixtures/Jobs.cfg
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from . import _tla
from .defs import (
    Arith,
    Distinct,
    InfoBound,
    LogOK,
    MaxOK,
    Pairs,
    RetriesBound,
    SnapshotOK,
    TypeOK,
    ValidPhase,
)
from .model import Constants, State


def inv_ValidPhase(c: Constants, s: State) -> bool:
    """ValidPhase (tests/codegen/fixtures/Jobs.tla)."""
    return _tla.boolean(ValidPhase(c, s), "ValidPhase")


def inv_RetriesBound(c: Constants, s: State) -> bool:
    """RetriesBound (tests/codegen/fixtures/Jobs.tla)."""
    return _tla.boolean(RetriesBound(c, s), "RetriesBound")


def inv_TypeOK(c: Constants, s: State) -> bool:
    """TypeOK (tests/codegen/fixtures/Jobs.tla)."""
    return _tla.boolean(TypeOK(c, s), "TypeOK")


def inv_MaxOK(c: Constants, s: State) -> bool:
    """MaxOK (tests/codegen/fixtures/Jobs.tla)."""
    return _tla.boolean(MaxOK(c, s), "MaxOK")


def inv_SnapshotOK(c: Constants, s: State) -> bool:
    """SnapshotOK (tests/codegen/fixtures/Jobs.tla)."""
    return _tla.boolean(SnapshotOK(c, s), "SnapshotOK")


def inv_Arith(c: Constants, s: State) -> bool:
    """Arith (tests/codegen/fixtures/Jobs.tla)."""
    return _tla.boolean(Arith(c, s), "Arith")


def inv_Pairs(c: Constants, s: State) -> bool:
    """Pairs (tests/codegen/fixtures/Jobs.tla)."""
    return _tla.boolean(Pairs(c), "Pairs")


def inv_LogOK(c: Constants, s: State) -> bool:
    """LogOK (tests/codegen/fixtures/Jobs.tla)."""
    return _tla.boolean(LogOK(c, s), "LogOK")


def inv_Distinct(c: Constants, s: State) -> bool:
    """Distinct (tests/codegen/fixtures/Jobs.tla)."""
    return _tla.boolean(Distinct(c, s), "Distinct")


def constraint_InfoBound(c: Constants, s: State) -> bool:
    """InfoBound (tests/codegen/fixtures/Jobs.tla)."""
    return _tla.boolean(InfoBound(c, s), "InfoBound")


INVARIANTS: dict[str, Callable[[Constants, State], bool]] = {
    "ValidPhase": inv_ValidPhase,
    "RetriesBound": inv_RetriesBound,
    "TypeOK": inv_TypeOK,
    "MaxOK": inv_MaxOK,
    "SnapshotOK": inv_SnapshotOK,
    "Arith": inv_Arith,
    "Pairs": inv_Pairs,
    "LogOK": inv_LogOK,
    "Distinct": inv_Distinct,
}

# The variables each invariant reads, through the definitions it calls (None: not known).
INVARIANT_READS: dict[str, frozenset[str] | None] = {
    "ValidPhase": frozenset({"phase"}),
    "RetriesBound": frozenset({"retries"}),
    "TypeOK": frozenset({"info", "log", "retries", "seen"}),
    "MaxOK": frozenset({"retries"}),
    "SnapshotOK": frozenset({"phase", "retries"}),
    "Arith": frozenset({"info"}),
    "Pairs": frozenset(),
    "LogOK": frozenset({"log"}),
    "Distinct": frozenset({"retries"}),
}

CONSTRAINTS: dict[str, Callable[[Constants, State], bool]] = {
    "InfoBound": constraint_InfoBound,
}

# Temporal properties of the cfg (checked by TLC only).
PROPERTIES: tuple[str, ...] = ()


def violated_invariants(
    c: Constants, s: State, changed: Collection[str] | None = None
) -> list[str]:
    """The names of the invariants s violates.

    With `changed`, s is a successor of a state that satisfies every invariant, and
    `changed` holds each variable whose value may differ between the two: an invariant that
    reads none of them has the value it had there (true), so only the others are evaluated."""
    if changed is None:
        return [name for name, holds in INVARIANTS.items() if not holds(c, s)]
    return [
        name
        for name, holds in INVARIANTS.items()
        if ((reads := INVARIANT_READS[name]) is None or not reads.isdisjoint(changed))
        and not holds(c, s)
    ]


def within_constraints(c: Constants, s: State) -> bool:
    """Whether s satisfies every CONSTRAINT (TLC drops a state that does not, unexplored)."""
    return all(holds(c, s) for holds in CONSTRAINTS.values())
