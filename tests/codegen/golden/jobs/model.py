# Generated from tests/codegen/fixtures/Jobs.tla by codegen — do not edit.
"""Jobs: constants, state and step types."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from aegis.values import ModelValue, Value

VARIABLES: tuple[str, ...] = ("phase", "retries", "info", "log", "seen", "pc", "mine")
CONSTANT_NAMES: tuple[str, ...] = ("Workers", "MaxRetry", "Master")


class Label(StrEnum):
    """The spec's action labels, in Next's order (a member's name is its label)."""

    Ctl = "Ctl"  # tests/codegen/fixtures/Jobs.tla:130
    Work = "Work"  # tests/codegen/fixtures/Jobs.tla:145
    Record = "Record"  # tests/codegen/fixtures/Jobs.tla:157
    Terminating = "Terminating"  # tests/codegen/fixtures/Jobs.tla:167


@dataclass(frozen=True, slots=True)
class Constants:
    """The spec's CONSTANTs, bound at run time."""

    Workers: Value  # tests/codegen/fixtures/Jobs.tla:6
    MaxRetry: Value  # tests/codegen/fixtures/Jobs.tla:6
    Master: Value  # tests/codegen/fixtures/Jobs.tla:6


@dataclass(frozen=True, slots=True)
class State:
    """One state: a value per VARIABLE, equal to TLC's state value for value."""

    phase: Value  # tests/codegen/fixtures/Jobs.tla:85
    retries: Value  # tests/codegen/fixtures/Jobs.tla:85
    info: Value  # tests/codegen/fixtures/Jobs.tla:85
    log: Value  # tests/codegen/fixtures/Jobs.tla:85
    seen: Value  # tests/codegen/fixtures/Jobs.tla:85
    pc: Value  # tests/codegen/fixtures/Jobs.tla:85
    mine: Value  # tests/codegen/fixtures/Jobs.tla:113

    def as_dict(self) -> dict[str, Value]:
        """The state as {variable: value}."""
        return {name: getattr(self, name) for name in VARIABLES}

    @classmethod
    def from_dict(cls, values: Mapping[str, Value]) -> State:
        """The state with these variable values."""
        return cls(**{name: values[name] for name in VARIABLES})


@dataclass(frozen=True, slots=True)
class Successor:
    """A next state, with the \\E / with / x' \\in S choices made on the path to it."""

    state: State
    choices: tuple[tuple[str, Value], ...]


@dataclass(frozen=True, slots=True)
class ActionInfo:
    """One label: its process and its two functions (self is the process id)."""

    label: Label
    process: str | None
    kind: str  # "set": a process set; "single": one process; "none": uniprocess/Terminating
    process_ids: Callable[[Constants], frozenset[Value]]
    enabled: Callable[[Constants, State, Value], bool]
    successors: Callable[[Constants, State, Value], list[Successor]]
    source: str


# The constants of tests/codegen/fixtures/Jobs.cfg.
CFG_CONSTANTS: Constants | None = Constants(
    Workers=frozenset({ModelValue("w1"), ModelValue("w2")}), MaxRetry=1, Master=ModelValue("m")
)
