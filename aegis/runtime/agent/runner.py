"""Run the user's training command the way torchrun would, and stop it without leftovers.

The command runs in its own session/process group, under a reaper of its own
(aegis.runtime.agent.containment): every process it starts stays in the reaper's tree, even a
`setsid` daemon. Its outcome is its main process's exit: once that exits, whatever it left
is ended within the reaper's grace, and its output pipes are not waited on past `_DRAIN_S`.
`stop()` reaches every process of the tree: SIGTERM to the group (the reaper ends the rest
once the main process exits), SIGKILL to the whole tree after the grace period. Output lines
are forwarded with a `[rank{N}]:` prefix (torchrun's own default is `[{role}{local_rank}]:`,
e.g. `[default0]:`; the global rank reads better across pods).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from aegis.protocol.environment import Var
from aegis.runtime.agent.command import command_problem, is_user_error
from aegis.runtime.agent.containment import (
    alive,
    children,
    descendants,
    kill_all,
    under_reaper,
)
from aegis.runtime.agent.output import StderrFilter, unprefixed
from aegis.runtime.agent.standby import StandbyPool
from aegis.runtime.errors import CommandError, RunnerError
from aegis.runtime.lifetime import dies_with_parent

log = logging.getLogger(__name__)

_CHUNK = 65536
_POLL_S = 0.05
_DRAIN_S = 1.0  # how long wait() lets output of an exited command trickle in
_REAP_S = 5.0  # how long stop() waits for killed processes to disappear


@dataclass(frozen=True)
class RankEnv:
    """Where the command sits in the job; becomes torchrun's environment variables."""

    rank: int
    world_size: int
    local_rank: int = 0
    local_world_size: int = 1
    master_addr: str = "127.0.0.1"
    master_port: int = 29500
    run_id: str = "none"
    job: str = ""
    pod: str = ""
    max_restarts: int = 0
    group_rank: int | None = None  # default: rank // local_world_size (the node's rank)
    agent_store: bool = False  # the rendezvous store is already up (hosted by the agent)

    def __post_init__(self) -> None:
        if not 0 <= self.rank < self.world_size:
            raise RunnerError(f"rank {self.rank} is not in 0..{self.world_size - 1}")
        if not 0 <= self.local_rank < self.local_world_size:
            raise RunnerError(f"local rank {self.local_rank} not in 0..{self.local_world_size - 1}")

    def environ(self, restart_count: int, retry: int, error_file: str = "") -> dict[str, str]:
        """The variables torchrun sets for a worker, plus AEGIS_JOB/POD/RETRY.

        TORCHELASTIC_USE_AGENT_STORE is `agent_store`: True when the node-0 agent already
        hosts the rendezvous store on MASTER_PORT (as torchrun's agent does: every rank is a
        client of a store that is up, no connect backoff), else False (rank 0 hosts it);
        `error_file` is where `@record` writes a rank's exception."""
        group_rank = self.group_rank
        if group_rank is None:
            group_rank = self.rank // self.local_world_size
        values: dict[str, object] = {
            "RANK": self.rank,
            "LOCAL_RANK": self.local_rank,
            "WORLD_SIZE": self.world_size,
            "LOCAL_WORLD_SIZE": self.local_world_size,
            "GROUP_RANK": group_rank,
            "GROUP_WORLD_SIZE": -(-self.world_size // self.local_world_size),
            "ROLE_RANK": self.rank,
            "ROLE_NAME": "default",
            "ROLE_WORLD_SIZE": self.world_size,
            "MASTER_ADDR": self.master_addr,
            "MASTER_PORT": self.master_port,
            "TORCHELASTIC_RESTART_COUNT": restart_count,
            "TORCHELASTIC_MAX_RESTARTS": self.max_restarts,
            "TORCHELASTIC_RUN_ID": self.run_id,
            "TORCHELASTIC_USE_AGENT_STORE": self.agent_store,
            "TORCHELASTIC_SIGNALS_TO_HANDLE": "SIGTERM,SIGINT,SIGHUP,SIGQUIT",
            Var.JOB: self.job,
            Var.POD: self.pod,
            Var.RETRY: retry,
        }
        if error_file:
            values["TORCHELASTIC_ERROR_FILE"] = error_file
        return {str(k): str(v) for k, v in values.items()}

    def defaults(self) -> dict[str, str]:
        """What torchrun sets only when the user did not: one OpenMP thread per process when
        a node runs several, NCCL's asynchronous error handling."""
        out = {"TORCH_NCCL_ASYNC_ERROR_HANDLING": "1", "PYTHONUNBUFFERED": "1"}
        if self.local_world_size > 1:
            out["OMP_NUM_THREADS"] = "1"
        return out


async def until_exit(proc: asyncio.subprocess.Process) -> int:
    """`proc`'s exit code once it exits. asyncio's `wait()` also waits for its pipes to
    close, which a process it left behind may hold open: that is not waited for."""
    waiter = asyncio.ensure_future(proc.wait())
    try:
        while proc.returncode is None and not waiter.done():
            await asyncio.wait({waiter}, timeout=_POLL_S)
    finally:
        if not waiter.done():
            waiter.cancel()
    code = proc.returncode
    assert code is not None
    return code


def group_alive(pgid: int) -> bool:
    """True while a process of group `pgid` is alive (zombies do not count)."""
    try:
        entries = os.listdir("/proc")
    except OSError:  # no procfs: zombies will count as alive
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    for entry in entries:
        if entry.isdigit() and _live_member(Path("/proc", entry, "stat"), pgid):
            return True
    return False


def _live_member(stat: Path, pgid: int) -> bool:
    try:
        fields = stat.read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return False
    return fields[2] == str(pgid) and fields[0] not in ("Z", "X")


class Runner:
    """Starts, watches, stops and restarts one user command."""

    def __init__(
        self,
        argv: Sequence[str],
        rank: RankEnv,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
        error_file: str = "",
        log_dir: Path | None = None,
    ) -> None:
        """`error_file`: TORCHELASTIC_ERROR_FILE of the command; `log_dir`: its output also
        goes to `log_dir/attempt_<restart>/<local rank>/{stdout,stderr}.log` (torchrun's
        `--log-dir` layout), unprefixed."""
        if not argv:
            raise RunnerError("no command to run")
        self.argv = list(argv)
        self.rank = rank
        self._env = dict(os.environ if env is None else env)
        self._cwd = cwd
        self._out = stdout
        self._err = stderr
        self.error_file = error_file
        self._log_dir = log_dir
        self._logs: list[TextIO] = []
        self._proc: asyncio.subprocess.Process | None = None
        self._pumps: list[asyncio.Task[None]] = []
        self.restart_count = 0
        self.retry = 0
        self.last_output = time.monotonic()  # monotonic time of the last output (or start)
        self.last_env: dict[str, str] = {}  # the environment of the last start
        self.from_standby = False  # the last start took a standby interpreter
        self.stderr_filter = StderrFilter(self.prefix)  # the last start's (its last exception)

    @property
    def cwd(self) -> str:
        """The command's working directory."""
        return os.fspath(self._cwd) if self._cwd is not None else os.getcwd()

    @property
    def pid(self) -> int | None:
        """The command's pid (also its process group id), None before start."""
        return None if self._proc is None else self._proc.pid

    @property
    def command_pid(self) -> int | None:
        """The command's own process, what a look at its state or stack must see: its reaper's
        child (aegis.runtime.agent.containment; a standby runs under one too), the reaper's
        pid until it has one."""
        if self._proc is None:
            return None
        return next(iter(children(self._proc.pid)), self._proc.pid)

    @property
    def returncode(self) -> int | None:
        """Exit code (negative: killed by that signal); None while running or before start."""
        return None if self._proc is None else self._proc.returncode

    @property
    def running(self) -> bool:
        """True from start until the command has exited."""
        return self._proc is not None and self._proc.returncode is None

    @property
    def prefix(self) -> str:
        """The prefix of every forwarded output line."""
        return f"[rank{self.rank.rank}]:"

    def environment(self) -> dict[str, str]:
        """The environment the next start gives the command."""
        env = {**self.rank.defaults(), **self._env}  # PYTHONUNBUFFERED feeds hang detection
        env.update(self.rank.environ(self.restart_count, self.retry, self.error_file))
        return env

    async def start(self, *, retry: int | None = None, standbys: StandbyPool | None = None) -> None:
        """Start the command in a new session; `retry` becomes AEGIS_RETRY. A standby of
        `standbys` that fits this attempt runs it; else it starts cold."""
        if self.running:
            raise RunnerError(f"{self.argv[0]} is already running (pid {self.pid})")
        if retry is not None:
            self.retry = retry
        env = self.environment()
        if self.error_file:
            with contextlib.suppress(OSError):
                os.unlink(self.error_file)  # an old attempt's exception is not this one's
            Path(self.error_file).parent.mkdir(parents=True, exist_ok=True)
        problem = command_problem(self.argv, env, self.cwd)
        if problem is not None:
            raise CommandError(f"the command cannot start: {problem}")
        logs = self._open_logs()
        self.last_env = env
        taken = None
        if standbys is not None:
            taken = await standbys.take(self.rank.local_rank, self.argv, env, self.cwd)
        self.from_standby = taken is not None
        try:
            proc = taken or await asyncio.create_subprocess_exec(
                *dies_with_parent(under_reaper(self.argv)),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                cwd=self._cwd,
                start_new_session=True,
            )
        except OSError as exc:
            self._close_logs()
            error = CommandError if is_user_error(exc) else RunnerError
            why = f"{self.argv[0]!r}: {exc.strerror or exc}"
            raise error(f"the command cannot start: {why}") from None
        self._proc = proc
        self.last_output = time.monotonic()
        assert proc.stdout is not None and proc.stderr is not None
        self.stderr_filter = StderrFilter(self.prefix)
        self._pumps = [
            asyncio.create_task(self._pump(proc.stdout, self._out or sys.stdout, logs[0])),
            asyncio.create_task(
                self._pump(proc.stderr, self._err or sys.stderr, logs[1], self.stderr_filter)
            ),
        ]
        how = "from its standby" if self.from_standby else "cold"
        log.info(
            "started %s as pid %d (restart %d, %s)", self.argv, proc.pid, self.restart_count, how
        )

    async def wait(self) -> int:
        """Wait for the command to exit; its code (negative for a signal). What it left
        behind is ended by its reaper; its output is read for `_DRAIN_S` more at most."""
        proc = self._require()
        code = await until_exit(proc)
        await self._drain(_DRAIN_S)
        self._close_logs()
        return code

    def send_signal(self, sig: int) -> None:
        """Send `sig` to the command's whole process group (no-op once it is gone)."""
        proc = self._require()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)

    async def stop(self, grace: float = 10.0) -> int:
        """SIGTERM the group, SIGKILL the whole tree (the reaper, the command and everything
        it started, `setsid` daemons included) whatever is left after `grace` s; the exit
        code."""
        proc = self._require()
        pgid = proc.pid
        tree = {pgid, *descendants(pgid)}  # as it is now: its members may be orphaned later
        if proc.returncode is None or group_alive(pgid) or any(map(alive, tree)):
            self.send_signal(signal.SIGTERM)
            if not await self._tree_gone(proc, tree, grace):
                log.warning("pid %d tree survived SIGTERM for %.1fs: SIGKILL", pgid, grace)
                # everything under the reaper first: it then exits with the command's own
                # status (its SIGTERM, say), not with the SIGKILL it would get itself
                kill_all((tree | set(descendants(pgid))) - {pgid}, signal.SIGKILL)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(until_exit(proc), _REAP_S)
                self.send_signal(signal.SIGKILL)
                if not await self._tree_gone(proc, tree, _REAP_S):
                    log.error("process tree of %d still has live members after SIGKILL", pgid)
        code = await until_exit(proc)
        await self._drain(_DRAIN_S)
        for task in self._pumps:
            task.cancel()
        self._close_logs()
        return code

    async def restart(self, grace: float = 10.0, *, retry: int | None = None) -> None:
        """Stop (if running) and start again with TORCHELASTIC_RESTART_COUNT + 1."""
        if self._proc is not None:
            await self.stop(grace)
        self.restart_count += 1
        await self.start(retry=retry)

    def _require(self) -> asyncio.subprocess.Process:
        if self._proc is None:
            raise RunnerError("the command has not been started")
        return self._proc

    async def _tree_gone(
        self, proc: asyncio.subprocess.Process, tree: set[int], timeout: float
    ) -> bool:
        deadline = time.monotonic() + timeout
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(until_exit(proc), timeout)
        while group_alive(proc.pid) or any(map(alive, tree)):
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(_POLL_S)
        return True

    async def _drain(self, timeout: float) -> None:
        """Read the output for up to `timeout` s more, then stop (a process the command left
        could hold its pipes open: they are not waited on)."""
        if self._pumps:
            await asyncio.wait(self._pumps, timeout=timeout)
            for task in self._pumps:
                task.cancel()

    async def _pump(
        self,
        reader: asyncio.StreamReader,
        dst: TextIO,
        log: TextIO | None,
        filt: StderrFilter | None = None,
    ) -> None:
        pending = b""
        while chunk := await reader.read(_CHUNK):
            self.last_output = time.monotonic()
            *lines, pending = (pending + chunk).split(b"\n")
            if len(pending) >= _CHUNK:  # a very long line: forward what we have
                lines.append(pending)
                pending = b""
            self._write(dst, lines, log, filt)
        if pending:
            self._write(dst, [pending], log, filt)
        if filt is not None:
            self._write(dst, [], None, filt, shown=filt.flush())

    def _write(
        self,
        dst: TextIO,
        lines: list[bytes],
        log: TextIO | None,
        filt: StderrFilter | None = None,
        shown: list[str] | None = None,
    ) -> None:
        """`lines` to the log file as they are, to `dst` with the rank's prefix (through
        `filt`: a peer's departure in one line); `shown`: more lines for `dst` only."""
        texts = [line.decode(errors="replace") for line in lines]
        prefix = self.prefix
        if filt is not None:
            out = [kept for text in texts for kept in filt.feed(text)] + (shown or [])
        else:  # torch prefixes some lines with the same words: once is enough
            out = [unprefixed(t, prefix) for t in texts]
        for sink, text in (
            (dst, "".join(f"{prefix}{line}\n" for line in out)),
            (log, "".join(f"{line}\n" for line in texts)),
        ):
            if not text:
                continue
            if sink is None:
                continue
            try:
                sink.write(text)
                sink.flush()
            except (OSError, ValueError):  # closed or broken sink: keep draining the pipe
                pass

    def _open_logs(self) -> tuple[TextIO | None, TextIO | None]:
        self._close_logs()
        if self._log_dir is None:
            return None, None
        where = self._log_dir / f"attempt_{self.restart_count}" / str(self.rank.local_rank)
        where.mkdir(parents=True, exist_ok=True)
        # closed by stop()/wait() once the command's output is drained
        out = open(where / "stdout.log", "a", encoding="utf-8")  # noqa: SIM115
        err = open(where / "stderr.log", "a", encoding="utf-8")  # noqa: SIM115
        self._logs = [out, err]
        return out, err

    def _close_logs(self) -> None:
        for f in self._logs:
            with contextlib.suppress(OSError):
                f.close()
        self._logs = []
