"""Which rank of a hung job is the culprit: a look at each process, not a guess from the clock.

When a pod's ranks show no progress for the hang timeout, its agent looks at each local rank:

1. its state in /proc/<pid>/stat: `T`/`t` (stopped by a signal, e.g. SIGSTOP, or a debugger)
   is a culprit at once;
2. a stack sample of its main thread: `py-spy dump --nonblocking` where py-spy is installed
   (and may read the process: CAP_SYS_PTRACE in a container), else faulthandler's dump on
   STACK_SIGNAL when the process registered one (aegis.checks.stackdump), else none;
3. its CPU time over the sample.

A rank whose stack is inside a collective (torch.distributed, or DDP's backward, where the
reducer waits for its all-reduce) is *waiting* for a peer: not a culprit. A rank whose stack
is anywhere else (user code, a lock, a sleep, a data loader) has stopped joining collectives:
a culprit. A rank with no stack sample is not blamed (a GPU rank spinning in a collective
looks busy); if no pod finds a culprit the agent restarts its ranks after a second timeout
(aegis.runtime.agent.service). Pure functions of what /proc, py-spy and the dump file say.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from collections.abc import Sequence
from dataclasses import dataclass

from aegis.checks.hangwatch import group_cpu_seconds
from aegis.checks.stackdump import STACK_SIGNAL, registered_pid

PY_SPY_TIMEOUT_S = 10.0
DUMP_WAIT_S = 1.0
# frames that mean "inside a collective, waiting for the peers"
COLLECTIVE = re.compile(r"torch/distributed/|_engine_run_backward")
WAITING, STOPPED, OUTSIDE, UNKNOWN, GONE = "waiting", "stopped", "outside", "unknown", "gone"


@dataclass(frozen=True)
class RankLook:
    """What one look at a rank found."""

    local_rank: int
    pid: int
    state: str  # /proc state letter ("" when gone)
    cpu_s: float  # CPU seconds of its process group over the sample
    stack: str  # its main thread's stack, innermost frame first ("" when none)
    source: str  # "py-spy", "faulthandler" or ""
    verdict: str  # WAITING, STOPPED, OUTSIDE, UNKNOWN or GONE

    @property
    def culprit(self) -> bool:
        """Whether this rank is what the job waits for."""
        return self.verdict in (STOPPED, OUTSIDE)

    def describe(self) -> str:
        """One clause for the Error report and the log."""
        top = self.stack.splitlines()[0].strip() if self.stack else ""
        what = {
            STOPPED: f"stopped (process state {self.state}: a SIGSTOP or a debugger)",
            OUTSIDE: f"not in a collective (at {top or '?'}, {self.source})",
            WAITING: f"waiting in a collective (at {top}, {self.source})",
            UNKNOWN: f"no stack sample (state {self.state}, {self.cpu_s:.2f} CPU s)",
            GONE: "exited",
        }[self.verdict]
        return f"local rank {self.local_rank} (pid {self.pid}) {what}"


def proc_state(pid: int) -> str:
    """The state letter of process `pid` ("" when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return ""
    return data[data.rfind(b")") + 2 :].split()[0].decode()


def py_spy() -> str | None:
    """The py-spy program, if installed (beside this Python first)."""
    here = os.path.join(sysconfig.get_path("scripts"), "py-spy")
    if os.access(here, os.X_OK):
        return here
    return shutil.which("py-spy")


def main_stack_py_spy(pid: int, program: str) -> str:
    """The main thread's frames ("func (file:line)" lines, innermost first) per py-spy."""
    try:
        out = subprocess.run(
            [program, "dump", "--pid", str(pid), "--nonblocking"],
            capture_output=True,
            text=True,
            timeout=PY_SPY_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    if out.returncode != 0:
        return ""
    return _first_thread(out.stdout, header=r"^Thread ")


def main_stack_faulthandler(pid: int, dump_file: str) -> str:
    """The main thread's frames per faulthandler, if `pid` registered a dump into
    `dump_file` (the signal is never sent to a process that did not)."""
    if not dump_file or registered_pid(dump_file) != pid:
        return ""
    try:
        before = os.stat(dump_file).st_size
        os.kill(pid, STACK_SIGNAL)
    except OSError:
        return ""
    deadline = time.monotonic() + DUMP_WAIT_S
    while time.monotonic() < deadline:
        time.sleep(0.05)
        try:
            with open(dump_file, encoding="utf-8", errors="replace") as f:
                f.seek(before)
                text = f.read()
        except OSError:
            return ""
        if text.strip():
            time.sleep(0.05)  # let it finish writing
            with open(dump_file, encoding="utf-8", errors="replace") as f:
                f.seek(before)
                return _faulthandler_main(f.read())
    return ""


def _first_thread(text: str, header: str) -> str:
    """The frames of the first thread block of a py-spy dump (its main thread is first)."""
    frames: list[str] = []
    inside = False
    for line in text.splitlines():
        if re.match(header, line):
            if inside:
                break
            inside = "MainThread" in line or not frames
            continue
        if inside and line.startswith("    ") and line.strip():
            frames.append(line.strip())
    return "\n".join(frames)


def _faulthandler_main(text: str) -> str:
    """The frames of the current thread in a faulthandler dump, innermost first."""
    blocks = re.split(r"\n(?=(?:Current thread|Thread) 0x)", text.strip())
    main = next((b for b in blocks if b.startswith("Current thread")), blocks[0] if blocks else "")
    frames = []
    for line in main.splitlines()[1:]:
        m = re.match(r'\s*File "(.+)", line (\d+) in (.+)', line)
        if m:
            frames.append(f"{m.group(3)} ({m.group(1)}:{m.group(2)})")
    return "\n".join(frames)


def verdict_of(state: str, stack: str) -> str:
    """A rank's verdict from its process state and main-thread stack (pure)."""
    if not state or state in "ZX":
        return GONE
    if state in "Tt":
        return STOPPED
    if not stack:
        return UNKNOWN
    return WAITING if COLLECTIVE.search(stack) else OUTSIDE


def look(
    ranks: Sequence[tuple[int, int, str]], sample_s: float = 0.5, program: str | None = None
) -> list[RankLook]:
    """Look at each (local rank, pid, dump file) and judge it."""
    program = program if program is not None else py_spy()
    cpu0 = {pid: group_cpu_seconds(process_group(pid)) for _, pid, _ in ranks}
    time.sleep(sample_s)
    out = []
    for lr, pid, dump in ranks:
        cpu = group_cpu_seconds(process_group(pid)) - cpu0[pid]
        state = proc_state(pid)
        stack, source = "", ""
        if state and state not in "TtZX":
            if program:
                stack, source = main_stack_py_spy(pid, program), "py-spy"
            if not stack:
                stack, source = main_stack_faulthandler(pid, dump), "faulthandler"
            if not stack:
                source = ""
        out.append(RankLook(lr, pid, state, round(cpu, 3), stack, source, verdict_of(state, stack)))
    return out


def process_group(pid: int) -> int:
    """The process group of `pid` (a rank's: its reaper's, aegis.runtime.agent.containment);
    `pid` itself once it is gone."""
    try:
        return os.getpgid(pid)
    except OSError:
        return pid


def stop_culprit(pid: int) -> None:
    """SIGKILL a culprit's process group (a stopped process dies of SIGKILL too)."""
    group = process_group(pid)
    for sig in (signal.SIGKILL, signal.SIGCONT):
        with contextlib.suppress(OSError):
            os.killpg(group, sig)


if __name__ == "__main__":  # `python -m aegis.checks.culprit PID...`: what the agent would see
    for item in look([(i, int(p), "") for i, p in enumerate(sys.argv[1:])]):
        print(item.describe())
