"""Every flag of `aegis run` naming a path is checked before anything starts (issue 42)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from aegis.cli.path_flags import path_problems

AEGIS = [sys.executable, "-m", "aegis.cli"]


def test_usable_paths_pass(tmp_path: Path) -> None:
    (tmp_path / "ckpt").mkdir()
    done = str(tmp_path / "ckpt" / "done")
    assert path_problems(tmp_path / "new" / "state", str(tmp_path / "logs"), done) == []
    assert path_problems(tmp_path, str(tmp_path), "") == []  # existing directories
    assert path_problems(None, "", "") == []


def test_each_bad_path_is_named(tmp_path: Path) -> None:
    a_file = tmp_path / "f"
    a_file.write_text("x")
    cases = [
        ((a_file, "", ""), "--state-dir", "exists and is not a directory"),
        ((a_file / "sub", "", ""), "--state-dir", f"{a_file} is not a directory"),
        ((None, str(a_file), ""), "--log-dir", "exists and is not a directory"),
        ((None, "", str(tmp_path)), "--checkpoint-file", "is a directory"),
        ((None, "", str(tmp_path / "no" / "done")), "--checkpoint-file", "does not exist"),
    ]
    for args, flag, says in cases:
        [problem] = path_problems(*args)
        assert problem.startswith(flag) and says in problem, problem
    assert len(path_problems(a_file, str(a_file), str(tmp_path))) == 3  # all said at once


def test_aegis_run_refuses_a_bad_path_before_anything_starts(tmp_path: Path) -> None:
    state = tmp_path / "state"
    argv = ["run", "-n", "1", "--state-dir", str(state), "--checkpoint-file"]
    argv += [str(tmp_path / "nowhere" / "done"), "--", "true"]
    out = subprocess.run([*AEGIS, *argv], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out.stderr
    assert "--checkpoint-file" in out.stderr and "does not exist" in out.stderr
    assert not state.exists()  # nothing was started, nothing made
