"""Standby interpreters: an attempt run by a standby sees what a cold `python SCRIPT` sees
(argv, sys.path[0], __main__, directory, environment, stdin, exit code, traceback), with the
preloaded modules already imported; whatever does not fit starts cold; nothing is left."""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aegis.runtime.agent import standby as standby_module
from aegis.runtime.agent.runner import RankEnv, Runner
from aegis.runtime.agent.standby import (
    INTERPRETER_FLAGS,
    LATE_VARS,
    PythonCommand,
    StandbyPool,
    fits,
    python_command,
)

from ..support import freeze, wait_for_async

PROBE = """\
import os, sys
marked = "aegis_standby_marker" in sys.modules  # before any import of the script's own
import json
seen = {
    "argv": sys.argv, "path0": sys.path[0], "name": __name__,
    "file": globals().get("__file__"), "loader": type(globals().get("__loader__")).__name__,
    "cwd": os.getcwd(), "restart": os.environ.get("TORCHELASTIC_RESTART_COUNT"),
    "stdin": sys.stdin.read(), "globals": sorted(k for k in globals() if k != "seen"),
    "marked": marked, "pid": os.getpid(), "policies": [], "autogroup": None,
}
if os.path.exists("/proc/self/autogroup"):  # its session's scheduling group: its nice value
    seen["autogroup"] = open("/proc/self/autogroup").read().split()[-1]
for task in os.listdir("/proc/self/task"):  # the scheduling class of each of its threads
    try:
        seen["policies"].append(os.sched_getscheduler(int(task)))
    except OSError:
        pass
print(json.dumps(seen), flush=True)
if os.environ.get("PROBE_RAISE"):
    raise RuntimeError("probe failed on purpose")
sys.exit(int(os.environ.get("PROBE_EXIT", "3")))
"""


# the preloaded module says when it was imported, by which process, in which scheduling
# class and its session's autogroup at which nice value; like torch, it leaves a thread of
# its own running
MARKER = """\
import os, threading, time
group = "-"
if os.path.exists("/proc/self/autogroup"):
    group = open("/proc/self/autogroup").read().split()[-1]
where = os.path.join({!r}, str(os.getpid()))
with open(where + ".tmp", "w") as f:
    f.write(f"{{os.sched_getscheduler(0)}} {{group}}")
os.replace(where + ".tmp", where)  # whole once it exists
threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
"""


