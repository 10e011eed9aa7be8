"""HangWatch: is the running training command still making progress? (No torch, no threads.)

The agent builds one per run of the command and calls `poll()` every `poll_interval_s`
(min(1 s, timeout/4), so a stall is reported within timeout + 1 s) and `new_checkpoint()`
as often. Progress sources, in order of trust:

1. the progress file (`aegis.progress(step)` / `aegis.checkpoint_done(step)`, see
   `aegis.checks.progress`): a record different from the last one read is progress. Once the
   file has changed during this watch it is the *only* source that counts (together with
   the checkpoint marker file), because a hung collective can keep a process busy (NCCL
   spins in its wait) and chatty (watchdog and heartbeat warnings). Until then the script
   may simply not use the API, or still be starting up, so the sources below count too.
2. output: `last_output()` returns the monotonic time of the command's last output line;
   a newer time than the last one seen is progress, dated at that time.
3. CPU: the summed utime + stime of every process whose process group is `pgid` (read from
   /proc/<pid>/stat) grew by more than `cpu_epsilon_s` CPU seconds per second of wall time
   (default 0.05: 5 % of one core; 0.05 s per poll at the 1 s poll), measured over windows
   of at least `poll_interval_s`. Caveat: a hung process that busy-loops counts as making
   progress by CPU; only the progress file can tell that apart.
4. the checkpoint marker file (AEGIS_CHECKPOINT_FILE): a change of its mtime, size or inode.

`poll()` returns a `HangVerdict` once no source has shown progress for `timeout_s`, and only
once per stall: it re-arms when progress resumes. `timeout_s <= 0` disables hang verdicts
(`new_checkpoint()` still works). Files are read with plain reads; a file or
process that vanishes between listing and reading is skipped (races are normal here).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from aegis.checks.progress import ProgressRecord, read_progress

CPU_EPSILON_S = 0.05
MAX_POLL_INTERVAL_S = 1.0
MARKER_CHECKPOINT = -1  # what `new_checkpoint` returns for the marker file (no step known)

# the names `HangVerdict.last_progress` takes
START, PROGRESS_FILE, OUTPUT, CPU, CHECKPOINT_FILE = (
    "start",
    "progress_file",
    "output",
    "cpu",
    "checkpoint_file",
)

try:
    _CLK_TCK = float(os.sysconf("SC_CLK_TCK"))
except (AttributeError, ValueError, OSError):  # not Linux
    _CLK_TCK = 100.0


@dataclass(frozen=True)
class HangVerdict:
    """No progress for `age_s` seconds; `last_progress` names the source that last showed some
    ("start" when none has since the watch began); `detail` is one line for logs and reports."""

    age_s: float
    last_progress: str
    detail: str
    step: int | None = None  # the last training step seen in the progress file, if any


class HangWatch:
    """Watches one run of the training command; poll it every `poll_interval_s` seconds."""

    def __init__(
        self,
        timeout_s: float,
        *,
        progress_file: str | None,
        pgid: int | None,
        last_output: Callable[[], float | None],
        clock: Callable[[], float] = time.monotonic,
        checkpoint_file: str | None = None,
        cpu_epsilon_s: float = CPU_EPSILON_S,
        proc_root: str = "/proc",
    ) -> None:
        if math.isnan(timeout_s):
            raise ValueError("timeout_s is NaN")
        if cpu_epsilon_s < 0:
            raise ValueError(f"cpu_epsilon_s must be >= 0, not {cpu_epsilon_s!r}")
        self.timeout_s = float(timeout_s)
        self.progress_file = progress_file
        self.checkpoint_file = checkpoint_file
        self.pgid = pgid
        self.cpu_epsilon_s = cpu_epsilon_s
        self._last_output = last_output
        self._clock = clock
        self._proc_root = proc_root
        now = clock()
        self._last_at = now
        self._source = START
        self._reported = False
        # progress file: the last record read; live once it changed during this watch
        self._record = self._read_record()
        self._file_live = False
        self._latest_checkpoint = self._record.checkpoint_step if self._record else None
        self._ckpt_key = _checkpoint_key(self._record)
        # output: the newest output time seen (an old one at the start is not progress)
        self._output_seen = last_output()
        # CPU: the start of the current measuring window
        self._cpu_window = (now, self._group_cpu())
        # checkpoint marker: one signature for progress, one for new_checkpoint()
        self._marker_seen = self._marker_sig()
        self._marker_reported = self._marker_seen

    @property
    def enabled(self) -> bool:
        """Whether `poll` can report a hang (timeout_s > 0; checkpoints are watched anyway)."""
        return self.timeout_s > 0

    @property
    def poll_interval_s(self) -> float:
        """How often to poll: min(1 s, timeout/4); a stall is then seen within timeout + 1 s."""
        if not self.enabled:
            return MAX_POLL_INTERVAL_S
        return min(MAX_POLL_INTERVAL_S, self.timeout_s / 4)

    @property
    def last_progress(self) -> str:
        """The source that showed progress last ("start" if none has yet)."""
        return self._source

    @property
    def file_live(self) -> bool:
        """Whether the progress file changed during this watch (it alone counts from then on)."""
        return self._file_live

    def age_s(self) -> float:
        """Seconds since the last progress seen by the last poll (clock time, now)."""
        return self._clock() - self._last_at

    def poll(self) -> HangVerdict | None:
        """Read every source; a verdict when nothing progressed for timeout_s (once per stall)."""
        now = self._clock()
        self._observe(now)
        age = now - self._last_at
        if not self.enabled or age < self.timeout_s or self._reported:
            return None
        self._reported = True
        step = self._record.step if self._record else None
        return HangVerdict(round(age, 3), self._source, self._detail(step), step)

    def new_checkpoint(self) -> int | None:
        """The step of a checkpoint completed since the last call (`MARKER_CHECKPOINT`, -1,
        when only the marker file says so), or None. A checkpoint present when the watch
        began is not new."""
        rec = self._read_record()
        self._note_checkpoint(rec)
        key = _checkpoint_key(rec)
        marker = self._marker_sig()
        found: int | None = None
        if key is not None and key != self._ckpt_key:
            self._ckpt_key = key
            found = key[0]
        if marker is not None and marker != self._marker_reported:
            found = MARKER_CHECKPOINT if found is None else found
        self._marker_reported = marker
        return found

    def latest_checkpoint(self) -> int | None:
        """The newest checkpoint step seen in the progress file (also one present at start)."""
        return self._latest_checkpoint

    def _observe(self, now: float) -> None:
        """Look at each sign of progress: the progress file, the checkpoint marker, the
        output, and (while no progress file is written) the process group's CPU time."""
        self._observe_record(now)
        marker = self._marker_sig()
        if marker is not None and marker != self._marker_seen:
            self._progress(now, CHECKPOINT_FILE)
        self._marker_seen = marker
        self._observe_output(now)
        if not self._file_live and self.pgid is not None:
            self._observe_cpu(now)

    def _observe_record(self, now: float) -> None:
        rec = self._read_record()
        if rec is not None and rec != self._record:
            self._record = rec
            self._file_live = True
            self._note_checkpoint(rec)
            self._progress(now, PROGRESS_FILE)

    def _observe_output(self, now: float) -> None:
        """New output is progress (when no progress file is written)."""
        out = self._last_output()
        if out is not None and (self._output_seen is None or out > self._output_seen):
            self._output_seen = out
            if not self._file_live:
                self._progress(min(out, now), OUTPUT)

    def _observe_cpu(self, now: float) -> None:
        """CPU time spent in the process group over a poll interval is progress."""
        since, cpu0 = self._cpu_window
        if now - since >= self.poll_interval_s:
            cpu = self._group_cpu()
            if cpu - cpu0 > self.cpu_epsilon_s * (now - since):
                self._progress(now, CPU)
            self._cpu_window = (now, cpu)

    def _progress(self, at: float, source: str) -> None:
        if at >= self._last_at:
            self._last_at, self._source = at, source
            self._reported = False

    def _note_checkpoint(self, rec: ProgressRecord | None) -> None:
        step = rec.checkpoint_step if rec else None
        if step is not None and (self._latest_checkpoint is None or step > self._latest_checkpoint):
            self._latest_checkpoint = step

    def _read_record(self) -> ProgressRecord | None:
        return read_progress(self.progress_file) if self.progress_file else None

    def _group_cpu(self) -> float:
        return 0.0 if self.pgid is None else group_cpu_seconds(self.pgid, self._proc_root)

    def _marker_sig(self) -> tuple[int, int, int] | None:
        if not self.checkpoint_file:
            return None
        try:
            st = os.stat(self.checkpoint_file)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def _detail(self, step: int | None) -> str:
        since = {
            START: "since the watch began",
            PROGRESS_FILE: f"since the last progress file record (step {step})",
            OUTPUT: "since the last output line",
            CPU: f"since the last CPU use of process group {self.pgid}",
            CHECKPOINT_FILE: f"since the last change of checkpoint file {self.checkpoint_file}",
        }[self._source]
        if self._file_live:
            watched = f"the progress file {self.progress_file} (only source once it changed)"
        else:
            parts = ["output"]
            if self.progress_file:
                parts.insert(0, f"progress file {self.progress_file} (no new record yet)")
            if self.pgid is not None:
                parts.append(f"CPU of process group {self.pgid}")
            watched = ", ".join(parts)
        return f"{since}, timeout {self.timeout_s:g} s; watched: {watched}"


def group_cpu_seconds(pgid: int, proc_root: str = "/proc") -> float:
    """utime + stime, in seconds, summed over the live processes of process group `pgid`.

    Exited processes drop out of the sum (their time moves to the reaper's cutime, which is
    not counted), so the sum can shrink; callers look only at growth.
    """
    try:
        names = os.listdir(proc_root)
    except OSError:
        return 0.0
    ticks = 0
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(os.path.join(proc_root, name, "stat"), "rb") as f:
                data = f.read()
        except OSError:  # gone since the listing, or not readable
            continue
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses
        fields = data[data.rfind(b")") + 2 :].split()
        try:
            if int(fields[2]) == pgid:
                ticks += int(fields[11]) + int(fields[12])
        except (IndexError, ValueError):
            continue
    return ticks / _CLK_TCK


def _checkpoint_key(rec: ProgressRecord | None) -> tuple[int, float | None] | None:
    if rec is None or rec.checkpoint_step is None:
        return None
    return (rec.checkpoint_step, rec.checkpoint_time)
