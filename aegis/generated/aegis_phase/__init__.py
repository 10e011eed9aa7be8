# Generated from spec/AegisPhase.tla by codegen — do not edit.
"""AegisPhase: the Python generated from the spec, for the runtime to execute.

Spec: spec/AegisPhase.tla
Model config: spec/AegisPhase.cfg

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

SPEC_MODULE = "AegisPhase"
SPEC_PATH = "spec/AegisPhase.tla"
CFG_PATH = "spec/AegisPhase.cfg"

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
