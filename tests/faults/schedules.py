"""Seeded fault schedules over a real `aegis run -n 2` job, and the verdict on each (issue 14).

A schedule (drawn from a seed) is: an optional first-attempt crash (CRASH_ONCE_RANK), a list
of process faults, an optional terminal fault, and an optional message-fault plan for the
NATS proxy (tests/support/natsproxy.py) that the agents talk through. The ranks hold
(HOLD_FILE) so that every fault hits a job in a known phase: each fault waits for the *gate*
(global phase RunCommand, every pod in RunCommand, both ranks running), is applied, and the
runner waits for its visible effect before the next one. Then the ranks are released.

Expected results come from the spec's counting rules (docs/design.md, "Phase machine and retry
accounting"), never from the controller:
  - a failure while the global phase is RunCommand counts one retry: a command crash
    (CRASH_ONCE_RANK, or a rank SIGKILLed), an agent SIGKILLed, an agent frozen (SIGSTOP)
    until its heartbeats time out. After k counted failures the failing pod's retries are k
    (retries align to recoverCount on each return to RunCommand), so the job ends Failed at
    the (MaxRetry + 1)-th with recoverCount MaxRetry + 1, else Succeed with recoverCount k;
  - nothing else counts: the controller or nats-server SIGKILLed or frozen, the launcher
    frozen, duplicated, delayed, reordered messages, dropped reports (agents resend until a
    receipt comes), dropped orders (the controller sends an order again to a pod whose
    heartbeat shows it missed one);
  - terminal faults: the launcher SIGKILLed (every process must go; its exit code is not
    judged), status.json corrupted and then the controller SIGKILLed (the restarted
    controller must refuse the file: the job ends with exit 1, never Succeed).

Verdicts: `ok`, `hung` (the run passed its hard timeout), `orphans` (a process of the job
alive after it ended), `wrong-count`, `wrong-exit`, `bad-steplog`.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from aegis.runtime.errors import AegisError
from aegis.runtime.trace_check import check_steplog

from ..support.freeze import freeze
from ..support.launch import TRAIN, AegisRun
from ..support.natsproxy import FaultPlan, ProxyThread, Rule
from ..support.wait import wait_for

RANK_CMD = str(Path(__file__).with_name("rank_cmd.py"))
COUNTED = ("crash", "agent_kill", "agent_stop")
UNCOUNTED = (
    "controller_kill",
    "controller_stop",
    "nats_kill",
    "nats_stop",
    "launcher_stop",
    "bus_faults_only",
)
TERMINAL = ("launcher_kill", "corrupt_status")


class Hung(Exception):
    """The run (or one step of it) passed its bound."""


@dataclass
class Fault:
    kind: str
    rank: int = 0  # the pod for agent faults and crashes
    seconds: float = 0.0  # how long a SIGSTOP lasts


@dataclass
class Schedule:
    seed: int
    heartbeat_timeout: float
    max_retry: int
    crash_once: int | None  # CRASH_ONCE_RANK
    faults: list[Fault]
    terminal: str | None
    plan: dict[str, dict[str, Any]]  # kind -> Rule fields; {} = no proxy faults
    train: bool = False  # examples/train_ddp.py instead of the cheap rank_cmd.py

    def describe(self) -> str:
        parts = [f"crash_once={self.crash_once}"] if self.crash_once is not None else []
        parts += [
            f.kind
            + (f"[{f.rank}]" if f.kind in COUNTED else "")
            + (f"({f.seconds:g}s)" if f.seconds else "")
            for f in self.faults
        ]
        if self.terminal:
            parts.append(self.terminal)
        if self.plan:
            drops = {k: r.get("drop", 0) or r.get("drop_first", 0) for k, r in self.plan.items()}
            parts.append(
                "msgs:"
                + ",".join(f"{k}(drop {drops[k]:g})" if drops[k] else k for k in sorted(drops))
            )
        return " ".join(parts) or "(no fault)"


def draw(seed: int, *, train: bool = False, drop_orders: float | None = None) -> Schedule:
    """A schedule from `seed` (same seed, same schedule). Orders are dropped with the
    probability `drop_orders`, else one drawn from the seed (0 or 0.2: an agent that misses
    one asks for it again). Draws added after the first suite use their own generator
    (`extra`), so that the older seeds still draw the schedules they did."""
    rng = random.Random(seed)
    extra = random.Random(f"{seed}-extra")
    timeout = 2.0
    faults: list[Fault] = []
    for _ in range(rng.choice((0, 1, 1, 2, 2, 3))):
        kind = rng.choice(COUNTED + UNCOUNTED[:-1])
        rank = rng.randrange(2)
        seconds = 0.0
        if kind == "agent_stop":
            seconds = 2.5 * timeout  # past the timeout: counted as lost, every time
        elif kind == "nats_stop":
            # briefly, or well past the timeout: the controller tells a frozen bus from lost
            # pods (its own probe does not come back either)
            seconds = extra.choice((0.5, 3 * timeout))
        elif kind.endswith("_stop"):
            # frozen for less than the timeout, or well past it: neither is a pod failure
            seconds = rng.choice((0.5, 3 * timeout))
        faults.append(Fault(kind, rank, seconds))
    terminal = rng.choice((None,) * 8 + TERMINAL)
    plan: dict[str, dict[str, Any]] = {}
    if rng.random() < 0.5:
        plan = {
            # reports are requests the agent resends until answered: drops are safe to draw
            "report": asdict(
                Rule(drop=rng.choice((0, 0.2, 0.4)), dup=0.3, reorder=0.2, delay=0.3, delay_s=0.3)
            ),
            # orders: a pod whose heartbeat shows it missed one is sent it again
            "order": asdict(
                Rule(
                    drop=extra.choice((0, 0.2)) if drop_orders is None else drop_orders,
                    dup=0.3,
                    reorder=0.2,
                    delay=0.3,
                    delay_s=0.3,
                )
            ),
            # heartbeats: no drops, delays well under the beat interval (timeout / 4): the
            # outcome stays deterministic
            "heartbeat": asdict(Rule(dup=0.3, reorder=0.2, delay=0.3, delay_s=timeout / 8)),
        }
    if drop_orders and not plan:
        plan["order"] = asdict(Rule(drop=drop_orders))
    return Schedule(
        seed=seed,
        heartbeat_timeout=timeout,
        max_retry=2,
        crash_once=rng.choice((None, None, None, 0, 1)),
        faults=faults,
        terminal=terminal,
        plan=plan,
        train=train,
    )


@dataclass
class Expected:
    counted: int  # failures in RunCommand, capped at the first that ends the job
    phase: str | None  # "Succeed" / "Failed"; None when the launcher is killed
    recover_count: int | None
    exit_code: int | None
    faults_applied: int  # how many scheduled faults hit a running job


def expect(s: Schedule) -> Expected:
    """What the spec's rules say the schedule ends in (independent of the controller)."""
    counted, applied, failed = 0, 0, False
    if s.crash_once is not None:
        counted = 1
    for f in s.faults:
        if counted > s.max_retry:
            failed = True
            break
        applied += 1
        counted += f.kind in COUNTED
    failed = failed or counted > s.max_retry
    if failed:
        return Expected(counted, "Failed", s.max_retry + 1, 1, applied)
    if s.terminal == "launcher_kill":
        return Expected(counted, None, None, None, applied)
    if s.terminal == "corrupt_status":
        return Expected(counted, None, None, 1, applied)
    return Expected(counted, "Succeed", counted, 0, applied)


