"""aegis.checkpoint against the agent's real store: save, load, crashes at every point of a
save, bad input, a full shared memory, a directory that cannot be written.

Each rank is a real Python process (tests/checkpoint/rank.py) talking to a CheckpointStore
served from a thread of the test, as an agent serves its ranks.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aegis.checkpoint import disk
from aegis.checkpoint.client import AgentClient, AgentUnavailable
from aegis.protocol.environment import Var
from aegis.runtime.controller.checkpoints import CheckpointBook

from ..support.ckpt import StoreThread, Zygote

ROOT = Path(__file__).resolve().parents[2]
POINTS = ("begun", "tensors-half", "tensors-done", "before-header", "before-commit")
_zygote: list[Zygote] = []


@pytest.fixture(scope="module", autouse=True)
def zygote() -> Iterator[None]:
    _zygote.append(Zygote(str(ROOT)))
    yield
    _zygote.pop().close()


def rank(store: StoreThread, *actions: str, **env: str) -> list[dict[str, Any]]:
    """Run the test rank (a fork of the zygote) with these actions; its JSON lines."""
    code, text = _zygote[0].run({**store.env()[0], **env}, list(actions))
    assert store.run(store.store.quiet(30.0))  # as the agent does once its ranks end
    lines = [json.loads(x) for x in text.splitlines() if x.startswith("{")]
    assert code in (0, 17) and not any("error" in x and len(x) == 1 for x in lines), text
    return lines


def restart(store: StoreThread) -> None:
    """What the controller does between attempts: the newest step every pod holds, or the
    newest complete on disk (one pod here)."""
    book = CheckpointBook(["test-pod"])
    book.note("test-pod", store.call(store.store.info))
    point = book.restore_point(1, "RunCommand")
    store.call(store.store.restore_from, None if point is None else (point.step, point.source))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[StoreThread]:
    s = StoreThread(checkpoint_dir=str(tmp_path / "ckpt"), every=2)
    yield s
    s.close()


def test_a_fresh_job_loads_nothing_and_a_restart_loads_the_newest_step_from_memory(
    store: StoreThread,
) -> None:
    restart(store)
    assert rank(store, "load") == [{"action": "load", "step": None}]
    saved = rank(store, "save:1", "save:2", "save:3")
    assert [s["ok"] for s in saved] == [True, True, True]
    assert [s["persisting"] for s in saved] == [False, True, False]  # every 2 steps
    assert store.call(store.store.held) == [2, 3]  # two versions, the newest two
    restart(store)
    (got,) = rank(store, "load")
    assert got == {"action": "load", "step": 3, "source": "memory", "equal": True}


@pytest.mark.parametrize("how", ["", ":strict"])
@pytest.mark.parametrize("point", POINTS)
def test_a_crash_at_any_point_of_a_save_leaves_the_previous_step(
    store: StoreThread, point: str, how: str
) -> None:
    # the third save writes the file step 2's commit reserved, or (strict) asks for one
    rank(store, "save:1", "save:2", f"crash:{point}:3{how}")
    assert store.call(store.store.held) == [2]  # step 1's file was being overwritten
    restart(store)
    (got,) = rank(store, "load")
    assert got == {"action": "load", "step": 2, "source": "memory", "equal": True}


def test_a_save_larger_than_the_reserved_file_asks_for_one(tmp_path: Path) -> None:
    store = StoreThread(checkpoint_dir=str(tmp_path / "ckpt"), every=0)  # nothing pinned
    try:
        saved = rank(store, "save:1", "grown:2", "save:3", "save:4")
        assert [s["ok"] for s in saved] == [True] * 4
        # the grown state does not fit the file the commit of step 1 reserved: it asks (and
        # that file grows); a commit reserves a file as large as its own version, which step
        # 1's is not, so step 3 asks too; step 3's commit reserves the grown file for step 4
        assert store.ops == ["begin", "commit"] * 3 + ["write", "commit"]
        assert store.call(store.store.held) == [3, 4]
    finally:
        store.close()


def test_a_crash_before_the_rank_says_it_writes_its_reserved_file_keeps_both_steps(
    store: StoreThread,
) -> None:
    rank(store, "save:1", "save:2", "crash:reserved:3")
    assert store.call(store.store.held) == [1, 2]


def test_a_save_after_a_commit_writes_the_file_the_commit_reserved_without_asking(
    tmp_path: Path,
) -> None:
    store = StoreThread(checkpoint_dir=str(tmp_path / "ckpt"), every=3)
    try:
        saved = rank(store, "save:1", "save:2", "save:3", "save:4")
        assert [s["ok"] for s in saved] == [True] * 4
        assert [s["persisting"] for s in saved] == [False, False, True, False]
        # a persist pins step 3's file, not step 2's, which step 4 writes
        assert store.ops == ["begin"] + ["commit", "write"] * 3 + ["commit"]
        assert store.call(store.store.held) == [3, 4]
        restart(store)
        got = rank(store, "load")[0]
        assert got == {"action": "load", "step": 4, "source": "memory", "equal": True}
    finally:
        store.close()


def test_a_crash_right_after_the_commit_keeps_the_committed_step(store: StoreThread) -> None:
    rank(store, "save:1", "crash:after-commit:2")
    restart(store)
    assert rank(store, "load")[0]["step"] == 2


def test_quiet_waits_until_the_ranks_connections_are_closed(store: StoreThread) -> None:
    env = store.env()[0]
    client = AgentClient(env[Var.CHECKPOINT_SOCKET], env[Var.CHECKPOINT_TOKEN])
    assert client.request("restore").ok  # a rank's connection, open
    assert store.run(store.store.quiet(0.2)) is False
    client.close()
    assert store.run(store.store.quiet(30.0)) is True


def test_replies_to_what_was_sent_without_waiting_come_before_the_next_reply(
    store: StoreThread,
) -> None:
    env = store.env()[0]
    client = AgentClient(env[Var.CHECKPOINT_SOCKET], env[Var.CHECKPOINT_TOKEN])
    client.send("step 9", "commit", step=9, slot=424242)
    client.send("a bad one", "nonsense")
    reply = client.request("restore")
    assert reply.ok and reply.get("step") is None
    assert [(what, r.ok) for what, r in client.late] == [("step 9", False), ("a bad one", False)]
    assert "no version being written with slot 424242" in client.late[0][1].error
    client.close()


def test_what_was_sent_to_an_agent_that_hung_up_is_unanswered(tmp_path: Path) -> None:
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tmp_path / "s"))
        server.listen()
        client = AgentClient(str(tmp_path / "s"), "token")
        client.send("step 3", "commit", step=3, slot=1)
        server.accept()[0].close()  # the agent hangs up without answering, and is gone
    with pytest.raises(AgentUnavailable):
        client.request("restore")
    assert [(what, r.ok) for what, r in client.late] == [("step 3", False)]
    assert "hung up" in client.late[0][1].error


def test_a_version_lent_to_a_restarted_rank_is_never_written_again(store: StoreThread) -> None:
    rank(store, "save:1", "save:2")
    restart(store)
    assert rank(store, "load")[0]["step"] == 2  # lends step 2's file to the new process
    (lent,) = [f.path for f in store.store.ranks[0].files if f.lent]
    rank(store, "save:3", "save:4")  # step 3 overwrites step 1's file; 4 needs step 2's
    assert store.call(store.store.held) == [3, 4]
    assert lent not in [f.path for f in store.store.ranks[0].files] and not lent.exists()
    restart(store)
    assert rank(store, "load")[0] == {
        "action": "load",
        "step": 4,
        "source": "memory",
        "equal": True,
    }


def test_an_asynchronous_save_commits_after_its_copy_and_a_torn_one_is_dropped(
    store: StoreThread,
) -> None:
    first, torn = rank(store, "asave:1", "asave-torn:2")
    assert first["pending"] and first["ok"], first
    assert torn["pending"] and not torn["ok"] and "model.w changed" in torn["error"], torn
    assert store.call(store.store.held) == [1]  # step 2 was never committed
    restart(store)
    assert rank(store, "load")[0] == {
        "action": "load",
        "step": 1,
        "source": "memory",
        "equal": True,
    }


def test_an_unpicklable_value_is_a_clear_error_and_nothing_is_touched(store: StoreThread) -> None:
    first, bad, after = rank(store, "save:1", "bad:2", "save:3")
    assert first["ok"] and after["ok"]
    assert not bad["ok"] and "lock" in bad["error"] and "cannot be serialised" in bad["error"]
    assert store.call(store.store.held) == [1, 3]


def test_a_save_from_a_process_the_agent_did_not_start_is_refused(store: StoreThread) -> None:
    (got,) = rank(store, "save:1", AEGIS_CHECKPOINT_TOKEN="not-a-token")
    assert not got["ok"] and "not a rank the agent" in got["error"], got
    assert store.call(store.store.held) == []


def test_a_full_shared_memory_saves_to_the_checkpoint_dir_instead(tmp_path: Path) -> None:
    s = StoreThread(checkpoint_dir=str(tmp_path / "ckpt"), shm_bytes=20_000)
    try:
        (saved,) = rank(s, "save:4")
        assert saved["ok"] and saved["where"] == "storage"
        assert disk.is_complete(tmp_path / "ckpt", 4, 1)
        assert s.call(s.store.held) == [] and s.call(s.store.saved) == 4
        restart(s)
        assert rank(s, "load")[0] == {"action": "load", "step": 4, "source": "disk", "equal": True}
    finally:
        s.close()


def test_a_full_shared_memory_without_a_checkpoint_dir_is_a_clear_error(tmp_path: Path) -> None:
    s = StoreThread(shm_bytes=20_000)
    try:
        (saved,) = rank(s, "save:4")
        assert not saved["ok"] and "shared memory full" in saved["error"]
    finally:
        s.close()


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    """A directory this process cannot write: without write permission, or as root (who
    writes regardless of it) a read-only tmpfs mounted there."""
    ro = tmp_path / "ro"
    ro.mkdir()
    if os.geteuid() != 0:
        ro.chmod(stat.S_IRUSR | stat.S_IXUSR)
        yield ro
        return
    mount = ["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(ro)]
    if subprocess.run(mount, capture_output=True).returncode != 0:
        pytest.skip("root writes into a read-only directory, and no tmpfs can be mounted here")
    try:
        yield ro
    finally:
        subprocess.run(["umount", str(ro)], check=True)


def test_a_checkpoint_dir_that_cannot_be_written_keeps_training_going(read_only: Path) -> None:
    s = StoreThread(checkpoint_dir=str(read_only / "ckpt"), every=1)
    try:
        assert [x["ok"] for x in rank(s, "save:1", "save:2")] == [True, True]
        s.settle()
        assert "cannot persist" in s.call(s.store.info).persist_error
        assert s.call(s.store.held) == [1, 2]
    finally:
        s.close()


def test_a_checkpoint_dir_that_is_a_file_keeps_training_going(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    s = StoreThread(checkpoint_dir=str(blocker), every=1)
    try:
        assert [x["ok"] for x in rank(s, "save:1", "save:2")] == [True, True]
        s.settle()
        assert "cannot persist step" in s.call(s.store.info).persist_error
        assert s.call(s.store.held) == [1, 2]
    finally:
        s.close()


def test_after_a_reschedule_the_step_comes_from_disk(tmp_path: Path) -> None:
    root = tmp_path / "ckpt"
    first = StoreThread(checkpoint_dir=str(root), every=2)
    try:
        rank(first, "save:1", "save:2", "save:3")
        first.settle()
    finally:
        first.close()
    second = StoreThread(checkpoint_dir=str(root), every=2)  # a new agent: nothing in memory
    try:
        restart(second)
        assert rank(second, "load")[0] == {
            "action": "load",
            "step": 2,
            "source": "disk",
            "equal": True,
        }
    finally:
        second.close()
