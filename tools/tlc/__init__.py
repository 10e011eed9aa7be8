"""TLC tooling: run the model checker from tla2tools.jar and read what it prints.

Public API (all paths may be `str` or `Path`; every error is an `aegis.errors.AegisError`):

  run_tlc(spec, cfg=None, *, extra_args=(), workers=None, on_progress=None, timeout=None)
      -> TlcResult                       # runner.py: TLC -tool in a temp dir; SpecError if the
                                         # spec does not parse or the cfg is missing/wrong;
                                         # CHECK_DEADLOCK FALSE (unknown to this 2020 TLC)
                                         # becomes its -deadlock flag
  dump_state_graph(spec, cfg=None, *, extra_args=(), workers=None) -> StateGraph   # dot.py
  parse_dot(lines) -> StateGraph; read_dot(path) -> StateGraph                      # dot.py
  check_translation(spec) -> None        # translation.py: SpecError if PlusCal is stale
  translate(spec) -> bool                # translation.py: refresh in place; True if changed
  parse_value(text) -> Value; parse_state(text) -> dict[str, Value]        # valueparser.py
  read_cfg(path, display=None) -> TlcConfig; parse_cfg(text, path=None, display=None)
      -> TlcConfig; render_cfg(config) -> str  # cfg.py: the one .cfg reader; errors file:line
  export_xml(spec, display=None) -> bytes  # sany.py: SANY's XML export (what codegen reads)
  find_jar() -> Path; find_java() -> str  # jar.py: ToolMissingError when absent
  result_json(result) -> dict; jsonable(value) -> JSON-friendly value      # result.py

Data: TlcConfig{specification, init, next, constants (value texts; .values() parses them),
substitutions, invariants, properties, constraints, action_constraints, symmetry, view, alias,
postcondition, check_deadlock, lines};
TlcResult{ok, exit_code, distinct_states, states_generated, depth, seconds, invariants,
properties, violation, errors, warnings, timed_out};
Violation{kind: invariant|property|deadlock|assumption|error, name, trace, message, loop};
TraceStep{action, state, location}; Progress{states_generated, distinct_states, queue, depth};
StateGraph{states: {fingerprint: state}, initial: {fingerprint}, edges: {(src, action, dst)}}.

Modules: jar (java + jar), workspace (temp copies), toolmode (message framing, codes),
interpret (messages -> result), sany (parse errors), valueparser, cfg, result, report
(human text), runner, translation, dot.
"""

from tools.tlc.cfg import TlcConfig, parse_cfg, read_cfg, render_cfg
from tools.tlc.dot import StateGraph, dump_state_graph, parse_dot, read_dot
from tools.tlc.jar import find_jar, find_java
from tools.tlc.result import (
    Progress,
    TlcResult,
    TraceStep,
    Violation,
    jsonable,
    result_json,
)
from tools.tlc.runner import run_tlc
from tools.tlc.sany import export_xml
from tools.tlc.translation import check_translation, translate
from tools.tlc.valueparser import parse_state, parse_value

__all__ = [
    "Progress",
    "StateGraph",
    "TlcConfig",
    "TlcResult",
    "TraceStep",
    "Violation",
    "check_translation",
    "dump_state_graph",
    "export_xml",
    "find_jar",
    "find_java",
    "jsonable",
    "parse_cfg",
    "parse_dot",
    "parse_state",
    "parse_value",
    "read_cfg",
    "read_dot",
    "render_cfg",
    "result_json",
    "run_tlc",
    "translate",
]
