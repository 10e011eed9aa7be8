"""The status store: JSON round trip, atomic replace, corrupt files refused, crash safety."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aegis.runtime.controller.store import (
    ErrorNode,
    FileStatusStore,
    PodInfo,
    Snapshot,
    Status,
    StatusStore,
)
from aegis.runtime.errors import CorruptStatusError

finite = st.floats(allow_nan=False, allow_infinity=False)
names = st.text(min_size=1, max_size=8)
ints = st.integers(min_value=0, max_value=10**6)
pod_infos = st.builds(PodInfo, names, names, st.booleans(), ints, st.text(max_size=20), finite)
json_leaf = st.none() | st.booleans() | st.integers() | finite | st.text(max_size=8)
statuses = st.builds(
    Status,
    phase=names,
    recover_count=ints,
    should_quit=st.booleans(),
    pod_infos=st.dictionaries(names, pod_infos, max_size=4),
    error_nodes=st.lists(st.builds(ErrorNode, names, names, finite), max_size=3).map(tuple),
    master_seq=ints,
    worker_seqs=st.dictionaries(names, ints, max_size=4),
    spec_state=st.dictionaries(names, json_leaf | st.lists(json_leaf, max_size=3), max_size=4),
    history=st.lists(
        st.builds(Snapshot, names, st.lists(ints, max_size=4).map(tuple), ints), max_size=4
    ).map(tuple),
)


@given(statuses)
def test_json_round_trip(status: Status) -> None:
    assert Status.from_json(status.to_json()) == status


def json_typed(o: object) -> bool:
    """Whether `o` is made only of what json.loads makes (a tuple would differ from the list
    a reader gets back: the CR store's diff would then send entries that did not change)."""
    if isinstance(o, dict):
        return all(isinstance(k, str) and json_typed(v) for k, v in o.items())
    if isinstance(o, list):
        return all(json_typed(v) for v in o)
    return o is None or isinstance(o, str | int | float)


@given(statuses)
def test_the_json_object_is_what_the_text_reads_back_as(status: Status) -> None:
    obj = status.to_obj()
    assert json_typed(obj) and obj == json.loads(status.to_json())


def test_file_store_round_trip_and_protocol(tmp_path: Path) -> None:
    store: StatusStore = FileStatusStore(tmp_path / "status.json")
    assert store.load() is None
    status = Status(phase="RunCommand", pod_infos={"w0": PodInfo(retries=1)}, master_seq=4)
    store.save(status)
    assert FileStatusStore(tmp_path / "status.json").load() == status
    assert [p.name for p in tmp_path.iterdir()] == ["status.json"]


def test_history_is_bounded_and_ordered_by_pod() -> None:
    s = Status(pod_infos={"w1": PodInfo(retries=2), "w0": PodInfo(retries=1)}, recover_count=2)
    for i in range(5):
        s = dataclasses.replace(s, phase=f"P{i}").with_snapshot(limit=3)
    assert [h.phase for h in s.history] == ["P2", "P3", "P4"]
    assert s.history[-1] == Snapshot("P4", (1, 2), 2)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{not json", "status is not JSON"),
        ("[]", "top level must be a JSON object"),
        ('{"version": 1}', "status: missing key"),
        ('{"version": 99}', "schema version 99"),
    ],
)
def test_corrupt_file_is_a_clear_error_and_never_overwritten(
    tmp_path: Path, text: str, reason: str
) -> None:
    path = tmp_path / "status.json"
    path.write_text(text)
    store = FileStatusStore(path)
    with pytest.raises(CorruptStatusError, match=reason) as info:
        store.load()
    assert "move the file away" in str(info.value)
    with pytest.raises(CorruptStatusError):
        FileStatusStore(path).save(Status())
    assert path.read_text() == text


def test_wrong_field_type_is_reported_with_its_path(tmp_path: Path) -> None:
    bad = Status(pod_infos={"w0": PodInfo()}).to_json().replace('"retries":0', '"retries":"x"')
    with pytest.raises(CorruptStatusError, match=r"podInfos\['w0'\]\.retries: expected int"):
        Status.from_json(bad)


def test_failed_write_leaves_the_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "status.json"
    store = FileStatusStore(path)
    store.save(Status(phase="Good"))

    def crash(fd: int) -> None:
        raise OSError("disk died mid-write")

    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(OSError, match="disk died"):
        store.save(Status(phase="Half"))
    monkeypatch.undo()
    assert store.load() == Status(phase="Good")
    assert [p.name for p in tmp_path.iterdir()] == ["status.json"]


def test_leftover_temp_file_from_a_crash_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    FileStatusStore(path).save(Status(phase="Good"))
    (tmp_path / ".status.json.abc123.tmp").write_text('{"version": 1, "pha')
    store = FileStatusStore(path)
    assert store.load() == Status(phase="Good")
    store.save(Status(phase="Next"))
    assert FileStatusStore(path).load() == Status(phase="Next")


WRITER = textwrap.dedent(
    """
    import sys
    from aegis.runtime.controller.store import FileStatusStore, PodInfo, Status
    store = FileStatusStore(sys.argv[1])
    store.load()
    pods = {f"w{i}": PodInfo(last_failed_reason="x" * 2000) for i in range(200)}
    print("writing", flush=True)
    n = 0
    while True:
        n += 1
        store.save(Status(phase=f"P{n}", master_seq=n, pod_infos=pods))
    """
)


def test_killed_writer_never_leaves_a_torn_file(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    FileStatusStore(path).save(Status(phase="P0"))
    for _ in range(3):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None
        assert proc.stdout.readline() == "writing\n"
        before, deadline = path.stat().st_mtime_ns, time.monotonic() + 10
        while path.stat().st_mtime_ns == before:  # wait for at least one replace
            assert time.monotonic() < deadline, "the writer never replaced the file"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        status = FileStatusStore(path).load()  # never raises: old or new, never torn
        assert status is not None and status.phase == f"P{status.master_seq}"