@pytest.fixture
def probe(tmp_path: Path) -> Path:
    """A script that prints what it sees as JSON, beside the marker module a standby preloads
    (on PYTHONPATH for both starts: only a preload has imported it by the script's first
    line)."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "probe.py").write_text(PROBE)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "lib").mkdir()
    marker = MARKER.format(str(tmp_path / "imported"))
    (tmp_path / "lib" / "aegis_standby_marker.py").write_text(marker)
    (tmp_path / "work").mkdir()
    (tmp_path / "imported").mkdir()
    return tmp_path


async def _preloaded(pool: StandbyPool, local_rank: int, root: Path) -> None:
    """Wait until the standby of `local_rank` has imported the marker."""
    standby = await pool.ready(local_rank)
    assert standby is not None
    pid = await wait_for_async(lambda: standby.interpreter_pid, 30, "the standby's pid")
    where = root / "imported" / str(pid)
    await wait_for_async(where.exists, 30, "the standby's preload")


def _env(root: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(root / "lib"), **extra}


async def _attempt(
    runner: Runner, pool: StandbyPool | None, out: io.StringIO
) -> tuple[int, dict[str, Any]]:
    """Start `runner` (from `pool` if it fits), wait for it: its exit code and what it saw."""
    before = len(out.getvalue())
    await runner.start(standbys=pool)
    code = await runner.wait()
    line = out.getvalue()[before:].strip().splitlines()[-1]
    return code, json.loads(line.removeprefix(runner.prefix))


async def _ran_cold(runner: Runner, *pools: StandbyPool) -> None:
    """Run `runner`'s first attempt cold, then start each pool's standby for its next."""
    await runner.start()
    await runner.wait()
    for pool in pools:
        pool.refill(0, runner.argv, runner.last_env, runner.cwd)


async def _cold_then_standby(
    argv: list[str],
    root: Path,
    env: dict[str, str],
    preload: tuple[str, ...] = (),
    delay: float = 0,
) -> tuple[tuple[int, dict[str, Any]], tuple[int, dict[str, Any]], Runner, StandbyPool]:
    """Attempt 0 cold, attempt 1 from the standby started after it (as LocalRanks does),
    once it has preloaded (with no `delay`: else at once)."""
    pool = StandbyPool(preload, delay=delay, idle_cores=0 if not delay else 1)
    out, err = io.StringIO(), io.StringIO()
    runner = Runner(argv, RankEnv(0, 1), env=env, cwd=root / "work", stdout=out, stderr=err)
    try:
        first = await _attempt(runner, pool, out)
        assert not runner.from_standby  # the pool was empty
        pool.refill(0, runner.argv, runner.last_env, runner.cwd)
        if preload and not delay:
            await _preloaded(pool, 0, root)
        runner.restart_count += 1
        second = await _attempt(runner, pool, out)
    finally:
        await pool.close()
    return first, second, runner, pool


@pytest.mark.parametrize("relative", [False, True])
async def test_a_script_run_by_a_standby_sees_what_a_cold_start_sees(
    probe: Path, relative: bool
) -> None:
    """Python makes __file__ absolute (not normalized), sys.path[0] the script's real
    directory, and keeps sys.argv[0] as given."""
    script = "../pkg/probe.py" if relative else str(probe / "pkg" / "probe.py")
    argv = [sys.executable, "-u", script, "a", "--b"]
    (c0, cold), (c1, warm), runner, pool = await _cold_then_standby(
        argv, probe, _env(probe), ("aegis_standby_marker",)
    )
    assert runner.from_standby and pool.taken == 1
    assert (c0, c1) == (3, 3)
    assert cold["marked"] is False and warm["marked"] is True  # preloaded ahead
    assert (cold["restart"], warm["restart"]) == ("0", "1")  # the attempt's own environment
    assert cold["pid"] != warm["pid"] and set(warm["policies"]) == {os.SCHED_OTHER}
    same = {k: v for k, v in cold.items() if k not in ("marked", "restart", "pid", "policies")}
    assert {k: warm[k] for k in same} == same
    assert warm["argv"] == argv[2:] and warm["path0"] == str(probe / "pkg")
    assert warm["file"] == (f"{probe}/work/{script}" if relative else script)
    assert warm["name"] == "__main__" and warm["cwd"] == str(probe / "work")
    assert warm["stdin"] == ""


async def test_a_module_run_by_a_standby_sees_what_python_m_sees(probe: Path) -> None:
    argv = [sys.executable, "-m", "pkg.probe", "x"]
    env = _env(probe, PYTHONPATH=f"{probe / 'lib'}{os.pathsep}{probe}")
    (c0, cold), (c1, warm), runner, _ = await _cold_then_standby(
        argv, probe, env, ("aegis_standby_marker",)
    )
    assert runner.from_standby and (c0, c1) == (3, 3)
    assert warm["marked"] and not cold["marked"]
    same = {k: v for k, v in cold.items() if k not in ("marked", "restart", "pid", "policies")}
    assert {k: warm[k] for k in same} == same
    assert warm["argv"] == [str(probe / "pkg" / "probe.py"), "x"]
    assert warm["path0"] == str(probe / "work")


async def test_an_uncaught_exception_exits_1_with_the_scripts_traceback(probe: Path) -> None:
    pool = StandbyPool()
    err = io.StringIO()
    argv = [sys.executable, str(probe / "pkg" / "probe.py")]
    runner = Runner(argv, RankEnv(0, 1), env=_env(probe, PROBE_RAISE="1"), stderr=err)
    try:
        pool.refill(0, argv, {**runner._env, **{"X": "1"}}, runner.cwd)  # does not fit
        await runner.start(standbys=pool)
        assert not runner.from_standby and pool.cold == 1
        assert await runner.wait() == 1
        pool.refill(0, argv, runner.last_env, runner.cwd)
        await runner.start(standbys=pool)
        assert runner.from_standby
        assert await runner.wait() == 1
    finally:
        await pool.close()
    raise_line = PROBE.splitlines().index('    raise RuntimeError("probe failed on purpose")') + 1
    tracebacks = err.getvalue().split("Traceback (most recent call last):")[1:]
    assert len(tracebacks) == 2
    for tb in tracebacks:
        assert "RuntimeError: probe failed on purpose" in tb
        assert f'File "{argv[1]}", line {raise_line}, in <module>' in tb


async def test_an_environment_that_differs_before_start_up_gets_a_cold_start(
    probe: Path,
) -> None:
    pool = StandbyPool(("aegis_standby_marker",), delay=0, idle_cores=0)
    out = io.StringIO()
    argv = [sys.executable, str(probe / "pkg" / "probe.py")]
    runner = Runner(argv, RankEnv(0, 1), env=_env(probe), stdout=out)
    try:
        pool.refill(0, argv, {**runner._env, "PYTHONHASHSEED": "7"}, runner.cwd)
        standby = await pool.ready(0)
        assert standby is not None
        await _preloaded(pool, 0, probe)
        _, seen = await _attempt(runner, pool, out)
        assert not runner.from_standby and not seen["marked"] and pool.cold == 1
        assert standby.proc.returncode is not None  # discarded, not left waiting
    finally:
        await pool.close()


async def test_a_standby_that_died_gives_a_cold_start(probe: Path) -> None:
    pool = StandbyPool()
    out = io.StringIO()
    argv = [sys.executable, str(probe / "pkg" / "probe.py")]
    runner = Runner(argv, RankEnv(0, 1), env=_env(probe), stdout=out)
    try:
        await runner.start(standbys=pool)
        await runner.wait()
        pool.refill(0, argv, runner.last_env, runner.cwd)
        standby = await pool.ready(0)
        assert standby is not None
        standby.proc.kill()
        await standby.proc.wait()
        code, _ = await _attempt(runner, pool, out)
        assert code == 3 and not runner.from_standby and pool.cold == 2
    finally:
        await pool.close()


async def test_a_preload_that_cannot_be_imported_costs_only_the_head_start(probe: Path) -> None:
    argv = [sys.executable, str(probe / "pkg" / "probe.py")]
    (_, _), (code, warm), runner, _ = await _cold_then_standby(
        argv, probe, _env(probe), ("no_such_module_anywhere", "aegis_standby_marker")
    )
    assert runner.from_standby and code == 3 and warm["marked"]


async def test_an_attempt_that_comes_before_the_preload_delay_skips_the_preload(
    probe: Path,
) -> None:
    """A crash right after a start: the standby runs it at once, without importing what the
    ranks just started still import (it would compete with them for the CPU)."""
    argv = [sys.executable, str(probe / "pkg" / "probe.py")]
    (_, _), (code, warm), runner, _ = await _cold_then_standby(
        argv, probe, _env(probe), ("aegis_standby_marker",), delay=60
    )
    assert code == 3 and runner.from_standby and not warm["marked"]
    assert not any((probe / "imported").iterdir())  # nobody imported it


async def test_a_standby_preloads_only_once_a_core_is_idle(probe: Path) -> None:
    """Not while the ranks it stands by for import the same modules: asked for more idle
    cores than the machine has, a standby has not preloaded by the time one started beside it
    without the gate has (one sample later), and its attempt runs without the preload."""
    argv = [sys.executable, str(probe / "pkg" / "probe.py")]
    marker = ("aegis_standby_marker",)
    cores = len(os.sched_getaffinity(0)) + 1
    gated = StandbyPool(marker, delay=0, idle_cores=cores, idle_class=False)
    ungated = StandbyPool(marker, delay=0, idle_cores=0, idle_class=False)
    out = io.StringIO()
    runner = Runner(argv, RankEnv(0, 1), env=_env(probe), stdout=out)
    try:
        await _ran_cold(runner, gated, ungated)
        standby = await gated.ready(0)
        assert standby is not None
        await _preloaded(ungated, 0, probe)
        imported = {p.name for p in (probe / "imported").iterdir()}
        pid = await wait_for_async(lambda: standby.interpreter_pid, 30, "the standby's pid")
        assert str(pid) not in imported and len(imported) == 1
        runner.restart_count = 1
        code, seen = await _attempt(runner, gated, out)
        assert code == 3 and runner.from_standby and not seen["marked"]
    finally:
        await gated.close()
        await ungated.close()


def _may_leave_the_idle_class() -> bool:
    """Whether a thread of this process may enter SCHED_IDLE and leave it (CAP_SYS_NICE)."""
    ok: list[bool] = []

    def probe() -> None:
        with contextlib.suppress(OSError):
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
            ok.append(True)

    thread = threading.Thread(target=probe)
    thread.start()
    thread.join()
    return bool(ok)


@pytest.mark.skipif(not _may_leave_the_idle_class(), reason="needs CAP_SYS_NICE")
async def test_a_preload_runs_in_the_idle_class_and_its_attempt_at_normal_priority(
    probe: Path,
) -> None:
    """On a machine whose every core is busy a standby still preloads, in the kernel's idle
    class (the gate on an idle core, asked for more cores than there are, is not used); the
    attempt it runs, and the thread its preload left, are back in the normal class."""
    argv = [sys.executable, str(probe / "pkg" / "probe.py")]
    cores = len(os.sched_getaffinity(0)) + 1
    pool = StandbyPool(("aegis_standby_marker",), delay=0, idle_cores=cores)
    out = io.StringIO()
    runner = Runner(argv, RankEnv(0, 1), env=_env(probe), stdout=out)
    try:
        await _ran_cold(runner, pool)
        await _preloaded(pool, 0, probe)
        standby = await pool.ready(0)
        assert standby is not None
        pid = standby.interpreter_pid
        policy, group = (probe / "imported" / str(pid)).read_text().split()
        assert policy == str(os.SCHED_IDLE)
        # where sessions are scheduled as groups (autogroup), the idle class alone ranks a
        # standby only within its own session: the session's group is niced too
        assert group == ("19" if os.path.exists("/proc/self/autogroup") else "-")
        runner.restart_count = 1
        code, seen = await _attempt(runner, pool, out)
        assert code == 3 and runner.from_standby and seen["marked"] and seen["pid"] == pid
        assert len(seen["policies"]) >= 2  # its main thread and the marker's
        assert set(seen["policies"]) == {os.SCHED_OTHER}
        assert seen["autogroup"] in (None, "0")
    finally:
        await pool.close()


async def test_a_standby_that_does_not_read_its_attempt_is_killed_for_a_cold_start(
    probe: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Telling a standby its attempt is bounded: a frozen one, sent more than a pipe holds,
    is killed after TAKE_TIMEOUT_S and the rank starts cold."""
    monkeypatch.setattr(standby_module, "TAKE_TIMEOUT_S", 0.5)
    big = {f"BIG{i}": "x" * 50_000 for i in range(4)}  # 200 KB: more than a pipe holds
    pool = StandbyPool()
    out = io.StringIO()
    argv = [sys.executable, str(probe / "pkg" / "probe.py")]
    runner = Runner(argv, RankEnv(0, 1), env=_env(probe, **big), stdout=out)
    try:
        await _ran_cold(runner, pool)
        standby = await pool.ready(0)
        assert standby is not None
        interpreter = await wait_for_async(lambda: standby.interpreter_pid, 30, "its pid")
        freeze(interpreter)  # its reaper runs on: the interpreter does not read its attempt
        runner.restart_count = 1
        code, seen = await _attempt(runner, pool, out)
        assert code == 3 and not runner.from_standby and seen["pid"] != interpreter
        assert standby.proc.returncode is not None  # killed, reaped
    finally:
        await pool.close()


