"""`aegis run -n N` as a subprocess of a test: started, watched, waited for, always stopped.

The launcher gets its own session (so the test can signal it alone and clean up its group);
its stdout and stderr go to files beside its state dir, readable while it runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from aegis.runtime.agent.containment import REAPER

from .wait import wait_for

ROOT = Path(__file__).resolve().parents[2]
TRAIN = str(ROOT / "examples" / "train_ddp.py")
AEGIS = [sys.executable, "-m", "aegis.cli"]


def alone_agent_env(job: str, **extra: str) -> dict[str, str]:
    """The environment of `aegis agent` for pod 0 of `job` with no controller to reach (it
    runs its command alone: fallback independent), plus `extra`."""
    return {
        **os.environ,
        "AEGIS_JOB": job,
        "AEGIS_POD": f"{job}-worker-0",
        "AEGIS_RANK": "0",
        "AEGIS_WORLD_SIZE": "1",
        "AEGIS_GRPC": "127.0.0.1:9",  # nobody there: no controller
        "AEGIS_CONNECT_TIMEOUT": "1",
        "AEGIS_FALLBACK": "independent",
        **extra,
    }


RUN_MARKER = "AEGIS_TEST_RUN"  # names the run every process of it belongs to


class AegisRun:
    """One `aegis run -n N [OPTS] -- CMD` with its state in `tmp/state`.

    `finish(timeout)` waits for the end (past it: SIGTERM, then fail with the output's tail);
    `stop()` ends it if it still runs (SIGTERM to its process group, SIGKILL after 60 s).
    """

    def __init__(
        self,
        tmp: Path,
        n: int,
        *opts: str,
        cmd: Sequence[str] | None = None,
        env: dict[str, str] | None = None,
        state: Path | None = None,
    ) -> None:
        self.state = state or tmp / "state"
        self.stdout_path, self.stderr_path = tmp / "run.out", tmp / "run.err"
        # the tests' pods are named local-worker-N (a job's own default name is random)
        named = () if "--job" in opts else ("--job", "local")
        self.argv = [*AEGIS, "run", "-n", str(n), "--state-dir", str(self.state), *named, *opts]
        self.argv.append("--")
        self.argv += cmd or [sys.executable, TRAIN]
        self.marker = f"{RUN_MARKER}={uuid.uuid4().hex}"  # in every process of this run
        with self.stdout_path.open("w") as out, self.stderr_path.open("w") as err:
            self.proc = subprocess.Popen(
                self.argv,
                env={**os.environ, **(env or {}), RUN_MARKER: self.marker.split("=", 1)[1]},
                stdout=out,
                stderr=err,
                text=True,
                start_new_session=True,
            )

    @property
    def pid(self) -> int:
        """The launcher's pid."""
        return self.proc.pid

    @property
    def returncode(self) -> int | None:
        """The exit code once it ended, else None."""
        return self.proc.poll()

    @property
    def stdout(self) -> str:
        """Everything the launcher (and the ranks it relays) wrote to stdout so far."""
        return self.stdout_path.read_text()

    @property
    def stderr(self) -> str:
        """Everything it wrote to stderr so far (the launcher's own lines)."""
        return self.stderr_path.read_text()

    @property
    def output(self) -> str:
        """stdout then stderr."""
        return self.stdout + self.stderr

    def running(self) -> bool:
        """True while it runs; fails (with the output's tail) once it has ended."""
        assert self.proc.poll() is None, (
            f"aegis run ended ({self.proc.returncode}):\n" + (self.output[-3000:])
        )
        return True

    def wait_until(self, cond: Any, timeout: float, what: str) -> Any:
        """`wait_for(cond)` that fails at once, with the output, if the job ends first."""
        return wait_for(lambda: self.running() and cond(), timeout, what)

    def finish(self, timeout: float) -> int:
        """Wait for the end and return its exit code; past `timeout` SIGTERM it and fail."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise AssertionError(
                f"aegis run still running after {timeout}s; stderr ends {self.stderr[-3000:]}"
            ) from None

    def rank_pids(self, rank: int) -> list[int]:
        """The live processes of this run that are rank `rank` of the command (torchrun's
        RANK in their environment; agents and their workers have none), not the reaper each
        rank runs under (aegis.runtime.agent.containment: it has the rank's environment too)."""
        want = {self.marker.encode(), f"RANK={rank}".encode()}
        found = []
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                env = set(Path("/proc", name, "environ").read_bytes().split(b"\0"))
                state = Path("/proc", name, "stat").read_text().rsplit(")", 1)[1].split()[0]
                argv = Path("/proc", name, "cmdline").read_bytes().split(b"\0")
            except (OSError, IndexError):
                continue
            reaper = argv[1:5] == [b"-I", b"-S", b"-c", REAPER.encode()]
            if want <= env and state not in ("Z", "X") and not reaper:
                found.append(int(name))
        return found

    def send_signal(self, sig: int) -> None:
        """Signal the launcher alone (not its process group)."""
        self.proc.send_signal(sig)

    def stop(self) -> None:
        """End it if it still runs: SIGTERM (the launcher stops its children), then SIGKILL."""
        if self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def status(self) -> dict[str, Any]:
        """The saved status (state/status.json)."""
        return dict(json.loads((self.state / "status.json").read_text()))

    def read_status(self) -> dict[str, Any] | None:
        """The saved status, or None while there is none (or it is being replaced)."""
        try:
            return self.status()
        except (OSError, ValueError):
            return None


Launch = Callable[..., AegisRun]  # the type of the `aegis_run` fixture


@pytest.fixture
def aegis_run(tmp_path: Path) -> Iterator[Launch]:
    """`aegis_run(n, *opts, cmd=..., env=...)` starts a job in tmp_path; stopped after the test."""
    runs: list[AegisRun] = []

    def start(
        n: int, *opts: str, cmd: Sequence[str] | None = None, env: dict[str, str] | None = None
    ) -> AegisRun:
        runs.append(AegisRun(tmp_path, n, *opts, cmd=cmd, env=env))
        return runs[-1]

    try:
        yield start
    finally:
        for run in runs:
            run.stop()
