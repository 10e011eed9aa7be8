"""The diagnosis workers' process group: initialised once, reused while healthy, rebuilt if not."""

from __future__ import annotations

import contextlib
import datetime as dt
import time
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from aegis.checks.params import Rendezvous
from aegis.errors import AegisError


class GroupError(AegisError):
    """The process group could not be built or verified within the budget."""


@dataclass(frozen=True)
class GroupSetup:
    """How this round got its group: "reused" (probe passed) or "initialised"."""

    status: str
    setup_s: float
    backend: str
    probe_error: str | None = None


class GroupManager:
    """Owns the worker's default process group and the TCPStore it was built from."""

    def __init__(self) -> None:
        self._key: tuple[str, int, int, int, str] | None = None
        self._master: Any = None  # the TCPStore server this worker hosts, kept across groups
        self._master_addr: tuple[str, int] | None = None
        self._used_prefixes: set[str] = set()
        self.backend = "gloo"
        self.device = torch.device("cpu")
        self.rank = 0
        self.world_size = 1

    @property
    def ready(self) -> bool:
        """Whether a group is initialised (not necessarily healthy)."""
        return self._key is not None and dist.is_initialized()

    def ensure(
        self,
        rdzv: Rendezvous,
        round_id: str,
        deadline: float,
        probe_timeout_s: float,
        device_index: int = 0,
    ) -> GroupSetup:
        """Reuse the warm group if a tiny all_reduce passes, else (re)initialise it."""
        t0 = time.monotonic()
        probe_error = None
        if self.ready and self._key == rdzv.key():
            try:
                self.probe(min(probe_timeout_s, _left(deadline)))
                return GroupSetup("reused", time.monotonic() - t0, self.backend)
            except Exception as exc:
                probe_error = f"{type(exc).__name__}: {_short(exc)}"
        self.destroy()
        try:
            self._init(rdzv, round_id, deadline, device_index)
        except GroupError as exc:
            if probe_error is None:
                raise
            raise GroupError(f"{exc} (the warm group had failed its probe: {probe_error})") from exc
        return GroupSetup("initialised", time.monotonic() - t0, self.backend, probe_error)

    def probe(self, timeout_s: float) -> None:
        """A one-element all_reduce that must see every rank; raises on error or timeout."""
        self.set_timeout(timeout_s)
        t = torch.ones(1, device=self.device)
        dist.all_reduce(t)
        if int(t.item()) != self.world_size:
            raise GroupError(f"probe summed to {t.item()}, expected {self.world_size}")

    def set_timeout(self, seconds: float) -> None:
        """Bound every following collective by `seconds` (gloo and NCCL honour it)."""
        if seconds <= 0:
            raise TimeoutError("the check's budget is spent")
        from torch.distributed.distributed_c10d import _set_pg_timeout

        _set_pg_timeout(dt.timedelta(seconds=seconds), None)

    def destroy(self) -> None:
        """Tear the group down (the store server, if hosted, stays for the next group)."""
        if dist.is_initialized():
            with contextlib.suppress(Exception):
                dist.destroy_process_group()
        self._key = None

    def _init(self, rdzv: Rendezvous, round_id: str, deadline: float, device_index: int) -> None:
        prefix = f"aegis/{round_id}/"
        if prefix in self._used_prefixes:
            raise GroupError(f"round id {round_id!r} already built a group here; use a fresh one")
        self._used_prefixes.add(prefix)
        store = self._store(rdzv, deadline)
        self.backend = _backend(rdzv.backend)
        self.device = (
            torch.device("cuda", device_index) if self.backend == "nccl" else torch.device("cpu")
        )
        timeout = dt.timedelta(seconds=_left(deadline))
        kwargs: dict[str, Any] = {"device_id": self.device} if self.backend == "nccl" else {}
        try:
            dist.init_process_group(
                self.backend,
                store=dist.PrefixStore(prefix, store),
                rank=rdzv.rank,
                world_size=rdzv.world_size,
                timeout=timeout,
                **kwargs,
            )
        except Exception as exc:
            raise GroupError(
                f"could not build the group of {rdzv.world_size} at "
                f"{rdzv.host}:{rdzv.port}: {_short(exc)}"
            ) from exc
        self._key, self.rank, self.world_size = rdzv.key(), rdzv.rank, rdzv.world_size

    def _store(self, rdzv: Rendezvous, deadline: float) -> Any:
        timeout = dt.timedelta(seconds=_left(deadline))
        if not rdzv.hosts_store:
            try:
                return dist.TCPStore(rdzv.host, rdzv.port, is_master=False, timeout=timeout)
            except Exception as exc:
                where = f"{rdzv.host}:{rdzv.port}"
                raise GroupError(f"store {where} unreachable: {_short(exc)}") from exc
        if self._master is None or self._master_addr != (rdzv.host, rdzv.port):
            self._master = dist.TCPStore(
                rdzv.host, rdzv.port, None, True, timeout=timeout, wait_for_workers=False
            )
            self._master_addr = (rdzv.host, rdzv.port)
        return self._master


def _backend(requested: str) -> str:
    if requested != "auto":
        return requested
    return "nccl" if torch.cuda.is_available() and dist.is_nccl_available() else "gloo"


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the check's budget is spent")
    return left


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__
