"""Node-local checks that need no torch: io, rdma and hang."""

from __future__ import annotations

import contextlib
import glob
import os
import tempfile
import time

from aegis.checks.params import CheckParams
from aegis.checks.progress import read_progress
from aegis.checks.result import CheckResult, CheckType, failed, not_applicable, passed


def check_io(params: CheckParams) -> CheckResult:
    """Write, fsync, read back, compare and delete a file in `params.io_dir`."""
    t0 = time.monotonic()
    directory = params.io_dir or tempfile.gettempdir()
    data = os.urandom(params.io_bytes)
    path = ""
    try:
        if params.simulates("io_error"):
            raise OSError(5, "simulated I/O error (io_error)")
        fd, path = tempfile.mkstemp(prefix=".aegis-io-", dir=directory)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        written = time.monotonic()
        with open(path, "rb") as f:
            back = f.read()
        os.unlink(path)
        path = ""
    except OSError as exc:
        return failed(
            CheckType.IO, f"storage read/write failed in {directory}: {exc}", t0, dir=directory
        )
    finally:
        if path:
            _remove_quietly(path)
    if back != data:
        return failed(
            CheckType.IO,
            f"read back differs from what was written in {directory}",
            t0,
            dir=directory,
        )
    mbps = len(data) / max(written - t0, 1e-9) / 1e6
    return passed(
        CheckType.IO,
        f"wrote, synced, read and deleted {len(data)} bytes",
        t0,
        dir=directory,
        bytes=len(data),
        write_mb_s=round(mbps, 1),
    )


def check_rdma(params: CheckParams) -> CheckResult:
    """Every RDMA port under /sys/class/infiniband must be ACTIVE; no RDMA device: n/a."""
    t0 = time.monotonic()
    states = _port_states(params.rdma_root)
    if not states:
        return not_applicable(CheckType.RDMA, f"no RDMA device under {params.rdma_root}", t0)
    if params.simulates("rdma_down"):
        states = dict.fromkeys(states, "1: DOWN (simulated)")
    down = sorted(port for port, state in states.items() if not state.endswith("ACTIVE"))
    if down:
        return failed(
            CheckType.RDMA, f"RDMA port(s) not ACTIVE: {', '.join(down)}", t0, ports=states
        )
    return passed(CheckType.RDMA, f"{len(states)} RDMA port(s) ACTIVE", t0, ports=states)


def check_hang(params: CheckParams, now: float | None = None) -> CheckResult:
    """The last progress signal must be younger than `params.hang_threshold_s`.

    Sources: `params.last_progress_ts` (wall clock, e.g. from the agent's HangWatch), else the
    progress file. With neither, or a file that holds no record yet (a script that does not
    call `aegis.progress`), there is nothing to judge: "not applicable", never a failure.
    """
    t0 = time.monotonic()
    last = params.last_progress_ts
    source = "last_progress_ts"
    if last is None and params.progress_file:
        source = params.progress_file
        rec = read_progress(params.progress_file)
        last = rec.last_signal() if rec else None
        if last is None:
            text = f"progress file {params.progress_file} holds no progress record"
            return not_applicable(CheckType.HANG, text, t0, source=source)
    if last is None:
        text = "no progress source (no progress file, no last progress time)"
        return not_applicable(CheckType.HANG, text, t0)
    age = (time.time() if now is None else now) - last
    details = {"age_s": round(age, 3), "threshold_s": params.hang_threshold_s, "source": source}
    if age > params.hang_threshold_s:
        return failed(
            CheckType.HANG,
            f"no progress for {age:.1f} s (threshold {params.hang_threshold_s:g} s)",
            t0,
            **details,
        )
    return passed(CheckType.HANG, f"last progress {age:.1f} s ago", t0, **details)


def _port_states(root: str) -> dict[str, str]:
    states: dict[str, str] = {}
    for state_file in sorted(glob.glob(os.path.join(root, "*", "ports", "*", "state"))):
        port_dir = os.path.dirname(state_file)
        device = os.path.basename(os.path.dirname(os.path.dirname(port_dir)))
        name = f"{device}/{os.path.basename(port_dir)}"
        try:
            with open(state_file, encoding="ascii", errors="replace") as f:
                states[name] = f.read().strip()
        except OSError as exc:
            states[name] = f"unreadable: {exc}"
    return states


def _remove_quietly(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