async def test_close_leaves_no_standby_running(probe: Path) -> None:
    pool = StandbyPool()
    argv = [sys.executable, str(probe / "pkg" / "probe.py")]
    for lr in range(3):
        pool.refill(lr, argv, _env(probe), str(probe))
    replaced = await pool.ready(1)
    pool.refill(1, argv, _env(probe), str(probe))  # replaces (and discards) the first one
    standbys = [await pool.ready(lr) for lr in range(3)]
    assert replaced is not None and replaced.proc.returncode is not None
    pids = [s.proc.pid for s in standbys if s is not None]
    assert len(pids) == 3
    await pool.close()
    await wait_for_async(lambda: not any(_alive(p) for p in pids), 10, "standbys gone")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# ---------------- which commands a standby runs ----------------

ARGS = st.lists(st.text(st.characters(codec="utf-8", exclude_characters="\0"), max_size=8))
FLAGS = st.lists(st.sampled_from(sorted(INTERPRETER_FLAGS)), max_size=3)
PROGRAMS = st.sampled_from(["python", "python3", "/usr/bin/python3.11", sys.executable])


@given(PROGRAMS, FLAGS, st.from_regex(r"[a-z_/]{1,12}\.py", fullmatch=True), ARGS)
def test_a_script_command_is_taken_apart(
    program: str, flags: list[str], script: str, args: list[str]
) -> None:
    got = python_command([program, *flags, script, *args])
    assert got == PythonCommand(program, tuple(flags), tuple(args), script=script)


