"""The node agent's checkpoint store: each local rank's versions in shared memory, owned by
the agent, so that a rank's crash loses nothing (docs/checkpoints.md).

The ranks talk to it over a unix socket (aegis.checkpoint.wire). Per rank it keeps at most
two version files in its shared-memory directory: a save overwrites the older one (the rank's
newest committed version stays whole while the next is written), and a version exists for
the store only once the rank commits it, after the store checked its header. A file lent to
a restarted rank (its tensors map it) is never written again: the next save that would reuse
it gets a new file and the lent one is unlinked. A file being persisted is pinned; a save
that needs it waits for the copy out of shared memory (PIN_WAIT_S at most, then it too gets
a new file).

What the store holds goes to the controller in every report and heartbeat (`info()`): the
steps every local rank holds, the newest step complete on disk, the bytes used. The
controller picks the step the job restarts from and sends it in its RunCommand order
(`restore_from`); `load()` in each rank then gets that version (lent, zero-copy) or the
persisted copy. Persisting: every committed step that is a multiple of `every`, and, at a
failure, the newest step all local ranks hold (`persist_breakpoint`); see
checkpoint_persist.py. The store never imports torch.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from aegis.checkpoint import disk, wire
from aegis.protocol.environment import Var
from aegis.protocol.payloads import MAX_HELD, CheckpointInfo
from aegis.runtime.agent.checkpoint_persist import persist_version, publish_global_metadata
from aegis.runtime.agent.rank_versions import RankVersions, VersionFile
from aegis.runtime.lifetime import owned_tempdir, sweep_orphaned_tempdirs

log = logging.getLogger(__name__)

SHM_ROOT = "/dev/shm"
SHM_PREFIX = "aegis-ckpt-"
PIN_WAIT_S = 2.0
QUIET_S = 2.0  # how long `quiet` waits for the connections of ranks that ended to close
MAX_VERSION_BYTES = 1 << 40


class StoreRefusal(Exception):
    """A request the store answers with ok False (the message says why)."""

    def __init__(self, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.fields = fields


class CheckpointStore:
    """The versions of a pod's local ranks, and the socket its ranks save through."""

    def __init__(
        self,
        pod: str,
        ranks: Iterable[int],
        world: int,
        *,
        checkpoint_dir: str = "",
        every: int = 0,
        shm_bytes: int = 0,
        shm_root: str = SHM_ROOT,
    ) -> None:
        self.pod = pod
        self.ranks = [RankVersions(lr, r) for lr, r in enumerate(ranks)]
        self.world = world
        self.root = Path(checkpoint_dir) if checkpoint_dir else None
        self.every = every
        self.shm_bytes = shm_bytes
        self.shm_root = shm_root if os.path.isdir(shm_root) else tempfile.gettempdir()
        self.shm_dir: Path | None = None
        self.sock_dir: Path | None = None
        self.tokens: dict[str, RankVersions] = {}
        self.restore: tuple[int, str] | None = None  # the controller's (step, source)
        self.seq = 0  # grows with every change of what the store holds
        self.persist_error = ""
        self.persists: set[asyncio.Task[None]] = set()
        self.dcp_meta: dict[int, bytes] = {}  # step -> a sharded save's global metadata
        self._server: asyncio.AbstractServer | None = None
        self._open = 0  # connections of ranks being served
        self._closed = asyncio.Event()
        self._unpinned = asyncio.Event()
        self._warned: set[str] = set()

    @property
    def socket_path(self) -> str:
        """Where the ranks reach the store."""
        assert self.sock_dir is not None
        return str(self.sock_dir / "s")

    async def start(self) -> None:
        """Make the shared-memory directory and listen (leftovers of a killed agent go). A
        store that cannot start is said once; the ranks then save nowhere (a warning each)."""
        for path in sweep_orphaned_tempdirs(SHM_PREFIX, self.shm_root):
            log.info("removed %s, left by an agent that was killed", path)
        try:
            self.shm_dir = owned_tempdir(SHM_PREFIX, self.shm_root)
            self.sock_dir = Path(tempfile.mkdtemp(prefix="aegis-ck-"))
            self._server = await asyncio.start_unix_server(self._serve, path=self.socket_path)
        except OSError as exc:
            self._warn("start", f"no checkpoint store ({exc}): aegis.checkpoint saves nothing")
            self.sock_dir = None

    async def close(self, persist_wait_s: float = 30.0) -> None:
        """Stop serving; let running persists finish (bounded); free the shared memory."""
        if self._server is not None:
            self._server.close()
        if self.persists:
            await asyncio.wait(self.persists, timeout=persist_wait_s)
        if self.root is not None:  # what an earlier prune could not remove yet
            with contextlib.suppress(OSError):
                await asyncio.to_thread(
                    disk.prune, self.root, [r.rank for r in self.ranks], self.world
                )
        for d in (self.shm_dir, self.sock_dir):
            if d is not None:
                shutil.rmtree(d, ignore_errors=True)

    def new_attempt(self) -> dict[int, dict[str, str]]:
        """Fresh tokens for the ranks about to start (a process of an earlier attempt can no
        longer save); each local rank's environment for its store. Unfinished writes end."""
        self.tokens = {}
        env: dict[int, dict[str, str]] = {}
        for rv in self.ranks:
            rv.end_writes()
            token = secrets.token_hex(16)
            self.tokens[token] = rv
            if self.sock_dir is None:  # not started (no socket): the ranks save nowhere
                env[rv.local_rank] = {}
                continue
            env[rv.local_rank] = {
                Var.CHECKPOINT_SOCKET: self.socket_path,
                Var.CHECKPOINT_TOKEN: token,
            }
        return env

    def note_saved(self, local_rank: int, step: int) -> None:
        """Local rank `local_rank` says it saved `step` itself (`aegis.checkpoint_done`)."""
        if 0 <= local_rank < len(self.ranks) and step >= 0:
            rv = self.ranks[local_rank]
            rv.saved = step if rv.saved is None else max(rv.saved, step)
            self.seq += 1

    def restore_from(self, point: tuple[int, str] | None) -> None:
        """The step (and "memory" or "disk") the controller chose for the next start."""
        self.restore = point

    # ---------------- what the controller is told ----------------

    def held(self) -> list[int]:
        """The steps every local rank holds in memory."""
        sets = [rv.held() for rv in self.ranks]
        return sorted(set.intersection(*sets)) if sets else []

    def saved(self) -> int | None:
        """The newest step every local rank saved (memory or storage)."""
        steps = [rv.saved for rv in self.ranks]
        return None if any(s is None for s in steps) else min(s for s in steps if s is not None)

    def shm_used(self) -> int:
        """Bytes of shared memory the version files take."""
        return sum(f.size for rv in self.ranks for f in rv.files)

    def on_disk(self) -> int | None:
        """The newest step complete in the checkpoint directory."""
        return disk.newest_complete(self.root, self.world) if self.root else None

    def info(self) -> CheckpointInfo:
        """What the store holds, for the controller (every report and heartbeat)."""
        return CheckpointInfo(
            self.seq,
            tuple(self.held()[-MAX_HELD:]),
            self.saved(),
            self.on_disk(),
            self.shm_used(),
            self.persist_error[:300],
        )

    # ---------------- requests ----------------

    async def quiet(self, timeout: float = QUIET_S) -> bool:
        """Once the ranks have ended: wait until each of their connections is closed, so
        that every request a rank sent before it died has been handled (a commit it did not
        wait for included) before what the store holds is reported. False if one stayed
        open `timeout` s (a process the rank forked keeps its socket)."""
        await _wait_until(lambda: not self._open, self._closed, timeout)
        if self._open:
            return False
        for rv in self.ranks:  # no rank is left to write a reserved file
            rv.end_reservation()
        return True

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._open += 1
        try:
            while True:
                try:
                    head = await reader.readexactly(wire.FRAME_LEN.size)
                    body = await reader.readexactly(wire.frame_length(head))
                    req = wire.decode_body(body)
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                except wire.WireError as exc:
                    writer.write(wire.encode_frame({"ok": False, "error": str(exc)}))
                    return
                writer.write(wire.encode_frame(await self.handle(req)))
                with contextlib.suppress(ConnectionError):  # a rank that did not wait (commit)
                    await writer.drain()
        finally:
            self._open -= 1
            self._closed.set()
            writer.close()

    async def handle(self, req: dict[str, Any]) -> dict[str, Any]:
        """The reply to one request (never raises for what a rank sends)."""
        op = req.get("op")
        handler = {
            "begin": self._begin,
            "write": self._write,
            "commit": self._commit,
            "direct": self._direct,
            "restore": self._restore,
            "dcp_meta": self._dcp_meta,
            "dcp_meta_get": self._dcp_meta_get,
            "fetch": self._fetch,
        }.get(op if isinstance(op, str) else "")
        try:
            rv = self.tokens.get(req.get("token") or "")
            if rv is None:
                raise StoreRefusal(
                    f"this process is not a rank the agent of {self.pod} started (its "
                    f"{Var.CHECKPOINT_TOKEN} is not one the agent gave): save refused",
                    reason="unknown_rank",
                )
            if handler is None:
                raise StoreRefusal(f"unknown request {op!r}", reason="bad_request")
            return {"ok": True, **await handler(rv, req)}
        except StoreRefusal as exc:
            return {"ok": False, "error": str(exc), **exc.fields}

    async def _begin(self, rv: RankVersions, req: dict[str, Any]) -> dict[str, Any]:
        step, need = _int(req, "step"), _int(req, "bytes")
        if need <= wire.DATA_OFFSET or need > MAX_VERSION_BYTES:
            raise StoreRefusal(f"a version of {need} bytes is not plausible", reason="bad_request")
        vf = await self._victim(rv)
        vf.writing, vf.step = True, None
        self.seq += 1
        if vf.size < need:
            self._grow(rv, vf, need, step)
        return {
            "path": str(vf.path),
            "size": vf.size,
            "slot": vf.id,
            "files": [str(f.path) for f in rv.files],
            "persist": self._persists(step),  # what its commit will do
        }

    def _persists(self, step: int) -> bool:
        """Whether a commit of `step` starts its persist (every K steps)."""
        return wire.persists(step, self.every if self.root else 0)

    async def _victim(self, rv: RankVersions) -> VersionFile:
        """The file the next save of `rv` writes (never its newest committed version)."""
        for f in rv.files:
            if f.writing or f.reserved:
                f.reserved = False
                return f
        if len(rv.files) < 2:
            return self._new_file(rv)
        vf = min(rv.files, key=lambda f: -1 if f.step is None else f.step)
        if vf.pins:
            await self._wait_unpinned(vf)
        if vf.lent or vf.pins:
            rv.files.remove(vf)
            with contextlib.suppress(OSError):
                vf.path.unlink()  # a lent map or a running copy keeps its pages until done
            return self._new_file(rv)
        return vf

    async def _wait_unpinned(self, vf: VersionFile) -> None:
        await _wait_until(lambda: not vf.pins, self._unpinned, PIN_WAIT_S)

    def _new_file(self, rv: RankVersions) -> VersionFile:
        assert self.shm_dir is not None
        vf = VersionFile(self.shm_dir / f"rank{rv.rank}-{secrets.token_hex(4)}")
        vf.path.touch(mode=0o600)
        rv.files.append(vf)
        return vf

    def _grow(self, rv: RankVersions, vf: VersionFile, need: int, step: int) -> None:
        """Make `vf` hold `need` bytes (allocated now: a full tmpfs is an error here, never a
        SIGBUS in the rank); StoreRefusal (shm_full, with where to save instead) if not."""
        used = self.shm_used() - vf.size
        free = _free_bytes(self.shm_root)
        limit = self.shm_bytes or (used + vf.size + free)
        why = ""
        if used + need > limit:
            why = f"{need:,} bytes would take the store to {used + need:,} of its {limit:,}"
        else:
            try:
                with open(vf.path, "r+b") as f:
                    os.posix_fallocate(f.fileno(), 0, need)
                vf.size = need
            except OSError as exc:
                why = f"cannot allocate {need:,} bytes in {self.shm_dir}: {exc.strerror}"
        if not why:
            return
        rv.files.remove(vf)
        with contextlib.suppress(OSError):
            vf.path.unlink()
        self._warn("shm", f"shared memory cannot hold step {step} of rank {rv.rank}: {why}")
        direct = {"direct": str(self.root), "rank": rv.rank} if self.root else {}
        raise StoreRefusal(f"shared memory full: {why}", reason="shm_full", **direct)

    async def _commit(self, rv: RankVersions, req: dict[str, Any]) -> dict[str, Any]:
        step, slot = _int(req, "step"), _int(req, "slot")
        vf = next((f for f in rv.files if f.id == slot and f.writing), None)
        if vf is None:
            raise StoreRefusal(f"no version being written with slot {slot}", reason="bad_request")
        try:
            with open(vf.path, "rb") as f:
                head = wire.Header.unpack(f.read(wire.HEADER.size), vf.size)
        except (OSError, wire.WireError) as exc:
            vf.writing = False
            raise StoreRefusal(f"step {step} is not whole: {exc}", reason="torn") from None
        if head.step != step:
            vf.writing = False
            raise StoreRefusal(f"the version holds step {head.step}, not {step}", reason="torn")
        vf.writing, vf.step = False, step
        rv.saved = step if rv.saved is None else max(rv.saved, step)
        self.seq += 1
        persist = self._persists(step)
        if persist:
            self._persist(rv, vf, step)
        reserve = req.get("reserve")
        nxt = self._reserve(rv, vf, reserve) if type(reserve) is int else None
        return {"persist": persist, **({"next": nxt} if nxt else {})}

    def _reserve(self, rv: RankVersions, committed: VersionFile, need: int) -> dict[str, Any]:
        """Reserve the file of `rv`'s next save now, with the commit, so that the save does
        not ask for one: the rank then says `write` (not waiting) and writes. Only a file
        that needs nothing first (not pinned, lent or too small; a new one only while the
        rank has one file); none ({}): the next save asks (`begin`)."""
        if need <= wire.DATA_OFFSET or need > MAX_VERSION_BYTES:
            return {}
        others = [f for f in rv.files if f is not committed]
        if not others:
            vf = self._new_file(rv)
            try:
                self._grow(rv, vf, need, committed.step or 0)
            except StoreRefusal:
                return {}
        else:
            vf = others[0]
            if vf.writing or vf.pins or vf.lent or vf.size < need:
                return {}
        vf.reserved = True
        return {
            "path": str(vf.path),
            "size": vf.size,
            "slot": vf.id,
            "files": [str(f.path) for f in rv.files],
            "every": self.every if self.root else 0,
        }

    async def _write(self, rv: RankVersions, req: dict[str, Any]) -> dict[str, Any]:
        """The rank writes its reserved file now (it did not wait for this reply)."""
        slot = _int(req, "slot")
        vf = next((f for f in rv.files if f.id == slot and f.reserved), None)
        if vf is None:
            raise StoreRefusal(f"no version reserved with slot {slot}", reason="bad_request")
        vf.reserved, vf.writing, vf.step = False, True, None
        self.seq += 1
        return {}

    async def _direct(self, rv: RankVersions, req: dict[str, Any]) -> dict[str, Any]:
        step = _int(req, "step")
        if self.root is None or rv.rank not in disk.ranks_present(self.root, step):
            raise StoreRefusal(
                f"step {step} of rank {rv.rank} is not on disk", reason="bad_request"
            )
        rv.saved = step if rv.saved is None else max(rv.saved, step)
        rv.persisted.add(step)
        self.seq += 1
        return {}

    async def _restore(self, rv: RankVersions, req: dict[str, Any]) -> dict[str, Any]:
        if self.restore is None:
            return {"step": None}
        step, source = self.restore
        vf = rv.readable(step) if source == "memory" else None
        if vf is not None:
            vf.lent = True
            return {"step": step, "source": "memory", "path": str(vf.path)}
        if self.root is not None and rv.rank in disk.ranks_present(self.root, step):
            return {
                "step": step,
                "source": "disk",
                "path": str(disk.rank_dir(self.root, step, rv.rank)),
            }
        where = f"in {self.root}" if self.root else "(no --checkpoint-dir)"
        raise StoreRefusal(
            f"step {step} ({source}) is neither in this agent's memory nor on disk {where}",
            reason="missing",
        )

    async def _fetch(self, rv: RankVersions, req: dict[str, Any]) -> dict[str, Any]:
        """A sharded load reads another local rank's version of a step."""
        step, rank = _int(req, "step"), _int(req, "rank")
        owner = next((r for r in self.ranks if r.rank == rank), None)
        vf = owner.readable(step) if owner is not None else None
        if vf is None:
            raise StoreRefusal(
                f"rank {rank}'s step {step} is not in this agent's memory", reason="missing"
            )
        vf.lent = True
        return {"path": str(vf.path)}

    async def _dcp_meta(self, rv: RankVersions, req: dict[str, Any]) -> dict[str, Any]:
        step, data = _int(req, "step"), req.get("data")
        if not isinstance(data, str):
            raise StoreRefusal("dcp_meta without data", reason="bad_request")
        try:
            self.dcp_meta[step] = base64.b64decode(data, validate=True)
        except ValueError:
            raise StoreRefusal("dcp_meta data is not base64", reason="bad_request") from None
        for old in sorted(self.dcp_meta)[:-2]:
            del self.dcp_meta[old]
        if self.root and step in rv.persisted:  # its rank's copy is on disk already
            self._spawn(self._publish_meta(step))
        return {}

    async def _dcp_meta_get(self, rv: RankVersions, req: dict[str, Any]) -> dict[str, Any]:
        step = _int(req, "step")
        meta = self.dcp_meta.get(step)
        if meta is None:
            raise StoreRefusal(f"no global metadata of step {step} here", reason="missing")
        return {"data": base64.b64encode(meta).decode()}

    # ---------------- persisting ----------------

    def persist_breakpoint(self, step: int | None = None) -> list[int]:
        """Persist `step` (default: the newest step every local rank holds) for every local
        rank that holds it and has not persisted it: at a failure, before the restart.
        Returns the ranks whose copy started."""
        if self.root is None:
            return []
        if step is None:
            held = self.held()
            if not held:
                return []
            step = held[-1]
        started = []
        for rv in self.ranks:
            vf = rv.readable(step)
            if vf is not None and step not in rv.persisted:
                self._persist(rv, vf, step)
                started.append(rv.rank)
        return started

    def _persist(self, rv: RankVersions, vf: VersionFile, step: int) -> None:
        if step in rv.persisted:
            return
        rv.persisted.add(step)
        vf.pins += 1
        self._spawn(self._persist_one(rv, vf, step))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self.persists.add(task)
        task.add_done_callback(self.persists.discard)

    async def _persist_one(self, rv: RankVersions, vf: VersionFile, step: int) -> None:
        assert self.root is not None
        loop = asyncio.get_running_loop()
        unpinned = False

        def copied() -> None:
            loop.call_soon_threadsafe(unpin)

        def unpin() -> None:
            nonlocal unpinned
            if not unpinned:
                unpinned = True
                vf.pins -= 1
                self._unpinned.set()

        try:
            head = await asyncio.to_thread(
                persist_version, vf.path, self.root, step, rv.rank, copied
            )
            if head.kind == wire.KIND_DCP and step in self.dcp_meta:
                await self._publish_meta(step)
            await asyncio.to_thread(disk.prune, self.root, [r.rank for r in self.ranks], self.world)
            self.seq += 1
            self.persist_error = ""
            log.info("agent %s: persisted step %d of rank %d", self.pod, step, rv.rank)
        except (OSError, wire.WireError) as exc:
            rv.persisted.discard(step)
            self.persist_error = (
                f"cannot persist step {step} of rank {rv.rank} to {self.root}: {exc}"
            )
            self._warn(f"persist:{type(exc).__name__}", self.persist_error)
        finally:
            unpin()

    async def _publish_meta(self, step: int) -> None:
        assert self.root is not None
        meta = self.dcp_meta.get(step)
        if meta is not None:
            await asyncio.to_thread(publish_global_metadata, self.root, step, meta)

    def _warn(self, kind: str, message: str) -> None:
        if kind not in self._warned:
            self._warned.add(kind)
            print(f"aegis: agent {self.pod}: {message}", flush=True)
        log.warning("agent %s: %s", self.pod, message)


async def _wait_until(done: Callable[[], bool], changed: asyncio.Event, timeout: float) -> None:
    """Wait until `done()`, checked again each time `changed` is set; `timeout` s at most."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not done() and loop.time() < deadline:
        changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(changed.wait(), deadline - loop.time())


def _int(req: dict[str, Any], key: str) -> int:
    value = req.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise StoreRefusal(f"{key} must be an int >= 0, not {value!r}", reason="bad_request")
    return value


def _free_bytes(path: str) -> int:
    try:
        st = os.statvfs(path)
    except OSError:
        return 0
    return st.f_bavail * st.f_frsize
