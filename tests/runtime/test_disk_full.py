"""A state dir whose filesystem fills up mid-run (issue 42): the job's exit code and its
message say what ran, and status.json agrees; the full disk costs no controller restart."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..support import AegisRun

SCRIPT = str(Path(__file__).with_name("scripts") / "fill_then_train.py")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 48 MiB tmpfs of its own (root only: skipped where mount is not allowed)."""
    where = tmp_path / "disk"
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(where)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()[:200]}")
    try:
        yield where
    finally:
        with contextlib.suppress(OSError):
            subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_state_dir_that_fills_mid_run_ends_saying_what_ran(
    tmp_path: Path, small_disk: Path
) -> None:
    state = small_disk / "state"
    env = {"FILL_RANK": "0", "FILL_PATH": str(small_disk)}
    run = AegisRun(tmp_path, 2, cmd=[sys.executable, SCRIPT], env=env, state=state)
    try:
        code = run.finish(300)
    finally:
        run.stop()
    out = run.output
    assert "rank 0 filled" in out  # the disk was full before the job's last saves
    assert "rank 0 done (restart 0)" in out and "rank 1 done (restart 0)" in out
    status = json.loads((state / "status.json").read_text())
    assert code == 0, out[-3000:]
    assert status["phase"] == "Succeed", status["phase"]
    assert "restarting it" not in out  # no controller restart spent on it
    assert "state dir" in out and "full" in out, out[-3000:]  # said clearly
    steps = (state / "steps.jsonl").read_bytes()
    assert steps.endswith(b"\n")  # no line cut in the middle
    for line in steps.splitlines():
        json.loads(line)
