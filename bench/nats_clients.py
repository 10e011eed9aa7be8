"""One process holding many NATS connections: LeanNats (aegis.testing.lean_nats) beside
nats-py (through aegis.runtime.transport.bus), against the same real nats-server with the
same JWT auth, printed as JSON.

    python bench/nats_clients.py [--connections 1000] [--broadcasts 5]

Each way connects `--connections` clients as simulated agents (each its own NKey and JWT,
the nonce signed), subscribes each to the order subject and its inbox, then receives
`--broadcasts` orders, one a second. Per connection: the CPU to connect and subscribe, the
resident memory it added, its asyncio tasks, and the CPU to take the broadcasts; and the
ratio nats-py / LeanNats of each. The fleet bench (bench/scale.py) simulates its agents with
LeanNats because of these ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from aegis.protocol.envelope import Message, MessagePhase, MessageType
from aegis.runtime.transport.auth import (
    JobAccount,
    Operator,
    UserCredentials,
    new_user_keypair,
)
from aegis.runtime.transport.bus import Bus
from aegis.runtime.transport.nats_server import NatsServer
from aegis.testing.lean_nats import LeanNats

CONNECTING_AT_ONCE = 64


def rss_mb() -> float:
    """This process's resident memory now (MB)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


Got = Callable[[], None]  # called for every message a connection takes


async def connect_lean(
    url: str, job: JobAccount, pod: str, creds: UserCredentials, got: Got
) -> Any:
    host, port = url.removeprefix("nats://").rsplit(":", 1)
    conn = await LeanNats.connect(
        host, int(port), creds.user_jwt, creds.seed, pod, lambda subject, payload: got()
    )
    conn.sub(job.subjects.master, 1)
    conn.sub(f"{job.subjects.inbox_prefix(pod)}.>", 2)
    await conn.ping()
    return conn


async def connect_nats_py(
    url: str, job: JobAccount, pod: str, creds: UserCredentials, got: Got
) -> Any:
    inbox = job.subjects.inbox_prefix(pod)
    bus = await Bus.connect(url, creds, name=pod, inbox_prefix=inbox)

    async def handler(msg: Message) -> None:
        got()

    await bus.subscribe(job.subjects.master, handler)
    await bus.subscribe(f"{inbox}.order", handler)
    await bus.flush()
    return bus


async def measure(way: str, n: int, broadcasts: int) -> dict[str, Any]:
    """One way's figures per connection."""
    op = Operator()
    job = op.create_job_account("default", "clients")
    async with NatsServer(op, [job]) as nats:
        pods = [f"clients-worker-{i}" for i in range(n)]
        keys = {pod: new_user_keypair() for pod in pods}
        creds = {p: UserCredentials(job.worker_jwt(k.public_key.decode(), p, "i1"), bytes(k.seed))
                 for p, k in keys.items()}  # fmt: skip
        connect = connect_lean if way == "lean" else connect_nats_py
        gate = asyncio.Semaphore(CONNECTING_AT_ONCE)
        delivered = 0

        def got() -> None:
            nonlocal delivered
            delivered += 1

        async def one(pod: str) -> Any:
            async with gate:
                return await connect(nats.url, job, pod, creds[pod], got)

        gc.collect()
        rss, tasks, cpu = rss_mb(), len(asyncio.all_tasks()), time.process_time()
        conns = await asyncio.gather(*(one(pod) for pod in pods))
        connect_cpu = time.process_time() - cpu
        added_mb, added_tasks = rss_mb() - rss, len(asyncio.all_tasks()) - tasks
        controller = await Bus.connect(nats.url, job.controller_credentials(), name="bench")
        order = Message("clients", "default", "master", MessageType.ORDER,
                        MessagePhase.COMMAND, {}, 0.0, 1)  # fmt: skip
        cpu = time.process_time()
        for _ in range(broadcasts):
            await controller.publish(job.subjects.master, order)
            await controller.flush()
            await asyncio.sleep(1.0)
        take_cpu = time.process_time() - cpu
        await controller.close()
        for conn in conns:
            if way == "lean":
                conn.close()
            else:
                await conn.close()
    return {
        "connect_cpu_ms": round(1000 * connect_cpu / n, 3),
        "rss_kb": round(1024 * added_mb / n, 1),
        "tasks": round(added_tasks / n, 2),
        "broadcasts_cpu_ms": round(1000 * take_cpu / n, 3),
        "delivered": delivered,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--broadcasts", type=int, default=5)
    args = parser.parse_args(argv)
    if args.connections < 1 or args.broadcasts < 1:
        parser.error("--connections and --broadcasts must be >= 1")
    lean = asyncio.run(measure("lean", args.connections, args.broadcasts))
    nats_py = asyncio.run(measure("nats-py", args.connections, args.broadcasts))
    measures = ("connect_cpu_ms", "rss_kb", "tasks", "broadcasts_cpu_ms")
    ratio = {k: round(nats_py[k] / lean[k], 2) if lean[k] else None for k in measures}
    out = {"connections": args.connections, "lean": lean, "nats_py": nats_py,
           "nats_py_over_lean": ratio}  # fmt: skip
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
