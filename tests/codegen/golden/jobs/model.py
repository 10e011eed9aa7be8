# Generated from tests/codegen/fixtures/Jobs.tla by codegen — do not edit.
"""Jobs: constants, state and step types."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum

from aegis.values import ModelValue, Value

from ._tla import Memo

VARIABLES: tuple[str, ...] = ("phase", "retries", "info", "log", "seen", "pc", "mine")
CONSTANT_NAMES: tuple[str, ...] = ("Workers", "MaxRetry", "Master")


class Label(StrEnum):
    """The spec's action labels, in Next's order (a member's name is its label)."""

    Ctl = "Ctl"  # tests/codegen/fixtures/Jobs.tla
    Work = "Work"  # tests/codegen/fixtures/Jobs.tla
    Record = "Record"  # tests/codegen/fixtures/Jobs.tla
    Terminating = "Terminating"  # tests/codegen/fixtures/Jobs.tla


@dataclass(frozen=True, slots=True)
class Constants:
    """The spec's CONSTANTs, bound at run time."""

    Workers: Value  # tests/codegen/fixtures/Jobs.tla
    MaxRetry: Value  # tests/codegen/fixtures/Jobs.tla
    Master: Value  # tests/codegen/fixtures/Jobs.tla


@dataclass(frozen=True, slots=True)
class State(Memo):
    """One state: a value per VARIABLE, equal to TLC's state value for value."""

    phase: Value  # tests/codegen/fixtures/Jobs.tla
    retries: Value  # tests/codegen/fixtures/Jobs.tla
    info: Value  # tests/codegen/fixtures/Jobs.tla
    log: Value  # tests/codegen/fixtures/Jobs.tla
    seen: Value  # tests/codegen/fixtures/Jobs.tla
    pc: Value  # tests/codegen/fixtures/Jobs.tla
    mine: Value  # tests/codegen/fixtures/Jobs.tla

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
    """One label: its process and its functions (self is the process id; `steps` takes the
    observed choices to bind and yields successors lazily, duplicates not removed)."""

    label: Label
    process: str | None
    kind: str  # "set": a process set; "single": one process; "none": uniprocess/Terminating
    process_ids: Callable[[Constants], frozenset[Value]]
    enabled: Callable[[Constants, State, Value], bool]
    successors: Callable[[Constants, State, Value], list[Successor]]
    steps: Callable[[Constants, State, Value, Mapping[str, Value]], Iterator[Successor]]
    source: str


# The constants of tests/codegen/fixtures/Jobs.cfg.
CFG_CONSTANTS: Constants | None = Constants(
    Workers=frozenset({ModelValue("w1"), ModelValue("w2")}), MaxRetry=1, Master=ModelValue("m")
)
