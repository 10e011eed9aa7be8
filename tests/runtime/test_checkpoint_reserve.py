"""The checkpoint store reserves a rank's next version file with each commit: what it
reserves, what it will not, and that a reserved file is never read while its rank may write
it (aegis/runtime/agent/checkpoint_store.py, docs/checkpoints.md)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aegis.checkpoint import wire

from ..support.ckpt import StoreThread

SIZE = wire.DATA_OFFSET + 256


@pytest.fixture
def st(tmp_path: Path) -> Iterator[StoreThread]:
    s = StoreThread(checkpoint_dir=str(tmp_path / "ckpt"), every=0)
    yield s
    s.close()


class Rank:
    """One rank's requests, sent straight to the store's `handle` (as its socket would)."""

    def __init__(self, st: StoreThread) -> None:
        self.st = st
        self.token = st.env()[0]["AEGIS_CHECKPOINT_TOKEN"]

    def ask(self, op: str, **fields: Any) -> dict[str, Any]:
        reply: dict[str, Any] = self.st.run(
            self.st.store.handle({"op": op, "token": self.token, **fields})
        )
        return reply

    def write(self, path: str, step: int) -> None:
        """Write a whole (empty) version of `step` into `path`, as a save's copy does."""
        head = wire.Header(wire.KIND_STATE, step, 0, wire.DATA_OFFSET, 0, wire.DATA_OFFSET, 0)
        with open(path, "r+b") as f:
            f.write(head.pack())

    def save(self, step: int, reserve: int = SIZE) -> dict[str, Any]:
        """A save through `begin`; the commit's reply."""
        got = self.ask("begin", step=step, bytes=SIZE)
        self.write(got["path"], step)
        return self.ask("commit", step=step, slot=got["slot"], reserve=reserve)

    def save_reserved(self, step: int, nxt: dict[str, Any]) -> dict[str, Any]:
        """A save into the reserved file `nxt`; the commit's reply."""
        assert self.ask("write", step=step, slot=nxt["slot"]) == {"ok": True}
        self.write(nxt["path"], step)
        return self.ask("commit", step=step, slot=nxt["slot"], reserve=SIZE)


def held(st: StoreThread) -> list[int]:
    return st.call(st.store.held)


def test_each_commit_reserves_the_other_file_and_the_saves_alternate(st: StoreThread) -> None:
    r = Rank(st)
    first = r.save(1)["next"]  # a second file, made for it
    second = r.save_reserved(2, first)["next"]
    third = r.save_reserved(3, second)["next"]
    assert first["slot"] != second["slot"] and third["slot"] == first["slot"]
    assert first["size"] >= SIZE and first["every"] == 0
    assert len(third["files"]) == 2 and held(st) == [2, 3]


def test_a_reserved_file_still_holds_its_step_until_the_rank_says_it_writes(
    st: StoreThread,
) -> None:
    r = Rank(st)
    nxt = r.save_reserved(2, r.save(1)["next"])["next"]  # reserves step 1's file
    rv = st.store.ranks[0]
    assert held(st) == [1, 2]
    assert rv.readable(1) is None and rv.readable(2) is not None  # held, not to be read
    assert r.ask("write", step=3, slot=nxt["slot"]) == {"ok": True}
    assert held(st) == [2]


def test_nothing_reads_a_reserved_file_while_its_rank_may_write_it(st: StoreThread) -> None:
    r = Rank(st)
    r.save_reserved(2, r.save(1)["next"])  # step 1's file is reserved
    st.call(st.store.restore_from, (1, "memory"))
    assert r.ask("restore")["ok"] is False  # not lent
    assert r.ask("fetch", step=1, rank=0)["ok"] is False
    assert st.call(st.store.persist_breakpoint, 1) == []  # not copied
    assert st.call(st.store.persist_breakpoint, 2) == [0]


def test_once_the_ranks_are_gone_the_reserved_step_can_be_read_again(st: StoreThread) -> None:
    r = Rank(st)
    r.save_reserved(2, r.save(1)["next"])
    assert st.run(st.store.quiet(5.0)) is True  # no connection: nobody can write it now
    assert st.store.ranks[0].readable(1) is not None
    assert st.call(st.store.persist_breakpoint, 1) == [0]


def test_a_new_attempt_ends_the_reservation_of_the_last(st: StoreThread) -> None:
    r = Rank(st)
    nxt = r.save_reserved(2, r.save(1)["next"])["next"]
    again = Rank(st)  # the next attempt's token; the old one is refused
    assert r.ask("write", step=3, slot=nxt["slot"])["reason"] == "unknown_rank"
    assert st.store.ranks[0].readable(1) is not None
    refused = again.ask("write", step=3, slot=nxt["slot"])
    assert refused["ok"] is False and "no version reserved" in refused["error"]
    assert held(st) == [1, 2]


def test_a_begin_takes_the_reserved_file_back(st: StoreThread) -> None:
    r = Rank(st)
    nxt = r.save(1)["next"]
    got = r.ask("begin", step=2, bytes=SIZE)
    assert got["slot"] == nxt["slot"]
    assert r.ask("write", step=2, slot=nxt["slot"])["ok"] is False  # no longer reserved


@pytest.mark.parametrize("why", ["pinned", "lent", "small", "absurd"])
def test_no_file_is_reserved_that_needs_anything_first(st: StoreThread, why: str) -> None:
    r = Rank(st)
    r.save_reserved(2, r.save(1)["next"])
    got = r.ask("begin", step=3, bytes=SIZE)  # takes back step 1's reserved file
    r.write(got["path"], 3)
    other = st.store.ranks[0].holding(2)  # what the commit of step 3 would reserve
    assert other is not None
    reserve = SIZE
    if why == "pinned":  # a persist copies it
        other.pins += 1
    elif why == "lent":  # a restarted rank maps it
        other.lent = True
    elif why == "small":
        reserve = other.size + 1
    else:
        reserve = 12
    reply = r.ask("commit", step=3, slot=got["slot"], reserve=reserve)
    assert reply["ok"] is True and "next" not in reply
    assert held(st) == [2, 3] and not other.reserved


def test_a_reservation_that_shared_memory_cannot_hold_is_not_made(tmp_path: Path) -> None:
    st = StoreThread(checkpoint_dir="", every=0, shm_bytes=SIZE + 100)
    try:
        r = Rank(st)
        reply = r.save(1)  # a second file would take the store past its limit
        assert reply["ok"] is True and "next" not in reply
        assert held(st) == [1] and len(st.store.ranks[0].files) == 1
    finally:
        st.close()


def test_a_write_of_a_slot_that_is_not_reserved_is_refused(st: StoreThread) -> None:
    r = Rank(st)
    for slot in (424242, "x", -1, True):
        got = r.ask("write", step=1, slot=slot)
        assert got["ok"] is False and got["reason"] == "bad_request"


def test_a_commit_whose_reserve_is_not_a_size_reserves_nothing(st: StoreThread) -> None:
    r = Rank(st)
    for bad in ("1", True, None, -5, 2**62):
        reply = r.save(1, reserve=bad)  # type: ignore[arg-type]
        assert reply["ok"] is True and "next" not in reply
