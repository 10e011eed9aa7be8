"""A command that cannot start is the user's error: the job fails at once, no retry is spent,
no troubleshoot round runs, no node is blamed (docs/operations.md, "A command that cannot
start"). Each place that finds it: `aegis run` before it starts anything, the agent when it
starts (exit 78), the runner when exec fails (the agent's Error says so), the controller
(quits instead of counting) and the Job Controller (fails the AegisJob at exit 78)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aegis.checks.faultlog import FaultRecord
from aegis.protocol.envelope import MessageType
from aegis.protocol.exitcodes import AgentExit
from aegis.runtime.agent.command import command_problem
from aegis.runtime.agent.output import StderrFilter
from aegis.runtime.launcher.local import LocalJob, free_port, run_local

from ..support import AEGIS
from .test_controller_slow_path import PODS, report, running_job

HERE = Path(__file__).parent


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["nonexistent_binary"], "'nonexistent_binary': no such command on PATH"),
        (["./no/such/file"], "'./no/such/file': no such file"),
        (["/"], "'/' is a directory"),
        (["python3", "missing_script.py"], "'missing_script.py': no such file"),
        ([sys.executable, "-m", "no_such_module_x"], "no module named 'no_such_module_x'"),
    ],
)
def test_a_command_that_cannot_start_is_named_with_its_reason(argv: list[str], says: str) -> None:
    problem = command_problem(argv, cwd=str(HERE))
    assert problem is not None and says in problem


def test_a_script_without_its_interpreter_is_told_how_to_run(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    problem = command_problem(["./train.py"], cwd=str(tmp_path))
    assert problem == "'./train.py' is not executable; run it as 'python ./train.py'"
    script.chmod(0o755)  # executable, but no #! line: exec would not know its interpreter
    problem = command_problem(["./train.py"], cwd=str(tmp_path))
    assert problem is not None and "no '#!' line" in problem
    script.write_text("#!/usr/bin/env python3\nprint('hi')\n")
    assert command_problem(["./train.py"], cwd=str(tmp_path)) is None
    bare = command_problem(["train.py"], env={"PATH": "/nonexistent"}, cwd=str(tmp_path))
    assert bare is not None and "is not on PATH" in bare


def test_a_module_on_the_commands_pythonpath_is_found(tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "mymod_x.py").write_text("")
    argv = [sys.executable, "-m", "mymod_x"]
    assert command_problem(argv, env={**os.environ, "PYTHONPATH": str(lib)}) is None
    assert command_problem(argv, cwd=str(lib)) is None  # -m looks in the working dir first
    assert command_problem(argv, env={"PATH": os.environ["PATH"]}) is not None


def test_commands_that_can_start_pass() -> None:
    assert command_problem(["true"]) is None
    assert command_problem([sys.executable, "-c", "pass"]) is None
    assert command_problem([sys.executable, "-m", "json.tool", "-h"]) is None
    assert command_problem([sys.executable, "-u", "whatever.py"]) is None  # left to python


def test_aegis_run_refuses_it_before_starting_anything(tmp_path: Path) -> None:
    state = tmp_path / "state"
    t0 = time.monotonic()
    out = subprocess.run(
        [*AEGIS, "run", "-n", "2", "--state-dir", str(state), "--", "pyhton", "x.py"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and time.monotonic() - t0 < 10
    assert out.stderr.strip().splitlines() == [
        "aegis: error: the command cannot start: 'pyhton': no such command on PATH"
    ]
    assert not state.exists()  # nothing was started, not even the state dir


def test_the_agent_exits_78_at_once_naming_it() -> None:
    env = {
        **os.environ,
        "AEGIS_JOB": "j",
        "AEGIS_POD": "j-worker-0",
        "AEGIS_RANK": "0",
        "AEGIS_WORLD_SIZE": "1",
        "AEGIS_COMMAND": json.dumps(["nonexistent_binary", "--lr", "1"]),
        "AEGIS_GRPC": f"127.0.0.1:{free_port()}",
        "AEGIS_CONNECT_TIMEOUT": "30",
    }
    t0 = time.monotonic()
    r = subprocess.run([*AEGIS, "agent"], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == AgentExit.BAD_COMMAND == 78, r.stderr[-2000:]
    assert time.monotonic() - t0 < 10  # it did not wait for a controller
    assert r.stdout.strip().splitlines() == [
        "aegis: agent j-worker-0: the command cannot start: 'nonexistent_binary': no such "
        "command on PATH (exit 78: the job fails, no node blamed)"
    ]


async def test_the_launcher_ends_the_job_when_an_agent_exits_78(tmp_path: Path) -> None:
    """`aegis run` checks the command itself, so only the launcher's API reaches this: every
    agent exits 78, the controller is told to quit, the job ends Failed with nothing counted."""
    job = LocalJob(["nonexistent_binary"], workers=2, job="local", state_dir=tmp_path / "state")
    t0 = time.monotonic()
    assert await run_local(job) == 1
    assert time.monotonic() - t0 < 30
    status = json.loads((tmp_path / "state" / "status.json").read_text())
    assert status["phase"] == "Failed" and status["errorNodes"] == []
    assert status["specState"]["variables"]["countedFailures"] == 0
    faults = [json.loads(line) for line in (tmp_path / "state" / "faults.jsonl").open()]
    assert [f["pod"] for f in faults] == ["local"]
    assert faults[0]["message"].startswith("stop: local-worker-")
    assert "the command cannot start: 'nonexistent_binary'" in faults[0]["message"]


def test_an_error_that_says_user_error_stops_the_job_uncounted(tmp_path: Path) -> None:
    faults: list[FaultRecord] = []
    core = running_job(tmp_path, faults)
    seq = int(core.state.masterSeq)
    why = "the command cannot start: './train': Permission denied"
    m = report(PODS[1], MessageType.ERROR, seq, reason=why, userError=True)
    assert core.on_report(m).reply is not None
    s = core.state
    assert (s.phase, bool(s.shouldQuit), int(s.countedFailures)) == ("Failed", True, 0)
    assert core.terminal == "Failed" and core.status.error_nodes == ()
    assert [(f.pod, f.message) for f in faults] == [
        ("job", f"stop: {PODS[1]}: {why}; the user's error, no retry, no node blamed")
    ]


def test_an_ordinary_error_is_still_counted(tmp_path: Path) -> None:
    faults: list[FaultRecord] = []
    core = running_job(tmp_path, faults)
    seq = int(core.state.masterSeq)
    core.on_report(report(PODS[1], MessageType.ERROR, seq, reason="exit code 1"))
    s = core.state
    assert (s.phase, int(s.countedFailures)) == ("Troubleshooting", 1)
    assert [f.message for f in faults] == ["error: exit code 1"]


def test_setprivs_exec_failure_is_the_commands_fault() -> None:
    filt = StderrFilter("[rank0]:")
    assert filt.feed("setpriv: failed to execute ./train: Permission denied") == [
        "setpriv: failed to execute ./train: Permission denied"
    ]
    assert filt.exec_failed == "./train: Permission denied"
    later = StderrFilter("[rank0]:")
    later.feed("starting")
    later.feed("setpriv: failed to execute x: y")  # not its first line: the command's own
    assert later.exec_failed == ""
