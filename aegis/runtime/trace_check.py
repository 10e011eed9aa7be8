"""Trace validation: replay a step log through the generated tables, step by step."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from aegis.generated.aegis_phase import Constants
from aegis.runtime.codec import decode, decode_choices, decode_state
from aegis.runtime.engine import candidates, initial_state
from aegis.runtime.steplog import read_steplog


class TraceMismatch(AssertionError):
    """A logged step is not a legal successor of the previous logged state."""


def check_records(c: Constants, records: Iterable[dict[str, Any]]) -> int:
    """Check every applied step; the number of steps checked (TraceMismatch on the first bad)."""
    state = None
    checked = 0
    for rec in records:
        if "init" in rec:
            state = decode_state(rec["init"])
            if state != initial_state(c):
                raise TraceMismatch("the logged initial state is not the spec's")
            continue
        if rec.get("rejected") is not None:
            continue
        if state is None:
            raise TraceMismatch("the log does not start with an initial state")
        after = decode_state(rec["state"])
        choices = dict(decode_choices(rec["choices"]))
        legal = [
            s
            for pid, s in candidates(c, state, rec["action"], choices)
            if pid == decode(rec["process"]) and s.state == after
        ]
        if not legal:
            raise TraceMismatch(
                f"step {rec['seq_no']} ({rec['action']} {choices}) is not a "
                "successor of the previous state in the spec"
            )
        state = after
        checked += 1
    return checked


def check_steplog(c: Constants, path: str | os.PathLike[str]) -> int:
    """check_records over a step-log file."""
    return check_records(c, read_steplog(path))
