"""Standby interpreters: a rank's next attempt is already started when the crash comes.

When an agent starts, and after it starts a rank whose command is `python [-u|-B|-O|-OO|-s]
SCRIPT ARGS` or `python ... -m MODULE ARGS`, it starts one more interpreter for each rank, in
the same way (same program, options, environment, directory, session and parent-death signal
as the rank itself): the first attempt's standbys start importing at once (no rank is
running yet: their import overlaps the agent's join and boot checks), the later ones once
`PRELOAD_DELAY_S` have passed, unless their attempt came first. A standby imports the
`--preload` modules (e.g. torch, the bulk of a rank's start-up) in a thread that gets only
the CPU nothing else wants, and waits on its stdin. That thread runs in the kernel's idle
scheduling class (SCHED_IDLE) where the process may move it back (CAP_SYS_NICE, as root or
granted; threads the imports start inherit the class and are moved back too), and its
session's scheduling group (autogroup: where sessions are scheduled as groups, the class
ranks threads only within one) at nice 19, so it makes progress between the steps of busy
ranks and takes no CPU time they want; elsewhere it
starts once a whole core has been idle over a sample (/proc/stat), at normal priority. An
attempt that comes during the import moves it back to normal priority and waits for it: a
head start on a cold start. The next attempt sends it the attempt's argv, environment and
directory as one JSON line; it then runs the script in its `__main__` module the way `python
SCRIPT` does (sys.argv, sys.path[0], `__name__ == "__main__"`, stdin on /dev/null). The
interpreter start-up and the preloaded imports are then off the path from crash to restart.

A standby is only used when nothing the interpreter reads at start-up can differ: the same
program, options and directory, and an environment that differs only in `LATE_VARS`, the
variables a rank reads when it joins its process group, not when it imports torch. Anything
else starts the rank cold, as does a standby that died. A preload that fails to import is
skipped (the command imports it itself and fails the way it would cold).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aegis.protocol.environment import MODULE_NAME
from aegis.runtime.agent.containment import children, under_reaper
from aegis.runtime.lifetime import dies_with_parent

log = logging.getLogger(__name__)

# options that only configure the interpreter, passed to the standby as they are
INTERPRETER_FLAGS = frozenset({"-u", "-B", "-O", "-OO", "-s"})
# what changes from one attempt to the next and is read at rendezvous time, not at start-up
LATE_VARS = frozenset(
    {
        "TORCHELASTIC_RESTART_COUNT",
        "TORCHELASTIC_RUN_ID",
        "TORCHELASTIC_USE_AGENT_STORE",
        "MASTER_ADDR",
        "MASTER_PORT",
        "AEGIS_RETRY",
        # the order's; set for the script (torchrun's agent sets it), read by nothing of torch
        "TORCHELASTIC_MAX_RESTARTS",
        # a new one each attempt; aegis.checkpoint reads it at the rank's first save or load
        "AEGIS_CHECKPOINT_TOKEN",
    }
)
# A standby imports its preloads at least this long after its start: not while the ranks it
# stands by for still import the same modules. Its attempt, when it comes first, runs without
# the preload. Without the idle scheduling class, the import also waits until a whole core has
# been idle over one sample (/proc/stat).
PRELOAD_DELAY_S = 2.0
PRELOAD_IDLE_CORES = 1.0
IDLE_SAMPLE_S = 0.5
TAKE_TIMEOUT_S = 10.0  # telling a standby its attempt: past this, kill it and start cold
_PYTHON = re.compile(r"python(\d+(\.\d+)*)?")

# The standby's program, run with `-c` so that nothing of aegis is imported into the rank.
# Everything it uses is local to _standby: __main__'s globals are cleared before the command
# runs in them, as `python SCRIPT` would have them.
BOOTSTRAP = r"""
def _idle():
    with open("/proc/stat", "rb") as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    return ticks[3] + ticks[4], sum(ticks)

def _autogroup(nice):
    import time
    for _ in range(60):  # 1.2 s: a dozen standbys of a node changing theirs at once
        try:
            with open("/proc/self/autogroup", "w") as f:
                f.write(str(nice))
            return
        except BlockingIOError:  # one change a 0.1 s on the host without CAP_SYS_ADMIN
            time.sleep(0.02)
        except OSError:  # no autogroups here
            return

def _to_normal():
    import os
    _autogroup(0)
    for task in os.listdir("/proc/self/task"):
        try:
            if os.sched_getscheduler(int(task)) == os.SCHED_IDLE:
                os.sched_setscheduler(int(task), os.SCHED_OTHER, os.sched_param(0))
        except OSError:
            pass

def _idle_class():
    import os, threading
    ok = []
    def probe():
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
            ok.append(True)
        except (AttributeError, OSError):
            pass
    thread = threading.Thread(target=probe)
    thread.start()
    thread.join()
    return bool(ok)

