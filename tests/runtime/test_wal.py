"""The write-ahead log file and the undo log: torn tails dropped, corrupt records named, a failed
append leaves no partial line, an undone change is gone (issue 12)."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aegis.runtime.controller.undo import TrackedCounter, TrackedDict, UndoLog
from aegis.runtime.controller.wal import WriteAheadLog, encode_line
from aegis.runtime.errors import CorruptStatusError

BODIES = [{"steps": [[i, "agentJoin", {"mv": "p"}, []]], "extras": {"stepNo": i}} for i in range(5)]


def written(path: Path, count: int = 3) -> WriteAheadLog:
    wal = WriteAheadLog(path)
    for n in range(1, count + 1):
        wal.append(n, BODIES[n])
    return wal


def test_records_come_back_in_order_with_their_numbers(tmp_path: Path) -> None:
    written(tmp_path / "wal.jsonl").close()
    wal = WriteAheadLog(tmp_path / "wal.jsonl")
    records = wal.read()
    assert [(r.number, r.body, r.line) for r in records] == [(n, BODIES[n], n) for n in range(1, 4)]
    assert not wal.torn_tail and wal.size == (tmp_path / "wal.jsonl").stat().st_size


@given(cut=st.integers(min_value=0, max_value=10_000))
@settings(max_examples=60, deadline=None)
def test_a_file_cut_anywhere_reads_as_the_whole_records_before_the_cut(
    tmp_path_factory: pytest.TempPathFactory, cut: int
) -> None:
    """A crash in the middle of an append (or of the disk's write-back) cuts the file at any
    byte: what is read back is exactly the records wholly before the cut, never an error."""
    path = tmp_path_factory.mktemp("wal") / "wal.jsonl"
    written(path, 4).close()
    data = path.read_bytes()
    cut %= len(data) + 1
    path.write_bytes(data[:cut])
    ends = [i + 1 for i, byte in enumerate(data) if byte == ord("\n")]
    whole = sum(1 for end in ends if end <= cut)
    wal = WriteAheadLog(path)
    assert [r.number for r in wal.read()] == list(range(1, whole + 1))
    assert wal.torn_tail == (cut not in (0, *ends))
    wal.append(whole + 1, {"after": "the crash"})  # the torn part is cut off first
    wal.close()
    again = WriteAheadLog(path).read()
    assert [r.number for r in again] == list(range(1, whole + 2))
    assert again[-1].body == {"after": "the crash"}


def test_a_last_line_whose_checksum_fails_is_a_torn_write_dropped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "wal.jsonl"
    written(path).close()
    data = bytearray(path.read_bytes())
    data[-5] ^= 0x01  # inside the last record: its bytes did not all reach the disk
    path.write_bytes(bytes(data))
    wal = WriteAheadLog(path)
    with caplog.at_level(logging.WARNING, logger="aegis.runtime.controller.wal"):
        assert [r.number for r in wal.read()] == [1, 2] and wal.torn_tail
    start = len(b"\n".join(bytes(data).split(b"\n")[:2])) + 1
    [warning] = [r.getMessage() for r in caplog.records]  # never dropped without a word
    assert f"from byte {start} ({len(data) - start} bytes), is torn" in warning


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        (lambda line: line.replace(b'"stepNo":2', b'"stepNo":7'), "record 2 is corrupt"),
        (lambda line: b"00000000 " + line[9:], "record 2 is corrupt"),
        (lambda line: line[:20], r"wal.jsonl:2 \(byte \d+\): record 2 is corrupt"),
        (lambda line: line[:12], r"wal.jsonl:2 \(byte \d+\): record \? is corrupt"),
    ],
    ids=["changed-byte", "bad-checksum", "cut-short", "number-lost"],
)
def test_a_corrupt_record_followed_by_others_is_named(
    tmp_path: Path, damage: Any, says: str
) -> None:
    path = tmp_path / "wal.jsonl"
    written(path).close()
    lines = path.read_bytes().split(b"\n")
    lines[1] = damage(lines[1])
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(CorruptStatusError, match=says) as err:
        WriteAheadLog(path).read()
    assert "move it and the status file beside it away" in str(err.value)
    assert f"(byte {len(lines[0]) + 1})" in str(err.value)  # where it starts, to the byte


def test_a_failed_append_leaves_no_partial_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "wal.jsonl"
    wal = written(path, 2)
    size = path.stat().st_size

    def no_space(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", no_space)
    with pytest.raises(OSError, match="No space"):
        wal.append(3, BODIES[3])
    monkeypatch.undo()
    assert path.stat().st_size == size  # the written bytes were cut off again
    wal.append(3, BODIES[3])
    assert [r.number for r in WriteAheadLog(path).read()] == [1, 2, 3]


def test_reset_empties_the_log_and_numbers_go_on(tmp_path: Path) -> None:
    path = tmp_path / "wal.jsonl"
    wal = written(path)
    wal.reset()
    assert path.read_bytes() == b"" and wal.size == 0
    wal.append(4, BODIES[4])
    assert [r.number for r in WriteAheadLog(path).read()] == [4]


def test_a_line_is_its_checksum_and_compact_json() -> None:
    line = encode_line(7, {"a": [1, 2]})
    assert line.endswith(b'{"n":7,"a":[1,2]}\n') and line[8:9] == b" "


ops = st.lists(
    st.tuples(
        st.sampled_from(["set", "del", "pop", "setdefault", "update", "incr"]),
        st.sampled_from(["a", "b", "c"]),
        st.integers(0, 5),
    ),
    max_size=12,
)


def _do(d: TrackedDict[str, int], op: str, key: str, value: int) -> None:
    if op == "set":
        d[key] = value
    elif op == "del" and key in d:
        del d[key]
    elif op == "pop":
        d.pop(key, None)
    elif op == "setdefault":
        d.setdefault(key, value)
    elif op == "update":
        d.update({key: value})
    elif op == "incr":
        d[key] += 1


@given(before=ops, after=ops)
def test_undo_puts_a_map_back_as_it_was_at_the_mark(
    before: list[tuple[str, str, int]], after: list[tuple[str, str, int]]
) -> None:
    undo = UndoLog()
    counts = TrackedCounter(undo)
    for op in before:
        _do(counts, *op)
    undo.forget()
    at_mark, mark = dict(counts), undo.mark()
    for op in after:
        _do(counts, *op)
    changed = set(undo.changed(counts))
    assert {k for k in {*at_mark, *counts} if at_mark.get(k) != counts.get(k)} <= changed
    undo.undo_to(mark)
    assert dict(counts) == at_mark and undo.mark() == mark
