"""HangWatch: a fake clock with real files (progress file, checkpoint marker, a fake /proc), and
real processes in their own process groups."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aegis.checks import progress as prog
from aegis.checks.hangwatch import (
    MARKER_CHECKPOINT,
    HangVerdict,
    HangWatch,
    group_cpu_seconds,
)


class Clock:
    """A monotonic clock that moves only when told to."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t

    def advance(self, dt: float) -> None:
        self.t += dt


class Output:
    """Stands in for the runner's last-output time."""

    def __init__(self, at: float | None = None) -> None:
        self.at = at

    def __call__(self) -> float | None:
        return self.at


class FakeProc:
    """A /proc tree with hand-written stat files (utime and stime in clock ticks)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.tck = os.sysconf("SC_CLK_TCK")

    def set(self, pid: int, pgrp: int, cpu_s: float, comm: str = "py (thon) x") -> None:
        d = self.root / str(pid)
        d.mkdir(parents=True, exist_ok=True)
        ticks = round(cpu_s * self.tck)
        rest = " ".join(["0"] * 5 + [str(ticks // 2), str(ticks - ticks // 2)] + ["0"] * 30)
        (d / "stat").write_text(f"{pid} ({comm}) S 1 {pgrp} {pgrp} 0 -1 {rest}\n")

    def remove(self, pid: int) -> None:
        (self.root / str(pid) / "stat").unlink()
        (self.root / str(pid)).rmdir()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def progress_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "progress.json"
    monkeypatch.setenv(prog.PROGRESS_FILE_ENV, str(path))
    monkeypatch.setenv(prog.PROGRESS_INTERVAL_ENV, "0")
    prog._state.clear()
    yield path
    prog._state.clear()


def test_output_is_progress_and_a_stall_is_reported_once(clock: Clock) -> None:
    out = Output(clock.t - 50)  # output from before the watch began is not progress
    w = HangWatch(10, progress_file=None, pgid=None, last_output=out, clock=clock)
    assert w.poll_interval_s == 1.0
    clock.advance(9.9)
    assert w.poll() is None
    clock.advance(0.1)
    v = w.poll()
    assert isinstance(v, HangVerdict)
    assert v.age_s == pytest.approx(10) and v.last_progress == "start"
    assert v.detail.startswith("since the watch began, timeout 10 s; watched: output")
    clock.advance(100)
    assert w.poll() is None  # once per stall
    out.at = clock.t - 1  # output resumed (one second before this poll)
    assert w.poll() is None and w.last_progress == "output"
    assert w.age_s() == pytest.approx(1)
    clock.advance(8.9)
    assert w.poll() is None
    clock.advance(0.1)
    again = w.poll()
    assert again is not None and again.last_progress == "output"
    assert "since the last output line" in again.detail


def test_poll_interval_and_a_disabled_watch(clock: Clock) -> None:
    w = HangWatch(0.4, progress_file=None, pgid=None, last_output=Output(), clock=clock)
    assert w.poll_interval_s == pytest.approx(0.1) and w.enabled
    off = HangWatch(0, progress_file=None, pgid=None, last_output=Output(), clock=clock)
    clock.advance(1e6)
    assert not off.enabled and off.poll() is None and off.poll_interval_s == 1.0
    with pytest.raises(ValueError):
        HangWatch(float("nan"), progress_file=None, pgid=None, last_output=Output())


def test_the_progress_file_once_it_changes_is_the_only_source(
    clock: Clock, progress_file: Path, tmp_path: Path
) -> None:
    fake = FakeProc(tmp_path / "proc")
    fake.set(4242, 4242, 1.0)
    prog.progress(1)  # a record from before the watch (e.g. the previous run) is no progress
    out = Output()
    w = HangWatch(
        10,
        progress_file=str(progress_file),
        pgid=4242,
        last_output=out,
        clock=clock,
        proc_root=str(fake.root),
    )
    # before the file changes, output and CPU count (the script may not use the API)
    clock.advance(6)
    out.at = clock.t
    assert w.poll() is None and w.last_progress == "output" and not w.file_live
    clock.advance(6)
    fake.set(4242, 4242, 2.0)  # 1 s of CPU in 6 s
    assert w.poll() is None and w.last_progress == "cpu"
    clock.advance(6)
    prog.progress(2)
    assert w.poll() is None and w.last_progress == "progress_file" and w.file_live
    # from now on a spinning, chatty process is not progress
    for _ in range(9):
        clock.advance(1)
        out.at = clock.t
        fake.set(4242, 4242, 2.0 + clock.t - 1018)
        assert w.poll() is None
    clock.advance(1)
    v = w.poll()
    assert v is not None and v.last_progress == "progress_file" and v.step == 2
    assert "(step 2)" in v.detail and "only source" in v.detail
    prog.progress(3)
    assert w.poll() is None
    assert w.age_s() == 0


def test_cpu_growth_counts_only_above_the_epsilon_rate(clock: Clock, tmp_path: Path) -> None:
    fake = FakeProc(tmp_path / "proc")
    fake.set(100, 100, 5.0)
    fake.set(101, 100, 1.0, comm="worker")
    fake.set(200, 200, 0.0)  # another group
    (fake.root / "self").mkdir()  # not a pid
    (fake.root / "300").mkdir()  # a process that vanished: no stat file
    (fake.root / "301").mkdir()
    (fake.root / "301" / "stat").write_text("garbage")
    assert group_cpu_seconds(100, str(fake.root)) == pytest.approx(6.0)
    w = HangWatch(
        4,
        progress_file=None,
        pgid=100,
        last_output=Output(),
        clock=clock,
        proc_root=str(fake.root),
        cpu_epsilon_s=0.05,
    )
    clock.advance(1)
    fake.set(101, 100, 1.04)  # 4 % of a core: idle
    fake.set(200, 200, 50.0)  # a busy process of another group is not ours
    assert w.poll() is None and w.last_progress == "start"
    clock.advance(1)
    fake.set(101, 100, 1.20)  # 16 %: busy
    assert w.poll() is None and w.last_progress == "cpu"
    clock.advance(0.5)
    fake.set(101, 100, 5.0)  # polled sooner than the interval: the window stays open
    fake.remove(100)  # an exited process drops out: the sum shrinks, which is no progress
    assert w.poll() is None and w.age_s() == pytest.approx(0.5)
    clock.advance(0.5)
    assert w.poll() is None and w.age_s() == pytest.approx(1.0)
    clock.advance(3)
    v = w.poll()
    assert v is not None and v.last_progress == "cpu" and v.age_s == pytest.approx(4.0)
    assert "process group 100" in v.detail


def test_checkpoints_from_the_progress_file_and_a_marker(
    clock: Clock, progress_file: Path, tmp_path: Path
) -> None:
    prog.checkpoint_done(10)  # from before the watch: not new, but the latest known
    marker = tmp_path / "ckpt.done"
    w = HangWatch(
        60,
        progress_file=str(progress_file),
        pgid=None,
        last_output=Output(),
        clock=clock,
        checkpoint_file=str(marker),
    )
    assert w.latest_checkpoint() == 10
    assert w.new_checkpoint() is None
    prog.progress(15)
    assert w.new_checkpoint() is None  # a step is not a checkpoint
    prog.checkpoint_done(20)
    assert w.new_checkpoint() == 20
    assert w.new_checkpoint() is None
    assert w.latest_checkpoint() == 20
    marker.write_text("")  # the marker appears
    assert w.new_checkpoint() == MARKER_CHECKPOINT
    assert w.new_checkpoint() is None
    st = marker.stat()
    os.utime(marker, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # touched again
    assert w.new_checkpoint() == MARKER_CHECKPOINT
    clock.advance(59)
    os.utime(marker, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
    assert w.poll() is None and w.last_progress == "checkpoint_file"


@settings(max_examples=60, deadline=None)
@given(
    timeout=st.floats(0.5, 20),
    steps=st.lists(st.tuples(st.floats(0, 30), st.booleans()), min_size=1, max_size=40),
)
def test_a_verdict_iff_the_stall_reaches_the_timeout_once_per_stall(
    timeout: float, steps: list[tuple[float, bool]]
) -> None:
    clock, out = Clock(), Output()
    w = HangWatch(timeout, progress_file=None, pgid=None, last_output=out, clock=clock)
    last, reported = clock.t, False
    for dt, printed in steps:
        clock.advance(dt)
        if printed:
            out.at, last, reported = clock.t, clock.t, False
        v = w.poll()
        due = clock.t - last >= timeout and not reported
        assert (v is not None) == due
        if v is not None:
            reported = True
            assert v.age_s == pytest.approx(clock.t - last, abs=1e-3)


SCRIPT = """
import sys
print("ready", flush=True)
for line in sys.stdin:
    print("got", line.strip(), flush=True)
