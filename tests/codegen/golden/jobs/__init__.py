# Generated from tests/codegen/fixtures/Jobs.tla by codegen — do not edit.
"""Jobs: the Python generated from the spec, for the runtime to execute.

Spec: tests/codegen/fixtures/Jobs.tla
Model config: tests/codegen/fixtures/Jobs.cfg

Values are aegis.values types, so a State equals TLC's state value for value.
"""

from . import defs
from .actions import ACTIONS, PROCESSES, commit, initial_states, next_states
from .invariants import (
    CONSTRAINTS,
    INVARIANTS,
    PROPERTIES,
    violated_invariants,
    within_constraints,
)
from .model import (
    CFG_CONSTANTS,
    CONSTANT_NAMES,
    VARIABLES,
    ActionInfo,
    Constants,
    Label,
    State,
    Successor,
)
from .phases import (
    INITIAL_PHASE,
    PHASE_TRANSITIONS,
    PHASE_VARIABLE,
    PHASES,
    PhaseMachine,
)

SPEC_MODULE = "Jobs"
SPEC_PATH = "tests/codegen/fixtures/Jobs.tla"
CFG_PATH = "tests/codegen/fixtures/Jobs.cfg"

__all__ = [
    "ACTIONS",
    "CFG_CONSTANTS",
    "CFG_PATH",
    "CONSTANT_NAMES",
    "CONSTRAINTS",
    "INITIAL_PHASE",
    "INVARIANTS",
    "PHASES",
    "PHASE_TRANSITIONS",
    "PHASE_VARIABLE",
    "PROCESSES",
    "PROPERTIES",
    "SPEC_MODULE",
    "SPEC_PATH",
    "VARIABLES",
    "ActionInfo",
    "Constants",
    "Label",
    "PhaseMachine",
    "State",
    "Successor",
    "commit",
    "defs",
    "initial_states",
    "next_states",
    "violated_invariants",
    "within_constraints",
]