def _standby():
    import builtins, json, os, select, sys, threading
    asked, _, _ = select.select([0], [], [], float(sys.argv[1]))
    idle_class = not asked and sys.argv[4] == "1" and _idle_class()
    cores = len(os.sched_getaffinity(0))
    while not asked and not idle_class:
        try:
            idle, total = _idle()
            asked, _, _ = select.select([0], [], [], float(sys.argv[2]))
            idle2, total2 = _idle()
        except (OSError, ValueError, IndexError):  # no /proc/stat: preload now
            break
        if total2 > total and (idle2 - idle) / (total2 - total) * cores >= float(sys.argv[3]):
            break
    preload, told, lock = None, threading.Event(), threading.Lock()
    if not asked:
        def run():
            with lock:
                if told.is_set():
                    return
                if idle_class:
                    _autogroup(19)
                    try:
                        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
                    except OSError:
                        pass
            for name in sys.argv[5:]:
                try:
                    __import__(name)
                except Exception:
                    pass
            if idle_class:
                _to_normal()
        preload = threading.Thread(target=run, name="aegis-preload", daemon=True)
        preload.start()
    line = sys.stdin.buffer.readline()
    if not line:
        os._exit(0)
    if preload is not None:
        with lock:
            told.set()
            if idle_class:
                _to_normal()  # an import still running goes on at normal priority
        preload.join()
    spec = json.loads(line)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = sys.__stdin__ = open(0, "r", closefd=False)
    os.chdir(spec["cwd"])
    os.environ.clear()
    os.environ.update(spec["env"])
    main = sys.modules["__main__"].__dict__
    main.clear()
    main.update(__name__="__main__", __doc__=None, __package__=None, __spec__=None,
                __loader__=None, __builtins__=builtins, __annotations__={})
    if "module" in spec:
        if not sys.flags.safe_path:
            sys.path[0] = os.getcwd()
        sys.argv = ["-m", *spec["args"]]
        import runpy
        runpy._run_module_as_main(spec["module"])
        return
    script = spec["script"]
    path = os.path.join(os.getcwd(), script)  # as Python does: absolute, not normalized
    if not sys.flags.safe_path:
        sys.path[0] = os.path.dirname(os.path.realpath(script))
    sys.argv = [script, *spec["args"]]
    with open(path, "rb") as f:
        code = compile(f.read(), path, "exec")
    from importlib.machinery import SourceFileLoader
    main.update(__file__=path, __cached__=None, __loader__=SourceFileLoader("__main__", path))
    exec(code, main)
_standby()
"""


@dataclass(frozen=True)
class PythonCommand:
    """`python [FLAGS] SCRIPT ARGS` or `python [FLAGS] -m MODULE ARGS`, taken apart."""

    program: str
    flags: tuple[str, ...]
    args: tuple[str, ...]
    script: str = ""
    module: str = ""

    def spec(self, env: Mapping[str, str], cwd: str) -> dict[str, object]:
        """What the standby is sent: the attempt's argv, environment and directory."""
        target = {"module": self.module} if self.module else {"script": self.script}
        return {**target, "args": list(self.args), "env": dict(env), "cwd": cwd}


def python_command(argv: Sequence[str]) -> PythonCommand | None:
    """`argv` as a PythonCommand when a standby can run it, else None (run it cold)."""
    if not argv or not _PYTHON.fullmatch(os.path.basename(argv[0])):
        return None
    i = 1
    while i < len(argv) and argv[i] in INTERPRETER_FLAGS:
        i += 1
    flags, rest = tuple(argv[1:i]), list(argv[i:])
    if not rest:
        return None
    if rest[0] == "-m":
        if len(rest) < 2 or not MODULE_NAME.fullmatch(rest[1]):
            return None
        return PythonCommand(argv[0], flags, tuple(rest[2:]), module=rest[1])
    if rest[0].startswith("-") or rest[0] == "":
        return None  # -c, -X, a combined flag, stdin: not something a standby mimics
    return PythonCommand(argv[0], flags, tuple(rest[1:]), script=rest[0])


def fits(started_env: Mapping[str, str], env: Mapping[str, str]) -> bool:
    """Whether a standby started with `started_env` may run an attempt with `env`."""
    keys = started_env.keys() | env.keys()
    return all(started_env.get(k) == env.get(k) for k in keys - LATE_VARS)


