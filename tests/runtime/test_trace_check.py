"""The fast trace check (aegis.runtime.trace_check): a logged step must be the spec's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aegis.runtime.trace_check import TraceMismatch, check_steplog
from aegis.testing.scripted_job import healthy
from aegis.values import Fn


def _edited(tmp_path: Path, edit: Any) -> Path:
    """A healthy 3-pod job's log with its first receive step's record edited."""
    job = healthy(tmp_path, 3)
    lines = job.steplog.read_text().splitlines()
    i = next(n for n, ln in enumerate(lines) if '"action":"receive"' in ln)
    rec = json.loads(lines[i])
    edit(rec["changed"])
    lines[i] = json.dumps(rec)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    return bad


def test_the_log_as_written_is_the_specs(tmp_path: Path) -> None:
    assert check_steplog(_edited(tmp_path, lambda changed: None)) == 18


def test_a_wrong_value_at_a_changed_key_is_caught(tmp_path: Path) -> None:
    def wrong(changed: dict[str, Any]) -> None:
        changed["lastFinishSeq"]["except"][0][1] += 1

    with pytest.raises(TraceMismatch, match="step 6 \\(receive"):
        check_steplog(_edited(tmp_path, wrong))


def test_a_key_the_spec_changes_but_the_log_does_not_is_caught(tmp_path: Path) -> None:
    with pytest.raises(TraceMismatch, match="step 6 \\(receive"):
        check_steplog(_edited(tmp_path, lambda changed: changed.pop("lastFinishSeq")))


def test_a_key_the_log_changes_but_the_spec_does_not_is_caught(tmp_path: Path) -> None:
    def extra(changed: dict[str, Any]) -> None:
        changed["finished"]["except"].append([{"mv": "tv-worker-2"}, True])

    with pytest.raises(TraceMismatch, match="step 6 \\(receive"):
        check_steplog(_edited(tmp_path, extra))


def test_a_step_is_compared_at_the_keys_it_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replaying a 200-pod job's log compares whole per-pod functions only where a step sets
    every pod (a phase change), not at each of its 1,000 steps."""
    job = healthy(tmp_path, 200)
    whole = 0
    eq = Fn.__eq__

    def counted(self: Fn, other: object) -> bool:
        nonlocal whole
        if self is not other and len(self) == 200:
            whole += 1
        return eq(self, other)

    monkeypatch.setattr(Fn, "__eq__", counted)
    assert check_steplog(job.steplog) == 1003
    assert whole <= 30
