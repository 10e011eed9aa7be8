"""A real checkpoint store (the agent's) in a thread of the test, and ranks that talk to it.

`StoreThread` runs `CheckpointStore` on its own event loop; the test calls its methods through
`call`. `run_rank(store, code)` runs `code` in a fresh Python process with that rank's
environment (its socket and token), as the agent would start it.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from aegis.runtime.agent.checkpoint_store import CheckpointStore

T = TypeVar("T")


class StoreThread:
    """A CheckpointStore serving from a background thread."""

    def __init__(self, ranks: Iterable[int] = (0,), world: int = 1, **kwargs: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.store = CheckpointStore("test-pod", ranks, world, **kwargs)
        self.ops: list[str] = []  # the requests the store answered, in order
        handle = self.store.handle

        async def recorded(req: dict[str, Any]) -> dict[str, Any]:
            self.ops.append(str(req.get("op")))
            return await handle(req)

        self.store.handle = recorded  # type: ignore[method-assign]
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.run(self.store.start())

    def run(self, coro: Any, timeout: float = 60.0) -> Any:
        """Run a coroutine on the store's loop; its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Call a plain method of the store on its loop; its result."""

        async def go() -> T:
            return fn(*args)

        return self.run(go())

    def env(self) -> dict[int, dict[str, str]]:
        """A new attempt's environment per local rank."""
        return self.call(self.store.new_attempt)

    def settle(self) -> None:
        """Wait for the persists in flight."""

        async def go() -> None:
            while self.store.persists:
                await asyncio.wait(set(self.store.persists))

        self.run(go())

    def close(self) -> None:
        """Stop the store and its thread."""
        self.run(self.store.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def run_rank(
    env: dict[str, str], code: str, timeout: float = 120.0, **extra: str
) -> subprocess.CompletedProcess[str]:
    """Run `code` as a rank with `env` (its store variables); its completed process."""
    full = {**os.environ, **env, **extra, "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=timeout
    )


ZYGOTE = r"""
import json, os, sys
import torch  # imported once; every rank forks from here
import tests.checkpoint.rank as rank_mod
from aegis.checkpoint import api
for line in sys.stdin:
    cmd = json.loads(line)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.dup2(w, 1)
        os.environ.update(cmd["env"])
        api._client.clear()
        api._maps.clear()
        try:
            rank_mod.main(cmd["actions"])
            sys.stdout.flush()
            os._exit(0)
        except BaseException as exc:
            print(json.dumps({"error": repr(exc)}), flush=True)
            os._exit(1)
    os.close(w)
    with os.fdopen(r) as f:
        text = f.read()
    _, status = os.waitpid(pid, 0)
    print(json.dumps({"out": text, "code": os.waitstatus_to_exitcode(status)}), flush=True)
"""


class Zygote:
    """A Python process that imported torch once and forks a rank per request (a rank of
    the tests costs a fork, not an interpreter and a torch import)."""

    def __init__(self, root: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", ZYGOTE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": root, "OMP_NUM_THREADS": "1"},
        )

    def run(self, env: dict[str, str], actions: list[str]) -> tuple[int, str]:
        """Fork a rank with `env` that runs `actions`; (exit code, its output)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"env": env, "actions": actions}) + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        return int(reply["code"]), str(reply["out"])

    def close(self) -> None:
        """End the process."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(30)