class Standby:
    """One started interpreter waiting for its attempt; `take` it once, or `discard` it."""

    def __init__(
        self,
        proc: asyncio.subprocess.Process,
        command: PythonCommand,
        env: Mapping[str, str],
        cwd: str,
    ) -> None:
        self.proc = proc
        self.command = command
        self.env = dict(env)
        self.cwd = cwd

    @classmethod
    async def spawn(
        cls,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: str,
        preload: Sequence[str],
        delay: float = PRELOAD_DELAY_S,
        idle_cores: float = PRELOAD_IDLE_CORES,
        idle_class: bool = True,
    ) -> Standby | None:
        """Start a standby for `argv` (None when `argv` is not a command it can run); it
        imports `preload` after `delay` s (in the idle scheduling class where `idle_class` and
        the process may leave it, else once `idle_cores` were idle over a sample), unless
        its attempt came first."""
        command = python_command(argv)
        if command is None:
            return None
        timing = [repr(delay), repr(IDLE_SAMPLE_S), repr(idle_cores), "1" if idle_class else "0"]
        program = [command.program, *command.flags, "-c", BOOTSTRAP, *timing, *preload]
        proc = await asyncio.create_subprocess_exec(
            # under a reaper of its own, as a rank started cold (containment.py)
            *dies_with_parent(under_reaper(program)),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
        )
        return cls(proc, command, env, cwd)

    @property
    def alive(self) -> bool:
        """True while the interpreter waits (it has not exited)."""
        return self.proc.returncode is None

    @property
    def interpreter_pid(self) -> int | None:
        """The waiting interpreter's own pid (`proc` is its reaper's); None until it runs."""
        found = children(self.proc.pid)
        return found[0] if found else None

    def fits(self, argv: Sequence[str], env: Mapping[str, str], cwd: str) -> bool:
        """Whether this standby may run `argv` with `env` in `cwd`."""
        return (
            self.alive
            and python_command(argv) == self.command
            and os.path.realpath(cwd) == os.path.realpath(self.cwd)
            and fits(self.env, env)
        )

    async def take(self, env: Mapping[str, str]) -> asyncio.subprocess.Process | None:
        """Send the attempt to the standby: its process, now the rank's; None if it died
        before it could be told (start the rank cold)."""
        stdin = self.proc.stdin
        assert stdin is not None
        line = json.dumps(self.command.spec(env, self.cwd)).encode() + b"\n"
        try:
            stdin.write(line)
            # a standby reads its stdin at once, or after the import it has begun
            await asyncio.wait_for(stdin.drain(), TAKE_TIMEOUT_S)
            stdin.close()
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            await self.discard()
            return None
        except BaseException:  # cancelled half-told: it is nobody's rank
            await asyncio.shield(self.discard())
            raise
        return self.proc

    async def discard(self) -> None:
        """Kill the standby (its whole process group: it leads its own session) and reap it."""
        if self.proc.returncode is None:  # once reaped, its pid may be another's
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        await self.proc.wait()


class StandbyPool:
    """One standby per local rank of an agent, refilled after each start."""

    def __init__(
        self,
        preload: Sequence[str] = (),
        delay: float = PRELOAD_DELAY_S,
        idle_cores: float = PRELOAD_IDLE_CORES,
        idle_class: bool = True,
    ) -> None:
        self.preload = tuple(preload)
        self.delay = delay
        self.idle_cores = idle_cores
        self.idle_class = idle_class
        self._standbys: dict[int, asyncio.Task[Standby | None]] = {}
        self.taken = 0  # attempts started from a standby
        self.cold = 0  # attempts started cold although the pool was asked

    async def take(
        self, local_rank: int, argv: Sequence[str], env: Mapping[str, str], cwd: str
    ) -> asyncio.subprocess.Process | None:
        """The standby of `local_rank`, started on this attempt; None: start it cold."""
        standby = await self._pop(local_rank)
        if standby is not None and standby.fits(argv, env, cwd):
            proc = await standby.take(env)
            if proc is not None:
                self.taken += 1
                return proc
        elif standby is not None:
            log.info("the standby of local rank %d does not fit: cold start", local_rank)
            await standby.discard()
        self.cold += 1
        return None

    def refill(
        self,
        local_rank: int,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: str,
        delay: float | None = None,
    ) -> None:
        """Start the standby of `local_rank`'s next attempt in the background (one that was
        still there is discarded first); its preload waits `delay` s (default the pool's)."""
        old = self._standbys.pop(local_rank, None)
        wait = self.delay if delay is None else delay
        self._standbys[local_rank] = asyncio.create_task(
            self._spawn(old, argv, env, cwd, wait), name=f"standby-{local_rank}"
        )

    async def ready(self, local_rank: int) -> Standby | None:
        """The standby of `local_rank` once it has started (it stays in the pool)."""
        task = self._standbys.get(local_rank)
        return None if task is None else await task

    async def close(self) -> None:
        """Kill every standby; nothing of the pool is left running."""
        for lr in list(self._standbys):
            standby = await self._pop(lr)
            if standby is not None:
                await standby.discard()

    async def _pop(self, local_rank: int) -> Standby | None:
        task = self._standbys.pop(local_rank, None)
        return None if task is None else await task

    async def _spawn(
        self,
        old: asyncio.Task[Standby | None] | None,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: str,
        delay: float,
    ) -> Standby | None:
        if old is not None and (left := await old) is not None:
            await left.discard()
        try:
            return await Standby.spawn(
                argv, env, cwd, self.preload, delay, self.idle_cores, self.idle_class
            )
        except OSError as exc:  # no standby is a cold start, not a failure
            log.warning("cannot start a standby for %s: %s", argv[0], exc)
            return None
