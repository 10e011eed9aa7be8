"""Trace validation: TLC itself checks that a run's step log is a behaviour of the spec.

    validate_log(path) -> Verdict     # aegis spec validate-log STEPLOG [--json]

See docs/trace-validation.md: the trace module, why its constants are sound, what a
mismatch means.
"""

from aegis.tracevalidate.diff import render_mismatch
from aegis.tracevalidate.validate import Mismatch, TraceValidationError, Verdict, validate_log

__all__ = ["Mismatch", "TraceValidationError", "Verdict", "render_mismatch", "validate_log"]