# ---------------------------------------------------------------- processes


def _stat(pid: int) -> tuple[int, str, int] | None:
    """(ppid, state, start time) of a live process, None if gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), fields[0], int(fields[19])


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def environ(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    return dict(kv.split("=", 1) for kv in raw.decode(errors="replace").split("\0") if "=" in kv)


class Tracker:
    """Every process that descended from the launcher while it ran: (pid, start time)."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.seen: dict[int, int] = {}

    def poll(self) -> set[int]:
        """Record and return the live descendants."""
        parents = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and (st := _stat(int(entry.name))) and st[1] not in "ZX":
                parents[int(entry.name)] = st[0]
        found: set[int] = set()
        frontier = {self.root}
        while frontier:
            frontier = {p for p, pp in parents.items() if pp in frontier} - found
            found |= frontier
        for pid in found:
            st = _stat(pid)
            if st is not None:
                self.seen.setdefault(pid, st[2])
        return found

    def alive(self) -> list[int]:
        """Recorded processes still running (same pid and start time, not a zombie)."""
        out = []
        for pid, start in self.seen.items():
            st = _stat(pid)
            if st is not None and st[2] == start and st[1] not in "ZX":
                out.append(pid)
        return out


# ---------------------------------------------------------------- running one schedule


@dataclass
class Result:
    seed: int
    schedule: str
    verdict: str
    detail: str = ""
    exit_code: int | None = None
    phase: str | None = None
    recover_count: int | None = None
    expected: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    messages: dict[str, int] = field(default_factory=dict)
    fault_s: list[tuple[str, float]] = field(default_factory=list)  # recovery time per fault