"""


class Lines:
    """Reads a child's stdout in a thread; records the monotonic time of each line."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self.at: float | None = None
        self.cond = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self._thread.start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            with self.cond:
                self.lines.append(line.strip())
                self.at = time.monotonic()
                self.cond.notify_all()

    def wait_for(self, n: int, timeout: float = 30.0) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.lines) >= n, timeout), self.lines

    def __call__(self) -> float | None:
        with self.cond:
            return self.at


def wait_verdict(w: HangWatch, limit_s: float) -> tuple[HangVerdict, float]:
    """Poll at the recommended period until a verdict; (verdict, when) or fail after limit_s."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        v = w.poll()
        if v is not None:
            return v, time.monotonic()
        time.sleep(w.poll_interval_s)
    raise AssertionError(f"no verdict within {limit_s} s")


@pytest.mark.timeout(60)
def test_a_real_blocked_process_is_reported_and_rearmed_by_new_output() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        lines = Lines(proc)
        lines.wait_for(1)
        timeout = 0.6
        w = HangWatch(timeout, progress_file=None, pgid=proc.pid, last_output=lines)
        v, seen = wait_verdict(w, 30)
        last = lines()
        assert last is not None
        assert v.last_progress in ("start", "output", "cpu")  # startup CPU may be seen first
        assert seen - last >= timeout
        assert v.age_s >= timeout
        assert w.poll() is None  # once per stall
        assert proc.stdin is not None
        proc.stdin.write("more\n")
        proc.stdin.flush()
        lines.wait_for(2)
        assert w.poll() is None
        assert w.last_progress in ("output", "cpu")
        v2, seen2 = wait_verdict(w, 30)
        last2 = lines()
        assert last2 is not None and seen2 - last2 >= timeout
        assert v2.last_progress in ("output", "cpu") and v2.age_s >= timeout
        assert lines.lines == ["ready", "got more"]
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.timeout(60)
def test_a_real_busy_process_counts_as_progress_by_cpu() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while group_cpu_seconds(proc.pid) < 0.1:  # it is running and /proc shows it
            assert time.monotonic() < deadline
            time.sleep(0.02)
        w = HangWatch(0.4, progress_file=None, pgid=proc.pid, last_output=Output())
        end = time.monotonic() + 4 * w.timeout_s
        while time.monotonic() < end:
            assert w.poll() is None, "a spinning process is progress by CPU"
            time.sleep(w.poll_interval_s)
        assert w.last_progress == "cpu"
    finally:
        proc.kill()
        proc.wait()
