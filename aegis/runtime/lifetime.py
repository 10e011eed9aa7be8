"""Lifetimes: no process outlives its launcher, no background task dies silently."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

from aegis.protocol.environment import Var

log = logging.getLogger(__name__)


def dies_with_parent(argv: Sequence[str]) -> list[str]:
    """`argv` run so that it gets SIGKILL when the process that starts it dies (Linux's
    parent-death signal, set by util-linux `setpriv` right before it execs `argv`: same pid,
    same session). A SIGKILLed agent or launcher thus leaves no command, agent or
    nats-server behind. Where `setpriv` is missing, `argv` is returned unchanged (the agents
    and the controller still watch their launcher)."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--", *argv] if setpriv else list(argv)


async def watch_parent(on_gone: Callable[[], None], period: float = 0.5) -> None:
    """Call `on_gone` once the launcher (AEGIS_LAUNCHER_PID) is gone: no orphans left."""
    pid = int(os.environ.get(Var.LAUNCHER_PID, "0") or 0)
    while pid:
        await asyncio.sleep(period)
        if os.getppid() != pid:
            on_gone()
            return


def supervised(
    coro: Coroutine[Any, Any, None], name: str, on_failure: Callable[[BaseException], None]
) -> asyncio.Task[None]:
    """A background task whose unexpected end (an exception) is logged and reported to
    `on_failure`, instead of silently ending what it supervised; cancelling it is normal."""
    task = asyncio.create_task(coro, name=name)

    def done(t: asyncio.Task[None]) -> None:
        if t.cancelled():
            return
        exc = t.exception()
        if exc is not None:
            log.error("background task %s failed: %r", name, exc, exc_info=exc)
            on_failure(exc)

    task.add_done_callback(done)
    return task


_PR_SET_DUMPABLE = 4


def keep_memory_private() -> bool:
    """Make this process non-dumpable (Linux PR_SET_DUMPABLE 0): its /proc entries (memory,
    environment, descriptors) become root's, so another process of the same user, such as
    a training command, cannot read the keys and credentials it holds; no core dump either.
    Children are dumpable again once they exec. False where the call is not available."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


OWNER_FILE = "owner.pid"


def owned_tempdir(prefix: str, root: str | None = None) -> Path:
    """A new temp dir (in `root`, default the temp dir) marked with this process's pid, so
    that a later process can tell it was left behind (its owner was SIGKILLed) and remove
    it: `sweep_orphaned_tempdirs`."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=root))
    (path / OWNER_FILE).write_text(str(os.getpid()))
    return path


def sweep_orphaned_tempdirs(prefix: str, root: str | None = None) -> list[Path]:
    """Remove the temp dirs made by `owned_tempdir(prefix, root)` whose owner is gone; the
    removed."""
    removed = []
    for path in Path(root or tempfile.gettempdir()).glob(f"{prefix}*"):
        try:
            owner = int((path / OWNER_FILE).read_text().strip())
        except (OSError, ValueError):
            continue  # not ours, or being made right now
        if owner == os.getpid() or _alive(owner):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError):
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    return True