class Runner:
    """Runs one schedule in `tmp` with a hard bound of `limit_s` seconds."""

    def __init__(self, s: Schedule, tmp: Path, limit_s: float) -> None:
        self.s = s
        self.tmp = tmp
        self.deadline = time.monotonic() + limit_s
        self.hold = tmp / "go"
        self.run: AegisRun | None = None
        self.tracker: Tracker | None = None
        self.fault_s: list[tuple[str, float]] = []  # (fault, seconds until back in RunCommand)

    # -- waiting
    def until(self, cond: Callable[[], Any], what: str, bound: float | None = None) -> Any:
        """Poll `cond` (tracking processes) until true; Hung past `bound` s or the deadline."""
        end = self.deadline if bound is None else min(self.deadline, time.monotonic() + bound)

        def tracked() -> Any:
            if self.tracker is not None:
                self.tracker.poll()
            return cond()

        try:
            return wait_for(tracked, max(end - time.monotonic(), 0.0), what)
        except AssertionError as exc:  # wait_for's timeout: here a hung job
            raise Hung(str(exc)) from None

    def status(self) -> dict[str, Any]:
        assert self.run is not None
        return self.run.read_status() or {}

    def ended(self) -> bool:
        assert self.run is not None
        return self.run.returncode is not None

    def procs(self, marker: str) -> list[int]:
        assert self.tracker is not None
        return sorted(p for p in self.tracker.poll() if marker in cmdline(p))

    def rank_pid(self, rank: int) -> int | None:
        marker = "train_ddp.py" if self.s.train else "rank_cmd.py"
        for pid in self.procs(marker):
            if environ(pid).get("RANK") == str(rank) and "aegis.cli agent" in cmdline(
                (_stat(pid) or (0,))[0]
            ):
                return pid
        return None

    def agent_of(self, rank: int) -> int | None:
        """The pid of the agent running `rank` (never 0: kill(0, ...) would signal us)."""
        pid = self.rank_pid(rank)
        parent = (_stat(pid) or (0,))[0] if pid is not None else 0
        return parent if parent > 1 else None

    def gate(self) -> bool:
        """Wait for RunCommand with both ranks running; False if the job ended instead."""

        def ready() -> bool:
            if self.ended():
                return True
            st = self.status()
            if st.get("phase") in ("Succeed", "Failed"):
                return True
            pods = (st.get("podInfos") or {}).values()
            inner_ok = all(p.get("innerPhase") == "RunCommand" for p in pods)
            return (
                st.get("phase") == "RunCommand"
                and inner_ok
                and all(self.rank_pid(r) for r in range(2))
            )

        self.until(ready, "the gate (RunCommand, both ranks running)", 90)
        st = self.status()
        return not self.ended() and st.get("phase") == "RunCommand"

    def progress(self) -> tuple[int, int]:
        """(recoverCount, masterSeq) as the controller saved them last."""
        st = self.status()
        return int(st.get("recoverCount") or 0), int(st.get("masterSeq") or 0)

    def left_run_command(self, before: tuple[int, int]) -> None:
        """Wait until the job reacted to the failure just applied: it left RunCommand, or it
        counted the failure (recoverCount or masterSeq past `before`), or it ended. The phase
        alone is not enough: a troubleshoot round can take 40 ms, and a poll that missed it
        saw RunCommand again and waited for ever (seed 141)."""

        def reacted() -> bool:
            if self.ended():
                return True
            st = self.status()
            now = (int(st.get("recoverCount") or 0), int(st.get("masterSeq") or 0))
            return st.get("phase") != "RunCommand" or now[0] > before[0] or now[1] > before[1]

        self.until(reacted, "the job to leave RunCommand after a counted failure", 30)

    # -- faults
    def apply(self, f: Fault) -> None:
        assert self.run is not None and self.tracker is not None
        before = self.progress()
        if f.kind == "crash":
            pid = self.rank_pid(f.rank)
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            self.left_run_command(before)
        elif f.kind in ("agent_kill", "agent_stop"):
            agent = self.until(lambda: self.agent_of(f.rank), f"the agent of rank {f.rank}", 30)
            if f.kind == "agent_kill":
                os.kill(agent, signal.SIGKILL)
                self.left_run_command(before)
            else:
                freeze(agent)
                try:
                    self.left_run_command(before)
                finally:
                    os.kill(agent, signal.SIGCONT)
        elif f.kind in ("controller_kill", "nats_kill"):
            marker = "aegis.cli controller" if f.kind == "controller_kill" else "nats-server"
            (old,) = self.until(lambda: self.procs(marker), marker, 30)[:1]
            os.kill(old, signal.SIGKILL)
            self.until(lambda: [p for p in self.procs(marker) if p != old], f"a new {marker}", 30)
        elif f.kind in ("controller_stop", "nats_stop", "launcher_stop"):
            if f.kind == "launcher_stop":
                pid = self.run.pid
            else:
                marker = "aegis.cli controller" if f.kind == "controller_stop" else "nats-server"
                pid = self.until(lambda: self.procs(marker), marker, 30)[0]
            freeze(pid)
            time.sleep(f.seconds)  # the fault is the duration itself
            os.kill(pid, signal.SIGCONT)

    def terminal(self) -> None:
        assert self.run is not None
        if self.s.terminal == "launcher_kill":
            os.kill(self.run.pid, signal.SIGKILL)
        elif self.s.terminal == "corrupt_status":
            status = self.s_path("status.json")
            (ctl,) = self.until(lambda: self.procs("aegis.cli controller"), "controller", 30)[:1]
            freeze(ctl)  # no save of its own may replace the corruption
            # valid JSON, every key there, a phase the spec does not have (in the spec state,
            # which is what a controller loads; the top-level "phase" only mirrors it)
            doc = json.loads(status.read_text())
            doc["specState"]["variables"]["phase"] = "Bogus"
            status.write_text(json.dumps(doc))
            os.kill(ctl, signal.SIGKILL)

    def s_path(self, name: str) -> Path:
        assert self.run is not None
        return self.run.state / name

    # -- the whole run
    def execute(self) -> Result:
        s, exp = self.s, expect(self.s)
        t0 = time.monotonic()
        state = self.tmp / "state"

        def upstream() -> tuple[str, int] | None:
            try:
                url = json.loads((state / "ctl.json").read_text())["natsUrl"]
            except (OSError, ValueError, KeyError):
                return None
            host, port = url.rsplit("//", 1)[1].rsplit(":", 1)
            return host, int(port)

        plan = FaultPlan({k: Rule(**v) for k, v in s.plan.items()})
        res = Result(s.seed, s.describe(), "ok", expected=asdict(exp))
        with ProxyThread(upstream, plan, s.seed) as proxy:
            env = {
                "HOLD_FILE": str(self.hold),
                "CRASH_DIR": str(self.tmp / "crash"),
                "STEPS": "2",
                "AEGIS_AGENT_NATS_URL": proxy.url,
            }
            if s.crash_once is not None:
                env["CRASH_ONCE_RANK"] = str(s.crash_once)
            cmd = [sys.executable, TRAIN if s.train else RANK_CMD]
            self.run = run = AegisRun(
                self.tmp,
                2,
                "--heartbeat-timeout",
                f"{s.heartbeat_timeout:g}",
                "--max-retry",
                str(s.max_retry),
                cmd=cmd,
                env=env,
            )
            self.tracker = Tracker(run.pid)
            try:
                self._drive(exp)
                res.exit_code = run.returncode
            except Hung as exc:
                res.verdict, res.detail = "hung", str(exc)
            finally:
                run.stop()
                res.messages = {f"{k}.{w}": n for (k, w), n in sorted(proxy.stats.items())}
        res.seconds = round(time.monotonic() - t0, 1)
        res.fault_s = self.fault_s
        if res.verdict == "ok":
            self._judge(res, exp)
        return res

    def _drive(self, exp: Expected) -> None:
        assert self.run is not None
        if self.s.crash_once is not None:
            # the first attempt's crash must be counted before any other fault: until then
            # the job is (briefly) in RunCommand with a rank about to fail
            self.until(
                lambda: (
                    self.ended()
                    or any(
                        h.get("phase") in ("Restarting", "Troubleshooting")
                        for h in self.status().get("history", [])
                    )
                ),
                "the first attempt's crash to be handled",
                60,
            )
        last: tuple[str, float] | None = None  # the fault applied last, and when
        for f in self.s.faults[: exp.faults_applied]:
            back = self.gate()
            self._took(last)
            if not back:
                break
            last = (f.kind, time.monotonic())
            self.apply(f)
        else:
            back = self.gate()
            self._took(last, "" if back else " to Failed")
        corrupted = False
        if self.s.terminal and exp.phase != "Failed" and self.gate():
            self.terminal()
            last = (self.s.terminal, time.monotonic())
            corrupted = self.s.terminal == "corrupt_status"
        self.hold.write_text("go")
        self.until(self.ended, "the job to end")
        if corrupted:
            self._took(last, " to exit")

    def _took(self, last: tuple[str, float] | None, how: str = "") -> None:
        """Note how long the job took to come back (or end) after the fault `last`."""
        if last is not None:
            self.fault_s.append((last[0] + how, round(time.monotonic() - last[1], 2)))

    def _judge(self, res: Result, exp: Expected) -> None:
        assert self.run is not None and self.tracker is not None
        # the launcher stops its children within its grace period (10 s); a killed launcher's
        # children go by parent-death signals and by watching it
        try:
            tracker = self.tracker
            t0 = time.monotonic()
            self.until(lambda: not tracker.alive(), "every process of the job to end", 20)
            if self.s.terminal == "launcher_kill":
                res.fault_s.append(("launcher_kill: all gone", round(time.monotonic() - t0, 2)))
        except Hung:
            left = self.tracker.alive()
            res.verdict = "orphans"
            res.detail = "; ".join(f"{p}: {cmdline(p)[:80]}" for p in left)
            for p in left:  # leave nothing behind for the next schedule
                os.kill(p, signal.SIGKILL)
            return
        st = self.status()
        res.phase, res.recover_count = st.get("phase"), st.get("recoverCount")
        steplog = self.s_path("steps.jsonl")
        # the terminal fault runs only if the job has not ended Failed before it
        corrupted = self.s.terminal == "corrupt_status" and exp.phase != "Failed"
        if not corrupted:
            try:
                check_steplog(steplog)
            except (AegisError, ValueError, OSError) as exc:
                res.verdict, res.detail = "bad-steplog", str(exc)[:300]
                return
        if exp.phase is not None and (res.phase, res.recover_count) != (
            exp.phase,
            exp.recover_count,
        ):
            res.verdict = "wrong-count"
            res.detail = f"ended {res.phase} recoverCount {res.recover_count}"
            return
        if exp.exit_code is not None and res.exit_code != exp.exit_code:
            res.verdict = "wrong-exit"
            res.detail = f"exit {res.exit_code}, phase {res.phase}"
            return
        if corrupted and "ValidPhase" not in self.run.stderr:
            res.verdict, res.detail = "wrong-exit", "no error naming the broken invariant"


def run_schedule(s: Schedule, tmp: Path, limit_s: float = 150.0) -> Result:
    """Run `s` in the empty directory `tmp` and judge it."""
    return Runner(s, tmp, limit_s).execute()


def validate_with_tlc(steplog: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`aegis spec validate-log STEPLOG` (TLC), as a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "aegis.cli", "spec", "validate-log", str(steplog)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
