"""The controller's checkpoint book: the restart point of a RunCommand order, and which
Checkpoint report makes a step every pod saved (the safe point of an eviction)."""

from __future__ import annotations

from aegis.protocol.payloads import CheckpointInfo, RestorePoint
from aegis.runtime.controller.checkpoints import MARKER, CheckpointBook

PODS = ["p0", "p1"]


def info(
    seq: int, held: tuple[int, ...] = (), disk: int | None = None, saved: int | None = None
) -> dict[str, object]:
    return CheckpointInfo(seq, held, saved, disk).to_data()


def test_the_newest_step_every_pod_holds_comes_from_memory() -> None:
    book = CheckpointBook(PODS)
    book.note("p0", info(1, (7, 8)))
    book.note("p1", info(1, (6, 7)))  # one save behind
    assert book.restore_point(5, "RunCommand") == RestorePoint(7, "memory")


def test_a_pod_that_holds_nothing_sends_everyone_to_the_disk() -> None:
    book = CheckpointBook(PODS)
    book.note("p0", info(1, (7, 8), disk=4))
    book.note("p1", info(1, (), disk=4))  # rescheduled: a new agent, empty memory
    assert book.restore_point(5, "RunCommand") == RestorePoint(4, "disk")


def test_a_newer_step_on_disk_wins_and_a_fresh_job_restores_nothing() -> None:
    book = CheckpointBook(PODS)
    assert book.restore_point(1, "RunCommand") is None
    book.note("p0", info(1, (3,), disk=5))
    book.note("p1", info(1, (3,)))
    assert book.restore_point(2, "RunCommand") == RestorePoint(5, "disk")


def test_the_point_is_fixed_for_its_order_and_a_late_heartbeat_changes_nothing() -> None:
    book = CheckpointBook(PODS)
    book.note("p0", info(4, (7, 8)))
    book.note("p1", info(4, (7, 8)))
    assert book.restore_point(9, "RunCommand") == RestorePoint(8, "memory")
    book.note("p0", info(5, (8, 9)))
    assert book.restore_point(9, "RunCommand") == RestorePoint(8, "memory")  # same order
    book.note("p1", info(3, ()))  # older than what the book has: ignored
    assert book.infos["p1"].held == (7, 8)
    assert book.restore_point(9, "Troubleshooting") is None


def test_a_lost_pod_holds_nothing_and_bad_info_is_dropped() -> None:
    book = CheckpointBook(PODS)
    book.note("p0", info(1, (3,)))
    book.note("p1", info(1, (3,)))
    book.forget("p1")
    assert book.restore_point(2, "RunCommand") is None
    book.note("p1", {"seq": "x"})
    book.note("p1", {"seq": 1, "held": [-1]})
    assert book.malformed == 2 and "p1" not in book.infos


def test_only_the_report_that_makes_a_step_every_pod_saved_is_a_safe_point() -> None:
    book = CheckpointBook(PODS)
    assert not book.checkpoint_completes("p0", 3, 10)  # p1 has said nothing yet
    assert book.checkpoint_completes("p1", 3, 9)  # both saved 9 since the decision
    assert not book.checkpoint_completes("p0", 4, 11)  # a new order starts over
    assert book.checkpoint_completes("p0", 4, MARKER)  # the marker file: whole by its word
    assert book.checkpoint_completes("p1", 4, None)  # no step: a whole checkpoint, as ever
    assert not book.checkpoint_completes("p1", 4, -5)