@given(PROGRAMS, FLAGS, st.from_regex(r"[a-z_]{1,8}(\.[a-z_]{1,8}){0,2}", fullmatch=True), ARGS)
def test_a_module_command_is_taken_apart(
    program: str, flags: list[str], module: str, args: list[str]
) -> None:
    got = python_command([program, *flags, "-m", module, *args])
    assert got == PythonCommand(program, tuple(flags), tuple(args), module=module)


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["bash", "train.sh"],
        ["torchrun", "train.py"],
        ["python"],
        ["python", "-u"],
        ["python", "-c", "print(1)"],
        ["python", "-X", "dev", "train.py"],
        ["python", "-W", "error", "train.py"],
        ["python", "-uB", "train.py"],
        ["python", "-", "x"],
        ["python", "-m"],
        ["python", "-m", "not a module"],
        ["pythonista", "train.py"],
    ],
)
def test_commands_a_standby_cannot_mimic_are_left_to_a_cold_start(argv: list[str]) -> None:
    assert python_command(argv) is None


@given(
    st.dictionaries(st.sampled_from(["A", "PYTHONPATH", *sorted(LATE_VARS)]), st.text()),
    st.dictionaries(st.sampled_from(["A", "PYTHONPATH", *sorted(LATE_VARS)]), st.text()),
)
def test_environments_fit_when_they_differ_only_in_late_variables(
    a: dict[str, str], b: dict[str, str]
) -> None:
    early = ("A", "PYTHONPATH")
    assert fits(a, b) == all(a.get(k) == b.get(k) for k in early)


def test_a_new_checkpoint_token_each_attempt_keeps_the_standby() -> None:
    # the agent's checkpoint store gives each attempt a token of its own (aegis.checkpoint reads
    # it at the rank's first save or load): without this every restart of a rank that
    # checkpoints started cold
    first = {"PYTHONPATH": "/lib", "AEGIS_CHECKPOINT_TOKEN": "a" * 32, "AEGIS_RETRY": "0"}
    assert fits(first, {**first, "AEGIS_CHECKPOINT_TOKEN": "b" * 32, "AEGIS_RETRY": "1"})
    assert not fits(first, {**first, "AEGIS_CHECKPOINT_SOCKET": "/elsewhere"})
