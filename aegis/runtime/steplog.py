"""The step log: one JSON line per engine step, so a real run can be checked against the spec."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from aegis.runtime.engine import StepResult


def step_record(step: StepResult) -> dict[str, Any]:
    """The JSON object of one step: seq_no, action, process, choices, state (+ rejected)."""
    from aegis.runtime.codec import encode, encode_choices, encode_state

    rec: dict[str, Any] = {
        "seq_no": step.seq_no,
        "action": step.action,
        "process": encode(step.process),
        "choices": encode_choices(step.choices),
        "state": encode_state(step.state),
    }
    if not step.applied:
        rec["rejected"] = step.reason
    return rec


class StepLog:
    """Appends step records to a JSON-lines file (flushed per line, fsynced on close)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._f = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()

    def write(self, step: StepResult) -> None:
        """Append one step, stamped with the wall-clock time it was logged ("t", seconds)."""
        rec = {**step_record(step), "t": round(time.time(), 6)}
        self._f.write(json.dumps(rec, separators=(",", ":")) + "\n")
        self._f.flush()

    def write_initial(self, record: dict[str, Any]) -> None:
        """Append the initial-state record {"init": state, "constants": ...}."""
        self._f.write(json.dumps(record, separators=(",", ":")) + "\n")
        self._f.flush()

    def close(self) -> None:
        """Flush, fsync and close."""
        if not self._f.closed:
            self._f.flush()
            os.fsync(self._f.fileno())
            self._f.close()


def read_steplog(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """The records of a step log, in order (a torn last line is skipped)."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                yield json.loads(line)
            except ValueError:
                continue
